//! bootkube's stages, in order, with the marker that makes each resumable
//! (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/bootkube.sh.template`; the order
//! of the 4.14+ script: the API and auth CRD renders first, the DNS and
//! readyz checks around cluster-bootstrap).

/// Whether a finished stage leaves `<name>.done` in the work directory so a
/// restart skips it, or runs again on every start (the checks and waits,
/// which are cheap and must see the present state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// `<name>.done` is written when the stage succeeds; a restart skips it.
    Done,
    /// No marker: the stage runs on every start of the unit.
    Always,
}

/// Which installs run a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Only {
    /// Every install.
    Any,
    /// Only single node (bootstrap-in-place, `BOOTSTRAP_INPLACE=true`).
    SingleNode,
    /// Only installs with a separate bootstrap machine.
    WithBootstrap,
}

/// The shape of the control plane, which picks the stages that run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// A bootstrap machine and one or more masters.
    WithBootstrap,
    /// Single node: the bootstrap becomes the master (bootstrap-in-place,
    /// openshift/installer `data/data/bootstrap/bootstrap-in-place/`).
    SingleNode,
}

/// One stage of bootkube.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage {
    /// The stage's name, as in the service record and the `.done` marker.
    pub name: &'static str,
    /// Whether it leaves a `.done` marker.
    pub marker: Marker,
    /// Which installs run it.
    pub only: Only,
    /// A marker of another stage whose presence skips this one
    /// (`wait-for-etcd` is skipped once single node's `stop-etcd` moved
    /// etcd away).
    pub skip_if: Option<&'static str>,
}

const fn done(name: &'static str) -> Stage {
    Stage {
        name,
        marker: Marker::Done,
        only: Only::Any,
        skip_if: None,
    }
}

const fn always(name: &'static str) -> Stage {
    Stage {
        name,
        marker: Marker::Always,
        only: Only::Any,
        skip_if: None,
    }
}

/// bootkube's stages in the order they run.
pub const STAGES: &[Stage] = &[
    done("openshift-manifests"),
    done("api-bootstrap"),
    done("auth-api-bootstrap"),
    done("config-bootstrap"),
    done("cvo-bootstrap"),
    done("etcd-bootstrap"),
    done("kube-apiserver-bootstrap"),
    done("kube-controller-manager-bootstrap"),
    done("kube-scheduler-bootstrap"),
    done("ingress-operator-bootstrap"),
    done("node-tuning-bootstrap"),
    Stage {
        only: Only::SingleNode,
        ..done("cmdbootline-nto-bootstrap")
    },
    done("mco-bootstrap"),
    always("resolve-api-url"),
    always("resolve-api-int-url"),
    done("cco-bootstrap"),
    Stage {
        skip_if: Some("stop-etcd.done"),
        ..always("wait-for-etcd")
    },
    done("cb-bootstrap"),
    Stage {
        only: Only::WithBootstrap,
        ..always("cvo-overrides")
    },
    Stage {
        only: Only::WithBootstrap,
        ..always("wait-for-ceo")
    },
    // Single node: bootstrap-in-place.sh's stages in their place.
    Stage {
        only: Only::SingleNode,
        ..done("stop-etcd")
    },
    Stage {
        only: Only::SingleNode,
        ..done("master-ignition")
    },
    // Single node: after stop-etcd the API cannot answer until the node
    // has rebooted from its disk; bootkube.sh runs these anyway and records
    // two failures (a minute each). Here they are left out on a single node.
    Stage {
        only: Only::WithBootstrap,
        ..always("check-api-url")
    },
    Stage {
        only: Only::WithBootstrap,
        ..always("check-api-int-url")
    },
];

/// The marker that ends bootkube: present, the unit does not start again
/// (`bootkube.service`'s `ConditionPathExists=!/opt/openshift/.bootkube.done`).
pub const BOOTKUBE_DONE: &str = ".bootkube.done";

impl Stage {
    /// Whether the stage runs for `topology`.
    pub fn runs_for(&self, topology: Topology) -> bool {
        match self.only {
            Only::Any => true,
            Only::SingleNode => topology == Topology::SingleNode,
            Only::WithBootstrap => topology == Topology::WithBootstrap,
        }
    }

    /// The marker file's name, `<name>.done`, for a [`Marker::Done`] stage.
    pub fn marker_file(&self) -> Option<String> {
        (self.marker == Marker::Done).then(|| format!("{}.done", self.name))
    }
}

/// The stages that run for `topology`, in order.
pub fn stages_for(topology: Topology) -> impl Iterator<Item = &'static Stage> {
    STAGES.iter().filter(move |s| s.runs_for(topology))
}
