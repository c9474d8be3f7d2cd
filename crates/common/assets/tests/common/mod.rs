//! What the store's integration tests share: whole-directory snapshots and a
//! pinned generation context.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use okd_assets::GenCtx;
use okd_types::release::{DEFAULT_RELEASE_IMAGE, ReleaseTarget};
use time::macros::datetime;

/// Every file under `root` (relative path → bytes).
pub fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).expect("under root");
                out.insert(rel.display().to_string(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// A context for the default release with a fixed clock, `seed` and `keys`
/// handed out before any generated key.
pub fn context(seed: u64, keys: &[okd_pki::RsaKey]) -> GenCtx {
    let target = ReleaseTarget::from_release_image(DEFAULT_RELEASE_IMAGE).expect("release target");
    let mut ctx = GenCtx::new(
        DEFAULT_RELEASE_IMAGE.to_string(),
        target,
        target.ignition_spec(),
    );
    ctx.now = datetime!(2026-01-02 03:04:05 UTC);
    ctx.seed(seed);
    ctx.use_keys(keys.to_vec());
    ctx
}
