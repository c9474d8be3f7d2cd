//! Benchmark (issue #23): the AWS UPI stacks' generation and their
//! deployment against moto's server, each beside a peer run in the same
//! process on the same machine.
//!
//! - generation: `okd_aws_upi::generate::generate` for the AWS UPI example
//!   (read master.ign, worker.ign, metadata.json and the install-config;
//!   write six templates and seven parameter files), median of
//!   [`GEN_RUNS`]; the peer parses the same files and writes them again
//!   with PyYAML and json (`tests/aws/peer.py render`), what a Python
//!   tool rendering these templates costs at least;
//! - deployment: `okd-install aws deploy --poll-interval 1s` until every
//!   stack is complete and the targets registered, spawn to exit, median of
//!   [`DEPLOY_RUNS`], each on a fresh `tests/aws/moto_server.py`; the peer
//!   does the same with boto3 (`tests/aws/peer.py deploy`: bucket, object,
//!   the stacks in order with the same placeholders filled, polling every
//!   1 s, the targets), spawn to exit, on its own fresh server.
//!
//! Run: `bench/aws-stacks.sh` (or `cargo bench -p okd-install --bench
//! aws_stacks`); needs python3 with moto 5.2.1 (.ci/run's virtual
//! environment). About a minute.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::{OKD_45, example_dir, okd_ok, repo};
use okd_test_utils::moto::Moto;

const GEN_RUNS: usize = 20;
const DEPLOY_RUNS: usize = 3;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn fresh_moto(t: &Path, i: usize) -> Moto {
    let m = Moto::start(&repo(), &t.join(format!("moto-{i}.log")), &[])
        .expect("python3 with moto (bash .ci/run installs it)");
    m.inspect(&["seed-zone", "example.com"]);
    m
}

fn main() {
    let python = okd_test_utils::py_tool("python3").expect("python3 with moto");
    let d = example_dir("aws-upi");
    let dir = d.path();
    okd_ok(
        dir,
        &["create", "ignition-configs", "--release-image", OKD_45],
    );
    let t = tempfile::tempdir().unwrap();
    // Each fresh server gets its own AMI registered (moto's ids differ).
    let opts = |ami: &str| okd_aws_upi::generate::Options {
        ami: Some(ami.to_string()),
        ..Default::default()
    };

    // Generation.
    let mut gen_ms = Vec::new();
    for _ in 0..GEN_RUNS {
        let start = Instant::now();
        okd_aws_upi::generate::generate(dir, &opts("ami-0123456789abcdef0")).unwrap();
        gen_ms.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    let out = Command::new(&python)
        .arg(repo().join("tests/aws/peer.py"))
        .args(["render", &dir.to_string_lossy(), &GEN_RUNS.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let peer_gen: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let okd_gen = median(gen_ms);

    // Deployment.
    let mut okd_s = Vec::new();
    let mut peer_s = Vec::new();
    for i in 0..DEPLOY_RUNS {
        let moto = fresh_moto(t.path(), 2 * i);
        let ami = moto.inspect(&["register-ami", "us-east-1"]);
        okd_aws_upi::generate::generate(dir, &opts(&ami)).unwrap();
        let _ = std::fs::remove_file(dir.join("aws/deploy.json"));
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_okd-install"))
            .args(["aws", "deploy", "--poll-interval", "1s", "--dir"])
            .arg(dir)
            .envs(moto.env())
            .output()
            .unwrap();
        okd_s.push(start.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        drop(moto);
        let moto = fresh_moto(t.path(), 2 * i + 1);
        let ami = moto.inspect(&["register-ami", "us-east-1"]);
        okd_aws_upi::generate::generate(dir, &opts(&ami)).unwrap();
        let start = Instant::now();
        let out = Command::new(&python)
            .arg(repo().join("tests/aws/peer.py"))
            .args(["deploy", &dir.to_string_lossy(), "1"])
            .envs(moto.env())
            .output()
            .unwrap();
        peer_s.push(start.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (okd_d, peer_d) = (median(okd_s.clone()), median(peer_s.clone()));
    println!("AWS UPI stacks (the aws-upi example: 7 stacks, 3 zones, 3 masters, 2 workers)");
    println!(
        "{:<58} {:>12} {:>12} {:>8}",
        "", "okd-install", "peer", "ratio"
    );
    println!(
        "{:<58} {:>9.2} ms {:>9.2} ms {:>7.2}x",
        "generate templates + parameter files (median of 20)",
        okd_gen,
        peer_gen,
        okd_gen / peer_gen
    );
    println!(
        "{:<58} {:>10.2} s {:>10.2} s {:>7.2}x",
        "deploy to all stacks complete vs moto (median of 3)",
        okd_d,
        peer_d,
        okd_d / peer_d
    );
    println!("deploy runs (s): okd-install {okd_s:.2?}, boto3 peer {peer_s:.2?}");
}
