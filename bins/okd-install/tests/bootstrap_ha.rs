//! Bootstrap and three masters end to end (issue #21), in network
//! namespaces with real programs only: serve and the mirror registry on
//! the bastion; the bootstrap host from bootstrap.ign (the real Ignition,
//! containerd, runc, the kit's kubelet, etcd and control plane); three
//! master hosts from master.ign (each its own containerd and kubelet,
//! joining through the bootstrap's approve-csr, and `okd-install node
//! control-plane` as `okd-control-plane.service` runs it). The bootstrap
//! moves etcd to the masters one learner at a time and hands each its
//! control plane; cluster-bootstrap's HA checks and teardown delay run (3
//! replicas); progress.service reports `complete` after its HA wait and
//! removes the bootstrap's etcd member; `wait-for bootstrap-complete`
//! returns 0; the bootstrap switched off, the masters keep quorum and
//! every object; `destroy bootstrap` goes ahead.
//!
//! Faults on the way: bootkube killed right after it added a master as a
//! learner (it resumes and adds nobody twice), and the third master
//! switched off right after it was added (the bootstrap member stays and
//! bootkube does not complete until the master is back, then the handover
//! finishes).

mod common;

use std::time::{Duration, Instant};

use common::bootlab::{BootLab, HA_MASTERS, prerequisites, spawn_in};
use common::kube::tail;
use common::payload;

const VERSION: &str = "4.15.0-0.okd-upstream-e2e";

/// Waits up to `limit` for `what` in the file `log`; the log's tail in the
/// panic message.
fn wait_log(log: &std::path::Path, what: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(what) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "no {what:?} in {}:\n{}",
            log.display(),
            tail(&text, 40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn three_masters_take_over_etcd_and_the_control_plane_and_the_bootstrap_leaves() {
    let Some(pre) = prerequisites() else {
        return;
    };
    let kit = pre.kit.clone();
    let kubelet = kit.join("kubelet");
    let mut bl = BootLab::start_with(&pre, "okh", Some(&kubelet), false, 3, |t| {
        payload::build(t, &kit, VERSION, "amd64")
    });
    let t = bl.scratch.path().to_path_buf();
    let root = bl.root.clone();
    let started = Instant::now();

    bl.release_image();
    let log = t.join("bootkube.log");
    let mut bootkube = bl.bootkube(&log);
    let approver = bl.spawn_unit(
        "/usr/local/bin/approve-csr.sh",
        &["/opt/openshift/auth/kubeconfig-loopback"],
        &t.join("approve-csr.log"),
        b"bootstrap\0approve-csr",
    );
    // The masters boot once the bootstrap's machine-config server answers.
    wait_log(&log, "stage mco-bootstrap: done", Duration::from_secs(300));
    let mut masters = Vec::new();
    let mut programs = Vec::new();
    for (i, (name, ip, _)) in HA_MASTERS.iter().enumerate() {
        let (host, mroot) = bl.master(1 + i, name, ip, &kubelet);
        let cp_log = t.join(format!("control-plane-{name}.log"));
        programs.push(spawn_in(
            &host,
            "/usr/local/bin/okd-install",
            &["node", "control-plane", "--node-name", name, "--poll", "1s"],
            &cp_log,
            b"node\0control-plane",
        ));
        masters.push((host, mroot, cp_log));
    }

    // Fault 1: bootkube killed right after it added the second master as a
    // learner (the order is the order the Nodes become Ready); started
    // again, it goes on from etcd's member list.
    let deadline = Instant::now() + Duration::from_secs(600);
    let added_before = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let n = text.matches("to etcd as learner").count();
        if n >= 2 {
            break n;
        }
        bl.host.assert_running();
        assert!(
            Instant::now() < deadline,
            "two masters not added:\n{}",
            tail(&text, 40)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(bootkube);
    let log2 = t.join("bootkube-2.log");
    bootkube = bl.bootkube(&log2);

    // Fault 2: the third master switched off right after it was added.
    let text = wait_log(&log2, "to etcd as learner", Duration::from_secs(600));
    let third = HA_MASTERS
        .iter()
        .position(|(n, _, _)| text.contains(&format!("added master {n} to etcd as learner")))
        .expect("the third master's name");
    masters[third].0.power_off();
    // cluster-bootstrap finishes on two masters (HA checks, teardown), but
    // bootkube waits for the third in wait-for-ceo and the bootstrap's
    // member stays.
    let text = wait_log(
        &log2,
        "stage wait-for-ceo: starting",
        Duration::from_secs(900),
    );
    assert!(text.contains("bootstrap-success"), "{}", tail(&text, 40));
    std::thread::sleep(Duration::from_secs(10));
    assert!(
        !root.join("opt/openshift/.bootkube.done").exists(),
        "bootkube completed with a master down:\n{}",
        tail(&std::fs::read_to_string(&log2).unwrap(), 30)
    );
    let members = bl.etcd_members(1, master_endpoints());
    assert!(
        members
            .iter()
            .any(|m| m.name == okd_bootstrap::handover::BOOTSTRAP_MEMBER),
        "{members:?}"
    );
    // The third master powered on again: the handover finishes.
    let (name, ip, _) = HA_MASTERS[third];
    masters[third].0 = BootLab::restart_master(
        &bl.lab.nodes[1 + third].ns,
        1 + third,
        name,
        ip,
        &masters[third].1,
        &kubelet,
    );
    programs[third] = spawn_in(
        &masters[third].0,
        "/usr/local/bin/okd-install",
        &["node", "control-plane", "--node-name", name, "--poll", "1s"],
        &t.join(format!("control-plane-{name}-again.log")),
        b"node\0control-plane",
    );
    let done = root.join("opt/openshift/.bootkube.done");
    let deadline = Instant::now() + Duration::from_secs(600);
    while !done.exists() {
        bl.host.assert_running();
        assert!(
            Instant::now() < deadline,
            "bootkube did not complete:\n{}\nthe third master's kubelet:\n{}",
            tail(&std::fs::read_to_string(&log2).unwrap_or_default(), 40),
            tail(&masters[third].0.kubelet_log(), 20)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let to_done = started.elapsed();
    let text2 = std::fs::read_to_string(&log2).unwrap();
    // No membership change twice: three adds in all, one per master.
    assert_eq!(
        added_before + text2.matches("to etcd as learner").count(),
        3,
        "first run:\n{}\nsecond run:\n{}",
        tail(&std::fs::read_to_string(&log).unwrap(), 30),
        tail(&text2, 30)
    );
    for needle in [
        "teardown delay",
        "stage cvo-overrides: done",
        "stage wait-for-ceo: done",
        "bootkube.service complete",
    ] {
        assert!(text2.contains(needle), "{needle}:\n{}", tail(&text2, 60));
    }
    for p in programs.iter_mut() {
        assert_eq!(
            p.wait_exit(Duration::from_secs(60)).map(|s| s.success()),
            Some(true)
        );
    }

    // progress.service (after its HA wait) and wait-for bootstrap-complete.
    let progress_text = bl.complete("api=120s,bootstrap=600s,etcd=600s");
    assert!(
        progress_text.contains("Got at least 2 nodes with successful revision rolled out"),
        "{progress_text}"
    );
    let to_complete = started.elapsed();

    // The bootstrap off: three healthy voting masters, the API through the
    // balancer, every object; destroy bootstrap goes ahead.
    bl.without_bootstrap(20);
    let mut members = bl.etcd_members(1, master_endpoints());
    members.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        members,
        HA_MASTERS
            .iter()
            .map(|(n, _, _)| okd_bootstrap::handover::Member {
                name: n.to_string(),
                learner: false,
                healthy: true
            })
            .collect::<Vec<_>>()
    );
    let out = bl.kubectl(&["get", "pod", "-n", "kube-system", "-o", "name"]);
    let pods = String::from_utf8_lossy(&out.stdout).into_owned();
    for (n, _, _) in HA_MASTERS {
        for c in [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
        ] {
            assert!(pods.contains(&format!("{c}-{n}")), "{c}-{n}: {pods}");
        }
    }
    bl.destroy_bootstrap();
    eprintln!(
        "3 masters, each stage's end (s since bootkube's first start):\n{}",
        common::stage_times::stage_times(&root)
    );
    eprintln!(
        "3 masters: bootstrap host start to .bootkube.done {:.1} s (with both faults), to bootstrap complete {:.1} s",
        to_done.as_secs_f64(),
        to_complete.as_secs_f64()
    );
    drop(approver);
    drop(bootkube);
    drop(masters);
    drop(bl);
}

/// Every master's etcd client URL, then the bootstrap's.
fn master_endpoints() -> Vec<String> {
    let mut e: Vec<String> = HA_MASTERS
        .iter()
        .map(|(_, ip, _)| format!("https://{ip}:2379"))
        .collect();
    e.push(format!("https://{}:2379", common::bootlab::BOOTSTRAP));
    e
}
