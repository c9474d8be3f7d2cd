//! The kubeadmin password (openshift/installer `pkg/asset/password/password.go`): 23 characters of
//! the form `xxxxx-xxxxx-xxxxx-xxxxx` from a 58-symbol alphabet without look-alikes,
//! bcrypt-hashed (cost 10) into Secret `kube-system/kubeadmin`, the plain text in
//! `auth/kubeadmin-password` (0640, no trailing newline).

use okd_secret::Secret;
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::ctx::GenCtx;
use crate::dir::{AssetDir, AssetFile, b64};
use crate::error::AssetError;
use crate::store::{Asset, Dep, Parents};

/// Symbols of the password: lowercase without `l`, uppercase without `O`, digits 2–9.
pub const PASSWORD_ALPHABET: &str = "abcdefghijkmnopqrstuvwxyzABCDEFGHIJKLMNPQRSTUVWXYZ23456789";
/// Path of the plain-text password in the asset directory.
pub const PASSWORD_FILE: &str = "auth/kubeadmin-password";

/// Draws a password with openshift-install's construction: 23 draws; the first
/// seeds the string, each of the first 22 is inserted at a random position, the
/// 23rd is discarded; then positions 5, 11 and 17 become `-`.
pub fn generate_password<R: Rng>(rng: &mut R) -> String {
    let alphabet: Vec<char> = PASSWORD_ALPHABET.chars().collect();
    let first = alphabet[rng.random_range(0..alphabet.len())];
    let mut chars = vec![first];
    let mut pending = first;
    for _ in 0..22 {
        let pos = rng.random_range(0..=chars.len());
        chars.insert(pos, pending);
        pending = alphabet[rng.random_range(0..alphabet.len())];
    }
    chars.truncate(23);
    for i in [5, 11, 17] {
        chars[i] = '-';
    }
    chars.into_iter().collect()
}

/// `{"Password": "...", "PasswordHash": b64(bcrypt), "File": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubeadminPassword {
    /// The plain-text password; `Debug` shows `[REDACTED]`.
    #[serde(rename = "Password", serialize_with = "okd_secret::serialize")]
    pub password: Secret,
    /// bcrypt hash (`$2a$10$…`, 60 bytes).
    #[serde(rename = "PasswordHash", with = "b64")]
    pub password_hash: Vec<u8>,
    /// `auth/kubeadmin-password`.
    #[serde(rename = "File")]
    pub file: AssetFile,
}

impl Asset for KubeadminPassword {
    const NAME: &'static str = "Kubeadmin Password";
    const STATE_KEY: &'static str = "*password.KubeadminPassword";
    const WRITABLE: bool = true;

    fn dependencies() -> Vec<Dep> {
        Vec::new()
    }

    fn generate(ctx: &GenCtx, _: &Parents<'_>) -> Result<Self, AssetError> {
        let (password, salt) = ctx.with_rng(|rng| (generate_password(rng), rng.random()));
        let hash = bcrypt::hash_with_salt(&password, bcrypt::DEFAULT_COST, salt)
            .map_err(AssetError::Hash)?
            .format_for_version(bcrypt::Version::TwoA);
        Ok(KubeadminPassword {
            file: AssetFile::new(PASSWORD_FILE, password.clone()),
            password: Secret::new(password),
            password_hash: hash.into_bytes(),
        })
    }

    fn files(&self) -> Vec<AssetFile> {
        vec![self.file.clone()]
    }

    /// A user-supplied `tls/kubeadmin-password.hash` replaces generation (`password.go`);
    /// `auth/kubeadmin-password` alone is the output of an earlier run.
    fn load(dir: &AssetDir, _: &GenCtx) -> Result<Option<Self>, AssetError> {
        let Some(hash) = dir.read("tls/kubeadmin-password.hash")? else {
            return Ok(None);
        };
        let hash = String::from_utf8_lossy(&hash).trim().to_string();
        if !hash.starts_with("$2") {
            return Err(AssetError::BadFile {
                path: "tls/kubeadmin-password.hash".into(),
                message: "not a bcrypt hash (must start with $2)".into(),
            });
        }
        let password = dir
            .read("tls/kubeadmin-password")?
            .map(|p| String::from_utf8_lossy(&p).trim().to_string())
            .unwrap_or_default();
        Ok(Some(KubeadminPassword {
            file: AssetFile::new(PASSWORD_FILE, password.clone()),
            password: Secret::new(password),
            password_hash: hash.into_bytes(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_has_the_openshift_shape() {
        for _ in 0..200 {
            let p = generate_password(&mut rand::rng());
            assert_eq!(p.len(), 23);
            for (i, c) in p.chars().enumerate() {
                if [5, 11, 17].contains(&i) {
                    assert_eq!(c, '-');
                } else {
                    assert!(PASSWORD_ALPHABET.contains(c), "{c} in {p}");
                }
            }
        }
    }
}
