use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use x509_parser::prelude::*;

use super::*;

const NETWORK: &str = "apiVersion: config.openshift.io/v1
kind: Network
metadata:
  name: cluster
spec:
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  serviceNetwork:
  - 172.30.0.0/16
";

fn input(root: &Path) -> Input {
    let assets = root.join("opt/openshift");
    std::fs::create_dir_all(assets.join("manifests")).unwrap();
    std::fs::write(
        assets.join("manifests/cluster-network-02-config.yml"),
        NETWORK,
    )
    .unwrap();
    Input {
        assets,
        etc_kubernetes: root.join("etc/kubernetes"),
        node_ip: "192.168.120.102".parse().unwrap(),
        etcd_image: "registry.example/okd@sha256:1111".into(),
        hyperkube_image: "registry.example/okd@sha256:2222".into(),
    }
}

fn der(path: &Path) -> Vec<u8> {
    let pem = std::fs::read_to_string(path).unwrap();
    okd_pki::pem_blocks(&pem).into_iter().next().unwrap().1
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn etcd_pki_is_signed_by_its_signer_and_names_the_member_address() {
    let d = tempfile::tempdir().unwrap();
    let i = input(d.path());
    etcd::render(&i).unwrap();
    let res = i.etc_kubernetes.join(etcd::RESOURCES);
    let signer_der = der(&i.assets.join("tls/etcd-signer.crt"));
    let (_, signer) = X509Certificate::from_der(&signer_der).unwrap();
    assert!(signer.is_ca());
    for (file, eku_server) in [
        (res.join("etcd-serving.crt"), true),
        (res.join("etcd-peer.crt"), true),
        (i.assets.join("tls/etcd-client.crt"), false),
    ] {
        let d = der(&file);
        let (_, c) = X509Certificate::from_der(&d).unwrap();
        // openssl checks the chain, the validity and the purpose.
        let purpose = if eku_server { "sslserver" } else { "sslclient" };
        let out = std::process::Command::new("openssl")
            .args(["verify", "-purpose", purpose, "-CAfile"])
            .arg(i.assets.join("tls/etcd-signer.crt"))
            .arg(&file)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "{}: {}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let eku = c.extended_key_usage().unwrap().unwrap().value;
        assert_eq!(eku.server_auth, eku_server, "{}", file.display());
        assert!(eku.client_auth, "{}", file.display());
        if eku_server {
            let sans = c.subject_alternative_name().unwrap().unwrap().value;
            let ips: Vec<IpAddr> = sans
                .general_names
                .iter()
                .filter_map(|g| match g {
                    GeneralName::IPAddress(b) if b.len() == 4 => {
                        Some(IpAddr::from(<[u8; 4]>::try_from(*b).unwrap()))
                    }
                    _ => None,
                })
                .collect();
            assert!(ips.contains(&i.node_ip), "{}: {ips:?}", file.display());
            assert!(ips.contains(&"127.0.0.1".parse().unwrap()));
        }
    }
    for key in [
        i.assets.join("tls/etcd-signer.key"),
        i.assets.join("tls/etcd-client.key"),
        res.join("etcd-serving.key"),
        res.join("etcd-peer.key"),
    ] {
        assert_eq!(mode(&key), 0o600, "{}", key.display());
    }
    assert_eq!(
        std::fs::read_to_string(i.assets.join("tls/etcd-ca-bundle.crt")).unwrap(),
        std::fs::read_to_string(i.assets.join("tls/etcd-signer.crt")).unwrap()
    );
}

#[test]
fn etcd_pod_serves_tls_on_the_node_address_from_its_files() {
    let d = tempfile::tempdir().unwrap();
    let i = input(d.path());
    etcd::render(&i).unwrap();
    let text = std::fs::read_to_string(i.etc_kubernetes.join(etcd::POD_FILE)).unwrap();
    let pod: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["image"], "registry.example/okd@sha256:1111");
    assert_eq!(pod["spec"]["hostNetwork"], true);
    let args: Vec<&str> = c["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--advertise-client-urls=https://192.168.120.102:2379"));
    assert!(args.contains(&"--initial-cluster=etcd-bootstrap=https://192.168.120.102:2380"));
    assert!(args.contains(&"--client-cert-auth=true"));
    // Every file a flag names is where the pod mounts it from.
    for a in &args {
        if let Some((_, path)) = a.split_once("=/etc/kubernetes/") {
            let on_host = i.etc_kubernetes.join(path);
            assert!(on_host.exists(), "{a}: {} missing", on_host.display());
        }
    }
    let ipv6 = Input {
        node_ip: "fd00::5".parse().unwrap(),
        ..i.clone()
    };
    let p6 = etcd::pod(&ipv6).to_string();
    assert!(
        p6.contains("--advertise-client-urls=https://[fd00::5]:2379"),
        "{p6}"
    );
    assert!(
        p6.contains("--listen-client-urls=https://[::]:2379"),
        "{p6}"
    );
}

#[test]
fn control_plane_pods_take_the_install_networks_and_the_bootstrap_secrets() {
    let d = tempfile::tempdir().unwrap();
    let i = input(d.path());
    control_plane::render(&i).unwrap();
    let read = |f: &str| -> serde_json::Value {
        serde_yaml_ng::from_str(&std::fs::read_to_string(i.assets.join(f)).unwrap()).unwrap()
    };
    let api = read(control_plane::APISERVER_POD);
    let kcm = read(control_plane::CONTROLLER_MANAGER_POD);
    let sched = read(control_plane::SCHEDULER_POD);
    let args = |p: &serde_json::Value| p["spec"]["containers"][0]["command"].to_string();
    assert!(args(&api).contains("--service-cluster-ip-range=172.30.0.0/16"));
    assert!(args(&api).contains("--advertise-address=192.168.120.102"));
    assert!(args(&kcm).contains("--cluster-cidr=10.128.0.0/14"));
    assert!(args(&sched).contains("--kubeconfig=/etc/kubernetes/bootstrap-secrets/kubeconfig"));
    for p in [&api, &kcm, &sched] {
        assert_eq!(
            p["spec"]["containers"][0]["image"],
            "registry.example/okd@sha256:2222"
        );
        assert_eq!(
            p["spec"]["volumes"][0]["hostPath"]["path"],
            BOOTSTRAP_SECRETS
        );
    }
}

#[test]
fn a_network_manifest_without_a_service_network_names_the_field() {
    let d = tempfile::tempdir().unwrap();
    let i = input(d.path());
    let path = i.assets.join("manifests/cluster-network-02-config.yml");
    std::fs::write(
        &path,
        NETWORK.replace("  serviceNetwork:\n  - 172.30.0.0/16\n", ""),
    )
    .unwrap();
    let e = control_plane::render(&i).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: spec.serviceNetwork: must list at least one network",
            path.display()
        )
    );
    std::fs::remove_file(&path).unwrap();
    let e = control_plane::render(&i).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("cannot read {}", path.display())),
        "{e}"
    );
}
