//! Static files and systemd units of the bootstrap node (`bootstrap.ign`).
//!
//! This crate is the okd-install counterpart of openshift-install's
//! `data/data/bootstrap/` tree (openshift/installer `data/data/bootstrap/files`,
//! `systemd/common/units` and `bootstrap-in-place/`): the files under
//! `/etc`, `/root` and `/usr/local/bin` and the systemd units that every
//! bootstrap Ignition config carries, rendered from [`TemplateData`] with plain
//! Rust string building (no template engine).
//!
//! The TLS assets, manifests and kubeconfigs under `/opt/openshift` are *not*
//! produced here; the consumer (`okd-assets`, `ignition.rs`) adds them.
//!
//! Shapes (measured from a real 4.13 run, `ignition-index.tsv`):
//! * [`files`] returns 21 files (25 with bootstrap-in-place), in path order,
//!   every one always present (empty contents when the feature is unused);
//! * [`units`] returns 11 units (12 with bootstrap-in-place, adding
//!   `install-to-disk.service`).
//!
//! `bootkube.sh` and `release-image-download.sh` hand over to okd-install's
//! own node program (`okd-install bootstrap bootkube | release-image`, crate
//! okd-bootstrap), which bootstrap.ign carries as `/usr/local/bin/okd-install`
//! (okd-assets `node_program`); without it they fail loudly, on stderr and
//! the console.

use std::fmt::Write as _;

use okd_secret::{ExposeSecret as _, Secret};

mod scripts;

/// Cluster-wide proxy *status* (openshift/installer
/// `pkg/asset/ignition/bootstrap/common.go`: the bootstrap template data
/// carries `Proxy` status, i.e. the effective values after defaulting, with
/// `no_proxy` already expanded by the consumer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyStatus {
    /// `HTTP_PROXY` value (possibly empty).
    pub http_proxy: String,
    /// `HTTPS_PROXY` value (possibly empty).
    pub https_proxy: String,
    /// `NO_PROXY` value: a comma separated list (possibly empty).
    pub no_proxy: String,
}

/// One image source with its mirrors, from `imageContentSources` /
/// `imageDigestSources` (openshift/installer `data/data/bootstrap/files`:
/// `/etc/containers/registries.conf`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    /// The repository being mirrored, e.g. `quay.io/openshift/okd`.
    pub source: String,
    /// Mirror repositories, tried in order, e.g. `registry.example:5000/okd`.
    pub mirrors: Vec<String>,
    /// Whether the source itself is never contacted (`imageDigestSources`
    /// `sourcePolicy: NeverContactSource`): registries.conf `blocked = true`,
    /// as the machine-config operator writes it for an
    /// ImageDigestMirrorSet with that policy (openshift/api
    /// `config/v1/types_image_digest_mirror_set.go`).
    pub blocked: bool,
}

/// Everything the bootstrap files and units are rendered from (the bootstrap
/// template data of openshift/installer `pkg/asset/ignition/bootstrap/common.go`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateData {
    /// Release image pull spec (tag or digest form).
    pub release_image: String,
    /// The pull secret JSON, verbatim (written to `/root/.docker/config.json`);
    /// `Debug` shows `[REDACTED]`.
    pub pull_secret: Secret,
    /// The install-config SSH public key (may be empty).
    pub ssh_key: String,
    /// Proxy status; `None` when no proxy is configured.
    pub proxy: Option<ProxyStatus>,
    /// Image sources and their mirrors, in install-config order.
    pub registries: Vec<Registry>,
    /// PEM `additionalTrustBundle` (may be empty).
    pub additional_trust_bundle: String,
    /// Whether FIPS mode is requested.
    pub fips: bool,
    /// `OPENSHIFT_INSTALL_EXPERIMENTAL_CLUSTER_PROFILE`, when set.
    pub cluster_profile: Option<String>,
    /// Bootstrap-in-place (openshift/installer
    /// `pkg/asset/ignition/bootstrap/bootstrap_in_place.go`): the installation disk,
    /// e.g. `/dev/sda`.
    /// `Some` only when rendering `bootstrap-in-place-for-live-iso.ign`.
    pub bootstrap_in_place: Option<String>,
    /// The first service network is IPv6.
    pub use_ipv6_for_node_ip: bool,
    /// Dual-stack service networks.
    pub use_dual_for_node_ip: bool,
    /// `api.<cluster domain>` (host name only).
    pub api_server_url: String,
    /// `api-int.<cluster domain>` (host name only).
    pub api_int_server_url: String,
    /// `<name>.<baseDomain>`.
    pub cluster_domain: String,
    /// Feature set name (empty for the default).
    pub feature_set: String,
    /// `OPENSHIFT_INSTALL_INVOKER` or the default invoker.
    pub invoker: String,
    /// OKD flavour (FCOS/SCOS host pivot files and units are filled in).
    pub okd: bool,
    /// Platform name, e.g. `none`.
    pub platform: String,
    /// `https://etcd-<i>.<cluster domain>:2379`, one per control-plane replica.
    pub etcd_endpoints: Vec<String>,
    /// `OPENSHIFT_INSTALL_BOOTSTRAP_NODE_IP`, when set.
    pub bootstrap_node_ip: Option<String>,
    /// `controlPlane.replicas`.
    pub control_plane_replicas: i64,
}

/// One file of `storage.files` (from openshift/installer `data/data/bootstrap/files`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapFile {
    /// Absolute path on the bootstrap node.
    pub path: String,
    /// Octal permission bits, e.g. `0o555` for scripts, `0o600` for secrets.
    pub mode: u32,
    /// `true`: an Ignition `append` entry (`overwrite: false`), e.g. `/etc/motd`.
    pub append: bool,
    /// Raw file contents (may be empty).
    pub contents: Vec<u8>,
}

/// One systemd drop-in of a [`BootstrapUnit`] (`<unit>.d/<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropin {
    /// File name of the drop-in, e.g. `certs.conf`.
    pub name: String,
    /// Drop-in contents (unit-file syntax).
    pub contents: String,
}

/// One entry of `systemd.units` (openshift/installer
/// `data/data/bootstrap/systemd/common/units`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapUnit {
    /// Unit name, e.g. `bootkube.service`.
    pub name: String,
    /// `Some(true)` for units in the installer's enabled list, else `None`.
    pub enabled: Option<bool>,
    /// Unit file contents; `None` for drop-in-only units, `Some("")` for
    /// units whose contents are present but empty.
    pub contents: Option<String>,
    /// Drop-ins (`X.d/*`), in name order.
    pub dropins: Vec<Dropin>,
}

/// Quotes `s` for POSIX shells with single quotes.
pub(crate) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Quotes `s` as a TOML basic string.
fn toml_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Renders `/etc/containers/registries.conf` (containers-registries.conf v2
/// TOML): one `[[registry]]` per source with `mirror-by-digest-only = true`
/// (and `blocked = true` for a source never to be contacted) and a `[[registry.mirror]]` per mirror; empty when there are no sources
/// (openshift/installer `pkg/asset/ignition/bootstrap/common.go`; measured 0 bytes
/// without mirrors). [`files`] writes it with mode 0600, as measured from
/// openshift-install 4.13 (newer openshift/installer releases write 0644).
pub fn registries_conf(registries: &[Registry]) -> String {
    let mut out = String::new();
    for r in registries {
        let _ = writeln!(out, "[[registry]]");
        let _ = writeln!(out, "  prefix = \"\"");
        let _ = writeln!(out, "  location = {}", toml_quote(&r.source));
        let _ = writeln!(out, "  mirror-by-digest-only = true");
        if r.blocked {
            let _ = writeln!(out, "  blocked = true");
        }
        for m in &r.mirrors {
            let _ = writeln!(out);
            let _ = writeln!(out, "  [[registry.mirror]]");
            let _ = writeln!(out, "    location = {}", toml_quote(m));
        }
        let _ = writeln!(out);
    }
    out
}

/// `/etc/ignition-machine-config-encapsulated.json`: the FIPS bootstrap
/// MachineConfig stub (openshift/installer
/// `data/data/bootstrap/files/etc/ignition-machine-config-encapsulated.json.template`),
/// pretty-printed with two spaces.
fn encapsulated_mc(fips: bool) -> String {
    format!(
        "{{\n  \"metadata\": {{\n    \"name\": \"bootstrap-fips\"\n  }},\n  \"spec\": {{\n    \"config\": {{\n      \"ignition\": {{\n        \"version\": \"3.1.0\"\n      }}\n    }},\n    \"kernelArguments\": [],\n    \"fips\": {fips}\n  }}\n}}\n"
    )
}

/// `/etc/profile.d/proxy.sh`: exports of the proxy status (empty without one).
fn proxy_sh(proxy: Option<&ProxyStatus>) -> String {
    let Some(p) = proxy else { return String::new() };
    let mut out = String::new();
    for (k, v) in [
        ("HTTP_PROXY", &p.http_proxy),
        ("HTTPS_PROXY", &p.https_proxy),
        ("NO_PROXY", &p.no_proxy),
    ] {
        if !v.is_empty() {
            let _ = writeln!(out, "export {k}={}", shell_quote(v));
        }
    }
    out
}

/// Escapes a value for a systemd `DefaultEnvironment=` assignment: `%` is
/// doubled and the value is double-quoted.
fn systemd_env_value(v: &str) -> String {
    format!(
        "\"{}\"",
        v.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('%', "%%")
    )
}

/// `/etc/systemd/system.conf.d/10-default-env.conf` (openshift/installer
/// `data/data/bootstrap/files`).
fn default_env_conf(proxy: Option<&ProxyStatus>) -> String {
    let mut out = String::from("[Manager]\n");
    if let Some(p) = proxy {
        let mut parts = Vec::new();
        for (k, v) in [
            ("HTTP_PROXY", &p.http_proxy),
            ("HTTPS_PROXY", &p.https_proxy),
            ("NO_PROXY", &p.no_proxy),
        ] {
            if !v.is_empty() {
                parts.push(format!("{k}={}", systemd_env_value(v)));
            }
        }
        if !parts.is_empty() {
            let _ = writeln!(out, "DefaultEnvironment={}", parts.join(" "));
        }
    }
    out
}

const MOTD: &str = "\
This is the bootstrap node of an okd-install cluster; it is thrown away once
the control plane is running on the masters.

Start by watching the bootstrap services:

  journalctl -b -f -u release-image.service -u bootkube.service

Each stage is recorded in /var/log/openshift/<service>.json; a stage that
fails says why on the console (/etc/issue.d) and is retried. Single-master
and upstream-payload installs keep etcd on this node until the masters take
it over; `okd-install gather bootstrap` on the workstation collects it all.

";

fn file(path: &str, mode: u32, contents: impl Into<Vec<u8>>) -> BootstrapFile {
    BootstrapFile {
        path: path.to_string(),
        mode,
        append: false,
        contents: contents.into(),
    }
}

/// The bootstrap node's files (openshift/installer `data/data/bootstrap/files`,
/// and `data/data/bootstrap/bootstrap-in-place/` for bootstrap-in-place), sorted
/// by path. Modes follow the measured 4.13 run:
/// `/usr/local/bin/*` 0555, `/etc/motd` 0644 (append), everything else 0600.
/// With `data.bootstrap_in_place` set, four more files are added
/// (`/opt/openshift/bootstrap-in-place/*` 0600, `bootstrap-in-place.sh` and
/// `install-to-disk.sh` 0555).
pub fn files(data: &TemplateData) -> Vec<BootstrapFile> {
    let proxy = data.proxy.as_ref();
    let bin =
        |name: &str, contents: String| file(&format!("/usr/local/bin/{name}"), 0o555, contents);
    let mut v = vec![
        file(
            "/etc/containers/registries.conf",
            0o600,
            registries_conf(&data.registries),
        ),
        file(
            "/etc/ignition-machine-config-encapsulated.json",
            0o600,
            encapsulated_mc(data.fips),
        ),
        BootstrapFile {
            path: "/etc/motd".into(),
            mode: 0o644,
            append: true,
            contents: MOTD.into(),
        },
        file(
            "/etc/pki/ca-trust/source/anchors/ca.crt",
            0o600,
            data.additional_trust_bundle.clone(),
        ),
        file("/etc/profile.d/proxy.sh", 0o600, proxy_sh(proxy)),
        file(
            "/etc/systemd/system.conf.d/10-default-env.conf",
            0o600,
            default_env_conf(proxy),
        ),
        file(
            "/root/.docker/config.json",
            0o600,
            data.pull_secret.expose_secret(),
        ),
        bin("approve-csr.sh", scripts::approve_csr()),
        bin("bootkube.sh", scripts::bootkube(data)),
        bin(
            "bootstrap-cluster-gather.sh",
            scripts::bootstrap_cluster_gather(),
        ),
        bin("bootstrap-pivot.sh", scripts::bootstrap_pivot(data)),
        bin("bootstrap-service-record.sh", scripts::service_record()),
        bin(
            "bootstrap-verify-api-server-urls.sh",
            scripts::verify_api_server_urls(data),
        ),
        bin("crio-configure.sh", scripts::crio_configure()),
        bin("installer-gather.sh", scripts::installer_gather()),
        bin(
            "installer-masters-gather.sh",
            scripts::installer_masters_gather(),
        ),
        bin("kubelet-pause-image.sh", scripts::kubelet_pause_image()),
        bin("kubelet.sh", scripts::kubelet(data)),
        bin(
            "release-image-download.sh",
            scripts::release_image_download(),
        ),
        bin("release-image.sh", scripts::release_image(data)),
        bin("report-progress.sh", scripts::report_progress()),
    ];
    if let Some(disk) = &data.bootstrap_in_place {
        v.push(file(
            "/opt/openshift/bootstrap-in-place/bootstrap-in-place-post-reboot.sh",
            0o600,
            scripts::bip_post_reboot(),
        ));
        v.push(file(
            "/opt/openshift/bootstrap-in-place/master-update.fcc",
            0o600,
            scripts::master_update_fcc(),
        ));
        v.push(bin("bootstrap-in-place.sh", scripts::bootstrap_in_place()));
        v.push(bin("install-to-disk.sh", scripts::install_to_disk(disk)));
    }
    v
}

fn unit(name: &str, enabled: bool, contents: Option<&str>) -> BootstrapUnit {
    BootstrapUnit {
        name: name.to_string(),
        enabled: enabled.then_some(true),
        contents: contents.map(str::to_string),
        dropins: Vec::new(),
    }
}

fn dropin_unit(name: &str, dropin: &str, contents: &str) -> BootstrapUnit {
    BootstrapUnit {
        name: name.to_string(),
        enabled: None,
        contents: None,
        dropins: vec![Dropin {
            name: dropin.to_string(),
            contents: contents.to_string(),
        }],
    }
}

const APPROVE_CSR_SERVICE: &str = "\
[Unit]
Description=Approve CSRs during the bootstrap phase
Wants=bootkube.service
After=bootkube.service

[Service]
ExecStart=/usr/local/bin/approve-csr.sh /opt/openshift/auth/kubeconfig-loopback
Restart=on-failure
RestartSec=5s

[Install]
WantedBy=multi-user.target
";

const BOOTKUBE_SERVICE: &str = "\
[Unit]
Description=Bootstrap a Kubernetes cluster
Requires=crio-configure.service
Wants=kubelet.service
After=kubelet.service crio-configure.service
ConditionPathExists=!/opt/openshift/.bootkube.done

[Service]
WorkingDirectory=/opt/openshift
ExecStart=/usr/local/bin/bootkube.sh
Restart=on-failure
RestartSec=5s
";

const CHOWN_GATEWAYD_KEY_SERVICE: &str = "\
[Unit]
Description=Give systemd-journal-gatewayd access to its TLS key
Before=systemd-journal-gatewayd.service
ConditionPathExists=/opt/openshift/tls/journal-gatewayd.key

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/chown systemd-journal-gateway:systemd-journal-gateway /opt/openshift/tls/journal-gatewayd.key /opt/openshift/tls/journal-gatewayd.crt
ExecStart=/usr/bin/chmod 0600 /opt/openshift/tls/journal-gatewayd.key

[Install]
RequiredBy=systemd-journal-gatewayd.socket
WantedBy=multi-user.target
";

const CRIO_CONFIGURE_SERVICE: &str = "\
[Unit]
Description=Configure CRI-O for the bootstrap node from the release image
Requires=release-image.service
After=release-image.service
Before=crio.service

[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/usr/local/bin/crio-configure.sh
";

const CRIO_CONFIGURE_SERVICE_OKD: &str = "\
[Unit]
Description=Configure CRI-O for the bootstrap node from the release image
Requires=release-image.service release-image-pivot.service
After=release-image.service release-image-pivot.service
Before=crio.service

[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/usr/local/bin/crio-configure.sh
";

const KUBELET_SERVICE: &str = "\
[Unit]
Description=Kubernetes Kubelet (bootstrap, standalone)
Wants=rpc-statd.service crio.service release-image.service
After=crio.service release-image.service crio-configure.service

[Service]
Type=notify
ExecStartPre=/bin/mkdir --parents /etc/kubernetes/manifests
ExecStartPre=/bin/mkdir --parents /etc/kubernetes/kubelet-plugins/volume/exec
ExecStartPre=/usr/local/bin/kubelet-pause-image.sh
Environment=KUBELET_RUNTIME_REQUEST_TIMEOUT=10m
EnvironmentFile=-/etc/kubernetes/kubelet-pause-image-override
ExecStart=/usr/local/bin/kubelet.sh
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
";

const PROGRESS_SERVICE: &str = "\
[Unit]
Description=Report the completion of the cluster bootstrap process
Wants=bootkube.service
After=bootkube.service

[Service]
ExecStart=/usr/local/bin/report-progress.sh /opt/openshift/auth/kubeconfig
Restart=on-failure
RestartSec=5s

[Install]
WantedBy=multi-user.target
";

const RELEASE_IMAGE_PIVOT_SERVICE_OKD: &str = "\
[Unit]
Description=Pivot the bootstrap host to the machine OS of the release image
Requires=release-image.service
After=release-image.service
ConditionPathExists=!/opt/openshift/.pivot-done

[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/usr/local/bin/bootstrap-pivot.sh
";

const RELEASE_IMAGE_SERVICE: &str = "\
[Unit]
Description=Download the OpenShift release image
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/usr/local/bin/release-image-download.sh
";

const GATEWAYD_CERTS_CONF: &str = "\
[Service]
ExecStart=
ExecStart=/usr/lib/systemd/systemd-journal-gatewayd --key=/opt/openshift/tls/journal-gatewayd.key --cert=/opt/openshift/tls/journal-gatewayd.crt --trust=/opt/openshift/tls/root-ca.crt
";

const ZINCATI_DISABLED_CONF: &str = "\
[Unit]
ConditionPathExists=/enoent
";

const INSTALL_TO_DISK_SERVICE: &str = "\
[Unit]
Description=Install the single-node bootstrap-in-place result to disk
Requires=bootkube.service
After=bootkube.service
ConditionPathExists=!/opt/openshift/.install-to-disk.done

[Service]
WorkingDirectory=/opt/openshift
ExecStart=/usr/local/bin/install-to-disk.sh
Restart=on-failure
RestartSec=5s

[Install]
WantedBy=multi-user.target
";

/// The bootstrap node's systemd units (openshift/installer
/// `data/data/bootstrap/systemd/common/units`), sorted by name as measured in 4.13: 11 units for
/// every flavour (`release-image-pivot.service` is empty for OCP and pivots the
/// host for OKD), plus the enabled `install-to-disk.service` last when
/// `data.bootstrap_in_place` is set (openshift/installer
/// `data/data/bootstrap/bootstrap-in-place/`). `enabled` is `Some(true)` exactly
/// for approve-csr, chown-gatewayd-key, kubelet, progress,
/// systemd-journal-gatewayd.socket (and install-to-disk).
pub fn units(data: &TemplateData) -> Vec<BootstrapUnit> {
    let mut v = vec![
        unit("approve-csr.service", true, Some(APPROVE_CSR_SERVICE)),
        unit("bootkube.service", false, Some(BOOTKUBE_SERVICE)),
        unit(
            "chown-gatewayd-key.service",
            true,
            Some(CHOWN_GATEWAYD_KEY_SERVICE),
        ),
        unit(
            "crio-configure.service",
            false,
            Some(if data.okd {
                CRIO_CONFIGURE_SERVICE_OKD
            } else {
                CRIO_CONFIGURE_SERVICE
            }),
        ),
        unit("kubelet.service", true, Some(KUBELET_SERVICE)),
        unit("progress.service", true, Some(PROGRESS_SERVICE)),
        unit(
            "release-image-pivot.service",
            false,
            Some(if data.okd {
                RELEASE_IMAGE_PIVOT_SERVICE_OKD
            } else {
                ""
            }),
        ),
        unit("release-image.service", false, Some(RELEASE_IMAGE_SERVICE)),
        dropin_unit(
            "systemd-journal-gatewayd.service",
            "certs.conf",
            GATEWAYD_CERTS_CONF,
        ),
        unit("systemd-journal-gatewayd.socket", true, Some("")),
        dropin_unit(
            "zincati.service",
            "okd-machine-os-disabled.conf",
            ZINCATI_DISABLED_CONF,
        ),
    ];
    if data.bootstrap_in_place.is_some() {
        v.push(unit(
            "install-to-disk.service",
            true,
            Some(INSTALL_TO_DISK_SERVICE),
        ));
    }
    v
}
