//! The service's two secrets and the agent tokens signed with one of them.
//!
//! - The **admin token**: what users send (`Authorization: Bearer`), the
//!   web page's sign-in. Generated on first start (256 random bits,
//!   base64url, 43 characters) into `<dir>/assisted-service/admin-token`
//!   (0600), or chosen by the user (`--auth-token`, at least
//!   [`MIN_TOKEN_BITS`]).
//! - The **agent-signing key**: an ECDSA P-256 key generated on first
//!   start into `<dir>/assisted-service/agent-signing-key.pem` (PKCS #8,
//!   0600), independent of the admin token. Agent tokens are ES256 JWTs
//!   (RFC 7519, RFC 7518 §3.4) signed with it, as assisted-service's
//!   `AUTH_TYPE=local` signs its agent tokens with its generated EC key
//!   (`pkg/auth/local_authenticator.go`, claim `infra_env_id`). A
//!   discovery Ignition therefore says nothing about the admin token: its
//!   token verifies only with this key, and guessing the admin token
//!   offline from it is impossible.
//!
//! Token claims ([`AgentClaims`]): `infra_env_id` and `gen` (the
//! infra-env's signing generation, bumped by `regenerate-signing-key`);
//! a host token adds `host_id` and `reg` (the host's registration time,
//! Unix ms), so a host that registers again revokes its earlier tokens.
//! No `exp`: a token lives as long as its infra-env's generation and, for a
//! host token, its registration (as assisted-service's infra-env tokens,
//! which also carry no expiry).

use std::fmt;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::ExposeSecret as _;
use serde::{Deserialize, Serialize};

pub use okd_assisted_api::{ADMIN_TOKEN_FILE as TOKEN_FILE, SERVICE_SECRETS_DIR as SECRETS_DIR};
/// The agent-signing key's file in [`SECRETS_DIR`].
pub const SIGNING_KEY_FILE: &str = "agent-signing-key.pem";
/// The least estimated strength of a user-chosen admin token, bits
/// ([`token_bits`]).
pub const MIN_TOKEN_BITS: f64 = 128.0;

/// A secret that cannot be loaded, made or accepted.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A user-chosen token is too easy to guess.
    #[error(
        "{what}: about {bits:.0} bits; at least {MIN_TOKEN_BITS:.0} bits are required (e.g. 32 random hex digits: openssl rand -hex 16, or leave --auth-token out and the service generates one)"
    )]
    Weak {
        /// Where the token came from.
        what: String,
        /// Its estimated strength.
        bits: f64,
    },
    /// A secret file cannot be read or written.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

fn file_error(path: &Path, reason: impl fmt::Display) -> AuthError {
    AuthError::File {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The estimated strength of `token`, bits: its length times log2 of the
/// size of the character classes it uses (26 lower-case letters, 26
/// upper-case, 10 digits, 33 other printable ASCII characters; anything
/// else counts as 128). An upper bound for a random token of those
/// classes, generous for words; what it rules out is short tokens.
pub fn token_bits(token: &str) -> f64 {
    let mut classes = [false; 5];
    for c in token.chars() {
        let i = match c {
            'a'..='z' => 0,
            'A'..='Z' => 1,
            '0'..='9' => 2,
            c if c.is_ascii() => 3,
            _ => 4,
        };
        classes[i] = true;
    }
    let alphabet: f64 = [26.0, 26.0, 10.0, 33.0, 128.0]
        .iter()
        .zip(classes)
        .filter(|(_, used)| *used)
        .map(|(n, _)| n)
        .sum();
    if alphabet == 0.0 {
        return 0.0;
    }
    token.chars().count() as f64 * alphabet.log2()
}

/// Checks that `token` (from `what`) is at least [`MIN_TOKEN_BITS`] strong
/// and fits an HTTP header (visible ASCII, no spaces).
///
/// # Errors
/// [`AuthError::Weak`], or [`AuthError::File`]-free [`AuthError::Weak`]
/// with 0 bits for characters a header cannot carry.
pub fn check_token(what: &str, token: &str) -> Result<(), AuthError> {
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(AuthError::Weak {
            what: format!("{what}: only visible ASCII characters without spaces"),
            bits: 0.0,
        });
    }
    let bits = token_bits(token);
    if bits < MIN_TOKEN_BITS {
        return Err(AuthError::Weak {
            what: what.to_string(),
            bits,
        });
    }
    Ok(())
}

/// What an agent token says once its signature holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentClaims {
    /// The infra-env it was issued for.
    pub infra_env_id: String,
    /// The infra-env's signing generation it was issued at.
    #[serde(rename = "gen")]
    pub generation: i64,
    /// A host token's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_id: Option<String>,
    /// A host token's registration time (the host's `registered_at`,
    /// Unix ms): registering again revokes it.
    #[serde(default, rename = "reg", skip_serializing_if = "Option::is_none")]
    pub registered_at: Option<i64>,
}

/// The admin token and the agent-signing key.
pub struct Keys {
    admin: okd_secret::Secret,
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    token_file: Option<PathBuf>,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("admin", &"[REDACTED]")
            .field("signing_key", &"[REDACTED]")
            .field("token_file", &self.token_file)
            .finish()
    }
}

/// 256 random bits, base64url without padding (43 characters).
fn random_token() -> String {
    let mut b = [0u8; 32];
    aws_lc_rs::rand::fill(&mut b).expect("the system's random generator");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn key_pair_of(pem: &str, path: &Path) -> Result<(EncodingKey, DecodingKey), AuthError> {
    let kp = rcgen::KeyPair::from_pem(pem).map_err(|e| file_error(path, e))?;
    if !kp.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256) {
        return Err(file_error(
            path,
            "not an ECDSA P-256 key (the agent-signing key signs ES256 tokens); move it away and the service makes a new one",
        ));
    }
    let encoding = EncodingKey::from_ec_pem(pem.as_bytes()).map_err(|e| file_error(path, e))?;
    Ok((encoding, DecodingKey::from_ec_der(kp.public_key_raw())))
}

/// Reads a secret file (`None` when missing), refusing one others may
/// read.
///
/// # Errors
/// [`AuthError::File`] naming the file and its mode, or the I/O error.
pub(crate) fn read_secret(path: &Path) -> Result<Option<String>, AuthError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_error(path, e)),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(file_error(
            path,
            format!("mode {mode:04o}: a secret must not be readable by others (chmod 600 it)"),
        ));
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| file_error(path, e))
}

impl Keys {
    fn with(admin: String, key_pem: &str, token_file: Option<PathBuf>) -> Result<Keys, AuthError> {
        let (encoding, decoding) = key_pair_of(key_pem, Path::new("<agent-signing key>"))?;
        Ok(Keys::assemble(admin, encoding, decoding, token_file))
    }

    fn assemble(
        admin: String,
        encoding: EncodingKey,
        decoding: DecodingKey,
        token_file: Option<PathBuf>,
    ) -> Keys {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_aud = false;
        Keys {
            admin: okd_secret::Secret::new(admin),
            encoding,
            decoding,
            validation,
            token_file,
        }
    }

    /// Keys in memory only: `admin` (checked as [`check_token`]) or a
    /// generated token, and a new signing key.
    ///
    /// # Errors
    /// [`AuthError::Weak`] for a weak `admin`.
    pub fn generate(admin: Option<&str>) -> Result<Keys, AuthError> {
        let admin = match admin {
            Some(t) => {
                check_token("the admin token", t)?;
                t.to_string()
            }
            None => random_token(),
        };
        let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(|e| file_error(Path::new("<agent-signing key>"), e))?;
        Keys::with(admin, &kp.serialize_pem(), None)
    }

    /// The keys of the service whose directory is `dir`: in
    /// `<dir>/`[`SECRETS_DIR`] (made 0700), the signing key
    /// ([`SIGNING_KEY_FILE`]) read or generated, and the admin token:
    /// `user_token` when given (checked, not stored), else
    /// [`TOKEN_FILE`] read or generated. Files are written atomically,
    /// 0600.
    ///
    /// # Errors
    /// [`AuthError::Weak`] for a weak `user_token` or a weak stored one;
    /// [`AuthError::File`] naming the file that cannot be read, written,
    /// parsed, or is readable by others.
    pub fn load_or_create(dir: &Path, user_token: Option<&str>) -> Result<Keys, AuthError> {
        const GIVEN: &str = "--auth-token (OKD_ASSISTED_AUTH_TOKEN)";
        if let Some(t) = user_token {
            check_token(GIVEN, t)?;
        }
        let secrets = dir.join(SECRETS_DIR);
        okd_fs::create_dir_all(&secrets, 0o700).map_err(|e| file_error(&secrets, e))?;
        let key_path = secrets.join(SIGNING_KEY_FILE);
        let key_pem = match read_secret(&key_path)? {
            Some(pem) => pem,
            None => {
                let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
                    .map_err(|e| file_error(&key_path, e))?;
                let pem = kp.serialize_pem();
                okd_fs::write_atomic(&key_path, pem.as_bytes(), 0o600)
                    .map_err(|e| file_error(&key_path, e))?;
                tracing::info!(path = %key_path.display(), "generated the agent-signing key (ECDSA P-256)");
                pem
            }
        };
        let (encoding, decoding) = key_pair_of(&key_pem, &key_path)?;
        let (admin, token_file) = match user_token {
            Some(t) => (t.to_string(), None),
            None => {
                let path = secrets.join(TOKEN_FILE);
                let token = match read_secret(&path)? {
                    Some(t) => {
                        let t = t.trim().to_string();
                        check_token(&path.display().to_string(), &t)?;
                        t
                    }
                    None => {
                        let t = random_token();
                        okd_fs::write_atomic(&path, format!("{t}\n").as_bytes(), 0o600)
                            .map_err(|e| file_error(&path, e))?;
                        tracing::info!(path = %path.display(), "generated the admin token");
                        t
                    }
                };
                (token, Some(path))
            }
        };
        Ok(Keys::assemble(admin, encoding, decoding, token_file))
    }

    /// The admin token's file, when the service generated or read it there
    /// (`None`: the user gave it).
    pub fn token_file(&self) -> Option<&Path> {
        self.token_file.as_deref()
    }

    /// The admin token (to hand to a client in tests; never logged).
    pub fn admin_token(&self) -> &str {
        self.admin.expose_secret()
    }

    /// Whether `given` is the admin token (constant time).
    pub fn is_admin(&self, given: &str) -> bool {
        aws_lc_rs::constant_time::verify_slices_are_equal(
            given.as_bytes(),
            self.admin.expose_secret().as_bytes(),
        )
        .is_ok()
    }

    fn sign(&self, claims: &AgentClaims) -> String {
        jsonwebtoken::encode(&Header::new(Algorithm::ES256), claims, &self.encoding)
            .expect("an ES256 signature with a valid P-256 key")
    }

    /// The discovery token of infra-env `infra_env_id` at signing
    /// generation `generation`: good for registering hosts only.
    pub fn agent_token(&self, infra_env_id: &str, generation: i64) -> String {
        self.sign(&AgentClaims {
            infra_env_id: infra_env_id.to_string(),
            generation,
            host_id: None,
            registered_at: None,
        })
    }

    /// The token of host `host_id` of infra-env `infra_env_id`, registered
    /// at `registered_at` (Unix ms), at signing generation `generation`.
    pub fn host_token(
        &self,
        infra_env_id: &str,
        generation: i64,
        host_id: &str,
        registered_at: i64,
    ) -> String {
        self.sign(&AgentClaims {
            infra_env_id: infra_env_id.to_string(),
            generation,
            host_id: Some(host_id.to_string()),
            registered_at: Some(registered_at),
        })
    }

    /// The claims of `token` when it is an ES256 JWT signed with this
    /// service's key; `None` otherwise (malformed, another key, another
    /// algorithm).
    pub fn verify(&self, token: &str) -> Option<AgentClaims> {
        jsonwebtoken::decode::<AgentClaims>(token, &self.decoding, &self.validation)
            .ok()
            .map(|d| d.claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_with_their_key_and_say_nothing_of_the_admin_token() {
        let a = Keys::generate(Some("correct-horse-battery-staple-1234567")).unwrap();
        let b = Keys::generate(Some("correct-horse-battery-staple-1234567")).unwrap();
        let t = a.agent_token("ie-1", 3);
        let claims = a.verify(&t).unwrap();
        assert_eq!(claims.infra_env_id, "ie-1");
        assert_eq!(claims.generation, 3);
        assert_eq!(claims.host_id, None);
        // The same admin token, another signing key: not valid.
        assert_eq!(b.verify(&t), None);
        let h = a.host_token("ie-1", 3, "h-1", 42);
        let c = a.verify(&h).unwrap();
        assert_eq!(
            (c.host_id.as_deref(), c.registered_at),
            (Some("h-1"), Some(42))
        );
        // A payload changed without the key fails.
        let parts: Vec<&str> = h.split('.').collect();
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"infra_env_id":"ie-1","gen":3,"host_id":"h-2","reg":42}"#);
        assert_eq!(
            a.verify(&format!("{}.{forged}.{}", parts[0], parts[2])),
            None
        );
        // An unsigned token ("alg": "none") is refused.
        let none = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"alg":"none","typ":"JWT"}"#);
        assert_eq!(a.verify(&format!("{none}.{}.", parts[1])), None);
    }

    #[test]
    fn weak_tokens_are_refused() {
        assert!(check_token("t", "letmein").is_err());
        assert!(check_token("t", "0123456789abcdef0123456789abcdef").is_ok());
        assert!(check_token("t", "with space and more than enough characters").is_err());
        assert!(token_bits(&random_token()) >= 256.0);
    }

    #[test]
    fn files_are_private_and_reused() {
        let d = tempfile::tempdir().unwrap();
        let k1 = Keys::load_or_create(d.path(), None).unwrap();
        let path = d.path().join(SECRETS_DIR).join(TOKEN_FILE);
        assert_eq!(k1.token_file(), Some(path.as_path()));
        for f in [TOKEN_FILE, SIGNING_KEY_FILE] {
            let m = std::fs::metadata(d.path().join(SECRETS_DIR).join(f)).unwrap();
            assert_eq!(m.permissions().mode() & 0o777, 0o600, "{f}");
        }
        let k2 = Keys::load_or_create(d.path(), None).unwrap();
        assert_eq!(k1.admin_token(), k2.admin_token());
        assert!(k2.verify(&k1.agent_token("ie", 0)).is_some());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Keys::load_or_create(d.path(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("admin-token") && e.contains("0644"), "{e}");
    }
}
