//! `platform` (one platform; pkg/types/aws/validation/platform.go for AWS) and the
//! machine pools `controlPlane`, `arbiter`, `compute` (openshift/installer
//! pkg/types/validation/installconfig.go and pkg/types/validation/machinepools.go).

use super::*;

pub(super) fn platform(c: &InstallConfig, e: &mut Errs) {
    let names = c.platform.names();
    match names.len() {
        0 => e.invalid(
            "platform",
            "",
            format!("must specify one of the platforms ({PLATFORMS})"),
        ),
        1 => e.0.extend(unsupported_platform(names[0])),
        _ => e.invalid(
            "platform",
            names[0],
            format!(
                "must only specify a single type of platform; cannot use both {:?} and {:?}",
                names[0], names[1]
            ),
        ),
    }
    // pkg/types/aws/validation/platform.go ValidatePlatform.
    if let Some(aws) = &c.platform.aws
        && aws.region.is_empty()
    {
        e.required("platform.aws.region", "region must be specified");
    }
}

/// `platform: Unsupported value: "vsphere": supported values: "aws",
/// "baremetal", "none"` for a platform key okd-install does not generate for.
pub(crate) fn unsupported_platform(key: &str) -> Option<FieldError> {
    use crate::PlatformName;
    if PlatformName::from_key(key).is_some_and(|p| PlatformName::SUPPORTED.contains(&p)) {
        return None;
    }
    let supported: Vec<&str> = PlatformName::SUPPORTED.iter().map(|p| p.as_str()).collect();
    let mut e = Errs::default();
    e.unsupported("platform", key, &supported);
    e.0.pop()
}

pub(super) fn gate_enabled(c: &InstallConfig, gate: &str) -> bool {
    match c.feature_set.as_deref().unwrap_or("") {
        "TechPreviewNoUpgrade" | "DevPreviewNoUpgrade" => true,
        "CustomNoUpgrade" => c.feature_gates.iter().any(|g| {
            g.split_once('=')
                .is_some_and(|(n, v)| n.trim() == gate && v.trim() == "true")
        }),
        _ => false,
    }
}

pub(super) fn pool_common(path: &str, p: &MachinePool, plat: Option<P>, e: &mut Errs) {
    match p.replicas {
        None => e.required(&format!("{path}.replicas"), "replicas is required"),
        Some(r) if r < 0 => e.invalid_n(
            &format!("{path}.replicas"),
            r,
            "number of replicas must not be negative",
        ),
        _ => {}
    }
    if let Some(h) = p.hyperthreading.as_deref()
        && h != "Enabled"
        && h != "Disabled"
    {
        e.unsupported(
            &format!("{path}.hyperthreading"),
            h,
            &["Disabled", "Enabled"],
        );
    }
    if let Some(a) = p.architecture.as_deref()
        && !matches!(a, "amd64" | "arm64" | "ppc64le" | "s390x")
    {
        e.unsupported(
            &format!("{path}.architecture"),
            a,
            &["amd64", "arm64", "ppc64le", "s390x"],
        );
    }
    match &p.platform {
        Value::Object(m) => {
            for k in m.keys() {
                if let Some(plat) = plat.map(P::as_str)
                    && k != plat
                {
                    e.invalid(
                        &format!("{path}.platform"),
                        k,
                        format!(
                            "cannot specify {k:?} for machine pool when cluster is using {plat:?}"
                        ),
                    );
                }
            }
        }
        Value::Null => {}
        other => e.invalid(
            &format!("{path}.platform"),
            &other.to_string(),
            "machine pool platform must be an object",
        ),
    }
}

pub(super) fn fencing_creds(p: &MachinePool) -> Option<usize> {
    let f = p.fencing.as_ref()?;
    Some(
        f.get("credentials")
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
    )
}

/// The largest control plane okd-install generates (etcd itself is meant for 3 or 5 members).
pub(super) const MAX_CONTROL_PLANE_REPLICAS: i64 = 100;

pub(super) fn pools(c: &InstallConfig, e: &mut Errs) {
    let plat = c.platform_kind();
    match &c.control_plane {
        None => e.required("controlPlane", "controlPlane is required"),
        Some(cp) => control_plane(cp, plat, e),
    }
    if let Some(a) = &c.arbiter {
        arbiter(c, a, plat, e);
    }
    compute(c, plat, e);
}

/// `controlPlane`: name, replicas, the common pool rules and fencing
/// (pkg/types/validation/installconfig.go validateControlPlane).
fn control_plane(cp: &MachinePool, plat: Option<P>, e: &mut Errs) {
    if cp.name != "master" {
        e.unsupported("controlPlane.name", &cp.name, &["master"]);
    }
    if cp.replicas == Some(0) {
        e.invalid_n(
            "controlPlane.replicas",
            0,
            "number of control plane replicas must be positive",
        );
    }
    // Not an openshift-install rule: one etcd endpoint and (on AWS) one
    // Machine is written per replica, so a hostile count would exhaust
    // memory (docs/differences.md).
    if let Some(r) = cp.replicas.filter(|r| *r > MAX_CONTROL_PLANE_REPLICAS) {
        e.invalid_n(
            "controlPlane.replicas",
            r,
            format!(
                "number of control plane replicas must be at most {MAX_CONTROL_PLANE_REPLICAS}"
            ),
        );
    }
    pool_common("controlPlane", cp, plat, e);
    let replicas = cp.replicas.unwrap_or(0);
    match fencing_creds(cp) {
        Some(_) if !matches!(plat, Some(P::Baremetal | P::External | P::None)) => e.forbidden(
            "controlPlane.fencing",
            "fencing is only supported on baremetal, external or none platforms",
        ),
        Some(n) if replicas == 2 && n != 2 => e.invalid_n(
            "controlPlane.fencing.credentials",
            n as i64,
            "exactly 2 fencing credentials are required for a two-node control plane",
        ),
        Some(n) if replicas != 2 && n != 0 => e.forbidden(
            "controlPlane.fencing",
            "fencing is only allowed with exactly 2 control plane replicas",
        ),
        _ => {}
    }
}

/// `arbiter`: behind the HighlyAvailableArbiter gate, baremetal only, with
/// at least 2 control-plane replicas.
fn arbiter(c: &InstallConfig, a: &MachinePool, plat: Option<P>, e: &mut Errs) {
    if !gate_enabled(c, "HighlyAvailableArbiter") {
        e.forbidden("arbiter", "HighlyAvailableArbiter feature must be enabled in order to use arbiter cluster deployment");
        return;
    }
    if plat != Some(P::Baremetal) {
        e.invalid(
            "arbiter",
            c.platform_name(),
            "arbiter is only supported on the baremetal platform",
        );
    }
    if c.control_plane
        .as_ref()
        .and_then(|p| p.replicas)
        .unwrap_or(0)
        < 2
    {
        e.invalid_n(
            "controlPlane.replicas",
            c.control_plane_replicas(),
            "an arbiter cluster requires at least 2 control plane replicas",
        );
    }
    pool_common("arbiter", a, plat, e);
}

/// `compute[]`: names (`worker`, `edge` on AWS) unique, the common pool rules,
/// no fencing, the control plane's architecture unless a multi-arch gate is on.
fn compute(c: &InstallConfig, plat: Option<P>, e: &mut Errs) {
    let cp_arch = c
        .control_plane
        .as_ref()
        .and_then(|p| p.architecture.as_deref());
    let mut seen: Vec<&str> = Vec::new();
    for (i, p) in c.compute.iter().enumerate() {
        let path = format!("compute[{i}]");
        if p.name != "worker" && p.name != "edge" {
            e.unsupported(&format!("{path}.name"), &p.name, &["worker", "edge"]);
        } else if p.name == "edge" && plat != Some(P::Aws) {
            e.invalid(
                &format!("{path}.name"),
                &p.name,
                "edge compute pools are only supported on the AWS platform",
            );
        }
        if seen.contains(&p.name.as_str()) {
            e.duplicate(&format!("{path}.name"), &p.name);
        }
        seen.push(&p.name);
        pool_common(&path, p, plat, e);
        if p.fencing.is_some() {
            e.forbidden(
                &format!("{path}.fencing"),
                "fencing is only allowed on the control plane",
            );
        }
        if let (Some(a), Some(cpa)) = (p.architecture.as_deref(), cp_arch)
            && a != cpa
            && !gate_enabled(c, "MultiArchInstallAWS")
            && !gate_enabled(c, "MultiArchInstallGCP")
            && !gate_enabled(c, "MultiArchInstallAzure")
        {
            e.invalid(
                &format!("{path}.architecture"),
                a,
                "heteregeneous multi-arch is not supported; compute pool architecture must match control plane",
            );
        }
    }
}
