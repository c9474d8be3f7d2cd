//! A command that fails writes nothing and consumes nothing (issue #25,
//! finding 1): the store fetches every target, then saves the state, then
//! purges its inputs, as openshift-install does
//! (openshift/installer `pkg/asset/store/store.go`). Each asset of each
//! command is made to fail in turn ([`GenCtx::fail_generating`]) and the
//! directory must be byte-identical afterwards: install-config.yaml still
//! there, no state file, no half-written targets; the same after
//! `create manifests` with a user's edit in `openshift/`.

mod common;

use std::path::Path;

use common::{context, files};
use okd_assets::store::{Store, asset_names};
use okd_assets::{AssetDir, Target, chain, create};

const TARGETS: [Target; 3] = [
    Target::Manifests,
    Target::IgnitionConfigs,
    Target::SingleNodeIgnitionConfig,
];

/// The single-master example with `bootstrapInPlace`, so every target works.
fn install_config(bootstrap_in_place: bool) -> String {
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../examples/baremetal-single-master/install-config.yaml");
    let mut text = std::fs::read_to_string(example).expect("example");
    if bootstrap_in_place {
        text.push_str("bootstrapInPlace:\n  installationDisk: /dev/sda\n");
    }
    text
}

fn keys() -> Vec<okd_pki::RsaKey> {
    let d = tempfile::tempdir().expect("tempdir");
    let ctx = context(0, &[]);
    let all: Vec<_> = TARGETS.iter().flat_map(|t| t.assets()).collect();
    let n = Store::open(AssetDir::new(d.path()), &ctx)
        .expect("store")
        .keys_needed(&all);
    okd_pki::generate_keys(n).expect("keys")
}

/// The directory's files without the lock file (which stays, empty, by design).
fn inputs(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut f = files(dir);
    f.remove(".openshift_install.lock");
    f
}

/// Runs `target` with a failure injected into `name` on `dir` and checks that
/// it failed there and left every file as it was.
fn fails_cleanly(dir: &Path, keys: &[okd_pki::RsaKey], target: Target, name: &str) {
    let before = inputs(dir);
    let mut ctx = context(1, keys);
    ctx.fail_generating = Some(name.to_string());
    let e = create(&AssetDir::new(dir), &mut ctx, target, 1)
        .expect_err(&format!("create {} with {name} failing", target.command()));
    let msg = chain(&e);
    assert!(msg.contains("injected failure"), "{msg}");
    let after = inputs(dir);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "create {} failing in {name:?} changed the directory's files ({msg})",
        target.command()
    );
    for (k, v) in &before {
        assert!(
            after[k] == *v,
            "create {} failing in {name:?} rewrote {k}",
            target.command()
        );
    }
}

#[test]
fn a_failing_command_consumes_nothing() {
    let keys = keys();
    for target in TARGETS {
        for name in asset_names(&target.assets()) {
            if name == "Install Config" {
                continue; // read from the directory, never generated here
            }
            let d = tempfile::tempdir().expect("tempdir");
            std::fs::write(d.path().join("install-config.yaml"), install_config(true))
                .expect("write");
            fails_cleanly(d.path(), &keys, target, name);
        }
    }

    // After `create manifests` and a user's edit, assets that only
    // `create ignition-configs` generates fail in turn.
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(d.path().join("install-config.yaml"), install_config(true)).expect("write");
    create(
        &AssetDir::new(d.path()),
        &mut context(1, &keys),
        Target::Manifests,
        1,
    )
    .expect("create manifests");
    let edited = d
        .path()
        .join("openshift/99_openshift-cluster-api_master-user-data-secret.yaml");
    let mut text = std::fs::read_to_string(&edited).expect("read a manifest");
    text.push_str("# edited\n");
    std::fs::write(&edited, text).expect("edit");
    // (The pointer configs and the password are in the state file by now.)
    for name in [
        "Bootstrap Ignition Config",
        "Metadata",
        "Kubeconfig Admin Client",
    ] {
        let run = tempfile::tempdir().expect("tempdir");
        for (k, v) in inputs(d.path()) {
            let p = run.path().join(&k);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, v).expect("copy");
        }
        fails_cleanly(run.path(), &keys, Target::IgnitionConfigs, name);
    }
}

/// The user's report: `create single-node-ignition-config` without
/// `bootstrapInPlace` fails, and install-config.yaml is still there.
#[test]
fn a_real_failure_keeps_install_config() {
    let d = tempfile::tempdir().expect("tempdir");
    let text = install_config(false);
    std::fs::write(d.path().join("install-config.yaml"), &text).expect("write");
    let e = create(
        &AssetDir::new(d.path()),
        &mut context(1, &keys()),
        Target::SingleNodeIgnitionConfig,
        1,
    )
    .expect_err("bootstrapInPlace is required");
    assert!(
        chain(&e).contains("bootstrapInPlace is required"),
        "{}",
        chain(&e)
    );
    let after = inputs(d.path());
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        ["install-config.yaml"],
        "only the input, no state file"
    );
    assert_eq!(after["install-config.yaml"], text.as_bytes());
}
