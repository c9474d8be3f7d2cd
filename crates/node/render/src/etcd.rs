//! Stage `etcd-bootstrap` for an upstream payload: the bootstrap etcd
//! member, as openshift/cluster-etcd-operator's `render` lays it out
//! (`pkg/cmd/render/render.go`, certificates after `pkg/tlshelpers`): a
//! signer, the member's serving and peer certificates for its address,
//! a client certificate for the API server and for `wait-for-etcd`, and
//! the static pod the kubelet starts from `/etc/kubernetes/manifests`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use okd_pki::{CertConfig, CertKey, ExtKeyUsage, KeyUsage, NameAttr, RsaKey};
use time::OffsetDateTime;

use crate::{Input, RenderError, host_dir, write_pod};

/// The bootstrap member's name (`--name`, and the certificates' CN).
pub const MEMBER: &str = "etcd-bootstrap";

/// Where the member's certificates go, under `/etc/kubernetes`.
pub const RESOURCES: &str = "static-pod-resources/etcd-member";

/// The static pod's file, under `/etc/kubernetes`.
pub const POD_FILE: &str = "manifests/etcd-member-pod.yaml";

/// etcd's data directory on the node.
pub const DATA_DIR: &str = "/var/lib/etcd";

/// The client port every member listens on.
pub const CLIENT_PORT: u16 = 2379;

/// The peer port.
pub const PEER_PORT: u16 = 2380;

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

fn pki(what: &'static str) -> impl FnOnce(okd_pki::PkiError) -> RenderError {
    move |source| RenderError::Pki { what, source }
}

fn leaf(o: &str, cn: &str, ips: &[IpAddr], usages: Vec<ExtKeyUsage>) -> CertConfig {
    CertConfig {
        subject: vec![
            (NameAttr::Organization, o.to_string()),
            (NameAttr::CommonName, cn.to_string()),
        ],
        dns_names: if ips.is_empty() {
            Vec::new()
        } else {
            vec!["localhost".to_string()]
        },
        ip_addresses: ips.to_vec(),
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            cert_sign: false,
        },
        ext_key_usage: usages,
        validity: 3 * YEAR,
        is_ca: false,
    }
}

fn signed(cfg: &CertConfig, ca: &CertKey, what: &'static str) -> Result<CertKey, RenderError> {
    let key = RsaKey::generate().map_err(pki(what))?;
    okd_pki::signed(cfg, key, ca, OffsetDateTime::now_utc()).map_err(pki(what))
}

/// Writes the etcd PKI and the bootstrap member's static pod for
/// `input.node_ip`: `<assets>/tls/etcd-signer.{crt,key}`,
/// `tls/etcd-ca-bundle.crt`, `tls/etcd-client.{crt,key}` (keys 0600),
/// `/etc/kubernetes/static-pod-resources/etcd-member/{ca.crt,
/// etcd-serving.{crt,key}, etcd-peer.{crt,key}}` and
/// `/etc/kubernetes/manifests/etcd-member-pod.yaml`. A new signer on every
/// run: the stage is repeated only when it did not finish, and then no
/// member has used the old one.
///
/// # Errors
/// [`RenderError::Pki`] when a key or certificate cannot be made,
/// [`RenderError::Fs`] when a file cannot be written.
pub fn render(input: &Input) -> Result<(), RenderError> {
    let signer_key = RsaKey::generate().map_err(pki("the etcd signer key"))?;
    let signer = okd_pki::self_signed(
        &CertConfig::signer("openshift", "etcd-signer", 10 * YEAR),
        signer_key,
        OffsetDateTime::now_utc(),
    )
    .map_err(pki("the etcd signer"))?;
    let (serving, peer) = member_certs(&signer, MEMBER, input.node_ip)?;
    let client = signed(
        &leaf("system:etcd", "etcd", &[], vec![ExtKeyUsage::ClientAuth]),
        &signer,
        "the etcd client certificate",
    )?;

    let tls = input.assets.join("tls");
    let w = |dir: &std::path::Path, name: &str, data: &str, mode: u32| {
        okd_fs::write_atomic(&dir.join(name), data.as_bytes(), mode)
    };
    w(&tls, "etcd-signer.crt", &signer.cert.pem, 0o644)?;
    w(&tls, "etcd-signer.key", &signer.key.private_pem(), 0o600)?;
    w(&tls, "etcd-ca-bundle.crt", &signer.cert.pem, 0o644)?;
    w(&tls, "etcd-client.crt", &client.cert.pem, 0o644)?;
    w(&tls, "etcd-client.key", &client.key.private_pem(), 0o600)?;
    let res = input.etc_kubernetes.join(RESOURCES);
    okd_fs::create_dir_all(&res, 0o755)?;
    w(&res, "ca.crt", &signer.cert.pem, 0o644)?;
    w(&res, "etcd-serving.crt", &serving.cert.pem, 0o644)?;
    w(&res, "etcd-serving.key", &serving.key.private_pem(), 0o600)?;
    w(&res, "etcd-peer.crt", &peer.cert.pem, 0o644)?;
    w(&res, "etcd-peer.key", &peer.key.private_pem(), 0o600)?;
    write_pod(&input.etc_kubernetes.join(POD_FILE), &pod(input))
}

/// `https://<ip>:<port>`, with brackets for IPv6.
pub fn url(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(a) => format!("https://{a}:{port}"),
        IpAddr::V6(a) => format!("https://[{a}]:{port}"),
    }
}

/// The bootstrap member's static pod: host network, a new one-member
/// cluster advertised on the node's address, TLS with client certificates
/// on both ports.
pub fn pod(input: &Input) -> serde_json::Value {
    let ip = input.node_ip;
    member_pod(
        &input.etcd_image,
        MEMBER,
        ip,
        &format!("{MEMBER}={}", url(ip, PEER_PORT)),
        "new",
    )
}

/// A member's static pod (`/etc/kubernetes/manifests/etcd-member-pod.yaml`
/// on its node): `image`'s `etcd` named `name`, on host network at `ip`,
/// with `--initial-cluster=<initial_cluster>` (`name=peerURL,…`) and
/// `--initial-cluster-state=<state>` (`new` for the bootstrap member,
/// `existing` for a master added to the running cluster, as
/// openshift/cluster-etcd-operator's etcd pod does after `member add`),
/// its certificates in `/etc/kubernetes/static-pod-resources/etcd-member`
/// and its data in [`DATA_DIR`].
pub fn member_pod(
    image: &str,
    name: &str,
    ip: IpAddr,
    initial_cluster: &str,
    state: &str,
) -> serde_json::Value {
    let res = format!("/etc/kubernetes/{RESOURCES}");
    let (res_vol, res_mount) = host_dir("certs", &res, true);
    let (data_vol, data_mount) = host_dir("data-dir", DATA_DIR, false);
    let any = if ip.is_ipv6() { "[::]" } else { "0.0.0.0" };
    let args = vec![
        "etcd".to_string(),
        format!("--name={name}"),
        format!("--data-dir={DATA_DIR}"),
        format!("--listen-client-urls=https://{any}:{CLIENT_PORT}"),
        format!("--advertise-client-urls={}", url(ip, CLIENT_PORT)),
        format!("--listen-peer-urls=https://{any}:{PEER_PORT}"),
        format!("--initial-advertise-peer-urls={}", url(ip, PEER_PORT)),
        format!("--initial-cluster={initial_cluster}"),
        format!("--initial-cluster-state={state}"),
        format!("--cert-file={res}/etcd-serving.crt"),
        format!("--key-file={res}/etcd-serving.key"),
        format!("--trusted-ca-file={res}/ca.crt"),
        "--client-cert-auth=true".to_string(),
        format!("--peer-cert-file={res}/etcd-peer.crt"),
        format!("--peer-key-file={res}/etcd-peer.key"),
        format!("--peer-trusted-ca-file={res}/ca.crt"),
        "--peer-client-cert-auth=true".to_string(),
    ];
    let pod_name = if name == MEMBER {
        "etcd-bootstrap-member".to_string()
    } else {
        "etcd-member".to_string()
    };
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name,
            "namespace": "openshift-etcd",
            "labels": { "k8s-app": "etcd" },
        },
        "spec": {
            "hostNetwork": true,
            "containers": [{
                "name": "etcd-member",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": args,
                "volumeMounts": [res_mount, data_mount],
            }],
            "volumes": [res_vol, data_vol],
        },
    })
}

/// A member's serving and peer certificates for `ip` (and localhost),
/// signed by `signer` (the etcd signer of `<assets>/tls/etcd-signer.*`),
/// with openshift/cluster-etcd-operator `pkg/tlshelpers`' subjects
/// (`system:etcd-server:<name>`, `system:etcd-peer:<name>`): returns
/// `(serving, peer)`.
///
/// # Errors
/// [`RenderError::Pki`] when a key or certificate cannot be made.
pub fn member_certs(
    signer: &CertKey,
    name: &str,
    ip: IpAddr,
) -> Result<(CertKey, CertKey), RenderError> {
    let ips = [
        ip,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ];
    let both = vec![ExtKeyUsage::ServerAuth, ExtKeyUsage::ClientAuth];
    let serving = signed(
        &leaf(
            "system:etcd-servers",
            &format!("system:etcd-server:{name}"),
            &ips,
            both.clone(),
        ),
        signer,
        "the etcd serving certificate",
    )?;
    let peer = signed(
        &leaf(
            "system:etcd-peers",
            &format!("system:etcd-peer:{name}"),
            &ips,
            both,
        ),
        signer,
        "the etcd peer certificate",
    )?;
    Ok((serving, peer))
}
