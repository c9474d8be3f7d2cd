//! The client commands against the real assisted service, in-process on
//! 127.0.0.1 over SQLite: a cluster from an install-config-like file
//! (the example's, and the errors naming file and field), hosts and
//! validations after agents report, install refused then accepted and
//! awaited, the credentials written 0600, and an address where nothing
//! listens.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use okd_assisted_api::rest::{Cluster, ClusterCreateParams, Steps};
use okd_assisted_api::{Cpu, Disk, Eligibility, Interface, Inventory, Memory};
use okd_assisted_client::{Client, Error, commands};
use serde_json::json;

const PS: &str = r#"{"auths":{"registry.example":{"auth":"c2VjcmV0OnMzY3JldAo="}}}"#;
/// The secret part of [`PS`], never to be printed.
const SECRET: &str = "c2VjcmV0OnMzY3JldAo";

// ---- the service in-process (as crates/assisted/service/tests/common)

struct Svc {
    /// `https://127.0.0.1:<port>` (the service's root).
    root: String,
    /// The admin token and CA the service made in its directory, as the
    /// client commands run with that `--dir` read them.
    token: String,
    ca: Vec<u8>,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(dir: &Path) -> Svc {
    let url = okd_assisted_service::sqlite_url(dir);
    let mut opts = okd_assisted_service::Options::new(url, "127.0.0.1:0".parse().unwrap());
    // As a user starts it: authentication and TLS on.
    opts.auth = Some(std::sync::Arc::new(
        okd_assisted_service::auth::Keys::load_or_create(dir, None).unwrap(),
    ));
    opts.tls = Some(std::sync::Arc::new(
        okd_assisted_service::tls::Tls::load_or_create(dir, &[], &["127.0.0.1".parse().unwrap()])
            .unwrap(),
    ));
    opts.monitor_interval = Duration::from_millis(200);
    opts.next_instruction_seconds = 1;
    opts.check_interval_seconds = 1;
    let state = okd_assisted_service::open(opts).await.unwrap();
    let listener = okd_listen::Listener::bind(
        "127.0.0.1:0".parse().unwrap(),
        okd_listen::Limits::default(),
    )
    .await
    .unwrap();
    let root = format!("https://{}", listener.local_addr().unwrap());
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(okd_assisted_service::serve(state, listener, async {
        let _ = rx.await;
    }));
    let token = okd_assisted_client::client::stored_token(dir)
        .unwrap()
        .expect("the service's admin token in its directory");
    let ca = okd_assisted_client::client::stored_ca(dir)
        .unwrap()
        .expect("the service's CA in its directory");
    Svc {
        root,
        token,
        ca,
        stop,
        task,
    }
}

impl Svc {
    /// The client commands' client, at `base`.
    fn client(&self, base: &str) -> Client {
        Client::with_ca(base, Some(self.token.clone()), Some(&self.ca)).unwrap()
    }

    /// A plain HTTP client of the service (the agents' side), with the
    /// admin token.
    fn http(&self) -> reqwest::Client {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {}", self.token).parse().unwrap(),
        );
        reqwest::Client::builder()
            .default_headers(h)
            .tls_certs_only(reqwest::Certificate::from_pem_bundle(&self.ca).unwrap())
            .build()
            .unwrap()
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

fn inventory(name: &str, ip: &str, mem_gib: u64) -> Inventory {
    Inventory {
        hostname: name.into(),
        cpu: Cpu {
            count: 8,
            frequency: 2400.0,
            model_name: "test".into(),
            architecture: "x86_64".into(),
            flags: vec![],
        },
        memory: Memory {
            physical_bytes: mem_gib << 30,
            usable_bytes: mem_gib << 30,
            physical_bytes_method: "dmidecode".into(),
        },
        disks: vec![Disk {
            id: "/dev/disk/by-path/pci-0000:00:04.0".into(),
            name: "vda".into(),
            path: "/dev/vda".into(),
            drive_type: "HDD".into(),
            size_bytes: 120_000_000_000,
            installation_eligibility: Eligibility {
                eligible: true,
                not_eligible_reasons: vec![],
            },
            ..Default::default()
        }],
        interfaces: vec![Interface {
            name: "ens3".into(),
            mac_address: "52:54:00:00:00:01".into(),
            ipv4_addresses: vec![format!("{ip}/24")],
            mtu: 1500,
            has_carrier: true,
            kind: "physical".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Plays the agent once: polls the host's steps and answers them.
async fn poll_and_answer(c: &reqwest::Client, api: &str, ie: &str, id: &str, inv: &Inventory) {
    let url = format!("{api}/infra-envs/{ie}/hosts/{id}/instructions");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let steps: Steps = c
        .get(format!("{url}?timestamp={now}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for st in &steps.instructions {
        let inv_json = serde_json::to_string(inv).unwrap();
        let Some(output) =
            okd_test_utils::assisted::healthy_output(&st.step_type, &st.args, &inv_json)
        else {
            continue;
        };
        let r = c
            .post(&url)
            .json(&json!({"step_type": st.step_type, "step_id": st.step_id, "exit_code": 0, "output": output}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 204);
    }
}

/// Plays every host's agent (polls and answers) every 200 ms until the
/// cluster satisfies `pred` (30 s at most).
async fn poll_until(
    (http, api, ie): (&reqwest::Client, &str, &str),
    hosts: &[(String, Inventory)],
    (client, id): (&Client, &str),
    what: &str,
    pred: impl Fn(&Cluster) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (hid, inv) in hosts {
            poll_and_answer(http, api, ie, hid, inv).await;
        }
        let cl = client.cluster(id).await.unwrap();
        if pred(&cl) || Instant::now() >= deadline {
            return wait_for(client, id, what, pred).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn wait_for(client: &Client, id: &str, what: &str, pred: impl Fn(&Cluster) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cl = client.cluster(id).await.unwrap();
        if pred(&cl) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {what}: cluster {} ({}); hosts {:?}",
            cl.status,
            cl.status_info,
            cl.hosts
                .iter()
                .map(|h| (h.status.clone(), h.status_info.clone()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn write(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("install-config.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

fn config(name: &str, platform: &str) -> String {
    format!(
        "apiVersion: v1
baseDomain: example.com
metadata:
  name: {name}
controlPlane:
  name: master
  replicas: 3
compute:
- name: worker
  replicas: 0
networking:
  clusterNetwork:
  - cidr: 10.128.0.0/14
    hostPrefix: 23
  serviceNetwork:
  - 172.30.0.0/16
  machineNetwork:
  - cidr: 192.168.126.0/24
  networkType: OVNKubernetes
platform:
{platform}
pullSecret: '{PS}'
sshKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkd test@example
"
    )
}

const BAREMETAL: &str = "  baremetal:
    apiVIPs:
    - 192.168.126.253
    ingressVIPs:
    - 192.168.126.254";

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

// ---- the tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_from_file_hosts_validations_install_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(dir.path()).await;
    let client = svc.client(&svc.root);
    assert!(
        !format!("{client:?}").contains(&svc.token),
        "token redacted"
    );
    // Without the token, or without the CA, nothing is answered.
    let e = commands::list_clusters(&Client::with_ca(&svc.root, None, Some(&svc.ca)).unwrap())
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Status { status: 401, .. }), "{e}");
    let e = commands::list_clusters(&Client::new(&svc.root, Some(svc.token.clone())).unwrap())
        .await
        .unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    let api = format!("{}/api/assisted-install/v2", svc.root);
    let http = svc.http();

    let path = write(dir.path(), &config("demo", BAREMETAL));
    let (cl, ie) = commands::create_cluster_from_file(&client, &path, None)
        .await
        .unwrap();
    assert_eq!(cl.name, "demo");
    assert_eq!(cl.openshift_version, "4.19");
    assert_eq!(cl.base_dns_domain, "example.com");
    assert_eq!(cl.control_plane_count, 3);
    assert_eq!(cl.api_vips[0].ip, "192.168.126.253");
    assert_eq!(cl.ingress_vips[0].ip, "192.168.126.254");
    assert_eq!(cl.machine_networks[0].cidr, "192.168.126.0/24");
    assert_eq!(cl.network_type, "OVNKubernetes");
    assert!(cl.ssh_public_key.starts_with("ssh-ed25519 "));
    assert!(cl.pull_secret_set);
    assert_eq!(ie.name, "demo-infra-env");
    assert_eq!(ie.cluster_id, cl.id);
    assert!(ie.pull_secret_set);
    assert_eq!(ie.ssh_authorized_key, cl.ssh_public_key);
    let text = commands::describe_created(&cl, &ie);
    assert!(text.contains(&cl.id) && text.contains(&ie.id), "{text}");
    assert!(!text.contains(SECRET), "no pull secret printed");

    // The same name again: refused, naming the cluster there is.
    let err = commands::create_cluster_from_file(&client, &path, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Exists { ref id, .. } if *id == cl.id),
        "{err}"
    );

    let hosts = commands::list_hosts(&client, "demo").await.unwrap();
    assert!(hosts.contains("no hosts have registered yet"), "{hosts}");

    // Not ready: install refused with the service's reason and status.
    let mut out = Vec::new();
    let err = commands::install(&client, "demo", None, &mut out)
        .await
        .unwrap_err();
    match &err {
        Error::Status { status, reason, .. } => {
            assert_eq!(*status, 409);
            assert!(
                reason.starts_with("Cluster is not ready for installation"),
                "{reason}"
            );
        }
        other => panic!("{other}"),
    }
    // In words first, the request and its status after (#42 item 7).
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "starting the installation of cluster {} failed: Cluster is not ready for installation",
            cl.id
        )),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "(POST {}/api/assisted-install/v2/clusters/{}/actions/install: HTTP 409)",
            svc.root, cl.id
        )),
        "{text}"
    );
    // Nothing generated yet: credentials refused saying why and what to do
    // (#42 item 7), not the service's kubeconfig-noingress behind a URL.
    let assets = dir.path().join("assets");
    let err = commands::download_credentials(&client, "demo", &assets)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NoCredentialsYet { status: 409, cluster_status, .. } if cluster_status == "pending-for-input" || cluster_status == "insufficient"),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(
            "the credentials of cluster demo exist only once its installation has started (cluster status: "
        ),
        "{text}"
    );
    assert!(
        text.contains("start it with `okd-install assisted install --cluster demo`"),
        "{text}"
    );
    assert!(!text.contains("noingress"), "{text}");
    assert!(
        text.ends_with("/downloads/credentials?file_name=kubeconfig: HTTP 409)"),
        "{text}"
    );
    assert!(!assets.exists(), "nothing written on failure");

    // Agents report: two hosts with enough memory, one with too little.
    let ids: Vec<String> = (0..3)
        .map(|i| format!("44444444-0000-0000-0000-00000000000{i}"))
        .collect();
    let mut agents: Vec<(String, Inventory)> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let r = http
            .post(format!("{api}/infra-envs/{}/hosts", ie.id))
            .json(&json!({"host_id": id}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        let mem = if i == 2 { 4 } else { 16 };
        let inv = inventory(&format!("master-{i}"), &format!("192.168.126.1{i}"), mem);
        poll_and_answer(&http, &api, &ie.id, id, &inv).await;
        agents.push((id.to_string(), inv));
    }
    poll_until(
        (&http, &api, &ie.id),
        &agents,
        (&client, &cl.id),
        "two known, one insufficient",
        |c| {
            let st: Vec<&str> = c.hosts.iter().map(|h| h.status.as_str()).collect();
            st.iter().filter(|s| **s == "known").count() == 2 && st.contains(&"insufficient")
        },
    )
    .await;
    assert_eq!(client.hosts(&ie.id).await.unwrap().len(), 3);

    let hosts = commands::list_hosts(&client, "demo").await.unwrap();
    let lines: Vec<&str> = hosts.lines().collect();
    assert_eq!(lines.len(), 4, "{hosts}");
    for h in ["NAME", "ROLE", "STATUS", "CPUS", "MEMORY(GiB)", "INFO"] {
        assert!(lines[0].contains(h), "{hosts}");
    }
    assert!(
        lines[1].starts_with("master-0 ") && lines[1].contains(" known "),
        "{hosts}"
    );
    assert!(
        lines[1].contains(" 8 ") && lines[1].contains(" 16.0 "),
        "{hosts}"
    );
    assert!(
        lines[3].starts_with("master-2 ")
            && lines[3].contains(" insufficient ")
            && lines[3].contains(" 4.0 "),
        "{hosts}"
    );

    // Validations: the cluster first, then the failing host, failures first.
    let v = commands::validations(&client, "demo", false).await.unwrap();
    let titles: Vec<&str> = v.lines().filter(|l| !l.starts_with("  ")).collect();
    assert_eq!(titles.len(), 4, "{v}");
    assert!(titles[0].starts_with("cluster demo (insufficient)"), "{v}");
    assert!(titles[1].starts_with("host master-2 (insufficient)"), "{v}");
    let sections: Vec<Vec<&str>> = v
        .lines()
        .collect::<Vec<_>>()
        .split(|l| !l.starts_with("  "))
        .map(<[&str]>::to_vec)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(sections.len(), 4, "{v}");
    let rank = |l: &str| {
        ["failure", "error", "pending", "disabled", "success"]
            .iter()
            .position(|s| l.trim_start().starts_with(s))
            .unwrap_or_else(|| panic!("no status in {l:?}"))
    };
    for s in &sections {
        let ranks: Vec<usize> = s.iter().map(|l| rank(l)).collect();
        assert!(ranks.is_sorted(), "failing first:\n{v}");
    }
    assert!(
        sections[1][0].starts_with("  failure  has-min-memory: "),
        "{v}"
    );
    let failing = commands::validations(&client, "demo", true).await.unwrap();
    assert!(failing.contains("has-min-memory"), "{failing}");
    assert!(!failing.contains("success"), "{failing}");
    assert!(!failing.contains("host master-0"), "{failing}");

    // The third host gets more memory; the cluster becomes ready.
    agents[2].1 = inventory("master-2", "192.168.126.12", 16);
    poll_until(
        (&http, &api, &ie.id),
        &agents,
        (&client, &cl.id),
        "ready",
        |c| c.status == "ready",
    )
    .await;
    let hosts = commands::list_hosts(&client, "demo").await.unwrap();
    for l in hosts.lines().skip(1) {
        assert!(
            l.contains(" master (suggested) ") && l.contains(" known "),
            "{hosts}"
        );
    }
    assert_eq!(
        commands::validations(&client, "demo", true).await.unwrap(),
        "cluster demo: no failing validations\n"
    );
    // Ready, not installing: still no credentials, and the one step to take.
    let err = commands::download_credentials(&client, "demo", &assets)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "the credentials of cluster demo exist only once its installation has started (cluster status: ready); start it with `okd-install assisted install --cluster demo` (GET https://"
        ),
        "{err}"
    );

    // Install, waiting for it to start (bounded), while the agents keep
    // polling (the preparing hosts measure their disks).
    let running = {
        let (http, api, ie, agents) = (http.clone(), api.clone(), ie.id.clone(), agents.clone());
        tokio::spawn(async move {
            loop {
                for (hid, inv) in &agents {
                    poll_and_answer(&http, &api, &ie, hid, inv).await;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let mut out = Vec::new();
    let done = commands::install(&client, &cl.id, Some(Duration::from_secs(120)), &mut out)
        .await
        .unwrap();
    running.abort();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(done.status, "installing", "{out}");
    assert!(
        out.starts_with("cluster demo: installation accepted: preparing-for-installation"),
        "{out}"
    );
    assert!(out.contains("cluster demo: installing ("), "{out}");

    // The credentials, 0600 in <dir>/auth, the directories 0750.
    let written = commands::download_credentials(&client, "demo", &assets)
        .await
        .unwrap();
    assert_eq!(
        written,
        vec![
            assets.join("auth/kubeconfig"),
            assets.join("auth/kubeadmin-password")
        ]
    );
    for p in &written {
        assert_eq!(mode(p), 0o600, "{}", p.display());
        assert!(std::fs::metadata(p).unwrap().len() > 0);
    }
    assert_eq!(mode(&assets), 0o750);
    assert_eq!(mode(&assets.join("auth")), 0o750);
    let kc = std::fs::read_to_string(&written[0]).unwrap();
    // clientcmd v1 as openshift-install writes it (no apiVersion/kind).
    assert!(
        kc.contains("clusters:") && kc.contains("server: https://api.demo.example.com:6443"),
        "not the cluster's kubeconfig"
    );
    let leftovers: Vec<_> = std::fs::read_dir(assets.join("auth"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(okd_fs::TEMP_PREFIX))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let events = commands::list_events(&client, "demo").await.unwrap();
    assert!(
        events.contains("Successfully registered cluster demo"),
        "{events}"
    );
    assert!(events.contains("installing"), "{events}");
    let all = commands::list_clusters(&client).await.unwrap();
    assert!(all.lines().nth(1).unwrap().starts_with("demo "), "{all}");
    assert!(all.contains(" installing ") && all.contains(" 3 "), "{all}");

    svc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_refused_naming_file_and_field_and_the_example() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(dir.path()).await;
    // A base with the API path given is taken too.
    let client = svc.client(&format!("{}/api/assisted-install/v2/", svc.root));
    assert_eq!(client.base(), svc.root);

    let refused = |text: String| {
        let client = client.clone();
        let dir = dir.path().to_path_buf();
        async move {
            let path = write(&dir, &text);
            let e = commands::create_cluster_from_file(&client, &path, None)
                .await
                .unwrap_err();
            assert!(matches!(e, Error::Config(_)), "{e}");
            let s = e.to_string();
            assert!(
                s.starts_with(&format!("{}: ", path.display())),
                "the file is named: {s}"
            );
            assert!(!s.contains(SECRET), "no pull secret in errors: {s}");
            s
        }
    };

    // An unknown top-level field.
    let e = refused(config("a", BAREMETAL) + "proxy:\n  httpProxy: http://proxy:3128\n").await;
    assert!(
        e.contains("install-config.yaml: proxy: the assisted flow does not take this field"),
        "{e}"
    );
    // A bad VIP.
    let e = refused(config("a", &BAREMETAL.replace("192.168.126.253", "1.2.3"))).await;
    assert!(
        e.ends_with(
            r#"install-config.yaml: platform.baremetal.apiVIPs[0]: "1.2.3" is not an IP address"#
        ),
        "{e}"
    );
    // A VIP outside the machine network.
    let e = refused(config(
        "a",
        &BAREMETAL.replace("192.168.126.254", "10.0.0.1"),
    ))
    .await;
    assert!(
        e.contains("platform.baremetal.ingressVIPs[0]: 10.0.0.1 is not in networking.machineNetwork (192.168.126.0/24)"),
        "{e}"
    );
    // A baremetal field of the IPI flow.
    let e = refused(config(
        "a",
        &format!("{BAREMETAL}\n    provisioningNetwork: Disabled"),
    ))
    .await;
    assert!(
        e.contains(
            "platform.baremetal.provisioningNetwork: the assisted flow does not take this field"
        ),
        "{e}"
    );
    // A nested unknown field: serde_yaml_ng's path, line and column.
    let e = refused(config("a", BAREMETAL).replace(
        "  networkType:",
        "  machineCIDR: 10.0.0.0/16\n  networkType:",
    ))
    .await;
    assert!(e.contains("networking: unknown field `machineCIDR`"), "{e}");
    assert!(e.contains("line "), "{e}");
    // No pull secret; a bad one (its text is not shown).
    let e = refused(config("a", BAREMETAL).replace(&format!("pullSecret: '{PS}'\n"), "")).await;
    assert!(e.contains("pullSecret: required"), "{e}");
    let e = refused(config("a", BAREMETAL).replace(PS, &format!(r#"{{"nope":"{SECRET}"}}"#))).await;
    assert!(e.contains("pullSecret: must be a JSON document"), "{e}");
    // Three masters without VIPs; a host prefix shorter than its network.
    let e = refused(config("a", "  baremetal: {}")).await;
    assert!(
        e.contains("platform.baremetal.apiVIPs: required for a cluster of 3 control-plane nodes"),
        "{e}"
    );
    let e = refused(config("a", BAREMETAL).replace("hostPrefix: 23", "hostPrefix: 12")).await;
    assert!(
        e.contains(
            "networking.clusterNetwork[0].hostPrefix: 12: must be longer than the network's /14"
        ),
        "{e}"
    );

    // The example: platform none with three masters is refused, naming why.
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../examples/baremetal-ha/install-config.yaml");
    let text = std::fs::read_to_string(&example).unwrap();
    let e = commands::create_cluster_from_file(&client, &example, None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("install-config.yaml: platform.none: a cluster of 3 control-plane nodes needs platform.baremetal with apiVIPs and ingressVIPs in the assisted flow (the service has no user-managed networking; only a single-node cluster, controlPlane.replicas 1, takes platform none)"),
        "{e}"
    );
    assert!(
        client.clusters().await.unwrap().is_empty(),
        "nothing was sent"
    );

    // The example with VIPs in its machine network: everything else of it
    // (fips: false, hyperthreading, compute) is taken.
    assert!(
        text.contains("platform:\n  none: {}\n"),
        "the example changed"
    );
    let vips = text.replace(
        "platform:\n  none: {}\n",
        "platform:\n  baremetal:\n    apiVIP: 192.168.130.253\n    ingressVIPs: [192.168.130.254]\n",
    );
    let path = write(dir.path(), &vips);
    let cfg = okd_assisted_client::config::read_install_config(&path, "4.19").unwrap();
    assert_eq!(cfg.workers, Some(2));
    let (cl, ie) = commands::create_cluster_from_file(&client, &path, Some("4.18"))
        .await
        .unwrap();
    assert_eq!(
        (cl.name.as_str(), cl.base_dns_domain.as_str()),
        ("ocp", "lab.example")
    );
    assert_eq!(cl.openshift_version, "4.18");
    assert_eq!(
        cl.api_vips[0].ip, "192.168.130.253",
        "the deprecated apiVIP"
    );
    assert_eq!(cl.machine_networks[0].cidr, "192.168.130.0/24");
    assert_eq!(ie.name, "ocp-infra-env");
    let e = commands::create_cluster_from_file(&client, &path, Some("latest"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Version(_)), "{e}");

    // Names: two clusters named alike are ambiguous; an unknown one lists
    // those there are.
    let twin = ClusterCreateParams {
        name: "ocp".into(),
        openshift_version: "4.19".into(),
        pull_secret: PS.into(),
        ..Default::default()
    };
    let other = client.create_cluster(&twin).await.unwrap();
    let e = client.find_cluster("ocp").await.unwrap_err();
    assert!(matches!(e, Error::Ambiguous { .. }), "{e}");
    let s = e.to_string();
    assert!(
        s.contains(&cl.id) && s.contains(&other.id) && s.contains("give the id"),
        "{s}"
    );
    assert_eq!(client.find_cluster(&other.id).await.unwrap().id, other.id);
    let e = commands::list_hosts(&client, "nope")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no cluster is named \"nope\"") && e.contains(&format!("ocp ({})", cl.id)),
        "{e}"
    );
    // A refusal of the service carries its reason and status.
    let e = client
        .create_cluster(&ClusterCreateParams {
            name: "Bad_Name".into(),
            ..twin
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&e, Error::Status { status: 400, reason, .. } if reason.starts_with("name \"Bad_Name\"")),
        "{e}"
    );

    svc.stop().await;
}

#[tokio::test]
async fn nothing_listening_names_the_url() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let client = Client::new(&url, None).unwrap();
    let e = commands::list_clusters(&client).await.unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e}");
    let s = e.to_string();
    assert!(s.contains(&format!("at {url} (")), "{s}");
    assert!(s.contains("okd-install assisted serve"), "{s}");

    // The admin token never goes over plain HTTP off loopback.
    assert!(matches!(
        Client::new("http://192.0.2.1:8090", Some("t".into())),
        Err(Error::Url { .. })
    ));
    for bad in ["127.0.0.1:8090", "ftp://x", "http://x/?a=b"] {
        assert!(
            matches!(Client::new(bad, None), Err(Error::Url { .. })),
            "{bad}"
        );
    }
    assert!(matches!(
        Client::new(&url, Some("a\nb".into())),
        Err(Error::Token)
    ));
}

/// Issue #42 item 1: five freshly booted machines all called `vm` are
/// told apart by id, MAC and address in `hosts` and `validations`, and
/// `set_host` picks one by MAC, address or id prefix (several matches and
/// none refused, listing the candidates).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_with_one_name_are_told_apart_and_set() {
    let dir = tempfile::tempdir().unwrap();
    let svc = start(dir.path()).await;
    let client = svc.client(&svc.root);
    let api = format!("{}/api/assisted-install/v2", svc.root);
    let http = svc.http();
    let path = write(dir.path(), &config("same", BAREMETAL));
    let (cl, ie) = commands::create_cluster_from_file(&client, &path, None)
        .await
        .unwrap();
    // Two ids share their first eight characters.
    let ids = [
        "0f1e2d3c-aaaa-4000-8000-000000000001",
        "0f1e2d3c-bbbb-4000-8000-000000000002",
        "71c2a9e4-0000-4000-8000-000000000003",
        "a83b11f0-0000-4000-8000-000000000004",
        "d4e5f6a7-0000-4000-8000-000000000005",
    ];
    let shown = [
        "0f1e2d3c-a",
        "0f1e2d3c-b",
        "71c2a9e4",
        "a83b11f0",
        "d4e5f6a7",
    ];
    let mac = |i: usize| format!("52:54:00:42:00:0{i}");
    let ip = |i: usize| format!("192.168.126.2{i}");
    let mut agents: Vec<(String, Inventory)> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let r = http
            .post(format!("{api}/infra-envs/{}/hosts", ie.id))
            .json(&json!({"host_id": id}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        let mut inv = inventory("vm", &ip(i), 16);
        inv.interfaces[0].mac_address = mac(i);
        poll_and_answer(&http, &api, &ie.id, id, &inv).await;
        agents.push((id.to_string(), inv));
    }
    poll_until(
        (&http, &api, &ie.id),
        &agents,
        (&client, &cl.id),
        "every host's name found not unique",
        |c| {
            c.hosts.len() == 5
                && c.hosts
                    .iter()
                    .all(|h| h.validations_info.contains("is not unique"))
        },
    )
    .await;

    // `hosts`: five distinct lines, each with its id prefix, MAC and address.
    let text = commands::list_hosts(&client, "same").await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    for h in ["NAME", "ID", "ROLE", "STATUS", "MAC", "ADDRESS", "DISK"] {
        assert!(lines[0].contains(h), "{text}");
    }
    let mut distinct = lines[1..].to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 5, "five distinct lines:\n{text}");
    for i in 0..5 {
        let line = lines
            .iter()
            .find(|l| l.contains(&mac(i)))
            .unwrap_or_else(|| panic!("no line with {}:\n{text}", mac(i)));
        assert!(line.starts_with("vm "), "{text}");
        assert!(
            line.contains(&format!(" {} ", shown[i])) && !line.contains(ids[i]),
            "the id's shortest unambiguous prefix:\n{text}"
        );
        assert!(line.contains(&format!(" {} ", ip(i))), "{text}");
    }

    // `validations --failing`: each host by name, id, MAC and address.
    let v = commands::validations(&client, "same", true).await.unwrap();
    let titles: Vec<&str> = v.lines().filter(|l| l.starts_with("host ")).collect();
    assert_eq!(titles.len(), 5, "{v}");
    for i in 0..5 {
        let t = titles
            .iter()
            .find(|t| t.contains(&format!("id {},", shown[i])))
            .unwrap_or_else(|| panic!("no section of host {}:\n{v}", ids[i]));
        assert!(
            t.starts_with("host vm (")
                && t.contains(&format!("MAC {}", mac(i)))
                && t.contains(&format!("address {}", ip(i))),
            "{v}"
        );
    }
    assert!(v.contains("is not unique"), "{v}");

    // The shared name, or a shared id prefix: refused, listing the hosts.
    let err = commands::set_host(&client, Some("same"), "vm", Some("x"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::AmbiguousHost { matches, .. } if matches.len() == 5),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.starts_with("5 hosts match \"vm\""), "{text}");
    for (i, id) in ids.iter().enumerate() {
        assert!(
            text.contains(id) && text.contains(&mac(i)) && text.contains(&ip(i)),
            "{text}"
        );
    }
    let err = commands::set_host(&client, None, "0f1e2d3c", None, Some("master"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::AmbiguousHost { matches, .. } if matches.len() == 2),
        "{err}"
    );
    // Nothing matches: refused, listing what there is.
    let err = commands::set_host(&client, Some("same"), "52:54:00:99:99:99", Some("x"), None)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("no host of cluster same matches \"52:54:00:99:99:99\""),
        "{text}"
    );
    assert!(text.contains(ids[4]) && text.contains(&mac(4)), "{text}");
    let err = commands::set_host(&client, None, "vm", None, None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NothingToSet), "{err}");

    // By MAC (as typed with dashes, upper case): a name and a role.
    let out = commands::set_host(
        &client,
        Some("same"),
        &mac(3).replace(':', "-").to_uppercase(),
        Some("master-3"),
        Some("master"),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        format!(
            "host {} (MAC {}, address {}): name vm → master-3, role auto-assign → master\n",
            ids[3],
            mac(3),
            ip(3)
        )
    );
    // By address, by id prefix, by a name now unique (every infra-env).
    commands::set_host(&client, None, &ip(1), None, Some("worker"))
        .await
        .unwrap();
    commands::set_host(&client, None, "0f1e2d3c-a", Some("master-0"), None)
        .await
        .unwrap();
    commands::set_host(&client, None, "master-3", Some("master-3b"), None)
        .await
        .unwrap();
    let hosts = client.hosts(&ie.id).await.unwrap();
    let h = |id: &str| hosts.iter().find(|h| h.id == id).unwrap();
    assert_eq!(
        (
            h(ids[3]).requested_hostname.as_str(),
            h(ids[3]).role.as_str()
        ),
        ("master-3b", "master")
    );
    assert_eq!(h(ids[1]).role, "worker");
    assert_eq!(h(ids[0]).requested_hostname, "master-0");
    assert_eq!(h(ids[2]).requested_hostname, "");
    // The service's refusal: what was being done first.
    let err = commands::set_host(&client, None, &mac(2), Some("Bad_Name"), None)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, Error::Status { status: 400, .. })
            && text.starts_with(&format!(
                "updating host {} failed: host_name \"Bad_Name\"",
                ids[2]
            ))
            && text.ends_with("HTTP 400)"),
        "{text}"
    );
    let text = commands::list_hosts(&client, "same").await.unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("master-3b ") && l.contains(&mac(3)) && l.contains(" master ")),
        "{text}"
    );

    svc.stop().await;
}
