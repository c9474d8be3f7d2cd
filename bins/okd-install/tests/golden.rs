//! Golden files: every file `create manifests`, `create ignition-configs`
//! and (for examples with hosts) `create bastion-configs` write for the
//! examples in `examples/`, generated with a fixed clock, a seeded random
//! generator and the fixed RSA keys of `tests-data/golden/keys.pem`, compared
//! byte for byte with `tests-data/golden/<example>/<step>/` (format:
//! `golden_support` and `tests-data/golden/README.md`). A difference names
//! the file, the Ignition file or unit inside it and the first differing
//! line.
//!
//! The steps run through the same library calls as the binary's `create`
//! (`okd_assets::create`, `okd_serve::create_bastion_configs`), with the
//! generation context pinned and the DNS zones' SOA serial (the Unix time)
//! taken from the same fixed clock; the binary itself never reads a seed.
//!
//! Regenerate after an intended change, then review `git diff tests-data/golden`:
//! `OKD_BLESS=1 cargo test -p okd-install --test golden`.

mod common;
mod golden_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use golden_support::{differences, read_tree, snapshot, step_views, write_tree};
use okd_assets::store::Store;
use okd_assets::{AssetDir, GenCtx, Target};
use okd_types::release::{DEFAULT_RELEASE_IMAGE, ReleaseTarget};
use time::OffsetDateTime;
use time::macros::datetime;

/// The seed of every run's random generator (UUID, infraID, password and
/// its bcrypt salt, certificate serials).
const SEED: u64 = 19;
/// "Now" for every run: certificates are valid from here.
const NOW: OffsetDateTime = datetime!(2026-01-02 03:04:05 UTC);
/// The command that regenerates the golden files.
const BLESS: &str = "OKD_BLESS=1 cargo test -p okd-install --test golden";

/// One example and the release it is generated for.
struct Example {
    /// Directory under `examples/`.
    name: &'static str,
    /// Release image (its tag picks the target release and Ignition spec).
    release: &'static str,
}

/// A command of the sequence each example goes through.
#[derive(Clone, Copy)]
enum Step {
    /// `create manifests`.
    Manifests,
    /// `create ignition-configs` (after manifests).
    IgnitionConfigs,
    /// `create bastion-configs`, for examples with agent-config.yaml and
    /// bastion-config.yaml.
    BastionConfigs,
}

impl Step {
    /// The golden directory of this step.
    fn dir_name(self) -> &'static str {
        match self {
            Step::Manifests => "manifests",
            Step::IgnitionConfigs => "ignition-configs",
            Step::BastionConfigs => "bastion-configs",
        }
    }
}

/// `tests-data/golden`.
fn golden_root() -> PathBuf {
    common::repo().join("tests-data/golden")
}

/// Whether this run rewrites the golden files (`OKD_BLESS=1`).
fn blessing() -> bool {
    std::env::var("OKD_BLESS").is_ok_and(|v| v == "1")
}

/// The generation context of one command: the example's release, the
/// fixed clock and seed, no FIPS host.
/// What bootstrap.ign carries as the node program in the golden files.
const NODE_PROGRAM_STAND_IN: &[u8] =
    b"\x7fELF okd-install golden-file stand-in for the node program\n";

fn context(release: &str) -> GenCtx {
    let target = ReleaseTarget::from_release_image(release).expect("release target");
    let mut ctx = GenCtx::new(release.to_string(), target, target.ignition_spec());
    ctx.now = NOW;
    ctx.host_fips = false;
    ctx.seed(SEED);
    ctx
}

/// Serialises reading and extending `keys.pem` across the tests.
static KEYS: Mutex<()> = Mutex::new(());

/// The first `n` fixed RSA keys of `tests-data/golden/keys.pem`; when
/// blessing, missing ones are generated and appended (the existing ones
/// stay, so unrelated golden files do not change).
fn fixed_keys(n: usize) -> Vec<okd_pki::RsaKey> {
    let _guard = KEYS.lock().unwrap_or_else(|e| e.into_inner());
    let path = golden_root().join("keys.pem");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut keys: Vec<okd_pki::RsaKey> = pem_keys(&text)
        .iter()
        .map(|k| okd_pki::RsaKey::from_pem(k).expect("a key of keys.pem"))
        .collect();
    if keys.len() < n {
        assert!(
            blessing(),
            "{} has {} keys, the examples need {n}: run `{BLESS}`",
            path.display(),
            keys.len()
        );
        let more = okd_pki::generate_keys(n - keys.len()).expect("generate keys");
        let mut out = if text.is_empty() {
            "# RSA-2048 keys for the golden-file tests only (bins/okd-install/tests/golden.rs),\n\
             # handed out in order; never used by a cluster.\n"
                .to_string()
        } else {
            text
        };
        for k in &more {
            out.push_str(&k.private_pem());
        }
        std::fs::create_dir_all(golden_root()).expect("create tests-data/golden");
        std::fs::write(&path, out).expect("write keys.pem");
        keys.extend(more);
    }
    keys.truncate(n);
    keys
}

/// The PEM blocks of `text`, each with its BEGIN and END lines.
fn pem_keys(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("-----BEGIN ") {
            cur = Some(String::new());
        }
        if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
        if line.starts_with("-----END ") {
            out.extend(cur.take());
        }
    }
    out
}

/// How many keys `target` takes in `dir` as it is now.
fn keys_needed(dir: &Path, release: &str, target: Target) -> usize {
    let ctx = context(release);
    Store::open(AssetDir::new(dir), &ctx)
        .expect("open the store")
        .keys_needed(&target.assets())
}

/// Runs one step in `dir`, handing out `keys` from `*next` on.
fn run_step(
    dir: &Path,
    ex: &Example,
    step: Step,
    keys: &[okd_pki::RsaKey],
    next: &mut usize,
    cache: &Path,
) {
    let target = match step {
        Step::Manifests => Target::Manifests,
        Step::IgnitionConfigs => Target::IgnitionConfigs,
        Step::BastionConfigs => {
            let serial = u32::try_from(NOW.unix_timestamp()).expect("a 32-bit serial");
            okd_serve::create_bastion_configs_with_serial(dir, serial)
                .expect("create bastion-configs");
            return;
        }
    };
    let n = keys_needed(dir, ex.release, target);
    let mut ctx = context(ex.release);
    ctx.use_keys(keys[*next..*next + n].to_vec());
    *next += n;
    // bootstrap.ign carries a fixed stand-in for the node program, the same
    // in debug and release builds, through the cache as a real one goes.
    ctx.cache_dir = Some(cache.to_path_buf());
    let program = cache.join("okd-install-node");
    std::fs::write(&program, NODE_PROGRAM_STAND_IN).expect("write the stand-in program");
    ctx.node_program = Some(okd_assets::node_program::NodeProgramAsset {
        program: Some(
            okd_assets::node_program::prepare_file(&program, cache).expect("prepare the program"),
        ),
    });
    okd_assets::create(&AssetDir::new(dir), &mut ctx, target, 1)
        .unwrap_or_else(|e| panic!("create {} for {}: {e}", step.dir_name(), ex.name));
}

/// Generates every step of `ex` in a fresh directory and compares each
/// step's views with its golden directory (or writes them when blessing).
fn check(ex: &Example) {
    // Read by the Ignition assets; the test cannot unset them (no unsafe code).
    for var in [
        "OPENSHIFT_INSTALL_EXPERIMENTAL_CLUSTER_PROFILE",
        "OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP",
    ] {
        assert!(
            std::env::var_os(var).is_none(),
            "{var} changes bootstrap.ign: unset it for the golden-file test"
        );
    }
    let d = tempfile::tempdir().expect("tempdir");
    let cache = tempfile::tempdir().expect("tempdir");
    let src = common::repo().join("examples").join(ex.name);
    let mut steps = vec![Step::Manifests, Step::IgnitionConfigs];
    for f in [
        "install-config.yaml",
        "agent-config.yaml",
        "bastion-config.yaml",
    ] {
        if src.join(f).exists() {
            std::fs::copy(src.join(f), d.path().join(f)).expect("copy the example");
        }
    }
    if src.join("bastion-config.yaml").exists() {
        steps.push(Step::BastionConfigs);
    }
    let example_golden = golden_root().join(ex.name);
    if blessing() && example_golden.exists() {
        std::fs::remove_dir_all(&example_golden).expect("remove old golden files");
    }
    let mut stored: Vec<String> = std::fs::read_dir(&example_golden)
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    stored.sort();
    let mut expected: Vec<String> = steps.iter().map(|s| s.dir_name().to_string()).collect();
    expected.sort();
    assert!(
        blessing() || stored == expected,
        "tests-data/golden/{} holds {stored:?}, the steps are {expected:?}: run `{BLESS}`",
        ex.name
    );
    let keys = fixed_keys(keys_needed(d.path(), ex.release, Target::IgnitionConfigs));
    let mut next = 0;
    let mut found: Vec<String> = Vec::new();
    for step in steps {
        let before = snapshot(d.path());
        run_step(d.path(), ex, step, &keys, &mut next, cache.path());
        let views = step_views(&before, &snapshot(d.path()));
        let golden = example_golden.join(step.dir_name());
        if blessing() {
            write_tree(&golden, &views);
        } else {
            let label = format!("{}/{}", ex.name, step.dir_name());
            found.extend(differences(&label, &read_tree(&golden), &views));
        }
    }
    assert_eq!(next, keys.len(), "every fixed key handed out");
    if !found.is_empty() {
        let shown = found.len().min(12);
        panic!(
            "{} differs from tests-data/golden ({} differences; release {}, seed {SEED}, clock {NOW}):\n  {}{}\nIf the change is intended, regenerate with `{BLESS}` and review `git diff tests-data/golden`.",
            ex.name,
            found.len(),
            ex.release,
            found[..shown].join("\n  "),
            if shown < found.len() {
                format!("\n  … and {} more", found.len() - shown)
            } else {
                String::new()
            }
        );
    }
}

#[test]
fn baremetal_single_master() {
    check(&Example {
        name: "baremetal-single-master",
        release: DEFAULT_RELEASE_IMAGE,
    });
}

#[test]
fn baremetal_ha() {
    check(&Example {
        name: "baremetal-ha",
        release: DEFAULT_RELEASE_IMAGE,
    });
}

#[test]
fn aws_upi() {
    // The example is an OKD 4.5 config (networkType OpenShiftSDN).
    check(&Example {
        name: "aws-upi",
        release: common::OKD_45,
    });
}

/// The diff itself: one changed byte of an embedded file of bootstrap.ign is
/// reported with the Ignition path and the line, before the config and the
/// index; a unit's dropin gets a view of its own.
#[test]
fn a_changed_byte_in_bootstrap_ign_is_named_with_its_line() {
    let ign = |text: &str| {
        let config = serde_json::json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [{
                "path": "/opt/openshift/tls/kube-ca.crt",
                "mode": 420,
                "contents": {"source": okd_types::dataurl::encode(text.as_bytes())}
            }]},
            "systemd": {"units": [{
                "name": "bootkube.service",
                "contents": "[Unit]\nDescription=Bootstrap\n",
                "dropins": [{"name": "10-env.conf", "contents": "[Service]\n"}]
            }]}
        });
        let mut files = BTreeMap::new();
        files.insert(
            "bootstrap.ign".to_string(),
            golden_support::Written {
                mode: 0o640,
                bytes: serde_json::to_vec(&config).expect("JSON"),
            },
        );
        step_views(&BTreeMap::new(), &files)
    };
    let golden = ign("-----BEGIN CERTIFICATE-----\nMIIB\nAAAA\n");
    let actual = ign("-----BEGIN CERTIFICATE-----\nMIIC\nAAAA\n");
    assert!(golden.contains_key("bootstrap.ign.d/units/bootkube.service.d/10-env.conf"));
    let found = differences("x/ignition-configs", &golden, &actual);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].contains("bootstrap.ign: Ignition file /opt/openshift/tls/kube-ca.crt")
            && found[0].contains("first difference at line 2:")
            && found[0].contains("golden: MIIB")
            && found[0].contains("actual: MIIC"),
        "{}",
        found[0]
    );
    assert!(
        found[1].contains("bootstrap.ign.d/config.json"),
        "{}",
        found[1]
    );
    assert!(found[2].contains("INDEX"), "{}", found[2]);
}
