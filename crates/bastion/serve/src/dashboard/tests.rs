use super::*;
use okd_hosts::Role;
use okd_serve_api::lb::{BackendStats, CheckResult, FrontendStats, HealthCheck, Stats};
use okd_serve_api::status::{
    BootstrapConfigMap, BootstrapRemoved, Certificates, ClientStatus, ClusterData, ClusterView,
    CsrKind, CsrView, DnsEvent, HostStatus, HttpEvent, IgnitionEvent, NodeView, OperatorsView,
    Stage, StatusDocument,
};
use time::macros::datetime;

fn dns(time: &str, name: &str) -> DnsEvent {
    DnsEvent {
        time: time.into(),
        name: name.into(),
        qtype: "A".into(),
        answers: Vec::new(),
    }
}

fn http(time: &str, path: &str, status: u16, bytes: u64, size: Option<u64>) -> HttpEvent {
    HttpEvent {
        time: time.into(),
        path: path.into(),
        status,
        bytes,
        size,
        complete: size == Some(bytes),
    }
}

fn host(name: &str, role: Role, last: u8) -> HostStatus {
    HostStatus::new(
        name,
        format!("{name}.okd.example"),
        role,
        std::net::IpAddr::from([192, 168, 120, last]),
    )
}

/// A checked backend, UP or DOWN since `since_unix_ms`, with its last check.
fn backend(name: &str, addr: &str, up: bool, since_unix_ms: u64, check: &str) -> BackendStats {
    BackendStats {
        name: name.into(),
        addr: addr.parse().expect("backend address"),
        up,
        checked: true,
        state: BackendStats::state_text(up, true).into(),
        since_unix_ms,
        last_check: Some(CheckResult {
            ok: up,
            detail: check.into(),
            at_unix_ms: since_unix_ms,
            duration_ms: 1,
        }),
        last_ok_unix_ms: None,
        active_connections: 0,
        connections_total: 0,
        connect_failures: 0,
        bytes_in: 0,
        bytes_out: 0,
    }
}

fn frontend(name: &str, bind: &str, backends: Vec<BackendStats>) -> FrontendStats {
    FrontendStats {
        name: name.into(),
        bind: bind.parse().expect("bind address"),
        balance: Default::default(),
        check: HealthCheck::https_get("/readyz"),
        connections_total: 0,
        active_connections: 0,
        rejected_total: 0,
        backends,
    }
}

/// The cluster as watched: CSRs, nodes, operators, the bootstrap ConfigMap.
fn cluster(
    csrs: Vec<CsrView>,
    nodes: Vec<NodeView>,
    operators: OperatorsView,
    bootstrap: Option<BootstrapConfigMap>,
) -> ClusterData {
    ClusterData {
        available: true,
        error: None,
        view: Some(ClusterView {
            server: "https://api.okd.example:6443".into(),
            csrs,
            nodes,
            operators,
            bootstrap,
            bootstrap_progress: Default::default(),
        }),
    }
}

/// The bootstrap ConfigMap with `status`, created at 10:30.
fn bootstrap_cm(status: &str, time: &str) -> Option<BootstrapConfigMap> {
    Some(BootstrapConfigMap {
        status: Some(status.into()),
        time: Some(time.into()),
    })
}

fn csr(name: &str, kind: CsrKind, node: &str, approved: Option<&str>) -> CsrView {
    CsrView {
        name: Some(name.into()),
        kind,
        node: Some(node.into()),
        approved: approved.is_some(),
        denied: false,
        time: approved.map(str::to_string),
        created: None,
    }
}

fn doc() -> StatusDocument {
    let mut bootstrap = host("bootstrap", Role::Bootstrap, 102);
    bootstrap
        .dns
        .push(dns("2026-11-24T10:01:00Z", "api-int.okd.example"));
    bootstrap.http.push(http(
        "2026-11-24T10:01:05Z",
        "/ignition/bootstrap.ign",
        200,
        300_000,
        Some(300_000),
    ));
    let mut master = host("master", Role::Master, 103);
    master
        .dns
        .push(dns("2026-11-24T10:02:00Z", "api-int.okd.example"));
    master.http.push(http(
        "2026-11-24T10:02:01Z",
        "/ignition/bootstrap.ign",
        403,
        0,
        None,
    ));
    let mut worker1 = host("worker1", Role::Worker, 104);
    worker1.ignition.push(IgnitionEvent {
        time: "2026-11-24T10:03:00Z".into(),
        pool: "worker".into(),
        spec: "3.2.0".into(),
        status: 500,
        via: None,
        bytes: None,
        held: false,
    });
    // UP since 2026-11-24T10:05:00Z.
    let mut api_boot = backend(
        "bootstrap",
        "192.168.120.102:6443",
        true,
        1795514700000,
        "HTTP 200",
    );
    api_boot.active_connections = 2;
    api_boot.connections_total = 40;
    api_boot.bytes_in = 2048;
    api_boot.bytes_out = 3_000_000;
    let mut api_master = backend(
        "master",
        "192.168.120.103:6443",
        false,
        1795999200000,
        "connection refused",
    );
    api_master.last_ok_unix_ms = Some(1795999100000);
    let mcs_boot = backend(
        "bootstrap",
        "192.168.120.102:22623",
        false,
        1795514400000,
        "HTTP 503",
    );
    StatusDocument {
        cluster: "okd.example".into(),
        started: "2026-11-24T10:00:00Z".into(),
        hosts: vec![bootstrap, master, worker1],
        unknown_clients: vec![ClientStatus {
            address: std::net::IpAddr::from([192, 168, 120, 66]),
            dns: Vec::new(),
            ignition: Vec::new(),
            http: vec![http(
                "2026-11-24T10:04:00Z",
                "/ignition/bootstrap.ign",
                403,
                0,
                None,
            )],
        }],
        load_balancer: Some(Stats {
            frontends: vec![
                frontend("api", "192.168.120.101:6443", vec![api_boot, api_master]),
                frontend("machine-config", "192.168.120.101:22623", vec![mcs_boot]),
            ],
        }),
        cluster_data: ClusterData::unavailable("not read yet"),
        certificates: None,
        bootstrap_removed: None,
        warnings: Vec::new(),
        preflight: None,
    }
}

/// The load balancer's frontends of `d`.
fn fes(d: &mut StatusDocument) -> &mut Vec<FrontendStats> {
    &mut d.load_balancer.as_mut().expect("load balancer").frontends
}

/// The names of a host's stages.
fn names(h: &HostStatus) -> Vec<&str> {
    h.stages.iter().map(|s| s.stage.as_str()).collect()
}

/// The stage `name` of the first host (the bootstrap of [`doc`]).
fn boot_stage<'a>(d: &'a StatusDocument, name: &str) -> &'a Stage {
    d.hosts[0]
        .stage(name)
        .unwrap_or_else(|| panic!("no stage {name}: {:?}", d.hosts[0].stages))
}

fn warns(d: &StatusDocument) -> Vec<String> {
    d.warnings.clone()
}

const JOURNAL: &str = "`journalctl -b -f -u release-image.service -u bootkube.service`";
const REMOVE: &str =
    "remove it with `okd-install destroy bootstrap` (or `okd-install serve remove-bootstrap`)";

#[test]
fn bootstrap_stage_line() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    d.cluster_data = cluster(Vec::new(), Vec::new(), OperatorsView::default(), None);
    annotate(&mut d, now);
    assert_eq!(
        names(&d.hosts[0]),
        [
            "DNS answered",
            "Ignition fetched",
            "API up on bootstrap",
            "Machine-config server up on bootstrap",
            "bootkube stages",
            "Bootstrap complete",
            "Removed from load balancer"
        ]
    );
    let bk = boot_stage(&d, "bootkube stages");
    assert!(!bk.done);
    assert_eq!(
        bk.detail,
        "no progress from the bootstrap yet (published once its API runs)"
    );
    let api = boot_stage(&d, "API up on bootstrap");
    assert!(api.done);
    assert_eq!(api.time.as_deref(), Some("2026-11-24T10:05:00Z"));
    assert_eq!(api.detail, "HTTP 200");
    let mcs = boot_stage(&d, "Machine-config server up on bootstrap");
    assert!(!mcs.done);
    assert_eq!(mcs.time, None);
    assert_eq!(mcs.detail, "HTTP 503");
    let complete = boot_stage(&d, "Bootstrap complete");
    assert!(!complete.done);
    assert_eq!(complete.detail, "no ConfigMap kube-system/bootstrap yet");
    let removed = boot_stage(&d, "Removed from load balancer");
    assert!(!removed.done);
    assert_eq!(removed.detail, "still a backend of api, machine-config");
    // Other hosts keep their line.
    assert_eq!(
        names(&d.hosts[1]),
        [
            "DNS answered",
            "Ignition fetched",
            "CSR client approved",
            "CSR serving approved",
            "Node Ready"
        ]
    );
    // 9 minutes after bootstrap.ign: no warning about its API yet.
    assert!(
        !warns(&d).iter().any(|w| w.contains("journalctl")),
        "{:?}",
        warns(&d)
    );

    let html = page(&d, now);
    let row = html
        .split("<tr>")
        .find(|r| r.starts_with("<th scope=\"row\">bootstrap</th>"))
        .unwrap_or_else(|| panic!("no bootstrap row: {html}"));
    for li in [
        "<li class=\"done\">API up on bootstrap (HTTP 200) <time datetime=\"2026-11-24T10:05:00Z\">5 min ago</time></li>",
        "<li class=\"todo\">Machine-config server up on bootstrap (HTTP 503)</li>",
        "<li class=\"todo\">Bootstrap complete (no ConfigMap kube-system/bootstrap yet)</li>",
        "<li class=\"todo\">Removed from load balancer (still a backend of api, machine-config)</li>",
    ] {
        assert!(row.contains(li), "{li} not in {row}");
    }
}

/// Issue #18 finding 9: before a check of the bootstrap's backends nothing
/// is claimed about its API or machine-config server, the page says "not
/// checked yet"; a bootstrap that never answered and never fetched
/// bootstrap.ign gets the next step.
#[test]
fn bootstrap_not_checked_claims_nothing() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    d.hosts[0].http.clear();
    for fe in fes(&mut d).iter_mut() {
        let b = &mut fe.backends[0];
        b.up = false;
        b.checked = false;
        b.state = "not checked yet".into();
        b.last_check = None;
        b.last_ok_unix_ms = None;
    }
    let mut fresh = d.clone();
    annotate(&mut fresh, now);
    for stage in [
        "API up on bootstrap",
        "Machine-config server up on bootstrap",
    ] {
        let st = boot_stage(&fresh, stage);
        assert!(!st.done, "{st:?}");
        assert_eq!(st.detail, "not checked yet", "{st:?}");
    }
    let html = page(&fresh, now);
    assert!(
        html.contains("<li class=\"todo\">API up on bootstrap (not checked yet)</li>"),
        "{html}"
    );
    assert!(
        html.contains("data-label=\"State\">not checked yet</td>"),
        "{html}"
    );
    assert!(!html.contains(">UP"), "{html}");
    // Checked, refused, never fetched bootstrap.ign: boot it.
    let b = &mut fes(&mut d)[0].backends[0];
    b.checked = true;
    b.state = "DOWN".into();
    b.last_check = backend("b", "127.0.0.1:1", false, 0, "connection refused").last_check;
    annotate(&mut d, now);
    assert_eq!(
        boot_stage(&d, "API up on bootstrap").detail,
        "connection refused; boot bootstrap: it has not fetched bootstrap.ign yet"
    );
}

/// Sets the last check's text of backend `b`.
fn set_check(b: &mut BackendStats, detail: &str) {
    if let Some(c) = b.last_check.as_mut() {
        c.detail = detail.into();
    }
}

#[test]
fn bootstrap_api_not_up_warning() {
    let mut d = doc();
    let b = &mut fes(&mut d)[0].backends[0];
    b.up = false;
    set_check(b, "connection refused");
    let want = format!(
        "bootstrap fetched bootstrap.ign 10 min ago but its API is not up (last check: connection refused): log in to bootstrap and follow {JOURNAL}"
    );
    // bootstrap.ign was fetched at 10:01:05.
    let mut early = d.clone();
    annotate(&mut early, datetime!(2026-11-24 10:11 UTC));
    assert!(!boot_stage(&early, "API up on bootstrap").done);
    assert!(
        !warns(&early).iter().any(|w| w.contains("journalctl")),
        "{:?}",
        warns(&early)
    );
    let mut late = d.clone();
    annotate(&mut late, datetime!(2026-11-24 10:11:10 UTC));
    assert!(warns(&late).contains(&want), "{:?}", warns(&late));
    // Once the bootstrap reports completion, its API no longer matters.
    let mut done = d.clone();
    done.cluster_data = cluster(
        Vec::new(),
        Vec::new(),
        OperatorsView::default(),
        bootstrap_cm("complete", "2026-11-24T10:09:00Z"),
    );
    annotate(&mut done, datetime!(2026-11-24 10:30 UTC));
    assert!(
        !warns(&done).iter().any(|w| w.contains("journalctl")),
        "{:?}",
        warns(&done)
    );
}

#[test]
fn bootstrap_api_that_went_down_stays_reached() {
    let now = datetime!(2026-11-24 10:40 UTC);
    let mut d = doc();
    let b = &mut fes(&mut d)[0].backends[0];
    b.up = false;
    b.last_ok_unix_ms = Some(1795516800000); // 10:40:00Z
    set_check(b, "connection refused");
    annotate(&mut d, now);
    let api = boot_stage(&d, "API up on bootstrap");
    assert!(api.done, "{api:?}");
    assert_eq!(api.time.as_deref(), Some("2026-11-24T10:40:00Z"));
    assert_eq!(api.detail, "DOWN now: connection refused");
    // Never passed a check: not reached.
    let mcs = boot_stage(&d, "Machine-config server up on bootstrap");
    assert!(!mcs.done, "{mcs:?}");
    assert_eq!(mcs.detail, "HTTP 503");
}

#[test]
fn bootstrap_complete_then_removed() {
    let now = datetime!(2026-11-24 10:40 UTC);
    let mut d = doc();
    let with_cm = |status: &str| {
        cluster(
            Vec::new(),
            Vec::new(),
            OperatorsView::default(),
            bootstrap_cm(status, "2026-11-24T10:30:00Z"),
        )
    };
    d.cluster_data = with_cm("progressing");
    let mut progressing = d.clone();
    annotate(&mut progressing, now);
    let c = boot_stage(&progressing, "Bootstrap complete");
    assert!(!c.done);
    assert_eq!(
        c.detail,
        "ConfigMap kube-system/bootstrap says \"progressing\""
    );

    d.cluster_data = with_cm("complete");
    let mut complete = d.clone();
    annotate(&mut complete, now);
    let c = boot_stage(&complete, "Bootstrap complete");
    assert!(c.done);
    assert_eq!(c.time.as_deref(), Some("2026-11-24T10:30:00Z"));
    assert_eq!(c.detail, "ConfigMap kube-system/bootstrap");
    let want = format!(
        "bootstrap complete 10 min ago but bootstrap is still a load balancer backend: {REMOVE}"
    );
    assert!(warns(&complete).contains(&want), "{:?}", warns(&complete));

    // remove-bootstrap: no bootstrap backend left, its backends as they were kept.
    let mut kept = fes(&mut d)[0].clone();
    for fe in fes(&mut d).iter_mut() {
        fe.backends.retain(|b| b.name != "bootstrap");
    }
    kept.backends.retain(|b| b.name == "bootstrap");
    d.bootstrap_removed = Some(BootstrapRemoved {
        time: "2026-11-24T10:39:00Z".into(),
        frontends: vec![kept],
        earlier: false,
    });
    annotate(&mut d, now);
    let r = boot_stage(&d, "Removed from load balancer");
    assert!(r.done);
    assert_eq!(r.time.as_deref(), Some("2026-11-24T10:39:00Z"));
    assert_eq!(r.detail, "by `serve remove-bootstrap`");
    let api = boot_stage(&d, "API up on bootstrap");
    assert!(api.done);
    assert_eq!(
        api.detail,
        "HTTP 200 (before its removal from the load balancer)"
    );
    let mcs = boot_stage(&d, "Machine-config server up on bootstrap");
    assert!(!mcs.done);
    assert_eq!(mcs.detail, "not a backend of the machine-config frontend");
    assert!(
        !warns(&d).iter().any(|w| w.contains("remove it with")),
        "{:?}",
        warns(&d)
    );
    let html = page(&d, now);
    assert!(html.contains("<li class=\"done\">Removed from load balancer (by `serve remove-bootstrap`) <time datetime=\"2026-11-24T10:39:00Z\">1 min ago</time></li>"), "{html}");
    assert!(html.contains("<li class=\"done\">Bootstrap complete (ConfigMap kube-system/bootstrap) <time datetime=\"2026-11-24T10:30:00Z\">10 min ago</time></li>"), "{html}");
}

#[test]
fn bootstrap_without_our_load_balancer() {
    let now = datetime!(2026-11-24 11:00 UTC);
    let mut d = doc();
    d.load_balancer = None;
    d.cluster_data = cluster(
        Vec::new(),
        Vec::new(),
        OperatorsView::default(),
        bootstrap_cm("complete", "2026-11-24T10:30:00Z"),
    );
    annotate(&mut d, now);
    for name in [
        "API up on bootstrap",
        "Machine-config server up on bootstrap",
        "Removed from load balancer",
    ] {
        let s = boot_stage(&d, name);
        assert!(!s.done, "{name}");
        assert_eq!(s.detail, "load balancer not run by this serve", "{name}");
    }
    assert!(boot_stage(&d, "Bootstrap complete").done);
    let w = warns(&d);
    assert!(
        !w.iter()
            .any(|w| w.contains("journalctl") || w.contains("remove it with")),
        "{w:?}"
    );
}

#[test]
fn bootstrap_frontends_by_name_or_port() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    // serve's names on other ports (bastion-config `ports`) …
    fes(&mut d)[0].bind = "127.0.0.1:16443".parse().unwrap();
    fes(&mut d)[1].bind = "127.0.0.1:32623".parse().unwrap();
    // … or other names on the guides' ports; the backend by address.
    let mut other = doc();
    fes(&mut other)[0].name = "kube-api".into();
    fes(&mut other)[1].name = "mcs".into();
    fes(&mut other)[1].backends[0].name = "boot0".into();
    for mut d in [d, other] {
        annotate(&mut d, now);
        assert_eq!(boot_stage(&d, "API up on bootstrap").detail, "HTTP 200");
        assert_eq!(
            boot_stage(&d, "Machine-config server up on bootstrap").detail,
            "HTTP 503"
        );
    }
    // A frontend that is neither is not taken for the API.
    let mut none = doc();
    fes(&mut none)[0].name = "ingress-https".into();
    fes(&mut none)[0].bind = "192.168.120.101:443".parse().unwrap();
    annotate(&mut none, now);
    assert_eq!(
        boot_stage(&none, "API up on bootstrap").detail,
        "not a backend of the api frontend"
    );
}

#[test]
fn stages_warnings_and_page() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    d.cluster_data = cluster(
        vec![
            csr(
                "csr-a",
                CsrKind::Client,
                "master",
                Some("2026-11-24T10:05:00Z"),
            ),
            csr("csr-b", CsrKind::Serving, "master", None),
            csr("csr-x", CsrKind::Client, "evil", None),
        ],
        vec![NodeView {
            name: Some("master".into()),
            ready: false,
            since: None,
        }],
        OperatorsView {
            available: 3,
            total: 5,
            degraded: vec!["ingress".into()],
        },
        None,
    );
    let down_since = (now - time::Duration::minutes(5)).unix_timestamp() * 1000;
    fes(&mut d)[0].backends[1].since_unix_ms = u64::try_from(down_since).unwrap();
    d.certificates = Some(Certificates {
        file: "kube-apiserver-lb-server.crt".into(),
        not_after: "2026-11-24T11:30:00Z".into(),
    });
    annotate(&mut d, now);
    let h = &d.hosts;
    assert!(h[0].stages[1].done, "bootstrap.ign fetched");
    assert!(h[1].stages[0].done);
    assert!(!h[1].stages[1].done);
    assert_eq!(h[1].stages.len(), 5);
    assert!(h[1].stages[2].done, "client CSR approved");
    assert_eq!(h[1].stages[2].time.as_deref(), Some("2026-11-24T10:05:00Z"));
    assert_eq!(h[1].stages[3].detail, "csr-b pending");
    assert_eq!(h[1].stages[4].detail, "registered, not Ready");
    assert!(!h[2].stages[2].done);
    let w: Vec<&str> = d.warnings.iter().map(String::as_str).collect();
    assert!(w.contains(&"master resolved api-int.okd.example 8 min ago but never fetched Ignition: check the kernel arguments / boot order, and that port 22623 reaches a machine-config server (`okd-install preflight` checks it)"), "{w:?}");
    assert!(
        w.contains(&"bootstrap.ign was requested by master (192.168.120.103), refused"),
        "{w:?}"
    );
    assert!(w.contains(&"bootstrap.ign was requested by 192.168.120.66, refused (not the inventory's bootstrap host)"), "{w:?}");
    assert!(
        w.contains(&"worker1 asked the machine-config server for pool worker and got HTTP 500"),
        "{w:?}"
    );
    assert!(
        w.contains(&"load balancer backend master (192.168.120.103:6443) of api went DOWN 5 min ago: connection refused; its traffic goes to the backends still UP"),
        "{w:?}"
    );
    // The bootstrap's machine-config server never passed a check: a
    // host not serving yet is in the table, not in the warnings.
    assert!(
        !w.iter().any(|x| x.contains("(192.168.120.102:22623)")),
        "{w:?}"
    );
    assert!(
        w.contains(
            &"master has a pending serving CSR csr-b: approve it with `okd-install approve-csr`"
        ),
        "{w:?}"
    );
    assert!(w.contains(&"CSR csr-x asks for node evil, which is not in the inventory: check where it comes from before approving it"), "{w:?}");
    assert!(w.contains(&"the install's 24-hour certificates expire in 1 h 20 min (tls/kube-apiserver-lb-server.crt): boot the remaining nodes before then, or create the Ignition configs again"), "{w:?}");
    let html = page(&d, now);
    assert!(html.contains("(first to expire: tls/kube-apiserver-lb-server.crt) expire <time datetime=\"2026-11-24T11:30:00Z\">in 1 h 20 min</time>"), "{html}");
    assert!(html.contains("Cluster data from https://api.okd.example:6443: 2 CSRs pending, 1 node; cluster operators 3/5 available, degraded: ingress."), "{html}");
    assert!(
        html.contains("<time datetime=\"2026-11-24T10:01:05Z\">8 min ago</time>"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"down\" data-label=\"State\">DOWN since 5 min ago</td>"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"down\" data-label=\"State\">DOWN, no check passed yet</td>"),
        "{html}"
    );
    assert!(html.contains("2.9 MiB"), "{html}");
    assert!(
        !html.contains("src=") && !html.contains("href=\"http") && !html.contains("@import"),
        "no external assets"
    );
    assert!(html.len() < 100 * 1024);
}

/// Every bootstrap.ign request is on the page with the bytes sent of the
/// size; a transfer that broke off does not count as "Ignition fetched";
/// the page has no MAC column.
#[test]
fn bootstrap_ign_fetches() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let broke_off = http(
        "2026-11-24T10:01:00Z",
        "/ignition/bootstrap.ign",
        200,
        180,
        Some(300_000),
    );
    let mut d = doc();
    d.hosts[0].http = vec![broke_off.clone()];
    annotate(&mut d, now);
    let ign = boot_stage(&d, "Ignition fetched");
    assert!(!ign.done, "{ign:?}");
    assert_eq!(
        ign.detail,
        "1 fetch(es) of bootstrap.ign, none complete; the last sent 180 of 300000 bytes"
    );
    let html = page(&d, now);
    for want in [
        "<h2 id=\"fetches\">bootstrap.ign fetches</h2>",
        "<th scope=\"row\">bootstrap</th><td data-label=\"Address\">192.168.120.102</td><td data-label=\"HTTP\">200</td><td data-label=\"Sent\">180 B of 293.0 KiB, broke off</td>",
        "<th scope=\"row\">master</th><td data-label=\"Address\">192.168.120.103</td><td data-label=\"HTTP\">403</td><td data-label=\"Sent\">refused</td>",
        "<th scope=\"row\">not in the inventory</th><td data-label=\"Address\">192.168.120.66</td>",
    ] {
        assert!(html.contains(want), "{want} not in {html}");
    }
    assert!(
        !html.contains(">MAC<") && !html.contains("data-label=\"MAC\""),
        "{html}"
    );

    let mut d = doc();
    d.hosts[0].http.insert(0, broke_off);
    annotate(&mut d, now);
    let ign = boot_stage(&d, "Ignition fetched");
    assert!(ign.done, "{ign:?}");
    assert_eq!(
        ign.time.as_deref(),
        Some("2026-11-24T10:01:05Z"),
        "the complete fetch counts"
    );
    assert!(page(&d, now).contains("293.0 KiB of 293.0 KiB, complete"));
}

/// Strings from the network (a request path, a host name) are escaped on
/// the page.
#[test]
fn page_escapes_what_it_shows() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    d.unknown_clients[0].http[0].path = "/ignition/<script>&\"x\"/bootstrap.ign".into();
    d.hosts[2].hostname = "w<1>".into();
    annotate(&mut d, now);
    let html = page(&d, now);
    assert!(html.contains("<th scope=\"row\">w&lt;1&gt;</th>"), "{html}");
    assert!(!html.contains("w<1>"), "{html}");
}

#[test]
fn human_times() {
    let now = datetime!(2026-11-24 10:00 UTC);
    assert_eq!(ago(now, now), "just now");
    assert_eq!(ago(datetime!(2026-11-24 09:59:18 UTC), now), "42 s ago");
    assert_eq!(ago(datetime!(2026-11-24 09:58 UTC), now), "2 min ago");
    assert_eq!(ago(datetime!(2026-11-24 07:00 UTC), now), "3 h ago");
    assert_eq!(ago(datetime!(2026-11-22 10:00 UTC), now), "2 days ago");
}

/// The bootstrap node's published progress on its line: stages done and
/// the one running, a failure with its stage in words, the end.
#[test]
fn bootkube_progress_on_the_bootstrap_line() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let with = |p: okd_service_record::Progress| {
        let mut d = doc();
        d.cluster_data = cluster(Vec::new(), Vec::new(), OperatorsView::default(), None);
        if let Some(v) = d.cluster_data.view.as_mut() {
            v.bootstrap_progress.insert("bootkube".into(), p);
        }
        annotate(&mut d, now);
        boot_stage(&d, "bootkube stages").clone()
    };
    let running = with(okd_service_record::Progress {
        done: vec!["etcd-bootstrap".into(), "mco-bootstrap".into()],
        running: Some("cb-bootstrap".into()),
        ..Default::default()
    });
    assert!(!running.done);
    assert!(
        running.detail.starts_with("2 stages done; now "),
        "{}",
        running.detail
    );
    let failed = with(okd_service_record::Progress {
        failure: Some(("wait-for-etcd".into(), "etcd unhealthy".into())),
        ..Default::default()
    });
    assert!(
        failed
            .detail
            .contains("(wait-for-etcd): etcd unhealthy; retrying"),
        "{}",
        failed.detail
    );
    let complete = with(okd_service_record::Progress {
        done: vec!["a".into(); 3],
        complete: true,
        last_time: "2026-11-24T10:09:00Z".into(),
        ..Default::default()
    });
    assert!(complete.done);
    assert_eq!(complete.detail, "bootkube.service complete (3 stages)");
    assert_eq!(complete.time.as_deref(), Some("2026-11-24T10:09:00Z"));
}

/// Issue #27: a master configured by the bootstrap's machine-config server
/// (seen by serve only as a proxied connection) counts as "Ignition
/// fetched"; a worker held back from it gets the warning that says why,
/// and neither gets the boot-order warning.
#[test]
fn configs_through_the_balancer_and_held_workers() {
    let now = datetime!(2026-11-24 10:30 UTC);
    let mut d = doc();
    d.hosts[1].ignition.push(IgnitionEvent {
        time: "2026-11-24T10:04:00Z".into(),
        pool: "master".into(),
        spec: String::new(),
        status: 200,
        via: Some("bootstrap".into()),
        bytes: Some(312 * 1024),
        held: false,
    });
    let worker = &mut d.hosts[2];
    worker.ignition.clear();
    worker
        .dns
        .push(dns("2026-11-24T10:02:30Z", "api-int.okd.example"));
    worker.ignition.push(IgnitionEvent {
        time: "2026-11-24T10:03:00Z".into(),
        pool: "worker".into(),
        spec: String::new(),
        status: 0,
        via: Some("bootstrap".into()),
        bytes: None,
        held: true,
    });
    annotate(&mut d, now);
    let master = &d.hosts[1];
    assert!(master.stages[1].done, "{:?}", master.stages[1]);
    assert_eq!(
        master.stages[1].detail,
        "pool master from bootstrap's machine-config server (312 KiB through the load balancer)"
    );
    assert!(!d.hosts[2].stages[1].done);
    let w: Vec<&str> = d.warnings.iter().map(String::as_str).collect();
    assert!(
        !w.iter().any(|l| l.contains("boot order")),
        "booted hosts get no boot-order warning: {w:?}"
    );
    assert!(
        w.contains(&"worker1 asks for the worker config, but the only machine-config server up is bootstrap's, which refuses that pool (\"refusing to serve bootstrap configuration to pool worker\"): the load balancer holds it back since 27 min ago until a master's machine-config server is up; it retries by itself, nothing to do unless no master comes up"),
        "{w:?}"
    );
    assert!(
        !w.iter().any(|l| l.contains("got HTTP")),
        "a held connection is no HTTP answer: {w:?}"
    );
}

/// Issue #27: a host whose pointer config went out and which never asked
/// the machine-config server is named with what stops coreos-installer
/// (an install disk that does not exist), not with the boot order.
#[test]
fn a_pointer_config_without_a_machine_config_request_names_the_install() {
    let now = datetime!(2026-11-24 10:30 UTC);
    let mut d = doc();
    let worker = &mut d.hosts[2];
    worker.ignition.clear();
    worker
        .dns
        .push(dns("2026-11-24T10:02:30Z", "api-int.okd.example"));
    worker.http.push(http(
        "2026-11-24T10:03:00Z",
        "/ignition/worker.ign",
        200,
        1800,
        Some(1800),
    ));
    annotate(&mut d, now);
    let w: Vec<&str> = d.warnings.iter().map(String::as_str).collect();
    assert!(
        w.contains(&"worker1 fetched worker.ign 27 min ago but never asked the machine-config server: coreos-installer stopped before the reboot, most often on the install disk (coreos.inst.install_dev: a disk that does not exist, or the wrong one), or the image download; look at worker1's console"),
        "{w:?}"
    );
    assert!(
        !w.iter()
            .any(|l| l.starts_with("worker1") && l.contains("boot order")),
        "{w:?}"
    );
    // Ten minutes after the fetch it is not said yet.
    let mut d = doc();
    d.hosts[2].ignition.clear();
    d.hosts[2].http.push(http(
        "2026-11-24T10:25:00Z",
        "/ignition/worker.ign",
        200,
        1800,
        Some(1800),
    ));
    annotate(&mut d, now);
    assert!(
        !d.warnings
            .iter()
            .any(|l| l.contains("never asked the machine-config server")),
        "{:?}",
        d.warnings
    );
}
