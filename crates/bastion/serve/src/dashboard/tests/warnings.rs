//! The warnings: an API not up after bootstrap.ign, hosts that stopped on the
//! way, held workers, and every stage, warning and line of a full page.

use super::*;

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
