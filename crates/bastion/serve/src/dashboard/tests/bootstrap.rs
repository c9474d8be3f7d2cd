//! The bootstrap host's line: its API and machine-config server through the
//! load balancer, bootkube's progress, completion and removal.

use super::*;

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

/// What became of bootstrap.ign's one-time token (issue #42 item 4): a
/// stage after "Ignition fetched" of the bootstrap only, not done while the
/// token is valid (with until when), done once spent, naming which of the
/// bootstrap seen running or the time limit spent it; the page says it
/// above the fetches.
#[test]
fn bootstrap_token_stage() {
    use okd_bootserver::{SpentBy, TokenStatus};
    use std::time::{Duration, UNIX_EPOCH};
    let now = datetime!(2026-11-24 10:10 UTC);
    // 2026-11-24T10:01:05Z
    let first = UNIX_EPOCH + Duration::from_secs(1_795_514_465);
    let token = |first_fetch, spent| TokenStatus {
        clients: vec![std::net::IpAddr::from([192, 168, 120, 102])],
        first_fetch,
        limit: Duration::from_secs(30 * 60),
        spent,
    };
    let staged = |t: &TokenStatus| {
        let mut d = doc();
        annotate(&mut d, now);
        token_stage(&mut d, t);
        d
    };

    let d = staged(&token(None, None));
    assert_eq!(
        names(&d.hosts[0])[1..3],
        ["Ignition fetched", "bootstrap.ign token spent"]
    );
    assert!(
        d.hosts[1..]
            .iter()
            .flat_map(|h| &h.stages)
            .all(|s| s.stage != "bootstrap.ign token spent")
    );
    let s = boot_stage(&d, "bootstrap.ign token spent");
    assert!(!s.done && s.detail.starts_with("not used yet"), "{s:?}");

    let d = staged(&token(Some(first), None));
    let s = boot_stage(&d, "bootstrap.ign token spent");
    assert!(!s.done);
    assert_eq!(
        s.detail,
        "valid for retries from the bootstrap's address until its API or machine-config server passes the load balancer's check, at most until 10:31 UTC (30 min after the first fetch)"
    );
    assert!(page(&d, now).contains("One-time token valid for retries"));

    let at = first + Duration::from_secs(240);
    let d = staged(&token(
        Some(first),
        Some((at, SpentBy::SeenRunning("machine-config server".into()))),
    ));
    let s = boot_stage(&d, "bootstrap.ign token spent");
    assert!(s.done);
    assert_eq!(s.time.as_deref(), Some("2026-11-24T10:05:05Z"));
    assert_eq!(
        s.detail,
        "the bootstrap's machine-config server passed the load balancer's check at 10:05 UTC"
    );
    assert!(page(&d, now).contains(
        "One-time token spent: the bootstrap's machine-config server passed the load balancer's check at 10:05 UTC"
    ));

    let at = first + Duration::from_secs(30 * 60);
    let d = staged(&token(Some(first), Some((at, SpentBy::TimeLimit))));
    let s = boot_stage(&d, "bootstrap.ign token spent");
    assert!(s.done);
    assert_eq!(
        s.detail,
        "30 min after the first fetch, at 10:31 UTC; the bootstrap was not seen running"
    );
}
