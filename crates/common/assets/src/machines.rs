//! The machine assets of `openshift/` (openshift/installer `pkg/asset/machines/`): user-data
//! secrets carrying the pointer configs, the SSH (and FIPS / hyperthreading)
//! MachineConfigs per pool, the AWS Machine and MachineSet manifests, and the
//! `openshift-install-manifests` ConfigMap.
//!
//! For AWS, openshift-install looks availability zones up through the EC2 API;
//! okd-install works offline, so zones come from the pools'
//! `platform.aws.zones`, else `<region>a`, `<region>b`, `<region>c`
//! (a deliberate difference, see docs/differences.md). UPI users delete these
//! manifests anyway (examples/README: aws-upi).

use serde_json::{Value, json};

use crate::ctx::GenCtx;
use crate::dir::{AssetDir, AssetFile, base64_std};
use crate::error::AssetError;
use crate::filelist::{FileListAsset, MANIFEST_EXTS, OPENSHIFT_INSTALL_MANIFEST, yaml};
use crate::installconfig::{ClusterId, InstallConfigAsset, ReleaseImage};
use crate::pointer::{MasterIgnition, WorkerIgnition};
use crate::store::{Asset, Dep, Parents, dep};

/// `openshift/openshift-install-manifests.yaml`: ConfigMap
/// `openshift-config/openshift-install-manifests` with the installer version and invoker.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct OpenshiftInstallManifests(pub FileListAsset);

impl Asset for OpenshiftInstallManifests {
    const NAME: &'static str = "OpenShift Install (Manifests)";
    const STATE_KEY: &'static str = "*openshiftinstall.Config";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }

    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        let body = yaml(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"creationTimestamp": null, "name": "openshift-install-manifests", "namespace": "openshift-config"},
            "data": {"invoker": ctx.invoker, "version": ctx.installer_version}}));
        Ok(OpenshiftInstallManifests(FileListAsset {
            file_list: vec![AssetFile::new(
                format!("openshift/{OPENSHIFT_INSTALL_MANIFEST}"),
                body,
            )],
        }))
    }

    fn files(&self) -> Vec<AssetFile> {
        self.0.file_list.clone()
    }

    fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
        let rel = format!("openshift/{OPENSHIFT_INSTALL_MANIFEST}");
        Ok(dir.read(&rel)?.map(|d| {
            OpenshiftInstallManifests(FileListAsset {
                file_list: vec![AssetFile::new(rel, d)],
            })
        }))
    }
}

fn user_data_secret(role: &str, pointer: &[u8]) -> AssetFile {
    AssetFile::new(
        format!("openshift/99_openshift-cluster-api_{role}-user-data-secret.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {role}-user-data\n  namespace: openshift-machine-api\ntype: Opaque\ndata:\n  disableTemplating: \"dHJ1ZQo=\"\n  userData: {}\n",
            base64_std(pointer)
        ),
    )
}

fn machine_config(
    ctx: &GenCtx,
    role: &str,
    suffix: &str,
    config: Value,
    fips: bool,
    kargs: Value,
) -> AssetFile {
    let mut spec = json!({
        "config": config, "extensions": null, "fips": fips, "kernelArguments": kargs, "kernelType": "", "osImageURL": "",
    });
    if ctx.target.at_least(14) {
        spec["baseOSExtensionsContainerImage"] = json!("");
    }
    let name = format!("99-{role}-{suffix}");
    AssetFile::new(
        format!("openshift/99_openshift-machineconfig_{name}.yaml"),
        yaml(
            &json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"creationTimestamp": null, "labels": {"machineconfiguration.openshift.io/role": role}, "name": name},
            "spec": spec}),
        ),
    )
}

/// The installer MachineConfigs of one pool: SSH key, FIPS, hyperthreading.
fn pool_machine_configs(
    ctx: &GenCtx,
    ic: &okd_installconfig::InstallConfig,
    role: &str,
    hyperthreading: Option<&str>,
) -> Vec<AssetFile> {
    let ign = |extra: Value| {
        let mut c = json!({"ignition": {"version": ctx.ignition_spec.as_str()}});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                c[k] = v;
            }
        }
        c
    };
    let mut out = Vec::new();
    if let Some(key) = ic.ssh_key.as_deref().filter(|k| !k.trim().is_empty()) {
        out.push(machine_config(
            ctx,
            role,
            "ssh",
            ign(json!({"passwd": {"users": [{"name": "core", "sshAuthorizedKeys": [key]}]}})),
            false,
            Value::Null,
        ));
    }
    if ic.fips {
        out.push(machine_config(
            ctx,
            role,
            "fips",
            ign(json!({})),
            true,
            Value::Null,
        ));
    }
    if hyperthreading == Some("Disabled") {
        out.push(machine_config(
            ctx,
            role,
            "disable-hyperthreading",
            ign(json!({})),
            false,
            json!(["nosmt", "smt-enabled=off"]),
        ));
    }
    out
}

fn aws_zones(
    ic: &okd_installconfig::InstallConfig,
    pool: Option<&okd_installconfig::MachinePool>,
) -> Vec<String> {
    let region = ic
        .platform
        .aws
        .as_ref()
        .map(|a| a.region.clone())
        .unwrap_or_default();
    let from_pool = pool
        .and_then(|p| p.platform.get("aws"))
        .and_then(|a| a.get("zones"))
        .and_then(Value::as_array)
        .map(|z| {
            z.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect::<Vec<_>>()
        });
    from_pool.filter(|z| !z.is_empty()).unwrap_or_else(|| {
        ["a", "b", "c"]
            .iter()
            .map(|s| format!("{region}{s}"))
            .collect()
    })
}

fn aws_provider_spec(
    ic: &okd_installconfig::InstallConfig,
    infra: &str,
    role: &str,
    zone: &str,
    pool: Option<&okd_installconfig::MachinePool>,
) -> Value {
    let aws = ic.platform.aws.as_ref();
    let region = aws.map(|a| a.region.clone()).unwrap_or_default();
    let instance = pool
        .and_then(|p| p.platform.get("aws"))
        .and_then(|a| a.get("type"))
        .and_then(Value::as_str)
        .unwrap_or(if role == "master" {
            "m6i.xlarge"
        } else {
            "m6i.large"
        })
        .to_string();
    let ami = aws.and_then(|a| a.ami_id.clone()).unwrap_or_default();
    let mut tags =
        vec![json!({"name": format!("kubernetes.io/cluster/{infra}"), "value": "owned"})];
    if let Some(user) = aws.map(|a| &a.user_tags) {
        for (k, v) in user {
            tags.push(json!({"name": k, "value": v}));
        }
    }
    json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
        "ami": {"id": ami},
        "blockDevices": [{"ebs": {"encrypted": true, "iops": 0, "kmsKey": {"arn": ""}, "volumeSize": 120, "volumeType": "gp3"}}],
        "credentialsSecret": {"name": "aws-cloud-credentials"},
        "deviceIndex": 0,
        "iamInstanceProfile": {"id": format!("{infra}-{role}-profile")},
        "instanceType": instance,
        "metadata": {"creationTimestamp": null},
        "metadataServiceOptions": {},
        "placement": {"availabilityZone": zone, "region": region},
        "securityGroups": [{"filters": [{"name": "tag:Name", "values": [format!("{infra}-{role}-sg")]}]}],
        "subnet": {"filters": [{"name": "tag:Name", "values": [format!("{infra}-private-{zone}")]}]},
        "tags": tags,
        "userDataSecret": {"name": format!("{role}-user-data")},
    })
}

fn machine_labels(infra: &str, role: &str) -> Value {
    json!({"machine.openshift.io/cluster-api-cluster": infra, "machine.openshift.io/cluster-api-machine-role": role, "machine.openshift.io/cluster-api-machine-type": role})
}

/// Zero-pads `i` to the width of `count` (openshift-install's machine file numbering).
fn padded(i: usize, count: usize) -> String {
    let w = count.saturating_sub(1).to_string().len();
    format!("{i:0w$}")
}

/// Master Machines: `openshift/99_openshift-cluster-api_master-user-data-secret.yaml`,
/// the master MachineConfigs and, on AWS with [`GenCtx::aws_machine_api`],
/// the master Machines and the ControlPlaneMachineSet. State: `{"FileList": [...]}` (a simplification of
/// openshift-install's struct, see docs/differences.md).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct MasterMachines(pub FileListAsset);

impl Asset for MasterMachines {
    const NAME: &'static str = "Master Machines";
    const STATE_KEY: &'static str = "*machines.Master";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        vec![
            dep::<ClusterId>(),
            dep::<InstallConfigAsset>(),
            dep::<ReleaseImage>(),
            dep::<MasterIgnition>(),
        ]
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        let ic = &p.get::<InstallConfigAsset>().config;
        let infra = &p.get::<ClusterId>().infra_id;
        let pool = ic.control_plane.as_ref();
        let mut files = vec![user_data_secret(
            "master",
            &p.get::<MasterIgnition>().file.data,
        )];
        files.extend(pool_machine_configs(
            ctx,
            ic,
            "master",
            pool.and_then(|p| p.hyperthreading.as_deref()),
        ));
        if ic.platform_name() == "aws" && !ctx.aws_machine_api {
            tracing::info!(
                "Leaving out the Machine, MachineSet and ControlPlaneMachineSet manifests of platform aws, as the AWS UPI procedure removes them: the stacks of `okd-install create aws-stacks` make the machines (--with-machine-api keeps them)"
            );
        }
        if ic.platform_name() == "aws" && ctx.aws_machine_api {
            let n = ic.control_plane_replicas().max(0) as usize;
            let zones = aws_zones(ic, pool);
            for i in 0..n {
                let zone = &zones[i % zones.len()];
                let name = format!("{infra}-master-{i}");
                files.push(AssetFile::new(
                    format!("openshift/99_openshift-cluster-api_master-machines-{}.yaml", padded(i, n)),
                    yaml(&json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
                        "metadata": {"creationTimestamp": null, "labels": machine_labels(infra, "master"), "name": name, "namespace": "openshift-machine-api"},
                        "spec": {"lifecycleHooks": {}, "metadata": {}, "providerSpec": {"value": aws_provider_spec(ic, infra, "master", zone, pool)}},
                        "status": {}})),
                ));
            }
            if n > 1 && ctx.target.at_least(12) {
                let mut spec = aws_provider_spec(ic, infra, "master", &zones[0], pool);
                spec["placement"]["availabilityZone"] = json!("");
                spec["subnet"] = json!({});
                files.push(AssetFile::new(
                    "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml",
                    yaml(&json!({"apiVersion": "machine.openshift.io/v1", "kind": "ControlPlaneMachineSet",
                        "metadata": {"creationTimestamp": null, "labels": {"machine.openshift.io/cluster-api-cluster": infra}, "name": "cluster", "namespace": "openshift-machine-api"},
                        "spec": {"replicas": n, "selector": {"matchLabels": machine_labels(infra, "master")}, "state": "Active",
                            "strategy": {"type": "RollingUpdate"},
                            "template": {"machineType": "machines_v1beta1_machine_openshift_io", "machines_v1beta1_machine_openshift_io": {
                                "failureDomains": {"aws": zones.iter().map(|z| json!({"placement": {"availabilityZone": z}, "subnet": {"filters": [{"name": "tag:Name", "values": [format!("{infra}-private-{z}")]}], "type": "Filters"}})).collect::<Vec<_>>(), "platform": "AWS"},
                                "metadata": {"labels": machine_labels(infra, "master")},
                                "spec": {"lifecycleHooks": {}, "metadata": {}, "providerSpec": {"value": spec}}}}},
                        "status": {}})),
                ));
            }
        }
        Ok(MasterMachines(FileListAsset { file_list: files }))
    }

    fn files(&self) -> Vec<AssetFile> {
        self.0.file_list.clone()
    }

    fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
        load_pool(dir, "master")
    }
}

fn pool_file(role: &str, base: &str) -> bool {
    base == format!("99_openshift-cluster-api_{role}-user-data-secret.yaml")
        || base.starts_with(&format!("99_openshift-machineconfig_99-{role}-"))
        || base.starts_with(&format!("99_openshift-cluster-api_{role}-machines-"))
        || base.starts_with(&format!("99_openshift-cluster-api_{role}-machineset-"))
        || (role == "master"
            && base == "99_openshift-machine-api_master-control-plane-machine-set.yaml")
}

fn load_pool<T: From<FileListAsset>>(dir: &AssetDir, role: &str) -> Result<Option<T>, AssetError> {
    let marker = format!("openshift/99_openshift-cluster-api_{role}-user-data-secret.yaml");
    if dir.read(&marker)?.is_none() {
        return Ok(None);
    }
    let files: Vec<AssetFile> = dir
        .read_dir_files("openshift", MANIFEST_EXTS)?
        .into_iter()
        .filter(|f| pool_file(role, f.filename.rsplit('/').next().unwrap_or("")))
        .collect();
    Ok(Some(T::from(FileListAsset { file_list: files })))
}

impl From<FileListAsset> for MasterMachines {
    fn from(f: FileListAsset) -> Self {
        MasterMachines(f)
    }
}

impl From<FileListAsset> for WorkerMachines {
    fn from(f: FileListAsset) -> Self {
        WorkerMachines(f)
    }
}

/// Worker Machines: the worker MachineConfigs, the worker user-data secret and,
/// on AWS with [`GenCtx::aws_machine_api`], one MachineSet per availability zone.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct WorkerMachines(pub FileListAsset);

impl Asset for WorkerMachines {
    const NAME: &'static str = "Worker Machines";
    const STATE_KEY: &'static str = "*machines.Worker";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        vec![
            dep::<ClusterId>(),
            dep::<InstallConfigAsset>(),
            dep::<ReleaseImage>(),
            dep::<WorkerIgnition>(),
        ]
    }

    fn generate(ctx: &GenCtx, p: &Parents<'_>) -> Result<Self, AssetError> {
        let ic = &p.get::<InstallConfigAsset>().config;
        let infra = &p.get::<ClusterId>().infra_id;
        let mut files = Vec::new();
        for pool in &ic.compute {
            files.extend(pool_machine_configs(
                ctx,
                ic,
                "worker",
                pool.hyperthreading.as_deref(),
            ));
        }
        files.push(user_data_secret(
            "worker",
            &p.get::<WorkerIgnition>().file.data,
        ));
        if ic.platform_name() == "aws" && ctx.aws_machine_api {
            for pool in ic.compute.iter().filter(|p| p.name == "worker") {
                let zones = aws_zones(ic, Some(pool));
                let total = pool.replicas.unwrap_or(0).max(0) as usize;
                for (i, zone) in zones.iter().enumerate() {
                    let replicas = total / zones.len() + usize::from(i < total % zones.len());
                    let name = format!("{infra}-worker-{zone}");
                    let mut sel = machine_labels(infra, "worker");
                    sel["machine.openshift.io/cluster-api-machineset"] = json!(name);
                    files.push(AssetFile::new(
                        format!("openshift/99_openshift-cluster-api_worker-machineset-{}.yaml", padded(i, zones.len())),
                        yaml(&json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                            "metadata": {"creationTimestamp": null, "labels": {"machine.openshift.io/cluster-api-cluster": infra}, "name": name, "namespace": "openshift-machine-api"},
                            "spec": {"replicas": replicas, "selector": {"matchLabels": {"machine.openshift.io/cluster-api-cluster": infra, "machine.openshift.io/cluster-api-machineset": name}},
                                "template": {"metadata": {"labels": sel}, "spec": {"lifecycleHooks": {}, "metadata": {}, "providerSpec": {"value": aws_provider_spec(ic, infra, "worker", zone, Some(pool))}}}},
                            "status": {"replicas": 0}})),
                    ));
                }
            }
        }
        Ok(WorkerMachines(FileListAsset { file_list: files }))
    }

    fn files(&self) -> Vec<AssetFile> {
        self.0.file_list.clone()
    }

    fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
        load_pool(dir, "worker")
    }
}
