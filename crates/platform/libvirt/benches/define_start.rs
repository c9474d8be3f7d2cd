//! Benchmark: creating N VMs (a boot volume each, define, start) through
//! libvirt's test driver, with one [`Virsh`] session against one `virsh`
//! process per command, as a shell script calling `virsh` would.
//!
//! Run: `cargo bench -p okd-libvirt --bench define_start`. Prints a table;
//! takes a few seconds. Each N gets a fresh session (the test driver's
//! 100 GiB pool holds 1 GiB volumes for N = 50).
//!
//! The peer runs the same command lines, each in a new
//! `virsh -q -c test:///default` process. The test driver forgets
//! everything when its process exits, so there the commands that need an
//! earlier one's result (`vol-create-as` with a backing volume, `vol-path`,
//! `start`) fail at their lookup instead of doing the work: the peer's
//! times are a lower bound, and its failures are counted in the table.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use okd_libvirt::{DiskSpec, DomainSpec, LibvirtError, NicSpec, Virsh, domain_xml};

const URI: &str = "test:///default";
const POOL: &str = "default-pool";
const BASE: &str = "bench-coreos.qcow2";
const ROUNDS: usize = 3;

fn spec(i: usize) -> DomainSpec {
    let name = format!("bench-worker-{i}");
    DomainSpec {
        disks: vec![DiskSpec {
            pool: POOL.into(),
            volume: format!("{name}.qcow2"),
            format: "qcow2".into(),
        }],
        nics: vec![NicSpec {
            network: "default".into(),
            mac: format!("52:54:00:be:{:02x}:{:02x}", i / 256, i % 256),
        }],
        name,
        domain_type: "qemu".into(),
        memory_mib: 2048,
        cpus: 2,
        ignition: Some("/var/tmp/bench-worker.ign".into()),
        cluster: "bench".into(),
        role: "worker".into(),
        virtual_router_id: None,
        side_disk: None,
    }
}

/// One session: connect (`uri`), the base volume, then per VM `vol-create-as`,
/// `vol-path`, `define`, `start`. Returns the time and the commands sent.
fn with_session(n: usize) -> Result<(Duration, u64), LibvirtError> {
    let started = Instant::now();
    let mut virsh = Virsh::connect(URI)?;
    virsh.create_volume(POOL, BASE, 1, "qcow2", None)?;
    for i in 0..n {
        let vm = spec(i);
        virsh.create_volume(POOL, &vm.disks[0].volume, 1, "qcow2", Some(BASE))?;
        virsh.define(&domain_xml(&vm))?;
        virsh.start(&vm.name)?;
    }
    let elapsed = started.elapsed();
    let commands = virsh.command_count();
    assert_eq!(
        virsh.domains()?.len(),
        n + 1,
        "the driver's `test` and ours"
    );
    Ok((elapsed, commands))
}

/// The same command lines, one `virsh` process each. Returns the time, the
/// processes run and how many of them failed.
fn process_per_command(n: usize) -> (Duration, usize, usize) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let started = Instant::now();
    let mut runs = 0;
    let mut failures = 0;
    let mut virsh = |args: &[&str]| {
        runs += 1;
        let status = Command::new("virsh")
            .args(["-q", "-c", URI])
            .args(args)
            .env("LC_ALL", "C")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("running virsh");
        if !status.success() {
            failures += 1;
        }
    };
    virsh(&["uri"]);
    virsh(&["vol-create-as", POOL, BASE, "1G", "--format", "qcow2"]);
    virsh(&["vol-path", BASE, "--pool", POOL]);
    for i in 0..n {
        let vm = spec(i);
        let volume = &vm.disks[0].volume;
        virsh(&[
            "vol-create-as",
            POOL,
            volume,
            "1G",
            "--format",
            "qcow2",
            "--backing-vol",
            BASE,
            "--backing-vol-format",
            "qcow2",
        ]);
        virsh(&["vol-path", volume, "--pool", POOL]);
        let path = dir.path().join(format!("{}.xml", vm.name));
        let mut file = std::fs::File::create(&path).expect("XML file");
        file.write_all(domain_xml(&vm).as_bytes())
            .expect("XML file");
        virsh(&["define", path.to_str().expect("UTF-8 path")]);
        virsh(&["start", &vm.name]);
    }
    (started.elapsed(), runs, failures)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    match Virsh::connect(URI) {
        Ok(_) => {}
        Err(e @ LibvirtError::Missing { .. })
            if std::env::var_os("OKD_SKIP_MISSING_TOOLS").is_some() =>
        {
            eprintln!("SKIPPED (OKD_SKIP_MISSING_TOOLS): {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    }
    println!(
        "define+start of N VMs with a boot volume each, libvirt test driver ({URI}), best of {ROUNDS}"
    );
    println!(
        "{:>4}   {:-^29}   {:-^37}   {:>7}",
        "", " one virsh session ", " one virsh process per command ", ""
    );
    println!(
        "{:>4}   {:>5} {:>8} {:>7} {:>7}   {:>5} {:>7} {:>8} {:>7} {:>7}   {:>7}",
        "N", "cmds", "ms", "ms/VM", "ms/cmd", "procs", "failed", "ms", "ms/VM", "ms/cmd", "ratio"
    );
    let total = Instant::now();
    for n in [3, 10, 50] {
        let (session, commands) = (0..ROUNDS)
            .map(|_| with_session(n).expect("session run"))
            .min()
            .expect("rounds");
        let (naive, runs, failed) = (0..ROUNDS)
            .map(|_| process_per_command(n))
            .min()
            .expect("rounds");
        println!(
            "{:>4}   {:>5} {:>8.1} {:>7.2} {:>7.3}   {:>5} {:>7} {:>8.1} {:>7.2} {:>7.2}   {:>6.1}x",
            n,
            commands,
            ms(session),
            ms(session) / n as f64,
            ms(session) / commands as f64,
            runs,
            failed,
            ms(naive),
            ms(naive) / n as f64,
            ms(naive) / runs as f64,
            naive.as_secs_f64() / session.as_secs_f64(),
        );
    }
    println!(
        "The session's time includes its connect. The processes' failed commands are those that\n\
         need an earlier one's result, gone with its process: they stop at their lookup, so that\n\
         column is a lower bound. Total {:.1} s.",
        total.elapsed().as_secs_f64()
    );
}
