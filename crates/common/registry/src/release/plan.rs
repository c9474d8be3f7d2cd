//! The mirror plan of a release: where each image goes ([`Target`],
//! [`jobs`], [`component_tag`]) and what tells a cluster to pull from there
//! (the install-config block, ImageDigestMirrorSet,
//! ImageContentSourcePolicy, the `--mapping` file of `oc adm release
//! mirror`).

use std::collections::BTreeMap;

use super::{Release, format_err};
use crate::client::OciError;
use crate::copy::Job;
use crate::oci::{Reference, Repo};

/// Where a release goes: the components' repository and the release image's
/// reference (default: the same repository, tagged with the version).
#[derive(Debug, Clone)]
pub struct Target {
    /// Repository for the components (`--to`).
    pub to: Repo,
    /// Repository and tag for the release image (`--to-release-image`).
    pub release: Option<Reference>,
}

/// Tag of a component in the mirror: `<version>-<name>` (as oc), cut to 128
/// characters and with characters a tag cannot hold replaced by `-`.
pub fn component_tag(version: &str, name: &str) -> String {
    let t: String = format!("{version}-{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(128)
        .collect();
    t
}

/// The copy jobs for `release` into `target`: the release first, then the
/// components; a component image shared by two tags is copied once and
/// tagged for the first. Errors: a release field outside its grammar
/// ([`Release::validate`]).
pub fn jobs(release: &Release, target: &Target) -> Result<Vec<Job>, OciError> {
    release
        .validate("")
        .map_err(|e| format_err(&format!("release {}", release.version.escape_debug()), e))?;
    let src = Repo::parse(&release.source).map_err(|e| format_err("release source", e.0))?;
    let (rel_repo, rel_tag) = match &target.release {
        Some(r) => (
            r.repo.clone(),
            r.tag.clone().unwrap_or_else(|| release.version.clone()),
        ),
        None => (target.to.clone(), release.version.clone()),
    };
    let mut out = vec![Job {
        name: format!("release {}", release.version),
        src,
        reference: release.digest.clone(),
        dst: rel_repo,
        tag: Some(rel_tag),
        annotations: vec![("io.openshift.release".into(), release.version.clone())],
    }];
    for c in &release.components {
        out.push(Job {
            name: c.name.clone(),
            src: Repo::parse(&c.source).map_err(|e| format_err(&c.name, e.0))?,
            reference: c.digest.clone(),
            dst: target.to.clone(),
            tag: Some(component_tag(&release.version, &c.name)),
            annotations: vec![("io.okd-install.component".into(), c.name.clone())],
        });
    }
    Ok(out)
}

/// Source repository → mirror repositories, for the install-config block
/// and the ImageDigestMirrorSet: the release's repository goes to the
/// release target, every components' repository to `--to`.
pub fn mirror_map(release: &Release, target: &Target) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let rel = target
        .release
        .as_ref()
        .map_or_else(|| target.to.to_string(), |r| r.repo.to_string());
    m.entry(release.source.clone()).or_default().push(rel);
    for c in &release.components {
        let e = m.entry(c.source.clone()).or_default();
        let to = target.to.to_string();
        if !e.contains(&to) {
            e.push(to);
        }
    }
    m
}

/// Which install-config field the printed block uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourcesField {
    /// `imageContentSources` (what 4.13 and older guides paste).
    ImageContentSources,
    /// `imageDigestSources` (4.14 and newer; the other one is deprecated there).
    ImageDigestSources,
}

impl SourcesField {
    /// The field name.
    pub fn name(self) -> &'static str {
        match self {
            SourcesField::ImageContentSources => "imageContentSources",
            SourcesField::ImageDigestSources => "imageDigestSources",
        }
    }

    /// `imageDigestSources` from release 4.14 on, else `imageContentSources`.
    pub fn for_version(version: &str) -> SourcesField {
        let mut it = version.split(['.', '-']).map(|p| p.parse::<u32>().ok());
        match (it.next().flatten(), it.next().flatten()) {
            (Some(4), Some(minor)) if minor >= 14 => SourcesField::ImageDigestSources,
            (Some(major), _) if major > 4 => SourcesField::ImageDigestSources,
            _ => SourcesField::ImageContentSources,
        }
    }
}

fn yaml_list(map: &BTreeMap<String, Vec<String>>, indent: &str) -> String {
    let mut s = String::new();
    for (source, mirrors) in map {
        s.push_str(&format!("{indent}- mirrors:\n"));
        for m in mirrors {
            s.push_str(&format!("{indent}  - {m}\n"));
        }
        s.push_str(&format!("{indent}  source: {source}\n"));
    }
    s
}

/// The install-config block, e.g.
/// `imageContentSources:\n- mirrors:\n  - registry.okd.example:5000/openshift/okd\n  source: quay.io/openshift/okd\n`.
pub fn install_config_block(map: &BTreeMap<String, Vec<String>>, field: SourcesField) -> String {
    format!("{}:\n{}", field.name(), yaml_list(map, ""))
}

/// An ImageDigestMirrorSet (config.openshift.io/v1) for a running cluster.
pub fn image_digest_mirror_set(map: &BTreeMap<String, Vec<String>>, name: &str) -> String {
    format!(
        "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  name: {name}\nspec:\n  imageDigestMirrors:\n{}",
        yaml_list(map, "  ")
    )
}

/// An ImageContentSourcePolicy (operator.openshift.io/v1alpha1), for clusters before 4.13.
pub fn image_content_source_policy(map: &BTreeMap<String, Vec<String>>, name: &str) -> String {
    format!(
        "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nmetadata:\n  name: {name}\nspec:\n  repositoryDigestMirrors:\n{}",
        yaml_list(map, "  ")
    )
}

/// `oc image mirror` style mapping lines: `source@digest=target:tag`.
pub fn mapping(release: &Release, jobs: &[Job]) -> String {
    let mut s = String::new();
    for j in jobs {
        s.push_str(&format!(
            "{}@{}={}:{}\n",
            j.src,
            j.reference,
            j.dst,
            j.tag.as_deref().unwrap_or(&release.version)
        ));
    }
    s
}
