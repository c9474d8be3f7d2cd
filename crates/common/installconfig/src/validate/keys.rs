//! `sshKey` (FIPS and non-FIPS rules) and `additionalTrustBundle` (openshift/installer
//! pkg/types/validation/installconfig.go, pkg/validate/validate.go).

use super::*;

pub(super) const SSH_TYPES: &[&str] = &[
    "ssh-rsa",
    "ssh-dss",
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "sk-ssh-ed25519@openssh.com",
];

/// x/crypto/ssh ParseAuthorizedKey, reduced: returns the key type of the first
/// parsable line, or the ssh error text.
pub(super) fn parse_authorized_key(text: &str) -> Result<String, String> {
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        for (i, f) in fields.iter().enumerate() {
            let base = f.strip_suffix("-cert-v01@openssh.com").unwrap_or(f);
            if !SSH_TYPES.contains(&base) && !SSH_TYPES.contains(f) {
                continue;
            }
            let Some(b64) = fields.get(i + 1) else {
                continue;
            };
            let Ok(blob) = base64::engine::general_purpose::STANDARD.decode(b64) else {
                continue;
            };
            if blob.len() < 4 {
                continue;
            }
            let n = u32::from_be_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
            if blob.get(4..).and_then(|b| b.get(..n)) != Some(f.as_bytes()) {
                continue;
            }
            return Ok((*f).to_string());
        }
    }
    Err("ssh: no key found".to_string())
}

/// The `sshKey` detail text, or `None` when valid (non-FIPS rule of
/// `pkg/types/validation/installconfig.go`).
pub(crate) fn ssh_key_error(key: &str) -> Option<String> {
    parse_authorized_key(key).err()
}

pub(super) fn ssh_key(c: &InstallConfig, o: &LoadOptions, e: &mut Errs) {
    let key = c.ssh_key.as_deref().unwrap_or("");
    if c.fips {
        if !key.is_empty() {
            match parse_authorized_key(key) {
                Ok(t) => {
                    let ok = t == "ssh-rsa"
                        || (t.starts_with("ecdsa-sha2-nistp")
                            && t.len() == 19
                            && t[16..].bytes().all(|b| b.is_ascii_digit()));
                    if !ok {
                        e.invalid("sshKey", key, format!("SSH key type {t} unavailable when FIPS is enabled. Please use rsa or ecdsa."));
                    }
                }
                Err(err) => e.invalid(
                    "sshKey",
                    key,
                    format!("Fatal error trying to parse configured public key: {err}"),
                ),
            }
        }
        if !o.host_fips {
            e.forbidden(
                "fips",
                "target cluster is in FIPS mode, operation requires FIPS mode, but current host is not FIPS-enabled (/proc/sys/crypto/fips_enabled is not 1)",
            );
        }
    } else if !key.is_empty()
        && let Err(err) = parse_authorized_key(key)
    {
        e.invalid("sshKey", key, err);
    }
}

pub(super) fn trust_bundle(c: &InstallConfig, e: &mut Errs, warnings: &mut Vec<String>) {
    let Some(bundle) = c.additional_trust_bundle.as_deref() else {
        return;
    };
    if bundle.is_empty() {
        return;
    }
    let mut rest = bundle.as_bytes();
    let mut any = false;
    loop {
        match x509_parser::pem::parse_x509_pem(rest) {
            Ok((r, pem)) => {
                any = true;
                rest = r;
                match pem.parse_x509() {
                    Ok(cert) => {
                        let now = time::OffsetDateTime::now_utc().unix_timestamp();
                        let exp = cert.validity().not_after;
                        if exp.timestamp() < now {
                            warnings.push(format!(
                                "additionalTrustBundle: certificate {:?} expired on {} (clients will reject it; replace it before installing)",
                                cert.subject().to_string(),
                                exp
                            ));
                        }
                    }
                    Err(err) => {
                        e.invalid(
                            "additionalTrustBundle",
                            bundle,
                            format!("x509: malformed certificate: {err}"),
                        );
                        return;
                    }
                }
                if rest.iter().all(|b| b.is_ascii_whitespace()) {
                    break;
                }
            }
            Err(_) => {
                if !any || !rest.iter().all(|b| b.is_ascii_whitespace()) {
                    e.invalid("additionalTrustBundle", bundle, "invalid block");
                }
                break;
            }
        }
    }
}
