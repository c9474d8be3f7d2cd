//! TLS by default (issue #41): the service's own CA and a serving
//! certificate for its names and addresses, or the user's certificate.
//!
//! - On first start the service generates a CA (ECDSA P-256, 10 years,
//!   `CN=okd-install assisted service CA`) into
//!   `<dir>/assisted-service/ca.crt` (0644) and `ca.key` (0600), and
//!   keeps it: hosts booted with an earlier discovery Ignition keep
//!   trusting the service across restarts.
//! - At every start it issues a serving certificate (ECDSA P-256, 1 year,
//!   kept in memory only) signed by that CA for `localhost`, the
//!   `--service-name`s, and the listen address, or every address of the
//!   machine's interfaces when it listens on all (`0.0.0.0`, `::`). An
//!   address added later is covered at the next start.
//! - With `--tls-cert`/`--tls-key` the user's certificate chain and key
//!   are served as given, and `--tls-ca` (if any) is what the discovery
//!   Ignition and the clients trust.
//!
//! The discovery Ignition carries the CA ([`Tls::ca_pem`]); the agent
//! verifies the service with it (`--cacert`), the client commands with
//! `<dir>/assisted-service/ca.crt` or `--cacert`. TLS 1.2 and 1.3 only
//! (rustls' safe defaults), HTTP/1.1 by ALPN.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;

pub use okd_assisted_api::CA_CERT_FILE;

/// The CA's private key file in the secrets directory.
pub const CA_KEY_FILE: &str = "ca.key";

/// The CA's common name.
pub const CA_NAME: &str = "okd-install assisted service CA";

/// The serving certificate's validity, days (issued anew at every start).
pub const SERVING_DAYS: i64 = 365;

/// The CA's validity, days.
pub const CA_DAYS: i64 = 3650;

/// A TLS setting that cannot be loaded or made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read, parsed or written.
    #[error("{}: {reason}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A certificate cannot be made.
    #[error("issuing the serving certificate: {0}")]
    Issue(String),
}

impl From<crate::auth::AuthError> for TlsError {
    fn from(e: crate::auth::AuthError) -> TlsError {
        match e {
            crate::auth::AuthError::File { path, reason } => TlsError::File { path, reason },
            other => TlsError::Issue(other.to_string()),
        }
    }
}

fn file_error(path: &Path, reason: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The service's TLS: its server configuration and what clients trust.
pub struct Tls {
    /// The rustls server configuration (ALPN `http/1.1`).
    pub server: Arc<rustls::ServerConfig>,
    /// The CA certificate(s) clients verify the service with (PEM);
    /// `None`: the user's certificate, trusted through the system roots.
    pub ca_pem: Option<String>,
    /// Where [`Tls::ca_pem`] is (`None`: not a file of the service).
    pub ca_file: Option<PathBuf>,
    /// The names and addresses the serving certificate is for (for logs).
    pub subject_alt_names: Vec<String>,
    /// The serving key's pin: base64 of the SHA-256 of its
    /// SubjectPublicKeyInfo (RFC 7469 §2.4), as `curl --pinnedpubkey
    /// sha256//<pin>` and Chromium's `--ignore-certificate-errors-spki-list`
    /// take it. `None` for the user's certificate.
    pub spki_pin: Option<String>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("ca_file", &self.ca_file)
            .field("subject_alt_names", &self.subject_alt_names)
            .finish()
    }
}

fn ca_params() -> rcgen::CertificateParams {
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("no names");
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    p.distinguished_name
        .push(rcgen::DnType::CommonName, CA_NAME);
    p.distinguished_name
        .push(rcgen::DnType::OrganizationName, "okd-install");
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    p.use_authority_key_identifier_extension = true;
    p
}

/// A new CA: its self-signed certificate and its key (ECDSA P-256,
/// [`CA_DAYS`]).
fn new_ca() -> Result<(rcgen::Certificate, rcgen::KeyPair), TlsError> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .map_err(|e| TlsError::Issue(e.to_string()))?;
    let mut p = ca_params();
    validity(&mut p, CA_DAYS);
    let cert = p
        .self_signed(&key)
        .map_err(|e| TlsError::Issue(e.to_string()))?;
    Ok((cert, key))
}

fn validity(p: &mut rcgen::CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    // An hour back, for clocks a little behind.
    p.not_before = now - time::Duration::hours(1);
    p.not_after = now + time::Duration::days(days);
}

/// The addresses a listener on `listen` is reached at: that address, or
/// every interface address (and loopback) when it is unspecified.
pub fn listen_addresses(listen: SocketAddr) -> Vec<IpAddr> {
    let ip = listen.ip();
    let mut out = vec![
        IpAddr::from([127, 0, 0, 1]),
        IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
    ];
    if ip.is_unspecified() {
        if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
            for a in addrs {
                let Some(sa) = a.address else { continue };
                if let Some(v4) = sa.as_sockaddr_in() {
                    out.push(IpAddr::V4(v4.ip()));
                } else if let Some(v6) = sa.as_sockaddr_in6()
                    && v6.ip().segments()[0] & 0xffc0 != 0xfe80
                {
                    out.push(IpAddr::V6(v6.ip()));
                }
            }
        }
    } else {
        out.push(ip);
    }
    out.sort();
    out.dedup();
    out
}

fn server_config(
    chain: Vec<rustls_pki_types::CertificateDer<'static>>,
    key: rustls_pki_types::PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

impl Tls {
    /// The service's own TLS (module docs): the CA of
    /// `<dir>/assisted-service` (generated when missing) and a new serving
    /// certificate for `localhost`, `names` and `addresses`.
    ///
    /// # Errors
    /// [`TlsError::File`] naming a CA file that cannot be read, parsed or
    /// written, or a key readable by others; [`TlsError::Issue`].
    pub fn load_or_create(
        dir: &Path,
        names: &[String],
        addresses: &[IpAddr],
    ) -> Result<Tls, TlsError> {
        let secrets = dir.join(okd_assisted_api::SERVICE_SECRETS_DIR);
        okd_fs::create_dir_all(&secrets, 0o700).map_err(|e| file_error(&secrets, e))?;
        let (cert_path, key_path) = (secrets.join(CA_CERT_FILE), secrets.join(CA_KEY_FILE));
        let ca_key = match crate::auth::keys::read_secret(&key_path)? {
            Some(pem) => {
                let ca_pem =
                    std::fs::read_to_string(&cert_path).map_err(|e| file_error(&cert_path, e))?;
                let key = rcgen::KeyPair::from_pem(&pem).map_err(|e| file_error(&key_path, e))?;
                Some((ca_pem, key))
            }
            None => None,
        };
        let (ca_pem, ca_key) = match ca_key {
            Some(k) => k,
            None => {
                let (cert, key) = new_ca()?;
                okd_fs::write_atomic(&key_path, key.serialize_pem().as_bytes(), 0o600)
                    .map_err(|e| file_error(&key_path, e))?;
                okd_fs::write_atomic(&cert_path, cert.pem().as_bytes(), 0o644)
                    .map_err(|e| file_error(&cert_path, e))?;
                tracing::info!(path = %cert_path.display(), "generated the service's CA");
                (cert.pem(), key)
            }
        };
        let ca_der = okd_pki_free_der(&ca_pem).ok_or_else(|| {
            file_error(&cert_path, "no PEM certificate in it (move it and ca.key away: the service makes a new CA, and hosts need its new discovery Ignition)")
        })?;
        let mut tls = issue(ca_pem, ca_der, ca_key, names, addresses)?;
        tls.ca_file = Some(cert_path);
        Ok(tls)
    }

    /// As [`Tls::load_or_create`] with a CA made in memory and never
    /// written (tests, benchmarks).
    ///
    /// # Errors
    /// [`TlsError::Issue`].
    pub fn ephemeral(names: &[String], addresses: &[IpAddr]) -> Result<Tls, TlsError> {
        let (cert, key) = new_ca()?;
        issue(cert.pem(), cert.der().clone(), key, names, addresses)
    }

    /// The user's certificate chain (`cert`, PEM, leaf first) and key
    /// (`key`, PEM); `ca` (PEM) is what clients and agents are told to
    /// trust (`None`: the system roots).
    ///
    /// # Errors
    /// [`TlsError::File`] naming the file that cannot be read or parsed, a
    /// key readable by others, or a key that does not match.
    pub fn from_files(cert: &Path, key: &Path, ca: Option<&Path>) -> Result<Tls, TlsError> {
        let chain_pem = std::fs::read(cert).map_err(|e| file_error(cert, e))?;
        let chain: Vec<_> = rustls_pki_types::pem::PemObject::pem_slice_iter(&chain_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| file_error(cert, format!("not a PEM certificate chain: {e:?}")))?;
        if chain.is_empty() {
            return Err(file_error(cert, "no PEM certificate in it"));
        }
        let key_pem =
            crate::auth::keys::read_secret(key)?.ok_or_else(|| file_error(key, "no such file"))?;
        let key_der =
            <rustls_pki_types::PrivateKeyDer as rustls_pki_types::pem::PemObject>::from_pem_slice(
                key_pem.as_bytes(),
            )
            .map_err(|e| file_error(key, format!("not a PEM private key: {e:?}")))?;
        let server = server_config(chain, key_der).map_err(|e| file_error(cert, e))?;
        let ca_pem = match ca {
            Some(p) => Some(std::fs::read_to_string(p).map_err(|e| file_error(p, e))?),
            None => None,
        };
        Ok(Tls {
            server,
            ca_pem,
            ca_file: ca.map(Path::to_path_buf),
            subject_alt_names: Vec::new(),
            spki_pin: None,
        })
    }
}

/// A serving certificate for `localhost`, `names` and `addresses` signed
/// by the CA (`ca_pem`, `ca_der`, `ca_key`), and the server configuration
/// serving it with the CA after it.
fn issue(
    ca_pem: String,
    ca_der: rustls_pki_types::CertificateDer<'static>,
    ca_key: rcgen::KeyPair,
    names: &[String],
    addresses: &[IpAddr],
) -> Result<Tls, TlsError> {
    let issuer = rcgen::Issuer::new(ca_params(), ca_key);
    let mut sans: Vec<String> = vec!["localhost".into()];
    sans.extend(names.iter().cloned());
    sans.extend(addresses.iter().map(IpAddr::to_string));
    let mut leaf =
        rcgen::CertificateParams::new(sans.clone()).map_err(|e| TlsError::Issue(e.to_string()))?;
    leaf.distinguished_name
        .push(rcgen::DnType::CommonName, "okd-install assisted service");
    leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    leaf.use_authority_key_identifier_extension = true;
    validity(&mut leaf, SERVING_DAYS);
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .map_err(|e| TlsError::Issue(e.to_string()))?;
    let cert = leaf
        .signed_by(&key, &issuer)
        .map_err(|e| TlsError::Issue(e.to_string()))?;
    let server = server_config(
        vec![cert.der().clone(), ca_der],
        rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .map_err(TlsError::Issue)?;
    let spki = rcgen::PublicKeyData::subject_public_key_info(&key);
    let pin = base64::engine::general_purpose::STANDARD
        .encode(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &spki).as_ref());
    Ok(Tls {
        server,
        ca_pem: Some(ca_pem),
        ca_file: None,
        subject_alt_names: sans,
        spki_pin: Some(pin),
    })
}

/// The DER of the first certificate of a PEM text.
fn okd_pki_free_der(pem: &str) -> Option<rustls_pki_types::CertificateDer<'static>> {
    rustls_pki_types::pem::PemObject::pem_slice_iter(pem.as_bytes())
        .next()?
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_kept_and_the_key_private() {
        let d = tempfile::tempdir().unwrap();
        let a = Tls::load_or_create(d.path(), &["assisted.example".into()], &[]).unwrap();
        let b = Tls::load_or_create(d.path(), &[], &[]).unwrap();
        assert_eq!(a.ca_pem, b.ca_pem, "the CA survives a restart");
        assert!(
            a.subject_alt_names
                .contains(&"assisted.example".to_string())
        );
        let key = d.path().join("assisted-service").join(CA_KEY_FILE);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&key).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        let all = listen_addresses("0.0.0.0:8090".parse().unwrap());
        assert!(all.contains(&IpAddr::from([127, 0, 0, 1])), "{all:?}");
        assert_eq!(
            listen_addresses("192.0.2.1:8090".parse().unwrap()).len(),
            3,
            "loopback v4 and v6, and the address"
        );
    }
}
