//! The asset store names a cycle in the graph with its path instead of
//! recursing until the stack overflows (issue #19 item 2).

mod common;

use okd_assets::AssetDir;
use okd_assets::AssetError;
use okd_assets::GenCtx;
use okd_assets::store::{Asset, Dep, Parents, Store, dep, find_cycle};
use serde::{Deserialize, Serialize};

/// `First` needs `Second`, `Second` needs `Third`, `Third` needs `Second`.
#[derive(Debug, Serialize, Deserialize)]
struct First;
#[derive(Debug, Serialize, Deserialize)]
struct Second;
#[derive(Debug, Serialize, Deserialize)]
struct Third;
/// A leaf, and an asset above it: no cycle.
#[derive(Debug, Serialize, Deserialize)]
struct Leaf;
#[derive(Debug, Serialize, Deserialize)]
struct Above;

macro_rules! test_asset {
    ($t:ident, $name:literal, [$($d:ident),*]) => {
        impl Asset for $t {
            const NAME: &'static str = $name;
            const STATE_KEY: &'static str = concat!("*test.", $name);
            fn dependencies() -> Vec<Dep> {
                vec![$(dep::<$d>()),*]
            }
            fn generate(_: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
                Ok($t)
            }
        }
    };
}
test_asset!(First, "First", [Leaf, Second]);
test_asset!(Second, "Second", [Third]);
test_asset!(Third, "Third", [Second]);
test_asset!(Leaf, "Leaf", []);
test_asset!(Above, "Above", [Leaf]);

#[test]
fn a_cycle_is_named_with_its_path() {
    assert_eq!(
        find_cycle(&[dep::<First>()]),
        Some(vec!["Second", "Third", "Second"])
    );
    assert_eq!(find_cycle(&[dep::<Above>(), dep::<Leaf>()]), None);
    // The real targets have none.
    for t in [
        okd_assets::targets::Target::InstallConfig,
        okd_assets::targets::Target::Manifests,
        okd_assets::targets::Target::IgnitionConfigs,
        okd_assets::targets::Target::SingleNodeIgnitionConfig,
    ] {
        assert_eq!(find_cycle(&t.assets()), None, "{t:?}");
    }

    let d = tempfile::tempdir().unwrap();
    let ctx = common::context(0, &[]);
    let mut store = Store::open(AssetDir::new(d.path()), &ctx).unwrap();
    let err = store.fetch(dep::<First>()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the asset graph has a cycle: Second -> Third -> Second"
    );
    store.fetch(dep::<Above>()).unwrap();
}
