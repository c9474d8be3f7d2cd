//! `capabilities`, `featureSet` and `featureGates` (openshift/installer
//! `pkg/types/validation/installconfig.go`).

use super::*;

pub(super) const CAPABILITIES: &[&str] = &[
    "Build",
    "CSISnapshot",
    "CloudControllerManager",
    "CloudCredential",
    "Console",
    "DeploymentConfig",
    "ImageRegistry",
    "Ingress",
    "Insights",
    "MachineAPI",
    "NodeTuning",
    "OperatorLifecycleManager",
    "OperatorLifecycleManagerV1",
    "Storage",
    "baremetal",
    "marketplace",
    "openshift-samples",
];

pub(super) fn capabilities(c: &InstallConfig, o: &LoadOptions, e: &mut Errs) {
    let Some(caps) = &c.capabilities else { return };
    let base = caps
        .baseline_capability_set
        .as_deref()
        .unwrap_or("vCurrent");
    let minor = o.target.minor.max(11);
    let known = base == "None"
        || base == "vCurrent"
        || base
            .strip_prefix("v4.")
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|m| (11..=minor).contains(&m) && base == format!("v4.{m}"));
    if !known {
        // The list in the message is bounded whatever minor the target claims.
        let mut sets: Vec<String> = vec!["None".to_string()];
        sets.extend((11..=minor.min(11 + 64)).map(|m| format!("v4.{m}")));
        sets.push("vCurrent".to_string());
        let refs: Vec<&str> = sets.iter().map(String::as_str).collect();
        e.unsupported("capabilities.baselineCapabilitySet", base, &refs);
    }
    for (i, a) in caps.additional_enabled_capabilities.iter().enumerate() {
        if !CAPABILITIES.contains(&a.as_str()) {
            e.unsupported(
                &format!("capabilities.additionalEnabledCapabilities[{i}]"),
                a,
                CAPABILITIES,
            );
        }
    }
    if base != "None" {
        return;
    }
    let on = |n: &str| caps.additional_enabled_capabilities.iter().any(|a| a == n);
    let list = caps.additional_enabled_capabilities.join(", ");
    if on("marketplace") && !on("OperatorLifecycleManager") {
        e.invalid(
            "capabilities.additionalEnabledCapabilities",
            &list,
            "the marketplace capability requires the OperatorLifecycleManager capability",
        );
    }
    let plat = c.platform_kind();
    if plat == Some(P::Baremetal) && !on("baremetal") {
        e.invalid(
            "capabilities.additionalEnabledCapabilities",
            &list,
            "platform baremetal requires the baremetal capability",
        );
    }
    if !on("CloudCredential") && !matches!(plat, Some(P::None | P::Baremetal)) {
        e.invalid(
            "capabilities",
            base,
            "disabling CloudCredential capability available only for baremetal platforms",
        );
    }
    if !on("CloudControllerManager") && !matches!(plat, Some(P::None | P::Baremetal | P::External))
    {
        e.invalid("capabilities", base, "disabling CloudControllerManager is only supported on the Baremetal, None, or External platform with cloudControllerManager value none");
    }
    if o.target.at_least(16) && !on("Ingress") {
        e.invalid("capabilities", base, "the Ingress capability is required");
    }
}

pub(super) fn feature_set(c: &InstallConfig, e: &mut Errs) {
    let fs = c.feature_set.as_deref().unwrap_or("");
    let known = [
        "",
        "CustomNoUpgrade",
        "DevPreviewNoUpgrade",
        "TechPreviewNoUpgrade",
    ];
    if !known.contains(&fs) {
        e.unsupported("featureSet", fs, &known);
    }
    // Fields guarded by a feature gate that is off in the default feature set.
    let gated: [(&str, &str, bool); 2] = [
        (
            "controlPlane.fencing",
            "DualReplica",
            c.control_plane
                .as_ref()
                .is_some_and(|p| p.fencing.is_some()),
        ),
        (
            "platform.aws.userProvisionedDNS",
            "AWSClusterHostedDNS",
            c.platform
                .aws
                .as_ref()
                .and_then(|a| a.user_provisioned_dns.as_deref())
                .is_some_and(|v| v == "Enabled"),
        ),
    ];
    for (path, gate, used) in gated {
        if used && !gate_enabled(c, gate) {
            e.forbidden(
                path,
                &format!("this field is protected by the {gate} feature gate which must be enabled through either the TechPreviewNoUpgrade or CustomNoUpgrade feature set"),
            );
        }
    }
    if !c.feature_gates.is_empty() {
        if fs != "CustomNoUpgrade" {
            e.forbidden(
                "featureGates",
                "featureGates can only be used with the CustomNoUpgrade feature set",
            );
        }
        for (i, g) in c.feature_gates.iter().enumerate() {
            let ok = g
                .split_once('=')
                .is_some_and(|(n, v)| !n.trim().is_empty() && matches!(v.trim(), "true" | "false"));
            if !ok {
                e.invalid(
                    &format!("featureGates[{i}]"),
                    g,
                    "must match the format <feature-name>=<bool>",
                );
            }
        }
    }
}
