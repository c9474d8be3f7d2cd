//! The `mirror.*` checks of a disconnected install: the release image by
//! digest and covered by a mirror source (`imageContentSources`,
//! `imageDigestSources`), a login in the pull secret for each mirror
//! registry, and TLS to each of them verified as the nodes verify it: the
//! system roots plus install-config's `additionalTrustBundle` (which
//! bootstrap.ign writes to the nodes' trust store). A missing or wrong CA
//! shows only when the bootstrap's release pull fails with an x509 error.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use okd_hosts::Inventory;
use okd_installconfig::InstallConfig;
use okd_probe::Verify;
use okd_secret::ExposeSecret as _;
use rustls::pki_types::CertificateDer;

use crate::Check;

/// Where Debian, Fedora/RHEL and SUSE keep the system roots.
const SYSTEM_ROOTS: [&str; 3] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
];

/// `registry:5000/ns/repo` → `registry:5000`.
fn registry_of(repo: &str) -> &str {
    repo.split('/').next().unwrap_or(repo)
}

/// `quay.io/openshift/okd:4.5` / `…@sha256:…` → `quay.io/openshift/okd`.
fn repo_of(image: &str) -> &str {
    let no_digest = image.split('@').next().unwrap_or(image);
    match no_digest.rfind(':') {
        Some(i) if !no_digest[i..].contains('/') => &no_digest[..i],
        _ => no_digest,
    }
}

/// Whether `repo` is `source` or below it.
fn covered(repo: &str, source: &str) -> bool {
    repo == source || repo.starts_with(&format!("{source}/"))
}

/// The checks; the TLS probes only with `network`.
pub(crate) async fn check(
    config: &InstallConfig,
    release: Option<&str>,
    inv: &Inventory,
    network: bool,
    timeout: Duration,
) -> Vec<Check> {
    let sources: Vec<_> = config
        .image_content_sources
        .iter()
        .chain(&config.image_digest_sources)
        .collect();
    if sources.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    match release {
        None => out.push(Check::skip(
            "mirror.release",
            "no release image recorded yet (`okd-install create manifests` records it)",
        )),
        Some(image) => {
            let repo = repo_of(image);
            match sources.iter().find(|s| covered(repo, &s.source)) {
                Some(s) => out.push(Check::pass(
                    "mirror.release.covered",
                    format!(
                        "{repo} is mirrored to {} (source {})",
                        s.mirrors.join(", "),
                        s.source
                    ),
                )),
                None => out.push(Check::fail(
                    "mirror.release.covered",
                    format!(
                        "the release image's repository {repo} is no source of imageContentSources or imageDigestSources: the bootstrap pulls it from {} itself",
                        registry_of(repo)
                    ),
                    format!(
                        "add a source {repo} with the mirror the release was mirrored to (`okd-install mirror release` prints it)"
                    ),
                )),
            }
            if image.contains("@sha256:") {
                out.push(Check::pass(
                    "mirror.release.digest",
                    "the release image is named by digest",
                ));
            } else {
                out.push(Check::warn(
                    "mirror.release.digest",
                    format!(
                        "the release image {image} is named by tag: mirrors apply to digests only (registries.conf mirror-by-digest-only), so the bootstrap's release pull goes to {}",
                        registry_of(repo)
                    ),
                    "name the release by digest (`--release-image <repo>@sha256:…`, the digest `okd-install mirror release` printed)",
                ));
            }
        }
    }
    // A login for each mirror registry.
    let auths: Vec<String> =
        serde_json::from_str::<serde_json::Value>(config.pull_secret.expose_secret())
            .ok()
            .and_then(|v| {
                v.get("auths")
                    .and_then(|a| a.as_object())
                    .map(|a| a.keys().cloned().collect())
            })
            .unwrap_or_default();
    let registries: BTreeSet<&str> = sources
        .iter()
        .flat_map(|s| s.mirrors.iter())
        .map(|m| registry_of(m))
        .collect();
    for reg in &registries {
        let id = format!("mirror.{reg}.login");
        let mirrors_here = sources
            .iter()
            .flat_map(|s| s.mirrors.iter())
            .filter(|m| registry_of(m) == *reg);
        let has = mirrors_here
            .clone()
            .all(|m| auths.iter().any(|k| covered(m, k) || k == reg));
        if has {
            out.push(Check::pass(
                id,
                format!("the pull secret has a login for {reg}"),
            ));
        } else {
            out.push(Check::fail(
                id,
                format!("the pull secret has no login for {reg} (its registries: {})", auths.join(", ")),
                format!("add {reg} to pullSecret's auths (`podman login {reg}` writes one to ${{XDG_RUNTIME_DIR}}/containers/auth.json)"),
            ));
        }
    }
    if network {
        for reg in registries {
            out.push(tls(reg, config, inv, timeout).await);
        }
    }
    out
}

/// The roots the nodes trust: the system's and `additionalTrustBundle`;
/// with how many came from each.
fn roots(config: &InstallConfig) -> (rustls::RootCertStore, usize, usize) {
    let mut store = rustls::RootCertStore::empty();
    let add = |store: &mut rustls::RootCertStore, pem: &[u8]| {
        let ders: Vec<CertificateDer<'static>> =
            rustls_pki_types::pem::PemObject::pem_slice_iter(pem)
                .filter_map(Result::ok)
                .collect();
        store.add_parsable_certificates(ders).0
    };
    let system = SYSTEM_ROOTS
        .iter()
        .find_map(|p| std::fs::read(p).ok())
        .map_or(0, |pem| add(&mut store, &pem));
    let bundle = config
        .additional_trust_bundle
        .as_deref()
        .map_or(0, |pem| add(&mut store, pem.as_bytes()));
    (store, system, bundle)
}

/// The registry's address: an IP literal, or its name asked of the nodes'
/// first nameserver (never this machine's resolver: the bastion may not
/// resolve the install's names, and the nodes' view is what counts).
async fn resolve(host: &str, inv: &Inventory, timeout: Duration) -> Result<IpAddr, String> {
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(ip);
    }
    let ns = inv
        .nodes
        .iter()
        .find_map(|n| n.nameservers.first().copied())
        .unwrap_or(inv.listen);
    let ns = if ns == inv.listen {
        SocketAddr::new(ns, inv.ports.dns)
    } else {
        SocketAddr::new(ns, 53)
    };
    let (_, answers) = crate::dns::ask(ns, host, hickory_proto::rr::RecordType::A, timeout).await?;
    answers
        .iter()
        .find_map(|a| a.parse().ok())
        .ok_or_else(|| format!("{ns} has no A record for {host}"))
}

/// `mirror.<registry>.tls`: a TLS handshake with the registry verified
/// with [`roots`] for its name.
async fn tls(reg: &str, config: &InstallConfig, inv: &Inventory, timeout: Duration) -> Check {
    let id = format!("mirror.{reg}.tls");
    let (host, port) = match reg.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
            (h.to_string(), p.parse::<u16>().unwrap_or(443))
        }
        _ => (reg.to_string(), 443),
    };
    let ip = match resolve(&host, inv, timeout).await {
        Ok(ip) => ip,
        Err(e) => {
            return Check::fail(
                id,
                format!("{host} does not resolve for the nodes: {e}"),
                format!(
                    "give {host} a record in the nodes' DNS (bastion-config.yaml extraRecords, for serve's)"
                ),
            );
        }
    };
    let (store, system, bundle) = roots(config);
    let addr = SocketAddr::new(ip, port);
    let r = okd_probe::handshake(addr, &host, Verify::Roots(Arc::new(store)), timeout)
        .await
        .result
        .map_err(|e| match e {
            okd_probe::ProbeError::Tls { reason, .. } => (true, reason),
            other => (false, other.to_string()),
        });
    let roots = format!("{system} system roots and {bundle} of additionalTrustBundle");
    match r {
        Ok(_) => Check::pass(id, format!("{reg} ({addr}) verified with {roots}")),
        Err((true, e)) => Check::fail(
            id,
            format!(
                "{reg} ({addr}) is not trusted with {roots}: {e} (the nodes fail the same way: x509: certificate signed by unknown authority)"
            ),
            "put the registry's CA (PEM) in install-config.yaml additionalTrustBundle, then create the Ignition configs again",
        ),
        Err((false, e)) => Check::warn(
            id,
            format!("{reg} does not answer: {e}"),
            format!("start the mirror registry (`okd-install mirror registry start`) on {addr}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repos_registries_and_sources() {
        assert_eq!(
            repo_of("quay.io/openshift/okd:4.5.0-0.okd"),
            "quay.io/openshift/okd"
        );
        assert_eq!(
            repo_of("quay.io/openshift/okd@sha256:abc"),
            "quay.io/openshift/okd"
        );
        assert_eq!(repo_of("registry:5000/okd:4.5"), "registry:5000/okd");
        assert_eq!(repo_of("registry:5000/okd"), "registry:5000/okd");
        assert_eq!(
            registry_of("registry.okd.example:5000/openshift/okd"),
            "registry.okd.example:5000"
        );
        assert!(covered("quay.io/openshift/okd", "quay.io/openshift/okd"));
        assert!(covered("quay.io/openshift/okd", "quay.io/openshift"));
        assert!(!covered(
            "quay.io/openshift/okd-content",
            "quay.io/openshift/okd"
        ));
    }
}
