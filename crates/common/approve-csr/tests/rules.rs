//! The identity rules on requests made here (rcgen), one rule per case;
//! the same rules meet the real kubelet and API server in
//! bins/okd-install/tests/approve_csr.rs.

use std::net::IpAddr;

use okd_approve_csr::rules::{self, CLIENT_SIGNER, NODE_BOOTSTRAPPER, SERVING_SIGNER};
use okd_approve_csr::{CsrKind, CsrView, Identities, KnownNode, Refusal, Verdict};

fn pem(cn: &str, orgs: &[&str], sans: &[&str]) -> Vec<u8> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params =
        rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
    let mut dn = rcgen::DistinguishedName::new();
    for o in orgs {
        dn.push(rcgen::DnType::OrganizationName, *o);
    }
    dn.push(rcgen::DnType::CommonName, cn);
    params.distinguished_name = dn;
    params
        .serialize_request(&key)
        .unwrap()
        .pem()
        .unwrap()
        .into_bytes()
}

fn ids() -> Identities {
    Identities::default()
        .with_nodes([KnownNode {
            names: vec!["master".into(), "master.okd.example".into()],
            addresses: vec!["192.168.120.103".parse().unwrap()],
        }])
        .with_patterns(&["worker-*".to_string()])
        .unwrap()
}

fn client(cn: &str, sans: &[&str]) -> CsrView {
    CsrView {
        name: "c".into(),
        signer: CLIENT_SIGNER.into(),
        username: NODE_BOOTSTRAPPER.into(),
        groups: vec!["system:serviceaccounts".into()],
        usages: vec!["digital signature".into(), "client auth".into()],
        request: pem(cn, &["system:nodes"], sans),
    }
}

fn serving(node: &str, sans: &[&str]) -> CsrView {
    CsrView {
        name: "s".into(),
        signer: SERVING_SIGNER.into(),
        username: format!("system:node:{node}"),
        groups: vec!["system:nodes".into(), "system:authenticated".into()],
        usages: vec!["digital signature".into(), "server auth".into()],
        request: pem(&format!("system:node:{node}"), &["system:nodes"], sans),
    }
}

fn decide(v: &CsrView) -> Verdict {
    let mut none = |n: &str| -> Result<Vec<IpAddr>, String> {
        if n == "worker-1" {
            Ok(vec!["192.168.120.110".parse().unwrap()])
        } else {
            Err(format!("no node {n}"))
        }
    };
    rules::decide(v, &ids(), &mut none)
}

fn refusal(v: &CsrView) -> Refusal {
    match decide(v) {
        Verdict::Refuse(r) => r,
        other => panic!("approved: {other:?}"),
    }
}

#[test]
fn approves_what_a_kubelet_files() {
    assert_eq!(
        decide(&client("system:node:master", &[])),
        Verdict::Approve {
            kind: CsrKind::Client,
            node: "master".into()
        }
    );
    assert_eq!(
        decide(&client("system:node:master.okd.example", &[])),
        Verdict::Approve {
            kind: CsrKind::Client,
            node: "master.okd.example".into()
        }
    );
    let mut old = client("system:node:worker-7", &[]);
    old.usages = vec![
        "digital signature".into(),
        "key encipherment".into(),
        "client auth".into(),
    ];
    assert_eq!(
        decide(&old),
        Verdict::Approve {
            kind: CsrKind::Client,
            node: "worker-7".into()
        }
    );
    assert_eq!(
        decide(&serving("master", &["master", "192.168.120.103"])),
        Verdict::Approve {
            kind: CsrKind::Serving,
            node: "master".into()
        }
    );
    // A pattern-matched node's addresses come from its Node object.
    assert_eq!(
        decide(&serving("worker-1", &["worker-1", "192.168.120.110"])),
        Verdict::Approve {
            kind: CsrKind::Serving,
            node: "worker-1".into()
        }
    );
}

#[test]
fn refuses_each_forgery_by_its_rule() {
    assert_eq!(
        refusal(&client("system:node:evil", &[])).reason(),
        "UnknownNode"
    );
    assert_eq!(
        refusal(&client("system:node:master", &["master"])).reason(),
        "ClientSANs"
    );
    let mut v = client("system:node:master", &[]);
    v.signer = "kubernetes.io/kube-apiserver-client".into();
    assert_eq!(refusal(&v).reason(), "UnknownSigner");
    let mut v = client("system:node:master", &[]);
    v.username = "system:admin".into();
    assert_eq!(refusal(&v).reason(), "WrongRequester");
    let mut v = client("system:node:master", &[]);
    v.usages.push("server auth".into());
    assert_eq!(refusal(&v).reason(), "BadUsages");
    let mut v = client("system:node:master", &[]);
    v.usages = vec!["client auth".into(), "client auth".into()];
    assert_eq!(refusal(&v).reason(), "BadUsages");
    let mut v = client("system:node:master", &[]);
    v.request = pem(
        "system:node:master",
        &["system:nodes", "system:masters"],
        &[],
    );
    assert_eq!(refusal(&v).reason(), "BadSubject");
    let mut v = client("system:node:master", &[]);
    v.request = pem("system:admin", &["system:nodes"], &[]);
    assert_eq!(refusal(&v).reason(), "BadSubject");
    let mut v = client("system:node:master", &[]);
    v.request =
        b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n".to_vec();
    assert_eq!(refusal(&v).reason(), "BadRequest");
    assert_eq!(
        refusal(&serving("master", &["master", "192.168.120.104"])).reason(),
        "SANNotOwned"
    );
    assert_eq!(
        refusal(&serving("master", &["master", "api.okd.example"])).reason(),
        "SANNotOwned"
    );
    let mut v = serving("master", &["master"]);
    v.username = NODE_BOOTSTRAPPER.into();
    assert_eq!(refusal(&v).reason(), "WrongRequester");
    let mut v = serving("master", &["master"]);
    v.username = "system:node:worker-1".into();
    assert_eq!(refusal(&v).reason(), "WrongRequester");
    // A pattern-matched node whose Node object cannot be read.
    assert_eq!(
        refusal(&serving("worker-2", &["worker-2"])).reason(),
        "NodeAddressesUnknown"
    );
}

#[test]
fn a_bad_pattern_is_named() {
    let e = Identities::default()
        .with_patterns(&["[x".to_string()])
        .unwrap_err();
    assert!(e.to_string().contains("\"[x\""), "{e}");
}

/// Requests written byte by byte (okd_test_utils::pkcs10): what rcgen and
/// `openssl req` never write, but Go's parser (the API server's, the
/// kubelet-serving signer's) reads — every extensionRequest attribute,
/// merged.
mod hand_built {
    use super::*;
    use okd_test_utils::pkcs10::{Extension, request_pem, tlv};

    fn key() -> rcgen::KeyPair {
        rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap()
    }

    fn request(cn: &str, attrs: &[Vec<Vec<Extension>>]) -> Vec<u8> {
        request_pem(&key(), cn, "system:nodes", attrs)
    }

    /// The builder's well-formed requests pass, so each refusal below is
    /// for the one oddity it adds.
    #[test]
    fn well_formed_hand_built_requests_are_approved() {
        let mut v = serving("master", &[]);
        v.request = request(
            "system:node:master",
            &[vec![vec![Extension::san(&["master", "192.168.120.103"])]]],
        );
        assert!(matches!(decide(&v), Verdict::Approve { .. }), "{v:?}");
        let mut v = client("system:node:master", &[]);
        v.request = request(
            "system:node:master",
            &[vec![vec![Extension::key_usage_digital_signature()]]],
        );
        assert!(matches!(decide(&v), Verdict::Approve { .. }));
        v.request = request("system:node:master", &[]);
        assert!(matches!(decide(&v), Verdict::Approve { .. }));
    }

    /// Issue #18 finding 1: SANs in a second extensionRequest attribute
    /// were never looked at, yet signed.
    #[test]
    fn a_second_extension_request_attribute_is_refused() {
        let mut v = serving("master", &[]);
        v.request = request(
            "system:node:master",
            &[
                vec![vec![Extension::key_usage_digital_signature()]],
                vec![vec![Extension::san(&[
                    "master",
                    "api.okd.example",
                    "192.168.120.103",
                    "192.168.120.2",
                ])]],
            ],
        );
        let r = refusal(&v);
        assert_eq!(r.reason(), "BadExtensions", "{r}");
        assert!(
            r.to_string().contains("2 extensionRequest attributes"),
            "{r}"
        );
        // A client CSR "without SANs" the same way.
        let mut v = client("system:node:master", &[]);
        v.request = request(
            "system:node:master",
            &[vec![vec![]], vec![vec![Extension::san(&["master"])]]],
        );
        assert_eq!(refusal(&v).reason(), "BadExtensions");
        // Two values in the one attribute's SET.
        let mut v = client("system:node:master", &[]);
        v.request = request(
            "system:node:master",
            &[vec![
                vec![Extension::key_usage_digital_signature()],
                vec![Extension::san(&["api.okd.example"])],
            ]],
        );
        let r = refusal(&v);
        assert_eq!(r.reason(), "BadExtensions");
        assert!(r.to_string().contains("more than one value"), "{r}");
    }

    #[test]
    fn a_duplicate_extension_is_refused() {
        let mut v = serving("master", &[]);
        v.request = request(
            "system:node:master",
            &[vec![vec![
                Extension::san(&["master"]),
                Extension::key_usage_digital_signature(),
                Extension::san(&["192.168.120.103"]),
            ]]],
        );
        let r = refusal(&v);
        assert_eq!(r.reason(), "BadExtensions");
        assert!(
            r.to_string()
                .contains("2.5.29.17 is requested more than once"),
            "{r}"
        );
    }

    #[test]
    fn an_unparsable_san_or_extension_is_refused() {
        // A SAN that is not a SEQUENCE.
        let not_seq = Extension::raw(&[2, 5, 29, 17], tlv(0x04, b"master"));
        // A SAN with a byte after its SEQUENCE.
        let mut trailing = Extension::san(&["master"]);
        trailing.value.push(0);
        // A keyUsage that is not a BIT STRING.
        let bad_ku = Extension::raw(&[2, 5, 29, 15], tlv(0x02, &[1]));
        for (what, ext) in [
            ("not a SEQUENCE", not_seq),
            ("trailing byte", trailing),
            ("bad keyUsage", bad_ku),
        ] {
            let mut v = serving("master", &[]);
            v.request = request("system:node:master", &[vec![vec![ext.clone()]]]);
            let r = refusal(&v);
            assert_eq!(r.reason(), "BadExtensions", "serving, {what}: {r}");
            let mut v = client("system:node:master", &[]);
            v.request = request("system:node:master", &[vec![vec![ext]]]);
            assert_eq!(refusal(&v).reason(), "BadExtensions", "client, {what}");
        }
        // A dNSName that is not IA5 (a byte above 0x7f) parses as an
        // invalid GeneralName, which no node owns.
        let bad_name = Extension::raw(&[2, 5, 29, 17], tlv(0x30, &tlv(0x82, b"mast\xffr")));
        let mut v = serving("master", &[]);
        v.request = request("system:node:master", &[vec![vec![bad_name]]]);
        assert_eq!(refusal(&v).reason(), "SANNotOwned");
    }
}

#[test]
fn a_node_is_one_identity_under_all_its_names() {
    let ids = ids();
    assert_eq!(ids.identity("master.okd.example"), "master");
    assert_eq!(ids.identity("MASTER"), "master");
    assert_eq!(ids.identity("Worker-3"), "worker-3");
    assert_eq!(
        ids.node_names("master"),
        vec!["master".to_string(), "master.okd.example".to_string()]
    );
}
