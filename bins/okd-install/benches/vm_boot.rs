//! Benchmark: boot to Ignition done for the bootstrap VM of `okd-install
//! create cluster` (issue #22, "a real boot").
//!
//! The guest is tests/guest/build.sh's Ignition guest (Debian's kernel, a
//! busybox initramfs with Debian's Ignition 2.14): qemu starts with the VM's
//! Ignition file as fw_cfg `opt/com.coreos/config`, and `/init` runs
//! `ignition -platform=qemu` stages fetch and files onto an ext4 root on
//! `/dev/vda`. Timed from spawning qemu to the files stage's line on the
//! serial console, under TCG and, where a stock kernel boots with it, KVM
//! (the probe of tests/common/guest.rs decides; `/dev/kvm` on this project's
//! machines is PVM, which does not boot one).
//!
//! The peer is the same Ignition binary doing the same two stages on the
//! host with `-platform=file` (the config from `IGNITION_CONFIG_FILE`) into a
//! directory root: what the config costs Ignition itself, without a boot.
//!
//! A release build of okd-install carries itself in bootstrap.ign (okd-assets
//! `node_program`, about 17 MB more), and Ignition reads fw_cfg in time
//! quadratic in the config's size (coreos/ignition
//! internal/providers/qemu/qemu_fwcfg.go), which takes hours for that. So
//! the timed runs use the VM's config without that one file (what a debug
//! build writes, about 270 KB, and what tests/vm_boot.rs boots), and one run
//! of the whole config, bounded to [`FULL_CONFIG_BUDGET`], reports how far
//! its fw_cfg read got.
//!
//! Run: `bench/vm-boot.sh`, or `cargo bench -p okd-install --bench vm_boot`
//! after `bash tests/guest/build.sh`. Needs root, qemu-system-x86_64,
//! e2fsprogs, virsh (libvirt-clients) and the ignition package. Prints a
//! table; about a minute and a half under TCG (3 boots of about 9 s each,
//! the bounded run, the build of the config).

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::guest::{self, Accel, Guest, IgnitionBoot};
use okd_assets::node_program::NODE_PATH;

/// Runs per row; the table shows the median.
const RUNS: usize = 3;

/// How long the run of the whole config (with the okd-install program)
/// may read fw_cfg before qemu is killed.
const FULL_CONFIG_BUDGET: Duration = Duration::from_secs(40);

/// Debian's Ignition binary, which the package ships only inside its dracut
/// module (coreos/ignition dracut/30ignition).
const IGNITION: &str = "/usr/lib/dracut/modules.d/30ignition/ignition";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One row of the table: total to Ignition done, then its parts, seconds.
struct Row {
    what: String,
    total: f64,
    to_init: Option<f64>,
    fetch: f64,
    files: f64,
    runs: Vec<f64>,
}

/// [`RUNS`] guest boots under `accel`, each on a fresh root filesystem.
fn guest_row(g: &Guest, accel: Accel, config: &Path) -> Result<Row, String> {
    let mut boots: Vec<IgnitionBoot> = Vec::new();
    for _ in 0..RUNS {
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let disk = tmp.path().join("root.ext4");
        guest::make_ignition_root(&disk, guest::IGNITION_ROOT_MIB)?;
        boots.push(guest::ignition_boot(g, accel, config, &disk)?);
    }
    let pick = |f: &dyn Fn(&IgnitionBoot) -> f64| median(boots.iter().map(f).collect());
    Ok(Row {
        what: format!("qemu guest, {accel} (fw_cfg, -platform=qemu)"),
        total: pick(&|b| b.done.as_secs_f64()),
        to_init: Some(pick(&|b| b.init_s)),
        fetch: pick(&|b| b.fetch_s - b.init_s),
        files: pick(&|b| b.files_s - b.fetch_s),
        runs: boots.iter().map(|b| b.done.as_secs_f64()).collect(),
    })
}

/// Ignition's fetch then files stage on the host, `-platform=file`, into a
/// fresh directory root ([`common::ignition_root`]); the two stage times.
fn host_run(config: &Path) -> Result<(Duration, Duration), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (root, run, stub) = common::ignition_root(tmp.path());
    let path = format!(
        "{}:{}",
        stub.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut times = Vec::new();
    for (stage, extra) in [
        (
            "fetch",
            format!("-neednet={}", run.join("neednet").display()),
        ),
        ("files", format!("-root={}", root.display())),
    ] {
        let started = Instant::now();
        let out = Command::new("timeout")
            .arg("120")
            .arg(IGNITION)
            .args([
                "-platform=file",
                &format!("-stage={stage}"),
                "-log-to-stdout",
            ])
            .arg(format!(
                "-config-cache={}",
                run.join("ignition.json").display()
            ))
            .arg(format!("-state-file={}", run.join("state").display()))
            .arg(extra)
            .env("IGNITION_CONFIG_FILE", config)
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{IGNITION}: {e}"))?;
        times.push(started.elapsed());
        if !out.status.success() {
            return Err(format!(
                "host Ignition {stage} failed ({}): {}",
                out.status,
                common::kube::tail(&String::from_utf8_lossy(&out.stdout), 20)
            ));
        }
    }
    Ok((times[0], times[1]))
}

fn host_row(config: &Path) -> Result<Row, String> {
    let runs: Vec<(Duration, Duration)> = (0..RUNS)
        .map(|_| host_run(config))
        .collect::<Result<_, _>>()?;
    let secs = |f: &dyn Fn(&(Duration, Duration)) -> Duration| {
        median(runs.iter().map(|r| f(r).as_secs_f64()).collect())
    };
    Ok(Row {
        what: "host, -platform=file (peer)".into(),
        total: secs(&|r| r.0 + r.1),
        to_init: None,
        fetch: secs(&|r| r.0),
        files: secs(&|r| r.1),
        runs: runs.iter().map(|r| (r.0 + r.1).as_secs_f64()).collect(),
    })
}

fn main() {
    let Some(g) = guest::ignition_kit() else {
        return;
    };
    if okd_test_utils::tool("virsh", &[], Some("libvirt-clients")).is_none()
        || okd_test_utils::tool("ignition", &[IGNITION], Some("ignition")).is_none()
    {
        return;
    }
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("temporary directory");
    let cluster = guest::create_example_cluster(tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    let full = &cluster.bootstrap_ignition;
    let full_bytes = std::fs::read(full).expect("the bootstrap VM's Ignition");
    let mut cfg: serde_json::Value = serde_json::from_slice(&full_bytes).expect("JSON");
    let files = cfg["storage"]["files"]
        .as_array_mut()
        .expect("storage.files");
    let before = files.len();
    files.retain(|f| f["path"] != NODE_PATH);
    let carries_program = files.len() < before;
    let config = if carries_program {
        let p = tmp.path().join("testk-bootstrap-without-program.ign");
        std::fs::write(&p, serde_json::to_vec(&cfg).expect("JSON")).expect("writing");
        p
    } else {
        full.clone()
    };
    let size = std::fs::metadata(&config).map(|m| m.len()).unwrap_or(0);
    let choice = guest::accel(&g);
    println!(
        "vm_boot: boot to Ignition done, {} ({size} bytes{}), median of {RUNS} runs",
        full.file_name().unwrap().to_string_lossy(),
        if carries_program {
            format!(" without {NODE_PATH}; {} bytes with it", full_bytes.len())
        } else {
            String::new()
        }
    );
    println!("KVM probe: {} ({})", choice.accel, choice.reason);

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for accel in [Accel::Tcg, Accel::Kvm] {
        if accel == Accel::Kvm && choice.accel != Accel::Kvm {
            notes.push(format!("qemu guest, KVM: not run ({})", choice.reason));
            continue;
        }
        rows.push(guest_row(&g, accel, &config).unwrap_or_else(|e| panic!("{e}")));
    }
    let host = host_row(&config).unwrap_or_else(|e| panic!("{e}"));
    let full_run = carries_program.then(|| {
        let disk = tmp.path().join("full-root.ext4");
        guest::make_ignition_root(&disk, guest::IGNITION_ROOT_MIB)
            .and_then(|()| {
                guest::fw_cfg_read_progress(&g, choice.accel, full, &disk, FULL_CONFIG_BUDGET)
            })
            .unwrap_or_else(|e| panic!("{e}"))
    });

    println!();
    println!(
        "| {:<40} | {:>13} | {:>10} | {:>11} | {:>11} | {:<18} |",
        "run", "to Ign. done", "to /init", "fetch stage", "files stage", "runs (s)"
    );
    println!(
        "|{:-<42}|{:->15}|{:->12}|{:->13}|{:->13}|{:-<20}|",
        "", "", "", "", "", ""
    );
    for r in rows.iter().chain([&host]) {
        let runs: Vec<String> = r.runs.iter().map(|t| format!("{t:.2}")).collect();
        println!(
            "| {:<40} | {:>11.2} s | {:>10} | {:>9.2} s | {:>9.2} s | {:<18} |",
            r.what,
            r.total,
            r.to_init
                .map(|t| format!("{t:.2} s"))
                .unwrap_or_else(|| "-".into()),
            r.fetch,
            r.files,
            runs.join(" ")
        );
    }
    for n in notes {
        println!("{n}");
    }
    println!();
    for r in &rows {
        println!(
            "{}: {:.0}x the host peer from qemu start; Ignition's two stages alone \
             (guest /init to files done) {:.0}x",
            r.what,
            r.total / host.total,
            (r.fetch + r.files) / host.total
        );
    }
    if let Some(p) = full_run {
        let secs = p.reading.as_secs_f64();
        let projected = if p.finished {
            format!("it finished within {secs:.0} s")
        } else if p.read_kib > 0 {
            let minutes = secs * (p.total_kib as f64 / p.read_kib as f64).powi(2) / 60.0;
            format!("at that quadratic rate all of it takes about {minutes:.0} min")
        } else {
            "it had not printed its first progress line".to_string()
        };
        println!(
            "whole config with {NODE_PATH} ({} KiB), {}: Ignition read {} KiB through fw_cfg \
             in {secs:.0} s; {projected}",
            p.total_kib, choice.accel, p.read_kib
        );
    }
    println!(
        "(guest columns: uptime to /init, /init to the fetch stage's exit \
         (modules, mount, fw_cfg read, fetch), then the files stage; total {:.0} s)",
        started.elapsed().as_secs_f64()
    );
}
