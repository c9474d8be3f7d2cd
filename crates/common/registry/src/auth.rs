//! Registry credentials and authentication challenges.
//!
//! Credentials come from pull secrets / Docker `config.json` files
//! (`{"auths": {"<registry>": {"auth": base64("user:password")}}}`, or
//! `username`/`password` fields). Challenges are the `WWW-Authenticate`
//! header of a 401 (RFC 7235): `Basic realm="..."` or, for token auth
//! (Docker registry token spec), `Bearer realm="<url>",service="..."`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use okd_secret::Secret;

/// One login: user, password, and the file it came from (for messages).
#[derive(Clone, Debug)]
pub struct Login {
    /// User name.
    pub username: String,
    /// Password or token; `Debug` shows `[REDACTED]`.
    pub password: Secret,
    /// The file (or `install-config.yaml pullSecret`) it was read from.
    pub origin: String,
}

/// Logins by registry key (`host[:port]` or `host[:port]/path`), first file wins.
#[derive(Debug, Default, Clone)]
pub struct Credentials {
    entries: BTreeMap<String, Login>,
    /// Every file read, in order (for messages).
    pub sources: Vec<String>,
}

fn normalize_key(k: &str) -> String {
    let k = k
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let k = k
        .strip_suffix("/v1")
        .or_else(|| k.strip_suffix("/v2"))
        .unwrap_or(k);
    match k {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
        _ => k.to_string(),
    }
}

impl Credentials {
    /// Adds the `auths` of one pull secret / docker config JSON text. Entries
    /// already present (from an earlier source) are kept. Errors name `origin`.
    pub fn add_json(&mut self, text: &str, origin: &str) -> Result<(), String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{origin}: not JSON: {e}"))?;
        let auths = v
            .get("auths")
            .and_then(|a| a.as_object())
            .ok_or_else(|| format!("{origin}: no \"auths\" object"))?;
        for (key, entry) in auths {
            let login = if let Some(a) = entry
                .get("auth")
                .and_then(|x| x.as_str())
                .filter(|a| !a.is_empty())
            {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(a.trim())
                    .map_err(|e| format!("{origin}: auths.{key}.auth is not base64: {e}"))?;
                let raw = String::from_utf8(raw)
                    .map_err(|_| format!("{origin}: auths.{key}.auth is not UTF-8"))?;
                let (u, p) = raw.split_once(':').ok_or_else(|| {
                    format!("{origin}: auths.{key}.auth must be base64(user:password)")
                })?;
                (u.to_string(), p.to_string())
            } else if let (Some(u), Some(p)) = (
                entry.get("username").and_then(|x| x.as_str()),
                entry.get("password").and_then(|x| x.as_str()),
            ) {
                (u.to_string(), p.to_string())
            } else {
                continue;
            };
            self.entries.entry(normalize_key(key)).or_insert(Login {
                username: login.0,
                password: Secret::new(login.1),
                origin: origin.to_string(),
            });
        }
        self.sources.push(origin.to_string());
        Ok(())
    }

    /// Adds a file; see [`Credentials::add_json`].
    pub fn add_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading registry credentials {}: {e}", path.display()))?;
        self.add_json(&text, &path.display().to_string())
    }

    /// The login for `registry` (`host[:port]`) and repository `repo`: the
    /// longest key that is the registry or a path prefix of `registry/repo`.
    pub fn find(&self, registry: &str, repo: &str) -> Option<&Login> {
        let full = format!("{registry}/{repo}");
        self.entries
            .iter()
            .filter(|(k, _)| {
                k.as_str() == registry
                    || (full.starts_with(k.as_str()) && full.as_bytes().get(k.len()) == Some(&b'/'))
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(_, l)| l)
    }

    /// The default credential files that exist: `$REGISTRY_AUTH_FILE`,
    /// `$XDG_RUNTIME_DIR/containers/auth.json`, `~/.docker/config.json`.
    pub fn default_files() -> Vec<PathBuf> {
        let mut v = Vec::new();
        if let Some(p) = std::env::var_os("REGISTRY_AUTH_FILE") {
            v.push(PathBuf::from(p));
        }
        if let Some(p) = std::env::var_os("XDG_RUNTIME_DIR") {
            v.push(PathBuf::from(p).join("containers/auth.json"));
        }
        if let Some(h) = std::env::var_os("HOME") {
            v.push(PathBuf::from(h).join(".docker/config.json"));
        }
        v.into_iter().filter(|p| p.is_file()).collect()
    }
}

/// A parsed `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    /// HTTP Basic with the realm.
    Basic {
        /// `realm`.
        realm: String,
    },
    /// Token auth: get a token from `realm`.
    Bearer {
        /// Token endpoint URL.
        realm: String,
        /// `service` parameter, if any.
        service: Option<String>,
    },
}

impl Challenge {
    /// Parses the header value; `None` for schemes other than Basic and Bearer.
    pub fn parse(header: &str) -> Option<Challenge> {
        let (scheme, rest) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
        let params = parse_params(rest);
        let get = |k: &str| {
            params
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.clone())
        };
        if scheme.eq_ignore_ascii_case("basic") {
            Some(Challenge::Basic {
                realm: get("realm").unwrap_or_default(),
            })
        } else if scheme.eq_ignore_ascii_case("bearer") {
            Some(Challenge::Bearer {
                realm: get("realm")?,
                service: get("service"),
            })
        } else {
            None
        }
    }

    /// The realm, for messages.
    pub fn realm(&self) -> &str {
        match self {
            Challenge::Basic { realm } | Challenge::Bearer { realm, .. } => realm,
        }
    }
}

/// `k="v", k2=v2` parameters of an auth header, quoted strings unescaped.
fn parse_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i] == b' ' || b[i] == b',') {
            i += 1;
        }
        let ks = i;
        while i < b.len() && b[i] != b'=' && b[i] != b',' {
            i += 1;
        }
        let key = s[ks..i].trim().to_string();
        if i >= b.len() || b[i] != b'=' {
            continue;
        }
        i += 1;
        let mut val = String::new();
        if i < b.len() && b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                let ch = s[i..].chars().next().unwrap_or(' ');
                val.push(ch);
                i += ch.len_utf8();
            }
            i += 1;
        } else {
            let vs = i;
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            val = s[vs..i].trim().to_string();
        }
        if !key.is_empty() {
            out.push((key, val));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use okd_secret::ExposeSecret as _;

    #[test]
    fn challenges() {
        assert_eq!(
            Challenge::parse(r#"Basic realm="okd-mirror""#),
            Some(Challenge::Basic {
                realm: "okd-mirror".into()
            })
        );
        assert_eq!(
            Challenge::parse(
                r#"Bearer realm="https://quay.io/v2/auth",service="quay.io",scope="repository:a/b:pull""#
            ),
            Some(Challenge::Bearer {
                realm: "https://quay.io/v2/auth".into(),
                service: Some("quay.io".into())
            })
        );
        assert_eq!(Challenge::parse("Negotiate"), None);
    }

    #[test]
    fn logins() {
        let mut c = Credentials::default();
        c.add_json(
            r#"{"auths":{"registry.okd.example:5000":{"auth":"YWRtaW46YWRtaW4=","email":""},"https://index.docker.io/v1/":{"username":"u","password":"p"},"quay.io/openshift":{"auth":"YTpi"}}}"#,
            "ps.json",
        )
        .unwrap();
        let l = c
            .find("registry.okd.example:5000", "openshift/okd")
            .unwrap();
        assert_eq!(
            (l.username.as_str(), l.password.expose_secret()),
            ("admin", "admin")
        );
        assert_eq!(
            c.find("docker.io", "library/busybox").unwrap().username,
            "u"
        );
        assert_eq!(c.find("quay.io", "openshift/okd").unwrap().username, "a");
        assert!(c.find("quay.io", "other/okd").is_none());
        assert!(c.find("registry.okd.example", "x").is_none());
        assert!(c.add_json("{}", "x.json").unwrap_err().contains("x.json"));
    }
}
