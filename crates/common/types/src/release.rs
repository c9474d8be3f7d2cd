//! The target release an install is generated for.
//!
//! openshift-install's output changed over releases (Ignition spec 3.0 → 3.1 →
//! 3.2, manifests added and dropped, validation rules such as OpenShiftSDN
//! being refused from 4.15 on). okd-install generates for one *target
//! release*, derived from the release image's tag or given explicitly, and
//! every version-dependent rule asks this type. The dated changes come from
//! the openshift/installer git history (`git log -S` on the files concerned).

use std::fmt;
use std::str::FromStr;

/// The release image used when none is given: a current OKD 4.x (SCOS) payload.
pub const DEFAULT_RELEASE_IMAGE: &str = "quay.io/okd/scos-release:4.19.0-okd-scos.1";

/// A target OpenShift/OKD release: `4.<minor>` plus its flavour.
///
/// Shape: `major.minor` (patch levels never change generated assets).
/// `okd` selects the OKD flavour (FCOS/SCOS: `cvo-overrides.yaml` gets an
/// `upstream`, bootstrap units differ slightly), otherwise the OCP flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReleaseTarget {
    /// Major version; always 4 for the releases supported here.
    pub major: u32,
    /// Minor version, e.g. 13 for 4.13.
    pub minor: u32,
    /// True for OKD (community) payloads, false for OCP.
    pub okd: bool,
}

/// An Ignition config specification version this crate can emit (3.0–3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IgnitionSpec {
    /// Spec 3.0.0: what OKD 4.4/4.5 (Fedora CoreOS) installers wrote.
    V3_0,
    /// Spec 3.1.0: openshift-install 4.6 and 4.7.
    V3_1,
    /// Spec 3.2.0: openshift-install 4.8 and later (the default).
    V3_2,
    /// Spec 3.3.0: selectable; accepted by Ignition ≥ 2.11.
    V3_3,
    /// Spec 3.4.0: selectable; accepted by Ignition ≥ 2.15 (not Debian's 2.14).
    V3_4,
}

impl IgnitionSpec {
    /// The version string written to `ignition.version`, e.g. `"3.2.0"`.
    pub fn as_str(self) -> &'static str {
        match self {
            IgnitionSpec::V3_0 => "3.0.0",
            IgnitionSpec::V3_1 => "3.1.0",
            IgnitionSpec::V3_2 => "3.2.0",
            IgnitionSpec::V3_3 => "3.3.0",
            IgnitionSpec::V3_4 => "3.4.0",
        }
    }
}

impl fmt::Display for IgnitionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error from parsing an [`IgnitionSpec`] or a [`ReleaseTarget`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseVersionError {
    /// Not one of 3.0, 3.1, 3.2, 3.3, 3.4 (with or without `.0`).
    #[error(
        "unsupported Ignition spec version {0:?}: supported values are 3.0.0, 3.1.0, 3.2.0, 3.3.0, 3.4.0"
    )]
    IgnitionSpec(String),
    /// Not `4.<minor>`; the text is echoed back.
    #[error("invalid release version {0:?}: expected 4.<minor>, e.g. 4.13")]
    Release(String),
}

impl FromStr for IgnitionSpec {
    type Err = ParseVersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.strip_suffix(".0").unwrap_or(s);
        Ok(match t {
            "3.0" => IgnitionSpec::V3_0,
            "3.1" => IgnitionSpec::V3_1,
            "3.2" => IgnitionSpec::V3_2,
            "3.3" => IgnitionSpec::V3_3,
            "3.4" => IgnitionSpec::V3_4,
            _ => return Err(ParseVersionError::IgnitionSpec(s.to_string())),
        })
    }
}

impl ReleaseTarget {
    /// Target `4.<minor>` of the given flavour.
    pub const fn new(minor: u32, okd: bool) -> Self {
        ReleaseTarget {
            major: 4,
            minor,
            okd,
        }
    }

    /// Parses `4.13`, `4.13.0`, `4.5.0-0.okd-2020-08-12-020541` (flavour OKD if the
    /// text contains `okd`).
    pub fn parse_version(s: &str, okd: bool) -> Result<Self, ParseVersionError> {
        let err = || ParseVersionError::Release(s.to_string());
        let mut parts = s.split(['.', '-']);
        let major: u32 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(err)?;
        let minor: u32 = parts.next().and_then(|p| p.parse().ok()).ok_or_else(err)?;
        if major != 4 {
            return Err(err());
        }
        Ok(ReleaseTarget {
            major,
            minor,
            okd: okd || s.contains("okd"),
        })
    }

    /// Derives the target from a release image pull spec such as
    /// `quay.io/openshift/okd:4.5.0-0.okd-2020-08-12-020541` or
    /// `quay.io/openshift-release-dev/ocp-release:4.13.0-x86_64`. The flavour
    /// is OKD when the repository or tag names `okd`. Returns `None` when the
    /// reference has no version tag (a digest only).
    pub fn from_release_image(image: &str) -> Option<Self> {
        let okd = image.contains("okd");
        let name_and_tag = image.rsplit('/').next()?;
        let tag = name_and_tag.split('@').next()?.split_once(':')?.1;
        ReleaseTarget::parse_version(tag, okd).ok()
    }

    /// The release of [`DEFAULT_RELEASE_IMAGE`].
    pub fn default_target() -> Self {
        ReleaseTarget::from_release_image(DEFAULT_RELEASE_IMAGE)
            .expect("default release image has a version tag")
    }

    /// True if this release is `4.<minor>` or later.
    pub fn at_least(&self, minor: u32) -> bool {
        self.minor >= minor
    }

    /// The Ignition spec openshift-install of this release writes for
    /// bootstrap.ign, the pointer configs and installer MachineConfigs
    /// (openshift/installer `pkg/asset/ignition/bootstrap/bootstrap.go`): 3.0.0 up to 4.5 (the
    /// OKD/FCOS installers; OCP 4.5 wrote
    /// spec 2.2, which okd-install never emits), 3.1.0 for 4.6–4.7, 3.2.0 from 4.8.
    pub fn ignition_spec(&self) -> IgnitionSpec {
        match self.minor {
            0..=5 => IgnitionSpec::V3_0,
            6 | 7 => IgnitionSpec::V3_1,
            _ => IgnitionSpec::V3_2,
        }
    }

    /// `networkType: OpenShiftSDN` is accepted up to 4.14 and refused from 4.15.
    pub fn allows_openshift_sdn(&self) -> bool {
        self.minor <= 14
    }

    /// `manifests/cluster-network-01-crd.yml` was written up to 4.15.
    pub fn writes_network_crd(&self) -> bool {
        self.minor <= 15
    }

    /// `imageDigestSources` and ImageDigestMirrorSet exist from 4.14; before that
    /// only `imageContentSources` with one ImageContentSourcePolicy per source.
    pub fn has_image_digest_sources(&self) -> bool {
        self.minor >= 14
    }

    /// `openshift/99_feature-gate.yaml` is written for every install from 4.14
    /// (earlier only when a featureSet is set).
    pub fn always_writes_feature_gate(&self) -> bool {
        self.minor >= 14
    }

    /// `metadata.json` carries `featureSet`/`customFeatureSet` from 4.16.
    pub fn metadata_has_feature_set(&self) -> bool {
        self.minor >= 16
    }

    /// The machine-config-server CA secret/configmap manifests and the MCS TLS
    /// secret annotations exist from 4.19.
    pub fn writes_mcs_ca_manifests(&self) -> bool {
        self.minor >= 19
    }

    /// Whether DNS should publish `etcd-<n>` A records and the
    /// `_etcd-server-ssl._tcp` SRV records (a pre-4.4 requirement: RedHatOfficial/ocp4-helpernode
    /// `templates/zonefile.j2`, openshift/installer
    /// `upi/aws/cloudformation/05_cluster_master_nodes.yaml`). Kept through 4.5 because the OKD 4.5
    /// guides (the examples) still create them; dropped from 4.6.
    pub fn wants_etcd_srv_records(&self) -> bool {
        self.minor <= 5
    }

    /// The update channel written to `cvo-overrides.yaml`.
    pub fn channel(&self) -> String {
        if self.okd {
            "stable-4".to_string()
        } else {
            format!("stable-{}.{}", self.major, self.minor)
        }
    }
}

impl fmt::Display for ReleaseTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}{}",
            self.major,
            self.minor,
            if self.okd { " (OKD)" } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_image_tags_give_the_target() {
        let t = ReleaseTarget::from_release_image(
            "quay.io/openshift/okd:4.5.0-0.okd-2020-08-12-020541",
        )
        .unwrap();
        assert_eq!(t, ReleaseTarget::new(5, true));
        assert_eq!(t.ignition_spec(), IgnitionSpec::V3_0);
        let t = ReleaseTarget::from_release_image(
            "quay.io/openshift-release-dev/ocp-release:4.13.0-x86_64",
        )
        .unwrap();
        assert_eq!(t, ReleaseTarget::new(13, false));
        assert_eq!(t.ignition_spec().as_str(), "3.2.0");
        assert!(ReleaseTarget::from_release_image("registry:5000/ocp@sha256:abcd").is_none());
        assert!(ReleaseTarget::from_release_image("localhost:5000/okd").is_none());
    }

    #[test]
    fn version_rules_follow_the_dated_changes() {
        assert!(ReleaseTarget::new(14, false).allows_openshift_sdn());
        assert!(!ReleaseTarget::new(15, false).allows_openshift_sdn());
        assert_eq!(
            ReleaseTarget::new(6, false).ignition_spec(),
            IgnitionSpec::V3_1
        );
        assert_eq!("3.3".parse::<IgnitionSpec>().unwrap(), IgnitionSpec::V3_3);
        assert!("2.2.0".parse::<IgnitionSpec>().is_err());
        assert!(ReleaseTarget::parse_version("5.1", false).is_err());
    }
}
