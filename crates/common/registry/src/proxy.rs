//! Proxy selection from the environment, as Go's
//! `http.ProxyFromEnvironment` (golang.org/x/net/http/httpproxy, `config.go`)
//! does it for containers/image, podman and skopeo:
//!
//! * `HTTPS_PROXY` (or `https_proxy`) for `https` URLs, `HTTP_PROXY` (or
//!   `http_proxy`) for `http` URLs; the upper-case name wins; a value
//!   without a scheme means `http://`;
//! * `NO_PROXY` (or `no_proxy`): comma-separated entries; `*` disables the
//!   proxy; an IP address or CIDR block matches hosts given as addresses;
//!   `example.com` matches it and its subdomains, `.example.com` only the
//!   subdomains; an entry with `:port` matches that port only;
//! * `localhost` and loopback addresses are never proxied;
//! * when `REQUEST_METHOD` is set (a CGI environment), `HTTP_PROXY` is
//!   ignored (httpoxy, CVE-2016-5385).

use std::net::IpAddr;

use reqwest::Url;

/// The proxy settings read from the environment once.
#[derive(Debug, Clone, Default)]
pub struct ProxyEnv {
    http: Option<Url>,
    https: Option<Url>,
    no_proxy: Vec<String>,
}

fn var(names: &[&str]) -> Option<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
}

fn proxy_url(v: &str) -> Option<Url> {
    let v = v.trim();
    let with_scheme = if v.contains("://") {
        v.to_string()
    } else {
        format!("http://{v}")
    };
    Url::parse(&with_scheme).ok().filter(|u| u.host().is_some())
}

impl ProxyEnv {
    /// Reads `HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY` (and the lower-case
    /// names). Unparsable proxy values are ignored, as Go does for an empty one.
    pub fn from_env() -> ProxyEnv {
        let cgi = std::env::var_os("REQUEST_METHOD").is_some();
        ProxyEnv::new(
            if cgi {
                None
            } else {
                var(&["HTTP_PROXY", "http_proxy"])
            }
            .as_deref(),
            var(&["HTTPS_PROXY", "https_proxy"]).as_deref(),
            var(&["NO_PROXY", "no_proxy"]).as_deref(),
        )
    }

    /// Settings from explicit values (`None`: not set).
    pub fn new(http: Option<&str>, https: Option<&str>, no_proxy: Option<&str>) -> ProxyEnv {
        ProxyEnv {
            http: http.and_then(proxy_url),
            https: https.and_then(proxy_url),
            no_proxy: no_proxy
                .unwrap_or_default()
                .split(',')
                .map(|e| e.trim().to_ascii_lowercase())
                .filter(|e| !e.is_empty())
                .collect(),
        }
    }

    /// Whether any proxy is configured.
    pub fn any(&self) -> bool {
        self.http.is_some() || self.https.is_some()
    }

    /// The proxy for `url`, or `None` to connect directly.
    pub fn for_url(&self, url: &Url) -> Option<Url> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            "http" => self.http.as_ref(),
            _ => None,
        }?;
        let host = url.host_str()?.to_ascii_lowercase();
        let port = url.port_or_known_default().unwrap_or(0);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let ip: Option<IpAddr> = bare.parse().ok();
        if host == "localhost" || ip.is_some_and(|a| a.is_loopback()) {
            return None;
        }
        for entry in &self.no_proxy {
            if entry == "*" {
                return None;
            }
            if let Some(ip) = ip {
                if let Some((net, bits)) = entry.split_once('/')
                    && let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>())
                    && in_cidr(ip, net, bits)
                {
                    return None;
                }
                if entry
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                    .is_ok_and(|e| e == ip)
                {
                    return None;
                }
            }
            let (name, eport) = split_port(entry);
            if eport.is_some_and(|p| p != port) {
                continue;
            }
            let name = name.trim_start_matches('[').trim_end_matches(']');
            if let Some(suffix) = name.strip_prefix('.') {
                if bare.ends_with(&format!(".{suffix}")) {
                    return None;
                }
            } else if !name.is_empty() && (bare == name || bare.ends_with(&format!(".{name}"))) {
                return None;
            }
        }
        Some(proxy.clone())
    }
}

/// `host:port` → (`host`, port); a bare IPv6 address has no port.
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if entry.starts_with('[') {
        if let Some((h, p)) = entry.rsplit_once("]:") {
            return (&entry[..h.len() + 1], p.parse().ok());
        }
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, p.parse().ok()),
        _ => (entry, None),
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn via(p: &ProxyEnv, url: &str) -> Option<String> {
        p.for_url(&Url::parse(url).unwrap()).map(|u| u.to_string())
    }

    #[test]
    fn go_rules() {
        let p = ProxyEnv::new(
            Some("proxy.example:3128"),
            Some("https://sproxy.example:8443"),
            Some(
                "example.com, .only-sub.org,10.0.0.0/8, 192.168.1.5 ,mirror.lan:5000,[2001:db8::1]",
            ),
        );
        assert_eq!(
            via(&p, "https://quay.io/v2/").as_deref(),
            Some("https://sproxy.example:8443/")
        );
        assert_eq!(
            via(&p, "http://quay.io/v2/").as_deref(),
            Some("http://proxy.example:3128/")
        );
        for direct in [
            "https://localhost:5000/v2/",
            "https://127.0.0.1:5000/v2/",
            "https://[::1]:5000/v2/",
            "https://example.com/v2/",
            "https://a.example.com/v2/",
            "https://x.only-sub.org/v2/",
            "https://10.1.2.3/v2/",
            "https://192.168.1.5/v2/",
            "https://mirror.lan:5000/v2/",
            "https://[2001:db8::1]/v2/",
        ] {
            assert_eq!(via(&p, direct), None, "{direct}");
        }
        for proxied in [
            "https://only-sub.org/v2/",
            "https://notexample.com/v2/",
            "https://mirror.lan:5001/v2/",
            "https://11.1.2.3/v2/",
        ] {
            assert!(via(&p, proxied).is_some(), "{proxied}");
        }
        let all = ProxyEnv::new(None, Some("p:1"), Some("*"));
        assert_eq!(via(&all, "https://quay.io/"), None);
        assert!(!ProxyEnv::new(None, None, Some("x")).any());
    }
}
