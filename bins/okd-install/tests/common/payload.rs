//! The test release payload of upstream components (issue #20 item 5): OCI
//! images built here from the kit's programs (`tests/kube`: etcd, and
//! kube-apiserver, kube-controller-manager and kube-scheduler as the
//! `hyperkube` image) and a release image whose
//! `release-manifests/image-references` names them by digest in
//! `quay.io/openshift/okd-content`, written as the OCI image layout that
//! `okd-install mirror to-disk` makes (with its `okd-release.json`), so
//! that `okd-install mirror from-disk` pushes it into the mirror registry
//! as a disconnected user does. Nothing here is ever pulled from
//! quay.io: the names are the sources the mirrors stand in for.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The release's source repository (the example's imageContentSources).
pub const RELEASE_SOURCE: &str = "quay.io/openshift/okd";
/// The components' source repository.
pub const CONTENT_SOURCE: &str = "quay.io/openshift/okd-content";

/// A payload written as an OCI layout.
pub struct Payload {
    /// The layout directory (`mirror from-disk --archive`).
    pub layout: PathBuf,
    /// image-references' `metadata.name`.
    pub version: String,
    /// The release image's manifest digest.
    pub release_digest: String,
    /// Component name → manifest digest.
    pub components: Vec<(String, String)>,
}

impl Payload {
    /// The release by digest in its source repository.
    pub fn release_image(&self) -> String {
        format!("{RELEASE_SOURCE}@{}", self.release_digest)
    }

    /// A component's pull spec by digest in its source repository.
    pub fn image(&self, name: &str) -> String {
        let d = &self.components.iter().find(|(n, _)| n == name).unwrap().1;
        format!("{CONTENT_SOURCE}@{d}")
    }
}

fn sha256(b: &[u8]) -> String {
    format!(
        "sha256:{}",
        aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, b)
            .as_ref()
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<String>()
    )
}

/// Writes a blob into the layout; returns its descriptor fields.
fn put(layout: &Path, data: &[u8]) -> (String, usize) {
    let d = sha256(data);
    let p = layout
        .join("blobs/sha256")
        .join(d.trim_start_matches("sha256:"));
    std::fs::write(p, data).unwrap();
    (d, data.len())
}

/// One layer (uncompressed tar) of `files` (path in the image, bytes, mode).
fn layer(files: &[(&str, Vec<u8>, u32)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (dst, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(0);
        b.append_data(&mut h, dst.trim_start_matches('/'), data.as_slice())
            .unwrap();
    }
    b.into_inner().unwrap()
}

/// Writes one single-layer image for `arch` into the layout, tagged `tag`
/// in index.json; returns its manifest digest.
pub fn image(
    layout: &Path,
    tag: &str,
    arch: &str,
    files: &[(&str, Vec<u8>, u32)],
    entrypoint: &[&str],
    labels: serde_json::Value,
) -> String {
    std::fs::create_dir_all(layout.join("blobs/sha256")).unwrap();
    let l = layer(files);
    let (ld, ls) = put(layout, &l);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": arch,
        "os": "linux",
        "config": { "Entrypoint": entrypoint, "Labels": labels },
        "rootfs": { "type": "layers", "diff_ids": [ld] },
    }))
    .unwrap();
    let (cd, cs) = put(layout, &config);
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ld, "size": ls}],
    }))
    .unwrap();
    let (md, ms) = put(layout, &manifest);
    let index_path = layout.join("index.json");
    let mut index: serde_json::Value = std::fs::read(&index_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| serde_json::json!({"schemaVersion": 2, "manifests": []}));
    index["manifests"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms,
            "annotations": {"org.opencontainers.image.ref.name": tag}}));
    std::fs::write(&index_path, serde_json::to_vec(&index).unwrap()).unwrap();
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    md
}

fn bin(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Builds the payload from the kit in `kit` (its `bin/` directory) into
/// `<scratch>/payload`, the release image for `release_arch`.
pub fn build(scratch: &Path, kit: &Path, version: &str, release_arch: &str) -> Payload {
    build_with(
        scratch,
        version,
        release_arch,
        &[("/usr/bin/etcd", bin(&kit.join("etcd")), 0o755)],
        &[
            (
                "/usr/bin/kube-apiserver",
                bin(&kit.join("kube-apiserver")),
                0o755,
            ),
            (
                "/usr/bin/kube-controller-manager",
                bin(&kit.join("kube-controller-manager")),
                0o755,
            ),
            (
                "/usr/bin/kube-scheduler",
                bin(&kit.join("kube-scheduler")),
                0o755,
            ),
        ],
    )
}

/// A payload whose `etcd` and `hyperkube` images hold `etcd_files` and
/// `hyperkube_files`, in `<scratch>/payload-<version>`.
pub fn build_with(
    scratch: &Path,
    version: &str,
    release_arch: &str,
    etcd_files: &[(&str, Vec<u8>, u32)],
    hyperkube_files: &[(&str, Vec<u8>, u32)],
) -> Payload {
    let layout = scratch.join(format!("payload-{version}"));
    let etcd = image(
        &layout,
        "etcd",
        "amd64",
        etcd_files,
        &["/usr/bin/etcd"],
        serde_json::json!({}),
    );
    let hyperkube = image(
        &layout,
        "hyperkube",
        "amd64",
        hyperkube_files,
        &["/usr/bin/kube-apiserver"],
        serde_json::json!({}),
    );
    let components = vec![
        ("etcd".to_string(), etcd),
        ("hyperkube".to_string(), hyperkube),
    ];
    release(
        &layout,
        version,
        release_arch,
        components,
        &[],
        &["/bin/false"],
    )
}

/// Writes the release image into `layout` (which holds the `components`'
/// images: name, manifest digest): `release-manifests/image-references`
/// naming them in [`CONTENT_SOURCE`], plus `files`, running `entrypoint`;
/// and the layout's `okd-release.json`.
pub fn release(
    layout: &Path,
    version: &str,
    release_arch: &str,
    components: Vec<(String, String)>,
    files: &[(&str, Vec<u8>, u32)],
    entrypoint: &[&str],
) -> Payload {
    let tags: Vec<serde_json::Value> = components
        .iter()
        .map(|(n, d)| {
            serde_json::json!({"name": n, "from": {"kind": "DockerImage", "name": format!("{CONTENT_SOURCE}@{d}")}})
        })
        .collect();
    let irefs = serde_json::json!({
        "kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": version}, "spec": {"tags": tags}
    });
    let mut all = vec![(
        "/release-manifests/image-references",
        serde_json::to_vec_pretty(&irefs).unwrap(),
        0o644,
    )];
    all.extend(files.iter().cloned());
    let release_digest = image(
        layout,
        "release",
        release_arch,
        &all,
        entrypoint,
        serde_json::json!({"io.openshift.release": version}),
    );
    let release = okd_mirror::release::Release {
        version: version.into(),
        source: RELEASE_SOURCE.into(),
        digest: release_digest.clone(),
        components: components
            .iter()
            .map(|(n, d)| okd_mirror::release::Component {
                name: n.clone(),
                source: CONTENT_SOURCE.into(),
                digest: d.clone(),
            })
            .collect(),
    };
    okd_mirror::release::write_archive_metadata(layout, &[release]).unwrap();
    Payload {
        layout: layout.to_path_buf(),
        version: version.into(),
        release_digest,
        components,
    }
}

/// Makes `assets/install-config.yaml` use the mirror as a disconnected
/// user does: the imageDigestSources block `mirror from-disk --output-dir`
/// wrote (`install-config-mirror.yaml` in `out_dir`), each source marked
/// `sourcePolicy: NeverContactSource` so that no pull ever leaves for the
/// source registry, in place of the example's imageContentSources.
pub fn use_mirror(assets: &Path, out_dir: &Path) {
    let block = std::fs::read_to_string(out_dir.join("install-config-mirror.yaml")).unwrap();
    let block: serde_yaml_ng::Value = serde_yaml_ng::from_str(&block).unwrap();
    let mut sources = block["imageDigestSources"]
        .as_sequence()
        .unwrap_or_else(|| panic!("no imageDigestSources in {block:?}"))
        .clone();
    assert_eq!(sources.len(), 2, "{block:?}");
    for s in &mut sources {
        s["sourcePolicy"] = "NeverContactSource".into();
    }
    let ic_path = assets.join("install-config.yaml");
    let mut ic: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&ic_path).unwrap()).unwrap();
    let m = ic.as_mapping_mut().unwrap();
    m.remove("imageContentSources");
    m.insert(
        "imageDigestSources".into(),
        serde_yaml_ng::Value::Sequence(sources),
    );
    std::fs::write(&ic_path, serde_yaml_ng::to_string(&ic).unwrap()).unwrap();
}

/// The arguments of `mirror from-disk` pushing `p` to the mirror at
/// `mirror` (`host:port`), writing the install-config block to `out_dir`.
pub fn from_disk_args(p: &Payload, mirror: &str, out_dir: &Path) -> Vec<String> {
    [
        "mirror",
        "from-disk",
        "--archive",
        p.layout.to_str().unwrap(),
        "--to",
        &format!("{mirror}/openshift/okd-content"),
        "--to-release-image",
        &format!("{mirror}/openshift/okd:{}", p.version),
        "--sources-field",
        "imageDigestSources",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}
