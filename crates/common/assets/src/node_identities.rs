//! The nodes whose CSRs the bootstrap node may approve, as an asset of the
//! graph ([`NodeIdentitiesAsset`]), so that bootstrap.ign is made again
//! when they change (a host added to or renamed in agent-config.yaml /
//! bastion-config.yaml), with openshift-install's "Discarding … dependencies
//! are dirty" warning. The value comes from the command
//! ([`GenCtx::node_identities`], read from the inventory), as the release
//! image does; the state file keeps it under a key of okd-install's own.

use serde::{Deserialize, Serialize};

use crate::ctx::GenCtx;
use crate::error::AssetError;
use crate::store::{Asset, Dep, Parents};

/// The inventory's masters and workers (`None`: no inventory).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeIdentitiesAsset {
    /// The nodes, as bootstrap.ign's `okd-node-identities.json` holds them.
    #[serde(rename = "Nodes")]
    pub nodes: Option<okd_types::node_identities::NodeIdentities>,
}

impl NodeIdentitiesAsset {
    fn of(ctx: &GenCtx) -> Self {
        NodeIdentitiesAsset {
            nodes: ctx.node_identities.clone(),
        }
    }

    fn names(&self) -> String {
        match &self.nodes {
            None => "none".to_string(),
            Some(ids) => ids
                .nodes
                .iter()
                .filter_map(|n| n.names.first().cloned())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

impl Asset for NodeIdentitiesAsset {
    const NAME: &'static str = "Node Identities";
    /// okd-install's own key (openshift-install has no such asset).
    const STATE_KEY: &'static str = "*okdinstall.NodeIdentities";

    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }

    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        Ok(Self::of(ctx))
    }

    fn given(ctx: &GenCtx) -> Option<Self> {
        Some(Self::of(ctx))
    }

    fn same_as(&self, other: &Self) -> bool {
        self == other
    }

    fn describe_change(&self, old: &Self) -> String {
        format!(
            "the nodes the bootstrap may approve changed from {} to {} (agent-config.yaml / bastion-config.yaml)",
            old.names(),
            self.names()
        )
    }
}
