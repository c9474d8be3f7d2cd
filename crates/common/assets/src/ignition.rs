//! Ignition configs (openshift/installer `pkg/asset/ignition/`): `bootstrap.ign` and the
//! single-node `bootstrap-in-place-for-live-iso.ign` (the pointer configs are in
//! [`crate::pointer`]).
//!
//! bootstrap.ign carries, in order: the bootstrap node's own files and units
//! (okd-bootstrap-files), every manifest under `/opt/openshift/{manifests,openshift}`
//! with the CVO-ignore version of `cvo-overrides.yaml`, the original overrides
//! patch, the three internal kubeconfigs and the TLS files (`common.go`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::warn;

use okd_types::ignition::{Config, File, Unit};

use crate::ctx::GenCtx;
use crate::cvo::CvoIgnore;
use crate::dir::{AssetDir, AssetFile};
use crate::error::AssetError;
use crate::installconfig::{InstallConfigAsset, ReleaseImage};
use crate::kubeconfig::{AdminInternalClient, Kubelet, LoopbackClient};
use crate::machines::{MasterMachines, OpenshiftInstallManifests, WorkerMachines};
use crate::manifests::{CommonManifests, OpenshiftManifests, no_proxy_status};
use crate::node_identities::NodeIdentitiesAsset;
use crate::node_program::NodeProgramAsset;
use crate::pointer::IgnitionAsset;
use crate::store::{Asset, Dep, Parents, dep};
use crate::tls::{BootstrapSshKeyPair, RootCa, bootstrap_tls_deps, bootstrap_tls_files};

fn bootstrap_deps() -> Vec<Dep> {
    let mut v = vec![
        dep::<CvoIgnore>(),
        dep::<InstallConfigAsset>(),
        dep::<AdminInternalClient>(),
        dep::<Kubelet>(),
        dep::<LoopbackClient>(),
        dep::<MasterMachines>(),
        dep::<WorkerMachines>(),
        dep::<CommonManifests>(),
        dep::<OpenshiftManifests>(),
        dep::<OpenshiftInstallManifests>(),
        dep::<ReleaseImage>(),
        dep::<NodeIdentitiesAsset>(),
        dep::<NodeProgramAsset>(),
    ];
    v.extend(bootstrap_tls_deps());
    v
}

/// Renders a bootstrap config: our node files and units plus everything under /opt/openshift.
fn bootstrap_config(ctx: &GenCtx, p: &Parents<'_>, in_place: bool) -> Result<Config, AssetError> {
    let ic = &p.get::<InstallConfigAsset>().config;
    let release = &p.get::<ReleaseImage>().pull_spec;
    if ic.mirrors_cover(release) == Some(false) {
        let sources: Vec<String> = ic.image_sources().into_iter().map(|s| s.source).collect();
        warn!(
            "The release image {release} is not covered by any imageContentSources/imageDigestSources source of install-config.yaml ({}): the nodes will pull it from {}. Give the release you mirrored with --release-image, or mirror this one (`okd-install mirror release --from {release}`)",
            sources.join(", "),
            okd_installconfig::image_repository(release)
        );
    }
    let data = template_data(ctx, p, in_place);
    let mut cfg = Config::new(ctx.ignition_spec);
    let ssh_pub = String::from_utf8_lossy(&p.get::<BootstrapSshKeyPair>().public).into_owned();
    cfg.passwd.users.push(okd_types::ignition::PasswdUser {
        name: "core".to_string(),
        ssh_authorized_keys: vec![ic.ssh_key.clone().unwrap_or_default(), ssh_pub],
        ..Default::default()
    });
    // The bootstrap-in-place files come last, after root-ca.crt (as measured from
    // openshift-install 4.13; `pkg/asset/ignition/bootstrap/bootstrap_in_place.go`).
    let is_bip_file = |path: &str| {
        path.starts_with("/opt/openshift/bootstrap-in-place/")
            || path == "/usr/local/bin/bootstrap-in-place.sh"
            || path == "/usr/local/bin/install-to-disk.sh"
    };
    let (bip_files, node_files): (Vec<_>, Vec<_>) = okd_bootstrap_files::files(&data)
        .into_iter()
        .partition(|f| in_place && is_bip_file(&f.path));
    let to_file = |f: &okd_bootstrap_files::BootstrapFile| {
        if f.append {
            File::append_data(&f.path, f.mode, &f.contents)
        } else {
            File::data(&f.path, f.mode, &f.contents)
        }
    };
    let mut files: Vec<File> = Vec::new();
    let all = node_files
        .iter()
        .map(to_file)
        .chain(opt_openshift_files(p, in_place))
        .chain(bip_files.iter().map(to_file));
    for f in all {
        // A later file of the same path replaces the earlier one.
        files.retain(|x| x.path != f.path);
        files.push(f);
    }
    if let Some(ids) = &p.get::<NodeIdentitiesAsset>().nodes {
        let json = serde_json::to_string_pretty(ids).expect("serializable");
        files.push(File::data(
            okd_types::node_identities::NODE_IDENTITIES_PATH,
            0o644,
            json.as_bytes(),
        ));
    }
    if let Some(program) = &p.get::<NodeProgramAsset>().program {
        files.push(program.file(&crate::blobs::cache_dir(ctx.cache_dir.as_deref())?)?);
    }
    cfg.storage.files = files;
    cfg.systemd
        .units
        .extend(okd_bootstrap_files::units(&data).iter().map(|u| {
            let mut unit = Unit::new(&u.name, u.contents.clone(), u.enabled);
            unit.dropins = u
                .dropins
                .iter()
                .map(|d| okd_types::ignition::Dropin {
                    name: d.name.clone(),
                    contents: Some(d.contents.clone()),
                })
                .collect();
            unit
        }));
    Ok(cfg)
}

/// The values the bootstrap node's file and unit templates are rendered with
/// (okd-bootstrap-files; openshift/installer `pkg/asset/ignition/bootstrap/common.go`).
fn template_data(
    ctx: &GenCtx,
    p: &Parents<'_>,
    in_place: bool,
) -> okd_bootstrap_files::TemplateData {
    let ic = &p.get::<InstallConfigAsset>().config;
    let domain = ic.cluster_domain();
    let proxy = ic
        .proxy
        .as_ref()
        .filter(|p| p.http_proxy.is_some() || p.https_proxy.is_some())
        .map(|px| okd_bootstrap_files::ProxyStatus {
            http_proxy: px.http_proxy.clone().unwrap_or_default(),
            https_proxy: px.https_proxy.clone().unwrap_or_default(),
            no_proxy: no_proxy_status(ic),
        });
    okd_bootstrap_files::TemplateData {
        release_image: p.get::<ReleaseImage>().pull_spec.clone(),
        pull_secret: ic.pull_secret.clone(),
        ssh_key: ic.ssh_key.clone().unwrap_or_default(),
        proxy,
        registries: ic
            .image_sources()
            .into_iter()
            .map(|s| okd_bootstrap_files::Registry {
                blocked: s.source_policy.as_deref() == Some("NeverContactSource"),
                source: s.source,
                mirrors: s.mirrors,
            })
            .collect(),
        additional_trust_bundle: ic.additional_trust_bundle.clone().unwrap_or_default(),
        fips: ic.fips,
        cluster_profile: std::env::var("OPENSHIFT_INSTALL_EXPERIMENTAL_CLUSTER_PROFILE").ok(),
        bootstrap_in_place: if in_place {
            ic.bootstrap_in_place
                .as_ref()
                .map(|b| b.installation_disk.clone())
        } else {
            None
        },
        use_ipv6_for_node_ip: ic
            .service_networks()
            .first()
            .is_some_and(|n| matches!(n, ipnet::IpNet::V6(_))),
        use_dual_for_node_ip: ic.service_networks().len() > 1,
        api_server_url: format!("api.{domain}"),
        api_int_server_url: format!("api-int.{domain}"),
        cluster_domain: domain.clone(),
        feature_set: ic.feature_set.clone().unwrap_or_default(),
        invoker: ctx.invoker.clone(),
        okd: ctx.target.okd,
        platform: ic.platform_name().to_string(),
        etcd_endpoints: (0..ic.control_plane_replicas().max(0))
            .map(|i| format!("https://etcd-{i}.{domain}:2379"))
            .collect(),
        bootstrap_node_ip: std::env::var("OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP").ok(),
        control_plane_replicas: ic.control_plane_replicas(),
    }
}

/// Everything under `/opt/openshift/`, in bootstrap.ign's order (openshift/installer
/// `pkg/asset/ignition/bootstrap/common.go`): the
/// manifests (with the CVO-ignore version of a file where there is one), the
/// other CVO-ignore files, the three internal kubeconfigs, the TLS files and
/// `tls/root-ca.crt`.
fn opt_openshift_files(p: &Parents<'_>, in_place: bool) -> Vec<File> {
    let opt = |name: &str, mode: u32, data: &[u8]| {
        File::data(&format!("/opt/openshift/{name}"), mode, data)
    };
    let mut out = Vec::new();
    let cvo = p.get::<CvoIgnore>();
    // In the single-node config the worker user-data secret precedes the worker
    // MachineConfigs (the measured 4.13 order); bootstrap.ign has it after them.
    let mut worker_files = p.get::<WorkerMachines>().0.file_list.clone();
    if in_place {
        worker_files.sort_by_key(|f| !f.filename.ends_with("-user-data-secret.yaml"));
    }
    let manifest_sets: [&[AssetFile]; 5] = [
        &p.get::<CommonManifests>().0.file_list,
        &p.get::<OpenshiftManifests>().0.file_list,
        &p.get::<OpenshiftInstallManifests>().0.file_list,
        &p.get::<MasterMachines>().0.file_list,
        &worker_files,
    ];
    for f in manifest_sets.into_iter().flatten() {
        let data = cvo
            .file_list
            .iter()
            .find(|c| c.filename == f.filename)
            .map(|c| &c.data)
            .unwrap_or(&f.data);
        out.push(opt(&f.filename, 0o644, data));
    }
    for c in cvo
        .file_list
        .iter()
        .filter(|c| !c.filename.starts_with("manifests/"))
    {
        out.push(opt(&c.filename, 0o644, &c.data));
    }
    for k in [
        &p.get::<AdminInternalClient>().0.file,
        &p.get::<Kubelet>().0.file,
        &p.get::<LoopbackClient>().0.file,
    ] {
        out.push(opt(&k.filename, 0o600, &k.data));
    }
    for t in bootstrap_tls_files(p) {
        out.push(opt(&t.filename, 0o600, &t.data));
    }
    out.push(opt("tls/root-ca.crt", 0o644, &p.get::<RootCa>().0.cert_raw));
    out
}

/// The expiry of every certificate file under `/opt/openshift/tls/` of a
/// loaded bootstrap config (the first certificate of each file): (file
/// name, notBefore, notAfter), in the config's order. Files that do not
/// decode are skipped.
pub fn bootstrap_cert_validity(
    cfg: &Value,
) -> Vec<(String, time::OffsetDateTime, time::OffsetDateTime)> {
    let files = cfg
        .pointer("/storage/files")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for f in files {
        let p = f.get("path").and_then(Value::as_str).unwrap_or("");
        if !(p.starts_with("/opt/openshift/tls/") && p.ends_with(".crt")) {
            continue;
        }
        let Some(src) = f.pointer("/contents/source").and_then(Value::as_str) else {
            continue;
        };
        let Ok(bytes) = okd_types::dataurl::decode(src) else {
            continue;
        };
        let Ok(infos) = okd_pki::parse_certs(&String::from_utf8_lossy(&bytes)) else {
            continue;
        };
        if let Some(first) = infos.first() {
            let name = p.rsplit('/').next().unwrap_or(p).to_string();
            out.push((name, first.not_before, first.not_after));
        }
    }
    out
}

/// Checks every certificate under `/opt/openshift/tls/` of a loaded bootstrap
/// config: an expired one is an error naming each certificate and its expiry
/// (the 24-hour trap: openshift/installer `pkg/asset/tls/` signs the bootstrap
/// certificates for one day).
fn check_expiry(path: &str, cfg: &Value, now: time::OffsetDateTime) -> Result<(), AssetError> {
    let mut expired = Vec::new();
    for (name, _, not_after) in bootstrap_cert_validity(cfg) {
        if not_after < now {
            let at = not_after
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default();
            expired.push(format!(
                "Bootstrap Ignition-Config Certificate {name} expired at {at}."
            ));
        }
    }
    if expired.is_empty() {
        return Ok(());
    }
    Err(AssetError::BadFile {
        path: path.into(),
        message: format!(
            "{} Please regenerate ignition configuration files in a new directory.",
            expired.join(" ")
        ),
    })
}

/// Reads the Ignition config at `path` as a stream, each data URL over
/// 64 KiB replaced by the empty `data:,` unread
/// ([`okd_types::large_strings::read_json_dropping_data_urls`]): for
/// readers of its small files (certificates, units), in bounded memory
/// whatever the program bootstrap.ign carries.
///
/// # Errors
/// As [`okd_types::large_strings::read_json_dropping_data_urls`].
pub fn read_small_parts(
    path: &std::path::Path,
) -> Result<Value, okd_types::large_strings::ReadJsonError> {
    okd_types::large_strings::read_json_dropping_data_urls(path, 64 * 1024)
}

/// The program bootstrap.ign carries ([`crate::node_program`]), an input
/// given by the command: a changed program makes bootstrap.ign again.
impl Asset for NodeProgramAsset {
    const NAME: &'static str = "Node Program";
    const STATE_KEY: &'static str = "*okdinstall.NodeProgram";

    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }

    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        Ok(ctx.node_program.clone().unwrap_or_default())
    }

    fn given(ctx: &GenCtx) -> Option<Self> {
        Some(ctx.node_program.clone().unwrap_or_default())
    }

    fn same_as(&self, other: &Self) -> bool {
        self == other
    }

    fn describe_change(&self, old: &Self) -> String {
        let name = |a: &Self| {
            a.program
                .as_ref()
                .map_or("none".to_string(), crate::node_program::NodeProgram::short)
        };
        format!(
            "the okd-install program for the bootstrap node changed from {} to {}",
            name(old),
            name(self)
        )
    }
}

/// `bootstrap.ign` (`*bootstrap.Bootstrap`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BootstrapIgnition(pub IgnitionAsset);

impl Asset for BootstrapIgnition {
    const NAME: &'static str = "Bootstrap Ignition Config";
    const STATE_KEY: &'static str = "*bootstrap.Bootstrap";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        bootstrap_deps()
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        Ok(BootstrapIgnition(IgnitionAsset::new(
            "bootstrap.ign",
            &bootstrap_config(ctx, p, false)?,
        )?))
    }

    fn files(&self) -> Vec<AssetFile> {
        vec![self.0.file.clone()]
    }

    fn load(dir: &AssetDir, ctx: &GenCtx) -> Result<Option<Self>, AssetError> {
        let Some(a) = IgnitionAsset::load(dir, "bootstrap.ign", ctx)? else {
            return Ok(None);
        };
        check_expiry("bootstrap.ign", &a.config, ctx.now)?;
        Ok(Some(BootstrapIgnition(a)))
    }
}

/// `bootstrap-in-place-for-live-iso.ign` for single-node installs (openshift/installer
/// `pkg/asset/ignition/bootstrap/bootstrap_in_place.go`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SingleNodeBootstrapInPlace(pub IgnitionAsset);

/// File name of the single-node bootstrap-in-place config.
pub const BIP_FILE: &str = "bootstrap-in-place-for-live-iso.ign";

impl Asset for SingleNodeBootstrapInPlace {
    const NAME: &'static str = "Single node bootstrap In Place Ignition Config";
    const STATE_KEY: &'static str = "*bootstrap.SingleNodeBootstrapInPlace";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        bootstrap_deps()
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        let ic = &p.get::<InstallConfigAsset>().config;
        match ic.control_plane.as_ref().and_then(|c| c.replicas) {
            None => return Err(AssetError::Invalid("controlPlane.replicas: Required value: bootstrap in place requires ControlPlane.Replicas configuration".into())),
            Some(1) => {}
            Some(n) => return Err(AssetError::Invalid(format!("controlPlane.replicas: Invalid value: {n}: bootstrap in place requires a single ControlPlane replica"))),
        }
        match &ic.bootstrap_in_place {
            None => return Err(AssetError::Invalid("bootstrapInPlace: Required value: bootstrapInPlace is required when creating a single node bootstrap-in-place ignition".into())),
            Some(b) if b.installation_disk.is_empty() => {
                return Err(AssetError::Invalid("bootstrapInPlace.installationDisk: Required value: installationDisk must be set the target disk drive for the installation".into()));
            }
            Some(_) => {}
        }
        Ok(SingleNodeBootstrapInPlace(IgnitionAsset::new(
            BIP_FILE,
            &bootstrap_config(ctx, p, true)?,
        )?))
    }

    fn files(&self) -> Vec<AssetFile> {
        vec![self.0.file.clone()]
    }

    fn load(dir: &AssetDir, ctx: &GenCtx) -> Result<Option<Self>, AssetError> {
        let Some(a) = IgnitionAsset::load(dir, BIP_FILE, ctx)? else {
            return Ok(None);
        };
        check_expiry(BIP_FILE, &a.config, ctx.now)?;
        Ok(Some(SingleNodeBootstrapInPlace(a)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_ignition_names_file_and_keeps_the_cause_in_the_source() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("bootstrap.ign"), b"{not json").unwrap();
        let target = okd_types::release::ReleaseTarget::default_target();
        let ctx = GenCtx::new(
            "registry.example/release:4.15".to_string(),
            target,
            target.ignition_spec(),
        );
        let e = IgnitionAsset::load(&AssetDir::new(d.path()), "bootstrap.ign", &ctx).unwrap_err();
        let cause = std::error::Error::source(&e)
            .expect("the JSON error is the source")
            .to_string();
        assert_eq!(e.to_string(), "bootstrap.ign: not an Ignition config");
        assert_eq!(
            crate::chain(&e),
            format!("bootstrap.ign: not an Ignition config: {cause}")
        );
    }
}
