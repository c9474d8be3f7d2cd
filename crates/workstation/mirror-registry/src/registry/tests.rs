use super::*;

#[test]
fn pull_secret_merge_replaces_and_keeps_others() {
    let s = merge_pull_secret(
        Some(r#"{"auths":{"quay.io":{"auth":"eA=="},"r:5000":{"auth":"old"}}}"#),
        "r:5000",
        "okd",
        "pw",
    )
    .unwrap();
    let v: Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["auths"]["quay.io"]["auth"], "eA==");
    assert_eq!(v["auths"]["r:5000"]["auth"], STANDARD.encode("okd:pw"));
    let fresh: Value =
        serde_json::from_str(&merge_pull_secret(None, "h:1", "u", "p").unwrap()).unwrap();
    assert_eq!(fresh["auths"]["h:1"]["auth"], STANDARD.encode("u:p"));
    assert!(merge_pull_secret(Some("[]"), "h:1", "u", "p").is_err());
    assert!(merge_pull_secret(Some(r#"{"auths":1}"#), "h:1", "u", "p").is_err());
}

#[test]
fn htpasswd_is_2y_bcrypt_that_verifies() {
    let line = htpasswd_line("okd", "s3cret").unwrap();
    let (user, hash) = line.trim_end().split_once(':').unwrap();
    assert_eq!(user, "okd");
    assert!(hash.starts_with("$2y$05$"), "{hash}");
    assert!(bcrypt::verify("s3cret", hash).unwrap());
    assert!(!bcrypt::verify("wrong", hash).unwrap());
}

#[test]
fn registry_names() {
    let a: IpAddr = "::1".parse().unwrap();
    assert_eq!(registry_name(&[], &[a], 5000).unwrap(), "[::1]:5000");
    assert_eq!(
        registry_name(&["r.example".into()], &[a], 5000).unwrap(),
        "r.example:5000"
    );
    assert!(registry_name(&[], &[], 5000).is_err());
}

#[test]
fn edit_keeps_comments_and_other_keys() {
    let text = "# top\napiVersion: v1\npullSecret: '{}'   # old\nadditionalTrustBundle: |\n  A\n\n  B\nmetadata:\n  name: x # name\n";
    let out = edit_install_config(
        text,
        &[
            ("pullSecret", r#"{"auths":{}}"#.into()),
            ("additionalTrustBundle", "A\n\nB\nC\n".into()),
        ],
    )
    .unwrap();
    assert!(
        out.contains("# top\n") && out.contains("name: x # name"),
        "{out}"
    );
    let v: Yaml = serde_yaml_ng::from_str(&out).unwrap();
    assert_eq!(v["pullSecret"].as_str(), Some(r#"{"auths":{}}"#));
    assert_eq!(v["additionalTrustBundle"].as_str(), Some("A\n\nB\nC\n"));
    assert_eq!(v["metadata"]["name"].as_str(), Some("x"));
    // Absent keys are appended.
    let out = edit_install_config("apiVersion: v1", &[("pullSecret", "{}".into())]).unwrap();
    let v: Yaml = serde_yaml_ng::from_str(&out).unwrap();
    assert_eq!(v["pullSecret"].as_str(), Some("{}"));
    assert!(edit_install_config("- a\n", &[("k", "v".into())]).is_err());
}

#[test]
fn trust_bundle_append_is_idempotent() {
    let ca = okd_pki::self_signed(
        &ca_config("r"),
        RsaKey::generate().unwrap(),
        OffsetDateTime::now_utc(),
    )
    .unwrap();
    let once = append_trust_bundle(None, &ca.cert.pem);
    assert_eq!(once, ca.cert.pem);
    assert_eq!(append_trust_bundle(Some(&once), &ca.cert.pem), once);
    let two = append_trust_bundle(Some("X\n"), &ca.cert.pem);
    assert!(two.starts_with("X\n-----BEGIN CERTIFICATE-----"));
}

#[test]
fn bad_options_are_refused() {
    let base = InitOptions {
        dir: PathBuf::from("."),
        output_dir: None,
        hostnames: vec!["registry.okd.example".into()],
        addresses: vec![],
        port: 5000,
        username: "okd".into(),
        password: Some("pw".into()),
        rotate_password: false,
        load_options: Default::default(),
    };
    assert!(check_options(&base).is_ok());
    for f in [
        |o: &mut InitOptions| o.username = "a:b".into(),
        |o: &mut InitOptions| o.hostnames = vec!["bad_name".into()],
        |o: &mut InitOptions| o.port = 0,
        |o: &mut InitOptions| o.password = Some("a\nb".into()),
        |o: &mut InitOptions| o.hostnames.clear(),
    ] {
        let mut o = base.clone();
        f(&mut o);
        assert!(matches!(check_options(&o), Err(MirrorError::Options(_))));
    }
}
