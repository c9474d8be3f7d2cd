//! `metadata.name` and `baseDomain` (openshift/installer
//! pkg/types/validation/installconfig.go, pkg/validate/validate.go; k8s.io/apimachinery
//! pkg/util/validation IsDNS1123Subdomain).

use super::*;

pub(super) fn is_label(l: &str) -> bool {
    let b = l.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase() | b[0].is_ascii_digit()
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// k8s IsDNS1123Subdomain error texts.
pub(super) fn dns1123_subdomain(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    if v.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    if !v.split('.').all(is_label) {
        out.push(RFC1123_MSG.to_string());
    }
    out
}

/// The `metadata.name` detail text for `platform`, or `None` when valid
/// (`pkg/types/validation/installconfig.go`).
pub(crate) fn cluster_name_error(name: &str, plat: Option<P>) -> Option<String> {
    let err = if name.len() > 54 {
        vec!["must be no more than 54 characters".to_string()]
    } else {
        dns1123_subdomain(name)
    };
    if !err.is_empty() {
        Some(err.join("\n"))
    } else if matches!(plat, Some(P::Gcp | P::Azure))
        && !name.starts_with(|ch: char| ch.is_ascii_lowercase())
    {
        Some("cluster name must begin with a lower-case letter".to_string())
    } else if matches!(
        plat,
        Some(P::VSphere | P::Baremetal | P::OpenStack | P::Nutanix)
    ) && name.contains('.')
    {
        Some("cluster name must not contain '.'".to_string())
    } else {
        None
    }
}

/// The `baseDomain` detail text (one trailing dot allowed), or `None` when valid.
pub(crate) fn base_domain_error(base_domain: &str) -> Option<String> {
    let bd = base_domain.strip_suffix('.').unwrap_or(base_domain);
    let err = dns1123_subdomain(bd);
    (!err.is_empty()).then(|| err.join("\n"))
}

pub(super) fn names(c: &InstallConfig, e: &mut Errs) {
    let name = &c.metadata.name;
    let name_err = cluster_name_error(name, c.platform_kind());
    if let Some(d) = &name_err {
        e.invalid("metadata.name", name, d);
    }
    if let Some(d) = base_domain_error(&c.base_domain) {
        e.invalid("baseDomain", &c.base_domain, d);
    } else if name_err.is_none() {
        let bd = c.base_domain.strip_suffix('.').unwrap_or(&c.base_domain);
        let err = dns1123_subdomain(&format!("{name}.{bd}"));
        if !err.is_empty() {
            e.invalid("baseDomain", &c.base_domain, err.join("\n"));
        }
    }
}
