//! Shell scripts of the bootstrap node (openshift/installer
//! `data/data/bootstrap/files/usr/local/bin/` and `data/data/bootstrap/bootstrap-in-place/`).
//!
//! Each script lives next to this module as a plain `.sh` file. Scripts that
//! need template data carry one `# @@VARIABLES@@` line, which is replaced by
//! shell-quoted variable assignments.

use crate::{TemplateData, shell_quote};

const MARKER: &str = "# @@VARIABLES@@";

/// Replaces the marker line of `script` with `NAME='value'` assignments.
fn render(script: &str, vars: &[(&str, String)]) -> String {
    let mut assignments = String::new();
    for (name, value) in vars {
        assignments.push_str(name);
        assignments.push('=');
        assignments.push_str(&shell_quote(value));
        assignments.push('\n');
    }
    let assignments = assignments.trim_end_matches('\n');
    debug_assert!(script.contains(MARKER), "script without a variables marker");
    script.replacen(MARKER, assignments, 1)
}

fn flag(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

pub(crate) fn approve_csr() -> String {
    include_str!("scripts/approve-csr.sh").to_string()
}

pub(crate) fn bootkube(data: &TemplateData) -> String {
    render(
        include_str!("scripts/bootkube.sh"),
        &[
            ("BOOTSTRAP_INPLACE", flag(data.bootstrap_in_place.is_some())),
            (
                "BOOTSTRAP_NODE_IP",
                data.bootstrap_node_ip.clone().unwrap_or_default(),
            ),
        ],
    )
}

pub(crate) fn bootstrap_cluster_gather() -> String {
    include_str!("scripts/bootstrap-cluster-gather.sh").to_string()
}

/// Empty for OCP (measured 0 bytes); OKD pivots the host OS to the
/// release payload's machine OS image.
pub(crate) fn bootstrap_pivot(data: &TemplateData) -> String {
    if data.okd {
        include_str!("scripts/bootstrap-pivot.sh").to_string()
    } else {
        String::new()
    }
}

pub(crate) fn service_record() -> String {
    include_str!("scripts/bootstrap-service-record.sh").to_string()
}

pub(crate) fn verify_api_server_urls(data: &TemplateData) -> String {
    render(
        include_str!("scripts/bootstrap-verify-api-server-urls.sh"),
        &[
            ("API_SERVER_URL", data.api_server_url.clone()),
            ("API_INT_SERVER_URL", data.api_int_server_url.clone()),
        ],
    )
}

pub(crate) fn crio_configure() -> String {
    include_str!("scripts/crio-configure.sh").to_string()
}

pub(crate) fn installer_gather() -> String {
    include_str!("scripts/installer-gather.sh").to_string()
}

pub(crate) fn installer_masters_gather() -> String {
    include_str!("scripts/installer-masters-gather.sh").to_string()
}

pub(crate) fn kubelet_pause_image() -> String {
    include_str!("scripts/kubelet-pause-image.sh").to_string()
}

pub(crate) fn kubelet(data: &TemplateData) -> String {
    render(
        include_str!("scripts/kubelet.sh"),
        &[
            (
                "BOOTSTRAP_NODE_IP",
                data.bootstrap_node_ip.clone().unwrap_or_default(),
            ),
            ("USE_IPV6_FOR_NODE_IP", flag(data.use_ipv6_for_node_ip)),
            ("USE_DUAL_FOR_NODE_IP", flag(data.use_dual_for_node_ip)),
        ],
    )
}

pub(crate) fn release_image_download() -> String {
    include_str!("scripts/release-image-download.sh").to_string()
}

pub(crate) fn release_image(data: &TemplateData) -> String {
    render(
        include_str!("scripts/release-image.sh"),
        &[("RELEASE_IMAGE", data.release_image.clone())],
    )
}

pub(crate) fn report_progress() -> String {
    include_str!("scripts/report-progress.sh").to_string()
}

pub(crate) fn bip_post_reboot() -> String {
    include_str!("scripts/bootstrap-in-place-post-reboot.sh").to_string()
}

pub(crate) fn master_update_fcc() -> String {
    include_str!("scripts/master-update.fcc").to_string()
}

pub(crate) fn bootstrap_in_place() -> String {
    include_str!("scripts/bootstrap-in-place.sh").to_string()
}

pub(crate) fn install_to_disk(disk: &str) -> String {
    render(
        include_str!("scripts/install-to-disk.sh"),
        &[("INSTALLATION_DISK", disk.to_string())],
    )
}
