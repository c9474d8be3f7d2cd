//! `pullSecret`, `proxy`, `imageContentSources`/`imageDigestSources`, `publish`
//! and `credentialsMode` (openshift/installer `pkg/types/validation/installconfig.go`,
//! `pkg/validate/validate.go`).

use okd_secret::ExposeSecret as _;

use super::*;

/// pkg/types/validation/installconfig.go echoes the pull secret in the error;
/// here the value is omitted: it holds registry credentials, and the error
/// goes to stderr and `.openshift_install.log` (docs/differences.md).
pub(super) fn pull_secret(c: &InstallConfig, e: &mut Errs) {
    if let Some(d) = pull_secret_error(c.pull_secret.expose_secret()) {
        e.invalid_omitted("pullSecret", d);
    }
}

/// The `pullSecret` detail text, or `None` when valid (openshift/installer
/// `pkg/validate/validate.go`): JSON
/// syntax errors verbatim, `auths required`, `"<registry>" requires either auth or credsStore`.
pub(crate) fn pull_secret_error(ps: &str) -> Option<String> {
    let v: Value = match serde_json::from_str(ps) {
        Ok(v) => v,
        Err(err) => {
            return Some(if ps.trim().is_empty() {
                "unexpected end of JSON input".to_string()
            } else {
                err.to_string()
            });
        }
    };
    let m = match v.get("auths").and_then(Value::as_object) {
        Some(m) if !m.is_empty() => m,
        _ => return Some("auths required".to_string()),
    };
    let mut errs: Vec<String> = m
        .iter()
        .filter(|(_, entry)| entry.get("auth").is_none() && entry.get("credsStore").is_none())
        .map(|(reg, _)| format!("{reg:?} requires either auth or credsStore"))
        .collect();
    match errs.len() {
        0 => None,
        1 => errs.pop(),
        _ => Some(format!("[{}]", errs.join(", "))),
    }
}

/// A minimal Go `url.ParseRequestURI`: returns `(scheme, host)`.
pub(super) fn parse_request_uri(s: &str) -> Result<(String, String), String> {
    let Some((scheme, rest)) = s.split_once("://") else {
        return Err(format!("parse {s:?}: invalid URI for request"));
    };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok || s.contains(char::is_whitespace) {
        return Err(format!("parse {s:?}: invalid URI for request"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(h) = hostport.strip_prefix('[') {
        h.split(']').next().unwrap_or("").to_string()
    } else {
        hostport.split(':').next().unwrap_or("").to_string()
    };
    Ok((scheme.to_ascii_lowercase(), host))
}

pub(super) fn proxy(c: &InstallConfig, p: &Proxy, e: &mut Errs) {
    let http = p.http_proxy.as_deref().filter(|s| !s.is_empty());
    let https = p.https_proxy.as_deref().filter(|s| !s.is_empty());
    if http.is_none() && https.is_none() {
        e.required("proxy", "must include httpProxy or httpsProxy");
    }
    let cluster = c.cluster_networks();
    let service = c.service_networks();
    for (field, val, schemes) in [
        ("httpProxy", http, &["http"][..]),
        ("httpsProxy", https, &["http", "https"][..]),
    ] {
        let Some(v) = val else { continue };
        let path = format!("proxy.{field}");
        match parse_request_uri(v) {
            Err(err) => e.invalid(&path, v, err),
            Ok((scheme, host)) => {
                if !schemes.contains(&scheme.as_str()) {
                    e.unsupported(&path, &scheme, schemes);
                }
                if let Ok(ip) = host.parse::<IpAddr>() {
                    if cluster.iter().any(|(n, _)| n.contains(&ip)) {
                        e.invalid(&path, v, "proxy value is part of the cluster networks");
                    }
                    if service.iter().any(|n| n.contains(&ip)) {
                        e.invalid(&path, v, "proxy value is part of the service networks");
                    }
                }
            }
        }
    }
    if let Some(np) = p.no_proxy.as_deref().filter(|s| !s.is_empty())
        && np != "*"
    {
        if np.contains(' ') {
            e.invalid("proxy.noProxy", np, "noProxy must not have spaces");
        }
        for (i, el) in np.split(',').enumerate() {
            let el = el.trim();
            if el.is_empty() || el.parse::<IpAddr>().is_ok() || el.parse::<IpNet>().is_ok() {
                continue;
            }
            let d = el.strip_prefix('.').unwrap_or(el);
            let lower = d.to_ascii_lowercase();
            if d.contains('*') || !dns1123_subdomain(&lower).is_empty() {
                e.invalid(
                        "proxy.noProxy",
                        np,
                        format!("each element of noProxy must be a IP, CIDR or domain without wildcard characters, which is violated by element {i} {el:?}"),
                    );
            }
        }
    }
}

/// Docker distribution reference check: `Ok(())` for a repository name, error text otherwise.
pub(super) fn named_repository(r: &str) -> Result<(), String> {
    if r.is_empty() {
        return Err(
            "failed to parse: repository name must have at least one component".to_string(),
        );
    }
    let (name, reference) = match r.find('@') {
        Some(i) => (&r[..i], true),
        None => {
            let last = r.rsplit('/').next().unwrap_or(r);
            let has_tag = last.contains(':') && r.contains('/');
            let tag_less = if has_tag {
                &r[..r.len() - (last.len() - last.find(':').unwrap_or(0))]
            } else {
                r
            };
            (tag_less, has_tag)
        }
    };
    let mut comps = name.split('/');
    let first = comps.next().unwrap_or("");
    let host_like = first.contains('.') || first.contains(':') || first == "localhost";
    let host_ok = first
        .chars()
        .all(|ch| ch.is_ascii_alphanumeric() || "-.:[]".contains(ch));
    if !host_ok || (!host_like && first.chars().any(|ch| ch.is_ascii_uppercase())) {
        return Err("failed to parse: invalid reference format".to_string());
    }
    for comp in comps {
        if comp.is_empty() {
            return Err("failed to parse: invalid reference format".to_string());
        }
        if comp.chars().any(|ch| ch.is_ascii_uppercase()) {
            return Err(
                "failed to parse: invalid reference format: repository name must be lowercase"
                    .to_string(),
            );
        }
        if !comp
            .chars()
            .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch))
        {
            return Err("failed to parse: invalid reference format".to_string());
        }
    }
    if reference {
        return Err("must be repository--not reference".to_string());
    }
    Ok(())
}

pub(super) fn mirrors(
    c: &InstallConfig,
    o: &LoadOptions,
    e: &mut Errs,
    warnings: &mut Vec<String>,
) {
    for (field, list) in [
        ("imageContentSources", &c.image_content_sources),
        ("imageDigestSources", &c.image_digest_sources),
    ] {
        for (i, s) in list.iter().enumerate() {
            if let Err(err) = named_repository(&s.source) {
                e.invalid(&format!("{field}[{i}].source"), &s.source, err);
            }
            for (j, m) in s.mirrors.iter().enumerate() {
                if let Err(err) = named_repository(m) {
                    e.invalid(&format!("{field}[{i}].mirrors[{j}]"), m, err);
                }
            }
        }
    }
    if !c.image_content_sources.is_empty() && !c.image_digest_sources.is_empty() {
        e.forbidden(
            "imageContentSources",
            "cannot set imageContentSources and imageDigestSources at the same time",
        );
    }
    if !c.image_content_sources.is_empty() && o.target.has_image_digest_sources() {
        warnings
            .push("imageContentSources is deprecated, please use ImageDigestSources".to_string());
    }
    let has_mirrors = c.image_sources().iter().any(|s| !s.mirrors.is_empty());
    if has_mirrors
        && c.additional_trust_bundle
            .as_deref()
            .unwrap_or("")
            .trim()
            .is_empty()
    {
        warnings.push(
            "image mirrors are configured but additionalTrustBundle is empty: nodes will not trust a mirror registry whose certificate is signed by a private CA".to_string(),
        );
    }
}

pub(super) fn publish(c: &InstallConfig, e: &mut Errs) {
    let plat = c.platform_kind();
    let plat_name = c.platform_name();
    let p = c.publish.as_deref().unwrap_or("External");
    match p {
        "External" => {}
        "Internal" => {
            if !matches!(
                plat,
                Some(P::Aws | P::Azure | P::Gcp | P::IbmCloud | P::PowerVs)
            ) {
                e.invalid(
                    "publish",
                    p,
                    format!("Internal publish strategy is not supported on {plat_name:?} platform"),
                );
            }
        }
        "Mixed" => {
            if plat != Some(P::Azure) {
                e.invalid(
                    "publish",
                    p,
                    format!("mixed publish strategy is not supported on {plat_name:?} platform"),
                );
            } else if c.operator_publishing_strategy.is_none() {
                e.required(
                    "operatorPublishingStrategy",
                    "please specify the operator publishing strategy for mixed publish strategy",
                );
            }
        }
        other => e.unsupported("publish", other, &["External", "Internal", "Mixed"]),
    }
    if c.operator_publishing_strategy.is_some() && p != "Mixed" {
        e.invalid(
            "operatorPublishingStrategy",
            p,
            "operator publishing strategy is only allowed with the Mixed publish strategy",
        );
    }
    if let Some(m) = c.credentials_mode.as_deref().filter(|m| !m.is_empty()) {
        if !matches!(m, "Mint" | "Passthrough" | "Manual") {
            e.unsupported("credentialsMode", m, &["Manual", "Mint", "Passthrough"]);
        } else if matches!(plat, Some(P::None | P::Baremetal)) {
            e.invalid(
                "credentialsMode",
                m,
                format!("cannot be set when using the {plat_name:?} platform"),
            );
        }
    }
}
