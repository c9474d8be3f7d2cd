//! `create manifests`: the Common Manifests (`manifests/`), the Openshift
//! Manifests and the OpenShift Install manifest (`openshift/`), per openshift/installer
//! `pkg/asset/manifests` and the manifest list measured from openshift-install 4.13.
//!
//! Objects are built as JSON and written with [`okd_types::goyaml`], which
//! reproduces sigs.k8s.io/yaml; the few files openshift-install renders from
//! hand-written text templates (cvo-overrides, kubeadmin secret, user-data
//! secrets) are written as text with their own key order. Version-dependent
//! files follow [`okd_types::release::ReleaseTarget`].

use okd_secret::ExposeSecret as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::warn;

use crate::ctx::GenCtx;
use crate::dir::{AssetDir, AssetFile, base64_std};
use crate::error::AssetError;
use crate::filelist::{FileListAsset, MANIFEST_EXTS, is_machine_manifest, yaml};
use crate::installconfig::{ClusterId, InstallConfigAsset, ReleaseImage};
use crate::password::KubeadminPassword;
use crate::store::{Asset, Dep, Parents, dep};
use crate::tls::{McsCertKey, RootCa, api_vips};

/// `manifests/*`: the cluster-scoped config objects (openshift/installer
/// `pkg/asset/manifests/operators.go`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommonManifests(pub FileListAsset);

impl Asset for CommonManifests {
    const NAME: &'static str = "Common Manifests";
    const STATE_KEY: &'static str = "*manifests.Manifests";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        vec![
            dep::<ClusterId>(),
            dep::<InstallConfigAsset>(),
            dep::<RootCa>(),
            dep::<McsCertKey>(),
            dep::<ReleaseImage>(),
        ]
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        let inputs = Inputs {
            ctx,
            ic: &p.get::<InstallConfigAsset>().config,
            id: p.get::<ClusterId>(),
            root: p.get::<RootCa>(),
            mcs: p.get::<McsCertKey>(),
        };
        let mut files = Vec::new();
        for manifest in COMMON_MANIFESTS {
            for (name, data) in manifest(&inputs)? {
                files.push(AssetFile::new(format!("manifests/{name}"), data));
            }
        }
        files.sort_by(|a, b| a.filename.cmp(&b.filename));
        Ok(CommonManifests(FileListAsset { file_list: files }))
    }

    fn files(&self) -> Vec<AssetFile> {
        self.0.file_list.clone()
    }

    fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
        if dir.read("manifests/cluster-config.yaml")?.is_none() {
            return Ok(None);
        }
        Ok(Some(CommonManifests(FileListAsset {
            file_list: dir.read_dir_files("manifests", MANIFEST_EXTS)?,
        })))
    }
}

/// The parents every common manifest is made from.
struct Inputs<'a> {
    ctx: &'a GenCtx,
    ic: &'a okd_installconfig::InstallConfig,
    id: &'a ClusterId,
    root: &'a RootCa,
    mcs: &'a McsCertKey,
}

/// Files of one or more `manifests/` entries: (file name, bytes); empty when
/// the target release or the install-config wants none.
type Manifests = Result<Vec<(String, Vec<u8>)>, AssetError>;

/// Every common manifest, one function each (openshift/installer
/// `pkg/asset/manifests`).
const COMMON_MANIFESTS: &[fn(&Inputs<'_>) -> Manifests] = &[
    cluster_config,
    cluster_dns,
    cluster_infrastructure,
    cluster_ingress,
    cluster_network_crd,
    cluster_network,
    cluster_network_operator,
    cluster_proxy,
    cluster_scheduler,
    cvo_overrides_manifest,
    image_mirrors,
    kube_cloud_config,
    kube_system_root_ca,
    machine_config_server_ca,
    machine_config_server_tls,
    pull_secret,
    user_ca_bundle,
];

fn one(name: &str, data: Vec<u8>) -> Manifests {
    Ok(vec![(name.to_string(), data)])
}

/// `cluster-config.yaml`: the install-config with secrets redacted.
fn cluster_config(i: &Inputs<'_>) -> Manifests {
    let redacted = okd_types::goyaml::to_string(&i.ic.redacted().to_json_value());
    one(
        "cluster-config.yaml",
        yaml(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cluster-config-v1", "namespace": "kube-system", "annotations": {
                "kubernetes.io/description": "The install-config content used to create the cluster.  The cluster configuration may have evolved since installation, so check cluster configuration resources directly if you are interested in the current cluster state."}},
            "data": {"install-config": redacted},
        })),
    )
}

/// `cluster-dns-02-config.yml`: the DNS config (AWS zones when on AWS).
fn cluster_dns(i: &Inputs<'_>) -> Manifests {
    let (ic, id) = (i.ic, i.id);
    let mut dns_spec = json!({"baseDomain": ic.cluster_domain()});
    if ic.platform_name() == "aws" {
        dns_spec["privateZone"] = json!({"tags": {"Name": format!("{}-int", id.infra_id), format!("kubernetes.io/cluster/{}", id.infra_id): "owned"}});
        if let Some(z) = ic.platform.aws.as_ref().and_then(|a| a.hosted_zone.clone()) {
            dns_spec["publicZone"] = json!({"id": z});
        }
    }
    if i.ctx.target.at_least(16) {
        dns_spec["platform"] = json!({"aws": null, "type": ""});
    }
    one(
        "cluster-dns-02-config.yml",
        yaml(&config_object("DNS", dns_spec, json!({}))),
    )
}

/// `cluster-infrastructure-02-config.yml`.
fn cluster_infrastructure(i: &Inputs<'_>) -> Manifests {
    one(
        "cluster-infrastructure-02-config.yml",
        yaml(&infrastructure(i.ic, i.id, i.ctx.target)),
    )
}

/// `cluster-ingress-02-config.yml`: the apps domain and default placement.
fn cluster_ingress(i: &Inputs<'_>) -> Manifests {
    let ic = i.ic;
    let platform = ic.platform_name();
    let single_cp = ic.control_plane_replicas() == 1;
    let placement = if platform == "none" && single_cp && ic.compute_replicas() == 0 {
        "ControlPlane"
    } else {
        "Workers"
    };
    let lb_platform = if platform == "aws" {
        json!({"type": "AWS"})
    } else {
        json!({"type": ""})
    };
    one(
        "cluster-ingress-02-config.yml",
        yaml(&config_object(
            "Ingress",
            json!({"domain": format!("apps.{}", ic.cluster_domain()), "loadBalancer": {"platform": lb_platform}}),
            json!({"defaultPlacement": placement}),
        )),
    )
}

/// `cluster-network-01-crd.yml`, for the releases that still ship it.
fn cluster_network_crd(i: &Inputs<'_>) -> Manifests {
    if !i.ctx.target.writes_network_crd() {
        return Ok(Vec::new());
    }
    one(
        "cluster-network-01-crd.yml",
        crate::network_crd::CRD.as_bytes().to_vec(),
    )
}

/// `cluster-network-02-config.yml`: cluster and service networks.
fn cluster_network(i: &Inputs<'_>) -> Manifests {
    let ic = i.ic;
    let mut net_spec = json!({
        "clusterNetwork": ic.cluster_networks().iter().map(|(c, h)| json!({"cidr": c.to_string(), "hostPrefix": h})).collect::<Vec<_>>(),
        "externalIP": {"policy": {}},
        "networkType": ic.networking.as_ref().map(|n| n.network_type.clone()).unwrap_or_default(),
        "serviceNetwork": ic.service_networks().iter().map(|c| c.to_string()).collect::<Vec<_>>(),
    });
    if i.ctx.target.at_least(14) {
        net_spec["networkDiagnostics"] = json!({"mode": "", "sourcePlacement": {"nodeSelector": null, "tolerations": null}, "targetPlacement": {"nodeSelector": null, "tolerations": null}});
    }
    one(
        "cluster-network-02-config.yml",
        yaml(&config_object("Network", net_spec, json!({}))),
    )
}

/// `cluster-network-03-config.yml`: OVN's internal join subnet, when set.
fn cluster_network_operator(i: &Inputs<'_>) -> Manifests {
    let Some(join) =
        i.ic.networking
            .as_ref()
            .and_then(|n| n.internal_join_subnet())
    else {
        return Ok(Vec::new());
    };
    one(
        "cluster-network-03-config.yml",
        yaml(
            &json!({"apiVersion": "operator.openshift.io/v1", "kind": "Network", "metadata": {"creationTimestamp": null, "name": "cluster"},
            "spec": {"defaultNetwork": {"ovnKubernetesConfig": {"ipv4": {"internalJoinSubnet": join}}, "type": "OVNKubernetes"}}, "status": {}}),
        ),
    )
}

/// `cluster-proxy-01-config.yaml`.
fn cluster_proxy(i: &Inputs<'_>) -> Manifests {
    one("cluster-proxy-01-config.yaml", yaml(&proxy(i.ic)))
}

/// `cluster-scheduler-02-config.yml`: masters schedulable without workers.
fn cluster_scheduler(i: &Inputs<'_>) -> Manifests {
    let schedulable = i.ic.compute_replicas() == 0;
    if schedulable {
        warn!(
            "Making control-plane schedulable by setting MastersSchedulable to true for Scheduler cluster settings"
        );
    }
    let mut sched = json!({"mastersSchedulable": schedulable, "policy": {"name": ""}});
    if i.ctx.target.at_least(16) {
        sched["profileCustomizations"] = json!({"dynamicResourceAllocation": ""});
    }
    one(
        "cluster-scheduler-02-config.yml",
        yaml(&config_object("Scheduler", sched, json!({}))),
    )
}

/// `cvo-overrides.yaml`: the ClusterVersion.
fn cvo_overrides_manifest(i: &Inputs<'_>) -> Manifests {
    one(
        "cvo-overrides.yaml",
        cvo_overrides(i.ctx, &i.id.uuid, i.ic).into_bytes(),
    )
}

/// The mirror manifests: an ImageDigestMirrorSet for `imageDigestSources`,
/// else ImageContentSourcePolicies (one in all from 4.14, one per source
/// before).
fn image_mirrors(i: &Inputs<'_>) -> Manifests {
    let ic = i.ic;
    let sources = ic.image_sources();
    if !ic.image_digest_sources.is_empty() {
        return one(
            "image-digest-mirror-set.yaml",
            yaml(
                &json!({"apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet",
                "metadata": {"creationTimestamp": null, "name": "image-digest-mirror"},
                "spec": {"imageDigestMirrors": sources.iter().map(|s| json!({"mirrors": s.mirrors, "source": s.source})).collect::<Vec<_>>()},
                "status": {}}),
            ),
        );
    }
    let icsp = |name: String, srcs: &[okd_installconfig::ImageSource]| {
        yaml(
            &json!({"apiVersion": "operator.openshift.io/v1alpha1", "kind": "ImageContentSourcePolicy",
            "metadata": {"creationTimestamp": null, "name": name},
            "spec": {"repositoryDigestMirrors": srcs.iter().map(|s| json!({"mirrors": s.mirrors, "source": s.source})).collect::<Vec<_>>()}}),
        )
    };
    if sources.is_empty() {
        Ok(Vec::new())
    } else if i.ctx.target.has_image_digest_sources() {
        one(
            "image-content-source-policy.yaml",
            icsp("image-policy".into(), &sources),
        )
    } else {
        Ok(sources
            .iter()
            .enumerate()
            .map(|(n, s)| {
                (
                    format!("image-content-source-policy-{n}.yaml"),
                    icsp(format!("image-policy-{n}"), std::slice::from_ref(s)),
                )
            })
            .collect())
    }
}

/// `kube-cloud-config.yaml`: the empty cloud config secret.
fn kube_cloud_config(_: &Inputs<'_>) -> Manifests {
    one(
        "kube-cloud-config.yaml",
        yaml(
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kube-cloud-cfg", "namespace": "kube-system"}, "type": "Opaque", "data": {"config": ""}}),
        ),
    )
}

/// `kube-system-configmap-root-ca.yaml`.
fn kube_system_root_ca(i: &Inputs<'_>) -> Manifests {
    one(
        "kube-system-configmap-root-ca.yaml",
        yaml(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "root-ca", "namespace": "kube-system"}, "data": {"ca.crt": i.root.0.cert_pem()}}),
        ),
    )
}

/// The machine-config server CA ConfigMap and Secret (releases that want them).
fn machine_config_server_ca(i: &Inputs<'_>) -> Manifests {
    if !i.ctx.target.writes_mcs_ca_manifests() {
        return Ok(Vec::new());
    }
    let root = i.root;
    let info = root_cert_times(root)?;
    Ok(vec![
        (
            "machine-config-server-ca-configmap.yaml".into(),
            yaml(
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "machine-config-server-ca", "namespace": "openshift-machine-config-operator",
                "labels": {"auth.openshift.io/managed-certificate-type": "ca-bundle"}}, "data": {"ca-bundle.crt": root.0.cert_pem()}}),
            ),
        ),
        (
            "machine-config-server-ca-secret.yaml".into(),
            yaml(
                &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": {"name": "machine-config-server-ca", "namespace": "openshift-machine-config-operator",
                    "labels": {"auth.openshift.io/managed-certificate-type": "signer"},
                    "annotations": {"auth.openshift.io/certificate-issuer": "root-ca", "auth.openshift.io/certificate-not-after": info.1, "auth.openshift.io/certificate-not-before": info.0}},
                "data": {"tls.crt": base64_std(&root.0.cert_raw), "tls.key": base64_std(&root.0.key_raw)}}),
            ),
        ),
    ])
}

/// `machine-config-server-tls-secret.yaml`.
fn machine_config_server_tls(i: &Inputs<'_>) -> Manifests {
    let mcs_type = if i.ctx.target.writes_mcs_ca_manifests() {
        "kubernetes.io/tls"
    } else {
        "Opaque"
    };
    one(
        "machine-config-server-tls-secret.yaml",
        yaml(
            &json!({"apiVersion": "v1", "kind": "Secret", "type": mcs_type,
            "metadata": {"name": "machine-config-server-tls", "namespace": "openshift-machine-config-operator"},
            "data": {"tls.crt": base64_std(&i.mcs.0.cert_raw), "tls.key": base64_std(&i.mcs.0.key_raw)}}),
        ),
    )
}

/// `openshift-config-secret-pull-secret.yaml`.
fn pull_secret(i: &Inputs<'_>) -> Manifests {
    one(
        "openshift-config-secret-pull-secret.yaml",
        yaml(
            &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": "pull-secret", "namespace": "openshift-config"},
            "data": {".dockerconfigjson": base64_std(i.ic.pull_secret.expose_secret().as_bytes())}}),
        ),
    )
}

/// `user-ca-bundle-config.yaml`: additionalTrustBundle, when set.
fn user_ca_bundle(i: &Inputs<'_>) -> Manifests {
    let Some(bundle) =
        i.ic.additional_trust_bundle
            .as_deref()
            .filter(|b| !b.trim().is_empty())
    else {
        return Ok(Vec::new());
    };
    one(
        "user-ca-bundle-config.yaml",
        yaml(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"creationTimestamp": null, "name": "user-ca-bundle", "namespace": "openshift-config"},
            "data": {"ca-bundle.crt": bundle}})),
    )
}

fn root_cert_times(root: &RootCa) -> Result<(String, String), AssetError> {
    let ck = root.0.to_pki("root-ca")?;
    let f = &time::format_description::well_known::Rfc3339;
    Ok((
        ck.cert.not_before.format(f).unwrap_or_default(),
        ck.cert.not_after.format(f).unwrap_or_default(),
    ))
}

fn config_object(kind: &str, spec: Value, status: Value) -> Value {
    json!({"apiVersion": "config.openshift.io/v1", "kind": kind, "metadata": {"creationTimestamp": null, "name": "cluster"}, "spec": spec, "status": status})
}

fn topology(ic: &okd_installconfig::InstallConfig) -> (&'static str, &'static str) {
    let cp = ic.control_plane_replicas();
    let control = if cp == 2 {
        "DualReplica"
    } else if cp < 3 {
        "SingleReplica"
    } else {
        "HighlyAvailable"
    };
    let infra = match ic.compute_replicas() {
        0 if cp == 2 => "HighlyAvailable",
        0 => control,
        1 => "SingleReplica",
        _ => "HighlyAvailable",
    };
    (control, infra)
}

fn infrastructure(
    ic: &okd_installconfig::InstallConfig,
    id: &ClusterId,
    t: okd_types::release::ReleaseTarget,
) -> Value {
    let domain = ic.cluster_domain();
    let (control, infra) = topology(ic);
    let machine_networks: Vec<String> = ic
        .machine_networks()
        .iter()
        .map(|n| n.to_string())
        .collect();
    let (spec_platform, status_platform, type_name, cloud) = match ic.platform_name() {
        "baremetal" => {
            let bm = ic.platform.baremetal.as_ref();
            let api = api_vips(ic);
            let ingress = bm.map(|b| b.ingress_vips.clone()).unwrap_or_default();
            (
                json!({"type": "BareMetal", "baremetal": {"apiServerInternalIPs": api, "ingressIPs": ingress, "machineNetworks": machine_networks}}),
                json!({"type": "BareMetal", "baremetal": {"apiServerInternalIP": api.first().cloned().unwrap_or_default(), "apiServerInternalIPs": api,
                    "ingressIP": ingress.first().cloned().unwrap_or_default(), "ingressIPs": ingress,
                    "loadBalancer": {"type": "OpenShiftManagedDefault"}, "machineNetworks": machine_networks}}),
                "BareMetal",
                json!({"name": ""}),
            )
        }
        "aws" => {
            let region = ic
                .platform
                .aws
                .as_ref()
                .map(|a| a.region.clone())
                .unwrap_or_default();
            (
                json!({"type": "AWS", "aws": {}}),
                json!({"type": "AWS", "aws": {"region": region}}),
                "AWS",
                json!({"key": "config", "name": "cloud-provider-config"}),
            )
        }
        _ => (
            json!({"type": "None"}),
            json!({"type": "None"}),
            "None",
            json!({"name": ""}),
        ),
    };
    let mut status = json!({
        "apiServerInternalURI": format!("https://api-int.{domain}:6443"),
        "apiServerURL": format!("https://api.{domain}:6443"),
        "controlPlaneTopology": control,
        "etcdDiscoveryDomain": "",
        "infrastructureName": id.infra_id,
        "infrastructureTopology": infra,
        "platform": type_name,
        "platformStatus": status_platform,
    });
    if t.at_least(13) {
        status["cpuPartitioning"] =
            json!(if ic.cpu_partitioning_mode.as_deref() == Some("AllNodes") {
                "AllNodes"
            } else {
                "None"
            });
    }
    config_object(
        "Infrastructure",
        json!({"cloudConfig": cloud, "platformSpec": spec_platform}),
        status,
    )
}

fn proxy(ic: &okd_installconfig::InstallConfig) -> Value {
    let trusted = ic
        .additional_trust_bundle
        .as_deref()
        .is_some_and(|b| !b.trim().is_empty())
        && (ic.proxy.is_some() || ic.additional_trust_bundle_policy.as_deref() == Some("Always"));
    let mut spec = json!({"trustedCA": {"name": if trusted { "user-ca-bundle" } else { "" }}});
    let mut status = json!({});
    if let Some(p) = &ic.proxy {
        if let Some(h) = &p.http_proxy {
            spec["httpProxy"] = json!(h);
            status["httpProxy"] = json!(h);
        }
        if let Some(h) = &p.https_proxy {
            spec["httpsProxy"] = json!(h);
            status["httpsProxy"] = json!(h);
        }
        if let Some(n) = &p.no_proxy {
            spec["noProxy"] = json!(n);
        }
        if p.http_proxy.is_some() || p.https_proxy.is_some() {
            status["noProxy"] = json!(no_proxy_status(ic));
        }
    }
    config_object("Proxy", spec, status)
}

/// The computed `status.noProxy` of the cluster Proxy (openshift/installer
/// `pkg/asset/manifests`).
pub fn no_proxy_status(ic: &okd_installconfig::InstallConfig) -> String {
    let user = ic
        .proxy
        .as_ref()
        .and_then(|p| p.no_proxy.clone())
        .unwrap_or_default();
    if user.trim() == "*" {
        return "*".to_string();
    }
    let mut set: std::collections::BTreeSet<String> =
        ["127.0.0.1", "localhost", ".svc", ".cluster.local"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    set.insert(format!("api-int.{}", ic.cluster_domain()));
    set.extend(ic.service_networks().iter().map(|n| n.to_string()));
    set.extend(ic.machine_networks().iter().map(|n| n.to_string()));
    set.extend(ic.cluster_networks().iter().map(|(n, _)| n.to_string()));
    if ic.platform_name() == "aws" {
        set.insert("169.254.169.254".to_string());
        set.insert(".ec2.internal".to_string());
    }
    set.extend(
        user.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from),
    );
    set.into_iter().collect::<Vec<_>>().join(",")
}

fn cvo_overrides(ctx: &GenCtx, cluster_id: &str, ic: &okd_installconfig::InstallConfig) -> String {
    let mut s = String::from(
        "apiVersion: config.openshift.io/v1\nkind: ClusterVersion\nmetadata:\n  namespace: openshift-cluster-version\n  name: version\nspec:\n",
    );
    if ctx.target.okd {
        s.push_str("  upstream: https://amd64.origin.releases.ci.openshift.org/graph\n");
    }
    s.push_str(&format!(
        "  channel: {}\n  clusterID: {cluster_id}\n",
        ctx.target.channel()
    ));
    if let Some(caps) = &ic.capabilities {
        let v = serde_json::to_value(caps).unwrap_or(Value::Null);
        let body = okd_types::goyaml::to_string(&json!({"capabilities": v}));
        for line in body.lines() {
            s.push_str("  ");
            s.push_str(line);
            s.push('\n');
        }
    }
    s
}

/// `openshift/*` other than the machine manifests: the kubeadmin secret, the
/// FeatureGate (openshift/installer `pkg/asset/manifests`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpenshiftManifests(pub FileListAsset);

impl Asset for OpenshiftManifests {
    const NAME: &'static str = "Openshift Manifests";
    const STATE_KEY: &'static str = "*manifests.Openshift";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        vec![
            dep::<InstallConfigAsset>(),
            dep::<KubeadminPassword>(),
            dep::<ReleaseImage>(),
        ]
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        let ic = &p.get::<InstallConfigAsset>().config;
        let pw = p.get::<KubeadminPassword>();
        let mut files = vec![AssetFile::new(
            "openshift/99_kubeadmin-password-secret.yaml",
            format!(
                "apiVersion: v1\ndata:\n  kubeadmin: {}\nkind: Secret\nmetadata:\n  namespace: kube-system\n  name: kubeadmin\n",
                base64_std(&pw.password_hash)
            ),
        )];
        let feature_set = ic.feature_set.clone().unwrap_or_default();
        if ctx.target.always_writes_feature_gate() || !feature_set.is_empty() {
            let mut spec = json!({});
            if !feature_set.is_empty() {
                spec["featureSet"] = json!(feature_set);
            }
            if feature_set == "CustomNoUpgrade" {
                let (mut on, mut off) = (Vec::new(), Vec::new());
                for g in &ic.feature_gates {
                    match g.split_once('=') {
                        Some((n, v)) if v.trim() == "true" => on.push(n.trim().to_string()),
                        Some((n, _)) => off.push(n.trim().to_string()),
                        None => {}
                    }
                }
                spec["customNoUpgrade"] = json!({"enabled": on, "disabled": off});
            }
            files.push(AssetFile::new(
                "openshift/99_feature-gate.yaml",
                yaml(&json!({"apiVersion": "config.openshift.io/v1", "kind": "FeatureGate", "metadata": {"creationTimestamp": null, "name": "cluster"},
                    "spec": spec, "status": {"featureGates": null}})),
            ));
        }
        files.sort_by(|a, b| a.filename.cmp(&b.filename));
        Ok(OpenshiftManifests(FileListAsset { file_list: files }))
    }

    fn files(&self) -> Vec<AssetFile> {
        self.0.file_list.clone()
    }

    fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
        let files: Vec<AssetFile> = dir
            .read_dir_files("openshift", MANIFEST_EXTS)?
            .into_iter()
            .filter(|f| !is_machine_manifest(&f.filename))
            .collect();
        Ok(if files.is_empty() {
            None
        } else {
            Some(OpenshiftManifests(FileListAsset { file_list: files }))
        })
    }
}
