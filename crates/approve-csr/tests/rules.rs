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
