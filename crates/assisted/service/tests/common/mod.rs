//! Helpers of the service's tests: the service in-process on loopback,
//! hosts that answer their steps as the agent does.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use okd_assisted_api::rest::{Cluster, Host, Steps};
use okd_assisted_api::{Cpu, Disk, Eligibility, Interface, Inventory, Memory};
use okd_assisted_service::{Options, Shared};
use serde_json::{Value, json};

pub const PS: &str = r#"{"auths":{"fake":{"auth":"aWQ6cGFzcwo="}}}"#;

pub struct Svc {
    pub base: String,
    /// The admin token (`None`: the service runs without authentication).
    pub token: Option<String>,
    state: Shared,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

pub async fn start(url: &str) -> Svc {
    start_with(url, |_| {}).await
}

/// The keys every service of this test process uses (as replicas and
/// restarts of one service share its secrets directory).
pub fn keys() -> std::sync::Arc<okd_assisted_service::auth::Keys> {
    static KEYS: std::sync::OnceLock<std::sync::Arc<okd_assisted_service::auth::Keys>> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        std::sync::Arc::new(okd_assisted_service::auth::Keys::generate(None).unwrap())
    })
    .clone()
}

/// The TLS every service of this test process serves (its CA made in
/// memory; a certificate for 127.0.0.1).
pub fn tls() -> std::sync::Arc<okd_assisted_service::tls::Tls> {
    static TLS: std::sync::OnceLock<std::sync::Arc<okd_assisted_service::tls::Tls>> =
        std::sync::OnceLock::new();
    TLS.get_or_init(|| {
        std::sync::Arc::new(
            okd_assisted_service::tls::Tls::ephemeral(&[], &["127.0.0.1".parse().unwrap()])
                .unwrap(),
        )
    })
    .clone()
}

/// A client that trusts the service's CA only and sends no token.
pub fn anonymous() -> reqwest::Client {
    anonymous_builder().build().unwrap()
}

/// [`anonymous`]'s builder, to set more.
pub fn anonymous_builder() -> reqwest::ClientBuilder {
    let ca = tls().ca_pem.clone().unwrap();
    reqwest::Client::builder()
        .tls_certs_only(reqwest::Certificate::from_pem_bundle(ca.as_bytes()).unwrap())
}

/// A client that trusts the service's CA and sends the admin token of
/// [`keys`] (which agent calls accept too).
pub fn client() -> reqwest::Client {
    client_builder().build().unwrap()
}

/// [`client`]'s builder, to set more.
pub fn client_builder() -> reqwest::ClientBuilder {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {}", keys().admin_token()).parse().unwrap(),
    );
    anonymous_builder().default_headers(headers)
}

/// As [`start`], with the options changed by `f` first. Authentication
/// is on (a generated admin token and signing key), as a user gets it.
pub async fn start_with(url: &str, f: impl FnOnce(&mut Options)) -> Svc {
    let mut opts = Options::new(url.to_string(), "127.0.0.1:0".parse().unwrap());
    opts.monitor_interval = Duration::from_millis(200);
    opts.next_instruction_seconds = 1;
    opts.check_interval_seconds = 1;
    opts.auth = Some(keys());
    opts.tls = Some(tls());
    f(&mut opts);
    let token = opts.auth.as_ref().map(|k| k.admin_token().to_string());
    let opts_tls = opts.tls.is_some();
    let state = okd_assisted_service::open(opts).await.unwrap();
    let listener = okd_listen::Listener::bind(
        "127.0.0.1:0".parse().unwrap(),
        okd_listen::Limits::default(),
    )
    .await
    .unwrap();
    let scheme = if opts_tls { "https" } else { "http" };
    let base = format!(
        "{scheme}://{}/api/assisted-install/v2",
        listener.local_addr().unwrap()
    );
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let st = state.clone();
    let task = tokio::spawn(async move {
        okd_assisted_service::serve(st, listener, async {
            let _ = rx.await;
        })
        .await;
    });
    Svc {
        base,
        token,
        state,
        stop,
        task,
    }
}

impl Svc {
    /// The service's state (its keys, its database).
    pub fn state(&self) -> &Shared {
        &self.state
    }

    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
        drop(self.state);
    }
}

pub fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

pub fn inventory(name: &str, ip: &str, cpus: u32, mem_gib: u64) -> Inventory {
    Inventory {
        hostname: name.into(),
        cpu: Cpu {
            count: cpus,
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

pub async fn send(
    c: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = c.request(method, url);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let code = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        code,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Polls the host's next steps and answers its inventory step.
pub async fn poll_and_answer(
    c: &reqwest::Client,
    base: &str,
    ie: &str,
    id: &str,
    inv: &Inventory,
) -> Steps {
    let url = format!("{base}/infra-envs/{ie}/hosts/{id}/instructions");
    let steps: Steps = c
        .get(format!("{url}?timestamp={}", now_s()))
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
        let (code, body) = send(
            c,
            reqwest::Method::POST,
            &url,
            Some(json!({"step_type": st.step_type, "step_id": st.step_id, "exit_code": 0, "output": output})),
        )
        .await;
        assert_eq!(code, 204, "{body}");
    }
    steps
}

/// Each preparing host polls once and answers its
/// installation-disk-speed-check (a fast disk), as agents do right after
/// the install starts.
pub async fn answer_disk_checks(
    c: &reqwest::Client,
    base: &str,
    ie: &str,
    ids: &[String],
    invs: &[Inventory],
) {
    for (id, inv) in ids.iter().zip(invs) {
        let st = poll_and_answer(c, base, ie, id, inv).await;
        assert!(
            st.instructions
                .iter()
                .any(|i| i.step_type == "installation-disk-speed-check"),
            "a preparing host measures its disk: {:?}",
            st.instructions
        );
    }
}

/// Polls every host (answering its steps as [`poll_and_answer`] does)
/// every 200 ms, as running agents would, until the cluster satisfies
/// `pred` (30 s at most).
pub async fn poll_until<F: Fn(&Cluster) -> bool>(
    c: &reqwest::Client,
    base: &str,
    (ie, cid): (&str, &str),
    hosts: &[(&str, &Inventory)],
    what: &str,
    pred: F,
) -> Cluster {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (id, inv) in hosts {
            poll_and_answer(c, base, ie, id, inv).await;
        }
        let cl: Cluster = c
            .get(format!("{base}/clusters/{cid}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if pred(&cl) || Instant::now() >= deadline {
            return wait_for(c, base, cid, what, pred).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub async fn wait_for<F: Fn(&Cluster) -> bool>(
    c: &reqwest::Client,
    base: &str,
    id: &str,
    what: &str,
    pred: F,
) -> Cluster {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let cl: Cluster = c
            .get(format!("{base}/clusters/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if pred(&cl) {
            return cl;
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {what}: cluster {} ({}); hosts {:?}",
            cl.status,
            cl.status_info,
            cl.hosts
                .iter()
                .map(|h| (
                    h.status.clone(),
                    h.status_info.clone(),
                    h.connectivity.len()
                ))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn host<'a>(cl: &'a Cluster, id: &str) -> &'a Host {
    cl.hosts.iter().find(|h| h.id == id).unwrap()
}

/// A cluster `name` with three hosts (8 CPUs, 16 GiB each) discovered to
/// `ready` through `base`: returns (cluster id, infra-env id, host ids,
/// inventories).
pub async fn ready_cluster(
    c: &reqwest::Client,
    base: &str,
    name: &str,
) -> (String, String, Vec<String>, Vec<Inventory>) {
    use reqwest::Method as M;
    let (code, cl) = send(
        c,
        M::POST,
        &format!("{base}/clusters"),
        Some(json!({
            "name": name, "openshift_version": "4.19", "pull_secret": PS,
            "base_dns_domain": "example.com",
            "api_vips": [{"ip": "192.168.126.253"}], "ingress_vips": [{"ip": "192.168.126.254"}]
        })),
    )
    .await;
    assert_eq!(code, 201, "{cl}");
    let cid = cl["id"].as_str().unwrap().to_string();
    let (code, ie) = send(
        c,
        M::POST,
        &format!("{base}/infra-envs"),
        Some(json!({
            "name": format!("{name}-ie"), "pull_secret": PS, "cluster_id": cid
        })),
    )
    .await;
    assert_eq!(code, 201, "{ie}");
    let ie = ie["id"].as_str().unwrap().to_string();
    let mut ids = Vec::new();
    let mut invs = Vec::new();
    for i in 0..3 {
        let id = format!("33333333-0000-0000-0000-00000000000{i}");
        let (code, _) = send(
            c,
            M::POST,
            &format!("{base}/infra-envs/{ie}/hosts"),
            Some(json!({"host_id": id})),
        )
        .await;
        assert_eq!(code, 201);
        let inv = inventory(&format!("master-{i}"), &format!("192.168.126.1{i}"), 8, 16);
        poll_and_answer(c, base, &ie, &id, &inv).await;
        ids.push(id);
        invs.push(inv);
    }
    let pairs: Vec<(&str, &Inventory)> = ids.iter().map(String::as_str).zip(&invs).collect();
    poll_until(c, base, (&ie, &cid), &pairs, "ready", |cl| {
        cl.status == "ready"
    })
    .await;
    (cid, ie, ids, invs)
}
