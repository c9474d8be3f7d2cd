//! Accept-header negotiation and the served bodies of every spec version:
//! spec 3.x bodies checked by the real `ignition-validate`, spec 2.2
//! bodies by a schema check of spec 2.2 (Ignition 2.14's validator only
//! knows spec 3).

mod common;

use common::{data, inputs, mc};
use okd_mcs::{McsState, SpecVersion, negotiate};
use serde_json::{Value, json};

const IGN: &str = "application/vnd.coreos.ignition+json";

fn neg(h: &str) -> Result<SpecVersion, String> {
    negotiate(Some(h)).map_err(|e| e.to_string())
}

#[test]
fn no_or_foreign_accept_header_gets_spec_2_2() {
    assert_eq!(negotiate(None), Ok(SpecVersion::V2_2));
    for h in [
        "",
        "*/*",
        "application/json",
        "text/html,application/xhtml+xml;q=0.9",
        "garbage",
        // An Ignition entry without a (parseable) version.
        "application/vnd.coreos.ignition+json",
        "application/vnd.coreos.ignition+json;version=3.3",
        "application/vnd.coreos.ignition+json;version=banana, */*;q=0.1",
        // Parameter names are case-sensitive, as in the MCO.
        "application/vnd.coreos.ignition+json;VERSION=3.3.0",
    ] {
        assert_eq!(neg(h), Ok(SpecVersion::V2_2), "{h:?}");
    }
}

#[test]
fn one_version_is_served_as_asked() {
    for (v, want) in [
        ("3.1.0", SpecVersion::V3(1)),
        ("3.2.0", SpecVersion::V3(2)),
        ("3.3.0", SpecVersion::V3(3)),
        ("3.4.0", SpecVersion::V3(4)),
        ("3.5.0", SpecVersion::V3(5)),
        ("3.2.7", SpecVersion::V3(2)),
        ("3.6.0", SpecVersion::V3(5)),
        ("3.99.1", SpecVersion::V3(5)),
        ("3.4.0-experimental", SpecVersion::V3(3)),
        ("2.2.0", SpecVersion::V2_2),
        ("2.4.0", SpecVersion::V2_2),
    ] {
        assert_eq!(neg(&format!("{IGN};version={v}")), Ok(want), "{v}");
    }
    assert_eq!(SpecVersion::V3(2).as_str(), "3.2.0");
}

#[test]
fn real_ignition_headers() {
    // Debian's Ignition 2.14 (as logged from a real fetch; coreos/ignition
    // `internal/resource/url.go` builds the header): its newest spec.
    assert_eq!(
        neg("application/vnd.coreos.ignition+json;version=3.3.0, */*;q=0.1"),
        Ok(SpecVersion::V3(3))
    );
    // Ignition 0.x (spec 2.2 era and the final spec2x branch).
    for v in ["2.2.0", "2.4.0"] {
        let h = format!("{IGN}; version={v}, {IGN}; version=1; q=0.5, */*; q=0.1");
        assert_eq!(neg(&h), Ok(SpecVersion::V2_2), "{h}");
    }
}

#[test]
fn odd_q_values_neither_panic_nor_misorder() {
    // NaN is ignored (q stays 1) instead of comparing "equal" to
    // everything, which let the 0.5 entry stay ahead of the 0.9 one.
    let h = format!("{IGN};version=3.1.0;q=0.5, text/x;q=NaN, {IGN};version=3.2.0;q=0.9");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(2)));
    // A long header mixing NaN with real values (the sort's large-input
    // path): the highest real q wins.
    let mut parts = Vec::new();
    for i in 0..60 {
        parts.push(match i % 3 {
            0 => "text/x;q=NaN".to_string(),
            1 => format!("{IGN};version=3.1.0;q=0.{}", 1 + i % 5),
            _ => format!("text/y;q={}", ["nan", "-nan", "inf", "-inf"][i % 4]),
        });
        if i == 31 {
            parts.push(format!("{IGN};version=3.4.0;q=0.6"));
        }
    }
    assert_eq!(neg(&parts.join(", ")), Ok(SpecVersion::V3(4)));
    // Out-of-range values clamp to 0..1; three decimals count, more round.
    let h = format!("{IGN};version=3.1.0;q=-3, {IGN};version=3.2.0;q=0.0004");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(1)), "both 0: header order");
    let h = format!("{IGN};version=3.1.0;q=0.001, {IGN};version=3.2.0;q=0.002");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(2)));
    let h =
        format!("{IGN};version=3.1.0;q=0.9, {IGN};version=3.3.0;q=2, {IGN};version=3.2.0;q=1e0");
    assert_eq!(
        neg(&h),
        Ok(SpecVersion::V3(3)),
        "2 clamps to 1, ties keep order"
    );
}

#[test]
fn several_versions_are_ranked_by_q() {
    let h = format!("{IGN};version=3.1.0;q=0.5, {IGN};version=3.4.0;q=0.9, */*;q=0.1");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(4)));
    // q decides before the version does (the MCO's stable sort by q).
    let h = format!("{IGN};version=3.5.0;q=0.2, {IGN};version=3.2.0;q=0.8");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(2)));
    // Equal q: the header's order.
    let h = format!("{IGN};version=3.2.0, {IGN};version=3.4.0");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(2)));
    // An unparseable q is ignored (q stays 1), not taken as 0.
    let h = format!("{IGN};version=3.1.0;q=high, {IGN};version=3.3.0;q=0.9");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(1)));
    // The first version= counts.
    let h = format!("{IGN};version=3.2.0;version=3.4.0");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(2)));
}

#[test]
fn unsupported_versions_get_400_unless_a_later_entry_is_served() {
    for h in [
        format!("{IGN};version=3.0.0"),
        format!("{IGN};version=2.1.0, */*;q=0.1"),
        format!("{IGN};version=4.0.0"),
        format!("{IGN};version=3.1.0-rc1"),
        format!("{IGN};version=1.0.0, {IGN};version=3.0.0;q=0.5"),
    ] {
        let e = neg(&h).unwrap_err();
        assert!(
            e.contains("unsupported Ignition version in Accept header") && e.contains(&h),
            "{h}: {e}"
        );
    }
    // The MCO goes on past an unsupported Ignition entry.
    let h = format!("{IGN};version=3.0.0, {IGN};version=2.2.0;q=0.5");
    assert_eq!(neg(&h), Ok(SpecVersion::V2_2));
    let h = format!("{IGN};version=4.1.0;q=0.9, {IGN};version=3.2.0;q=0.3");
    assert_eq!(neg(&h), Ok(SpecVersion::V3(2)));
}

fn body(st: &McsState, pool: &str, spec: SpecVersion) -> Value {
    let b = st
        .body(pool, spec)
        .expect("pool")
        .unwrap_or_else(|e| panic!("{pool} as {spec}: {e}"));
    serde_json::from_slice(b).expect("body is JSON")
}

fn file<'a>(cfg: &'a Value, path: &str) -> Vec<&'a Value> {
    cfg.pointer("/storage/files")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|f| f.get("path").and_then(Value::as_str) == Some(path))
                .collect()
        })
        .unwrap_or_default()
}

fn decoded(f: &Value) -> Vec<u8> {
    let src = f
        .pointer("/contents/source")
        .and_then(Value::as_str)
        .expect("contents.source");
    okd_types::dataurl::decode(src).expect("valid data URL")
}

#[test]
fn every_spec_has_the_bootstrap_files() {
    let st = common::sample_state();
    let rendered = st.pool("master").unwrap().machine_config.clone();
    let name = st.pool("master").unwrap().name().to_string();
    assert!(name.starts_with("rendered-master-"), "{name}");
    for spec in SpecVersion::all() {
        let cfg = body(&st, "master", spec);
        assert_eq!(
            cfg.pointer("/ignition/version"),
            Some(&json!(spec.as_str())),
            "{spec}"
        );
        for p in [
            "/etc/kubernetes/kubelet-ca.crt",
            "/etc/machine-config-daemon/node-annotations.json",
            "/etc/kubernetes/kubeconfig",
            "/etc/mcs-machine-config-content.json",
            "/etc/ignition-machine-config-encapsulated.json",
        ] {
            let f = file(&cfg, p);
            assert_eq!(f.len(), 1, "{spec} {p}");
            assert_eq!(f[0].get("mode"), Some(&json!(420)), "{spec} {p}");
            assert_eq!(f[0].get("overwrite"), Some(&json!(true)), "{spec} {p}");
            let src = f[0]
                .pointer("/contents/source")
                .and_then(Value::as_str)
                .unwrap();
            assert!(src.starts_with("data:,"), "{spec} {p}: {src:.40}");
        }
        assert_eq!(
            decoded(file(&cfg, "/etc/kubernetes/kubeconfig")[0]),
            inputs().kubeconfig
        );
        assert_eq!(
            decoded(file(&cfg, "/etc/kubernetes/kubelet-ca.crt")[0]),
            inputs().kubelet_ca
        );
        let ann: Value = serde_json::from_slice(&decoded(
            file(&cfg, "/etc/machine-config-daemon/node-annotations.json")[0],
        ))
        .unwrap();
        assert_eq!(
            ann,
            json!({
                "machineconfiguration.openshift.io/currentConfig": name,
                "machineconfiguration.openshift.io/desiredConfig": name,
                "machineconfiguration.openshift.io/firstPivotConfig": name,
                "machineconfiguration.openshift.io/state": "Done",
            })
        );
        let content = decoded(file(&cfg, "/etc/mcs-machine-config-content.json")[0]);
        let text = String::from_utf8(content).unwrap();
        assert!(text.starts_with("{\n    \""), "4-space indent: {text:.40}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), rendered);
        let enc: Value = serde_json::from_slice(&decoded(
            file(&cfg, "/etc/ignition-machine-config-encapsulated.json")[0],
        ))
        .unwrap();
        let empty_version = if spec == SpecVersion::V2_2 {
            "2.2.0"
        } else {
            "3.5.0"
        };
        assert_eq!(
            enc.pointer("/spec/config"),
            Some(&json!({"ignition": {"version": empty_version}}))
        );
        assert_eq!(enc.pointer("/metadata/name"), Some(&json!(name)));
    }
}

#[test]
fn spec_3_bodies_pass_ignition_validate() {
    let Some(v) = common::ignition_validate() else {
        return;
    };
    let st = common::sample_state();
    for pool in ["master", "worker"] {
        for spec in SpecVersion::all().into_iter().skip(1) {
            let mut b = st.body(pool, spec).unwrap().unwrap().to_vec();
            if spec.minor3() >= Some(4) {
                // Ignition 2.14 knows 3.4 only as 3.4.0-experimental and
                // no 3.5; our bodies use no field of either.
                let mut cfg: Value = serde_json::from_slice(&b).unwrap();
                cfg["ignition"]["version"] = json!("3.4.0-experimental");
                b = serde_json::to_vec(&cfg).unwrap();
            }
            let out =
                common::validate(&v, &b).unwrap_or_else(|e| panic!("{pool} {spec} rejected: {e}"));
            assert!(out.trim().is_empty(), "{pool} {spec} warnings: {out}");
        }
    }
    // The validator does find faults: a relative path.
    let mut bad: Value =
        serde_json::from_slice(st.body("master", SpecVersion::V3(2)).unwrap().unwrap()).unwrap();
    bad["storage"]["files"][0]["path"] = json!("etc/relative");
    let e = common::validate(&v, &serde_json::to_vec(&bad).unwrap()).unwrap_err();
    assert!(e.contains("path not absolute"), "{e}");
    // And it does not know spec 2.2 (so 2.2 is checked by schema below).
    let e =
        common::validate(&v, st.body("master", SpecVersion::V2_2).unwrap().unwrap()).unwrap_err();
    assert!(e.contains("unsupported config version"), "{e}");
}

#[test]
fn kernel_arguments_below_3_3_move_into_the_machine_config() {
    let mut mcs = common::sample_configs();
    mcs.push(mc(
        "60-master-kargs",
        "master",
        json!({"config": {"ignition": {"version": "3.3.0"},
            "kernelArguments": {"shouldExist": ["mitigations=off", "systemd.unified_cgroup_hierarchy=1"]}}}),
    ));
    let st = McsState::from_parts(mcs, inputs()).expect("state");
    let v33 = body(&st, "master", SpecVersion::V3(3));
    assert_eq!(
        v33.pointer("/kernelArguments/shouldExist"),
        Some(&json!([
            "mitigations=off",
            "systemd.unified_cgroup_hierarchy=1"
        ]))
    );
    for spec in [SpecVersion::V3(2), SpecVersion::V3(1), SpecVersion::V2_2] {
        let cfg = body(&st, "master", spec);
        assert!(cfg.get("kernelArguments").is_none(), "{spec}");
        let mc: Value = serde_json::from_slice(&decoded(
            file(&cfg, "/etc/mcs-machine-config-content.json")[0],
        ))
        .unwrap();
        // Appended to spec.kernelArguments, without repeating one already
        // there.
        assert_eq!(
            mc.pointer("/spec/kernelArguments"),
            Some(&json!([
                "systemd.unified_cgroup_hierarchy=1",
                "mitigations=off"
            ])),
            "{spec}"
        );
        assert!(
            mc.pointer("/spec/config/kernelArguments").is_none(),
            "{spec}"
        );
    }

    // shouldNotExist cannot be expressed below 3.3: those specs get an error.
    let st = McsState::from_parts(
        vec![mc(
            "a",
            "master",
            json!({"config": {"ignition": {"version": "3.3.0"},
                "kernelArguments": {"shouldNotExist": ["quiet"]}}}),
        )],
        inputs(),
    )
    .expect("state");
    assert!(st.body("master", SpecVersion::V3(3)).unwrap().is_ok());
    for spec in [SpecVersion::V3(2), SpecVersion::V2_2] {
        let e = st.body("master", spec).unwrap().unwrap_err();
        assert!(e.contains("shouldNotExist"), "{spec}: {e}");
    }
}

#[test]
fn newer_fields_refuse_older_specs() {
    let st = McsState::from_parts(
        vec![mc(
            "a",
            "master",
            json!({"config": {"ignition": {"version": "3.2.0"},
                "storage": {"luks": [{"name": "root", "device": "/dev/sda4",
                    "clevis": {"tpm2": true}}]}}}),
        )],
        inputs(),
    )
    .expect("state");
    assert!(st.body("master", SpecVersion::V3(2)).unwrap().is_ok());
    for spec in [SpecVersion::V3(1), SpecVersion::V2_2] {
        let e = st.body("master", spec).unwrap().unwrap_err();
        assert!(e.contains("luks"), "{spec}: {e}");
    }
    assert!(st.body("nope", SpecVersion::V3(2)).is_none());
}

/// Problems of `v` against the spec 2.2 schema
/// (`spec2x: doc/configuration-v2_2.md`): unknown keys, wrong types,
/// missing required fields, relative paths, bad data URLs, hashes other
/// than sha512, append with overwrite, unit names without a type.
fn spec_2_2_problems(v: &Value) -> Vec<String> {
    #[derive(Clone, Copy)]
    enum T {
        Str,
        Int,
        Bool,
        Obj(&'static str),
        List(&'static T),
        StrList,
    }
    use T::*;
    fn fields(kind: &str) -> &'static [(&'static str, T, bool)] {
        const RES: T = Obj("resource");
        match kind {
            "config" => &[
                ("ignition", Obj("ignition"), true),
                ("storage", Obj("storage"), false),
                ("systemd", Obj("systemd"), false),
                ("networkd", Obj("networkd"), false),
                ("passwd", Obj("passwd"), false),
            ],
            "ignition" => &[
                ("version", Str, true),
                ("config", Obj("ignconfig"), false),
                ("timeouts", Obj("timeouts"), false),
                ("security", Obj("security"), false),
            ],
            "ignconfig" => &[("append", List(&RES), false), ("replace", RES, false)],
            "timeouts" => &[
                ("httpResponseHeaders", Int, false),
                ("httpTotal", Int, false),
            ],
            "security" => &[("tls", Obj("tls"), false)],
            "tls" => &[("certificateAuthorities", List(&RES), false)],
            "resource" => &[
                ("source", Str, true),
                ("verification", Obj("verification"), false),
            ],
            "verification" => &[("hash", Str, false)],
            "storage" => &[
                ("disks", List(&Obj("any")), false),
                ("raid", List(&Obj("any")), false),
                ("filesystems", List(&Obj("any")), false),
                ("files", List(&Obj("file")), false),
                ("directories", List(&Obj("directory")), false),
                ("links", List(&Obj("link")), false),
            ],
            "file" => &[
                ("filesystem", Str, true),
                ("path", Str, true),
                ("overwrite", Bool, false),
                ("append", Bool, false),
                ("contents", Obj("contents"), false),
                ("mode", Int, false),
                ("user", Obj("owner"), false),
                ("group", Obj("owner"), false),
            ],
            "contents" => &[
                ("compression", Str, false),
                ("source", Str, false),
                ("verification", Obj("verification"), false),
            ],
            "owner" => &[("id", Int, false), ("name", Str, false)],
            "directory" => &[
                ("filesystem", Str, true),
                ("path", Str, true),
                ("overwrite", Bool, false),
                ("mode", Int, false),
                ("user", Obj("owner"), false),
                ("group", Obj("owner"), false),
            ],
            "link" => &[
                ("filesystem", Str, true),
                ("path", Str, true),
                ("overwrite", Bool, false),
                ("user", Obj("owner"), false),
                ("group", Obj("owner"), false),
                ("target", Str, true),
                ("hard", Bool, false),
            ],
            "systemd" => &[("units", List(&Obj("unit")), false)],
            "unit" => &[
                ("name", Str, true),
                ("enabled", Bool, false),
                ("enable", Bool, false),
                ("mask", Bool, false),
                ("contents", Str, false),
                ("dropins", List(&Obj("dropin")), false),
            ],
            "dropin" => &[("name", Str, true), ("contents", Str, false)],
            "passwd" => &[
                ("users", List(&Obj("user")), false),
                ("groups", List(&Obj("group")), false),
            ],
            "user" => &[
                ("name", Str, true),
                ("passwordHash", Str, false),
                ("sshAuthorizedKeys", StrList, false),
                ("uid", Int, false),
                ("gecos", Str, false),
                ("homeDir", Str, false),
                ("noCreateHome", Bool, false),
                ("primaryGroup", Str, false),
                ("groups", StrList, false),
                ("noUserGroup", Bool, false),
                ("noLogInit", Bool, false),
                ("shell", Str, false),
                ("system", Bool, false),
            ],
            "group" => &[
                ("name", Str, true),
                ("gid", Int, false),
                ("passwordHash", Str, false),
                ("system", Bool, false),
            ],
            _ => &[],
        }
    }
    fn check(v: &Value, t: T, at: &str, out: &mut Vec<String>) {
        match t {
            Str if !v.is_string() => out.push(format!("{at}: not a string")),
            Int if !v.is_i64() => out.push(format!("{at}: not an integer")),
            Bool if !v.is_boolean() => out.push(format!("{at}: not a boolean")),
            StrList => match v.as_array() {
                Some(a) if a.iter().all(Value::is_string) => {}
                _ => out.push(format!("{at}: not a list of strings")),
            },
            List(inner) => match v.as_array() {
                Some(a) => {
                    for (i, x) in a.iter().enumerate() {
                        check(x, *inner, &format!("{at}.{i}"), out);
                    }
                }
                None => out.push(format!("{at}: not a list")),
            },
            Obj(kind) => {
                let Some(o) = v.as_object() else {
                    out.push(format!("{at}: not an object"));
                    return;
                };
                if kind == "any" {
                    return;
                }
                let spec = fields(kind);
                for k in o.keys() {
                    if !spec.iter().any(|(n, _, _)| n == k) {
                        out.push(format!("{at}.{k}: not in spec 2.2 {kind}"));
                    }
                }
                for (n, ft, required) in spec {
                    match o.get(*n) {
                        Some(x) => check(x, *ft, &format!("{at}.{n}"), out),
                        None if *required => out.push(format!("{at}.{n}: required")),
                        None => {}
                    }
                }
                match kind {
                    "file" | "directory" | "link" => {
                        if !o
                            .get("path")
                            .and_then(Value::as_str)
                            .is_some_and(|p| p.starts_with('/'))
                        {
                            out.push(format!("{at}.path: not absolute"));
                        }
                        if o.get("append") == Some(&json!(true))
                            && o.get("overwrite") != Some(&json!(false))
                        {
                            out.push(format!("{at}: append needs overwrite false"));
                        }
                    }
                    "unit" => {
                        let n = o.get("name").and_then(Value::as_str).unwrap_or("");
                        if !n.contains('.') {
                            out.push(format!("{at}.name: no unit type"));
                        }
                    }
                    "resource" | "contents" => {
                        if let Some(s) = o.get("source").and_then(Value::as_str)
                            && s.starts_with("data:")
                            && okd_types::dataurl::decode(s).is_err()
                        {
                            out.push(format!("{at}.source: bad data URL"));
                        }
                    }
                    "verification" => {
                        if let Some(h) = o.get("hash").and_then(Value::as_str)
                            && !h.starts_with("sha512-")
                        {
                            out.push(format!("{at}.hash: spec 2.2 knows only sha512"));
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    check(v, Obj("config"), "$", &mut out);
    if v.pointer("/ignition/version") != Some(&json!("2.2.0")) {
        out.push("$.ignition.version: not 2.2.0".into());
    }
    out
}

#[test]
fn spec_2_2_schema_check_finds_faults() {
    // The checker itself: each fault is reported.
    let bad = json!({
        "ignition": {"version": "2.2.0", "config": {"merge": []}},
        "storage": {"files": [
            {"path": "/a", "contents": {"source": "data:,x"}},
            {"filesystem": "root", "path": "b", "mode": "0644", "contents": {"source": "data:,x",
             "verification": {"hash": "sha256-00"}}},
            {"filesystem": "root", "path": "/c", "append": true, "contents": {"source": "data:,%zz"}}
        ]},
        "systemd": {"units": [{"name": "foo", "enabled": "yes"}]},
        "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": [1], "shouldExist": true}]}
    });
    let p = spec_2_2_problems(&bad);
    for want in [
        "$.ignition.config.merge: not in spec 2.2",
        "$.storage.files.0.filesystem: required",
        "$.storage.files.1.path: not absolute",
        "$.storage.files.1.mode: not an integer",
        "$.storage.files.1.contents.verification.hash: spec 2.2 knows only sha512",
        "$.storage.files.2: append needs overwrite false",
        "$.storage.files.2.contents.source: bad data URL",
        "$.systemd.units.0.enabled: not a boolean",
        "$.systemd.units.0.name: no unit type",
        "$.passwd.users.0.sshAuthorizedKeys: not a list of strings",
        "$.passwd.users.0.shouldExist: not in spec 2.2",
    ] {
        assert!(
            p.iter().any(|x| x.starts_with(want)),
            "{want} missing from {p:#?}"
        );
    }
}

#[test]
fn spec_2_2_conversion() {
    let mut mcs = common::sample_configs();
    mcs.push(mc(
        "02-master-pointer",
        "master",
        json!({"config": {"ignition": {"version": "3.2.0",
            "config": {"merge": [{"source": "https://example.com/extra.ign",
                "verification": {"hash": format!("sha512-{}", "0".repeat(128))}}]},
            "security": {"tls": {"certificateAuthorities": [{"source": data("CA")}]}},
            "timeouts": {"httpTotal": 30}},
          "storage": {"files": [{"path": "/etc/only-exists"}]},
          "passwd": {"groups": [{"name": "wheel2", "gid": 1500}]}}}),
    ));
    let st = McsState::from_parts(mcs, inputs()).expect("state");
    let v2 = body(&st, "master", SpecVersion::V2_2);
    let problems = spec_2_2_problems(&v2);
    assert!(problems.is_empty(), "{problems:#?}\n{v2:#}");

    assert_eq!(
        v2.pointer("/ignition/config/append"),
        Some(&json!([{"source": "https://example.com/extra.ign",
            "verification": {"hash": format!("sha512-{}", "0".repeat(128))}}]))
    );
    assert!(v2.pointer("/ignition/config/merge").is_none());
    assert_eq!(
        v2.pointer("/ignition/security/tls/certificateAuthorities"),
        Some(&json!([{"source": data("CA")}]))
    );
    assert_eq!(v2.pointer("/ignition/timeouts/httpTotal"), Some(&json!(30)));

    // Files: filesystem root, overwrite explicit (the MCO made it true);
    // the append becomes a second entry with append: true and overwrite
    // false; a file with neither contents nor appends is left out.
    let motd = file(&v2, "/etc/motd");
    assert_eq!(motd.len(), 2, "{motd:#?}");
    assert_eq!(
        *motd[0],
        json!({"filesystem": "root", "path": "/etc/motd", "mode": 420, "overwrite": true,
               "contents": {"source": data("hello\n")}})
    );
    assert_eq!(
        *motd[1],
        json!({"filesystem": "root", "path": "/etc/motd", "mode": 420, "append": true,
               "overwrite": false, "contents": {"source": data("more\n")}})
    );
    assert!(file(&v2, "/etc/only-exists").is_empty());
    let bootkube = file(&v2, "/usr/local/bin/bootkube.sh");
    assert_eq!(bootkube[0].get("mode"), Some(&json!(493)));
    assert_eq!(
        v2.pointer("/storage/directories"),
        Some(
            &json!([{"filesystem": "root", "path": "/etc/kubernetes/manifests", "mode": 493, "overwrite": false}])
        )
    );
    assert_eq!(
        v2.pointer("/storage/links"),
        Some(&json!([{"filesystem": "root", "path": "/etc/localtime",
                      "target": "/usr/share/zoneinfo/UTC", "overwrite": false}]))
    );

    // Units: merged kubelet.service with its dropin; zincati masked.
    let units = v2
        .pointer("/systemd/units")
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(units.len(), 2);
    assert_eq!(units[0].get("name"), Some(&json!("kubelet.service")));
    assert_eq!(units[0].get("enabled"), Some(&json!(true)));
    assert!(units[0].get("contents").is_some());
    assert_eq!(
        units[0].get("dropins"),
        Some(&json!([{"name": "10-mco.conf", "contents": "[Service]\nEnvironment=A=1\n"}]))
    );
    assert_eq!(units[1], json!({"name": "zincati.service", "mask": true}));

    // Users and groups.
    assert_eq!(
        v2.pointer("/passwd/users"),
        Some(&json!([{"name": "core", "sshAuthorizedKeys":
            ["ssh-ed25519 AAAAone core@a", "ssh-ed25519 AAAAtwo core@b"]}]))
    );
    assert_eq!(
        v2.pointer("/passwd/groups"),
        Some(&json!([{"name": "wheel2", "gid": 1500}]))
    );
}

#[test]
fn spec_2_2_refuses_what_it_cannot_express() {
    for (what, cfg) in [
        (
            "httpHeaders",
            json!({"ignition": {"version": "3.2.0", "config": {"merge": [
                {"source": "https://x/y", "httpHeaders": [{"name": "a", "value": "b"}]}]}}}),
        ),
        (
            "sha512",
            json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/f",
                "contents": {"source": "https://x/f", "verification": {"hash": format!("sha256-{}", "0".repeat(64))}}}]}}),
        ),
        (
            "proxy",
            json!({"ignition": {"version": "3.2.0", "proxy": {"httpProxy": "http://p:3128"}}}),
        ),
        (
            "compression",
            json!({"ignition": {"version": "3.2.0", "config": {"merge": [
                {"source": "https://x/y", "compression": "gzip"}]}}}),
        ),
        (
            "shouldExist",
            json!({"ignition": {"version": "3.2.0"}, "passwd": {"users": [{"name": "old", "shouldExist": false}]}}),
        ),
    ] {
        let st = McsState::from_parts(vec![mc("a", "master", json!({"config": cfg}))], inputs())
            .expect("state");
        let e = st.body("master", SpecVersion::V2_2).unwrap().unwrap_err();
        assert!(e.contains(what) && e.contains("2.2.0"), "{what}: {e}");
    }
}

#[test]
fn real_asset_dir_bodies() {
    let d = common::real_asset_dir("baremetal-single-master");
    let st = McsState::from_asset_dir(d.path()).expect("from_asset_dir");
    let master = st.pool("master").unwrap().machine_config.clone();
    // The installer's 99-master-ssh: the example's key for core.
    let keys = master
        .pointer("/spec/config/passwd/users/0/sshAuthorizedKeys")
        .and_then(Value::as_array)
        .expect("core's keys");
    assert_eq!(keys.len(), 1);
    assert!(keys[0].as_str().unwrap().starts_with("ssh-"), "{keys:?}");
    let ign: Value =
        serde_json::from_slice(&std::fs::read(d.path().join("bootstrap.ign")).unwrap()).unwrap();
    let in_ign = |p: &str| -> Vec<u8> {
        let f = ign
            .pointer("/storage/files")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .find(|f| f.get("path").and_then(Value::as_str) == Some(p))
            .unwrap_or_else(|| panic!("{p} in bootstrap.ign"));
        decoded(f)
    };
    let v33 = body(&st, "master", SpecVersion::V3(3));
    assert_eq!(
        decoded(file(&v33, "/etc/kubernetes/kubeconfig")[0]),
        in_ign(okd_mcs::KUBECONFIG_KUBELET_PATH)
    );
    assert_eq!(
        decoded(file(&v33, "/etc/kubernetes/kubelet-ca.crt")[0]),
        in_ign(okd_mcs::KUBE_APISERVER_CA_PATH)
    );
    assert_eq!(st.inputs().tls_cert_pem, in_ign(okd_mcs::MCS_CERT_PATH));

    if let Some(v) = common::ignition_validate() {
        for pool in ["master", "worker"] {
            for m in 1..=3 {
                let b = st.body(pool, SpecVersion::V3(m)).unwrap().unwrap();
                if let Err(e) = common::validate(&v, b) {
                    panic!("{pool} 3.{m}.0 rejected: {e}");
                }
            }
        }
    }
    for pool in ["master", "worker"] {
        let v2 = body(&st, pool, SpecVersion::V2_2);
        let p = spec_2_2_problems(&v2);
        assert!(p.is_empty(), "{pool}: {p:#?}");
    }
}
