//! RSA keys and X.509 certificates made the way openshift-install makes them.
//!
//! Follows installer.md §4.1 (Go's `crypto/x509` as called by
//! `pkg/asset/tls`): RSA-2048 keys written as PKCS#1 `RSA PRIVATE KEY` PEM;
//! public keys as PKIX DER under an `RSA PUBLIC KEY` header (a kept quirk);
//! version-3 certificates signed with sha256WithRSAEncryption; serial numbers
//! uniform in `[0, 2^63−1)`; `SubjectKeyId` = SHA-1 of the PKCS#1
//! `RSAPublicKey`; leaf `AuthorityKeyId` = the signer's SKI (none on
//! self-signed CAs); critical key usage and basic constraints; extensions in
//! Go's order (key usage, extended key usage, basic constraints, SKI, AKI,
//! SAN); subjects encoded like Go's `pkix.Name` (C, ST, L, O, OU, CN; several
//! values of one attribute share a multi-valued RDN; PrintableString when
//! possible, else UTF8String); a leaf's NotBefore is its signer's NotBefore.
//!
//! Certificates are DER-encoded here directly (module `der`) so that every
//! byte follows those rules; signing and key generation use aws-lc-rs.

mod der;

use std::net::IpAddr;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::signature::KeyPair as _;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha1::{Digest as _, Sha1};
use time::OffsetDateTime;

use der::{bit_string, oid, read_tlv, seq, set_of, tlv, uint};

/// Errors from key generation, signing and parsing.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// The RSA key generator failed.
    #[error("failed to generate an RSA-2048 key")]
    KeyGeneration,
    /// A PEM text holds no block of the expected type.
    #[error("no {0} PEM block found")]
    NoPem(&'static str),
    /// A private key could not be parsed.
    #[error("invalid RSA private key: {0}")]
    BadKey(String),
    /// Signing a certificate failed.
    #[error("failed to sign the certificate")]
    Sign,
    /// A CA subject lacks CN or OU (installer's wording).
    #[error("certification's subject is not set, or invalid")]
    Subject,
    /// A certificate could not be parsed.
    #[error("invalid certificate: {0}")]
    BadCertificate(String),
}

/// An RSA private key (RSA-2048 when generated here).
#[derive(Clone)]
pub struct RsaKey {
    pkcs1: Vec<u8>,
    public_pkcs1: Vec<u8>,
}

impl std::fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RsaKey({} bits, private part redacted)", self.bits())
    }
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Every PEM block of `text` as `(label, DER)`, in order; malformed blocks are skipped.
pub fn pem_blocks(text: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = after[..label_end].to_string();
        let body_start = &after[label_end + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body_start.find(&end_marker) else {
            break;
        };
        let body: String = body_start[..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if let Ok(der) = STANDARD.decode(body.as_bytes()) {
            out.push((label, der));
        }
        rest = &body_start[end + end_marker.len()..];
    }
    out
}

/// Extracts the PKCS#1 `RSAPrivateKey` from a PKCS#8 `PrivateKeyInfo` (RFC 5208).
fn pkcs8_to_pkcs1(pkcs8: &[u8]) -> Option<Vec<u8>> {
    let (_, body, _) = read_tlv(pkcs8)?;
    let (_, _, rest) = read_tlv(body)?; // version
    let (_, _, rest) = read_tlv(rest)?; // algorithm
    let (tag, key, _) = read_tlv(rest)?;
    (tag == 0x04).then(|| key.to_vec())
}

impl RsaKey {
    fn from_pkcs1(pkcs1: Vec<u8>) -> Result<RsaKey, PkiError> {
        let kp = aws_lc_rs::rsa::KeyPair::from_der(&pkcs1)
            .map_err(|e| PkiError::BadKey(e.to_string()))?;
        let public_pkcs1 = kp.public_key().as_ref().to_vec();
        Ok(RsaKey {
            pkcs1,
            public_pkcs1,
        })
    }

    /// Generates an RSA-2048 key with public exponent 65537 (installer.md §4.1).
    ///
    /// # Errors
    /// [`PkiError::KeyGeneration`] if the generator fails.
    pub fn generate() -> Result<RsaKey, PkiError> {
        let kp = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
            .map_err(|_| PkiError::KeyGeneration)?;
        let pkcs8 = kp.as_der().map_err(|_| PkiError::KeyGeneration)?;
        let pkcs1 = pkcs8_to_pkcs1(pkcs8.as_ref()).ok_or(PkiError::KeyGeneration)?;
        Ok(RsaKey {
            pkcs1,
            public_pkcs1: kp.public_key().as_ref().to_vec(),
        })
    }

    /// Parses the first `RSA PRIVATE KEY` (PKCS#1) or `PRIVATE KEY` (PKCS#8) PEM block.
    ///
    /// # Errors
    /// [`PkiError::NoPem`] without such a block, [`PkiError::BadKey`] when it is not an RSA key.
    pub fn from_pem(pem: &str) -> Result<RsaKey, PkiError> {
        for (label, der) in pem_blocks(pem) {
            match label.as_str() {
                "RSA PRIVATE KEY" => return RsaKey::from_pkcs1(der),
                "PRIVATE KEY" => {
                    let pkcs1 = pkcs8_to_pkcs1(&der)
                        .ok_or_else(|| PkiError::BadKey("malformed PKCS#8".into()))?;
                    return RsaKey::from_pkcs1(pkcs1);
                }
                _ => {}
            }
        }
        Err(PkiError::NoPem("RSA PRIVATE KEY"))
    }

    /// Modulus size in bits.
    pub fn bits(&self) -> usize {
        self.modulus().len() * 8
    }

    /// The PKCS#1 `RSAPrivateKey` DER.
    pub fn private_der(&self) -> &[u8] {
        &self.pkcs1
    }

    /// PEM `RSA PRIVATE KEY` (PKCS#1), 64-column base64, trailing newline — like
    /// Go's `x509.MarshalPKCS1PrivateKey` + `pem.EncodeToMemory`.
    pub fn private_pem(&self) -> String {
        pem_encode("RSA PRIVATE KEY", &self.pkcs1)
    }

    /// The PKCS#1 `RSAPublicKey` DER (`SEQUENCE { n, e }`).
    pub fn public_pkcs1_der(&self) -> &[u8] {
        &self.public_pkcs1
    }

    /// The PKIX `SubjectPublicKeyInfo` DER (rsaEncryption, NULL parameters).
    pub fn public_spki_der(&self) -> Vec<u8> {
        seq(&[
            seq(&[oid(&OID_RSA_ENCRYPTION), vec![0x05, 0x00]]),
            bit_string(0, &self.public_pkcs1),
        ])
    }

    /// The public key as openshift-install writes `*.pub`: PKIX body under an
    /// `RSA PUBLIC KEY` header (installer.md §4.1 quirk).
    pub fn public_pem(&self) -> String {
        pem_encode("RSA PUBLIC KEY", &self.public_spki_der())
    }

    fn modulus(&self) -> Vec<u8> {
        self.n_e().0
    }

    fn n_e(&self) -> (Vec<u8>, Vec<u8>) {
        let parse = || {
            let (_, body, _) = read_tlv(&self.public_pkcs1)?;
            let (_, n, rest) = read_tlv(body)?;
            let (_, e, _) = read_tlv(rest)?;
            let strip = |v: &[u8]| {
                v.iter()
                    .skip_while(|b| **b == 0)
                    .copied()
                    .collect::<Vec<u8>>()
            };
            Some((strip(n), strip(e)))
        };
        parse().unwrap_or_default()
    }

    /// OpenSSH `authorized_keys` line `ssh-rsa <base64>\n` (RFC 4253 §6.6),
    /// as Go's `ssh.MarshalAuthorizedKey` writes it.
    pub fn ssh_authorized_key(&self) -> String {
        let (n, e) = self.n_e();
        let mut wire = Vec::new();
        let mut put = |b: &[u8]| {
            wire.extend_from_slice(&(b.len() as u32).to_be_bytes());
            wire.extend_from_slice(b);
        };
        let mpint = |v: &[u8]| {
            let mut m = v.to_vec();
            if m.first().is_some_and(|b| b & 0x80 != 0) {
                m.insert(0, 0);
            }
            m
        };
        put(b"ssh-rsa");
        put(&mpint(&e));
        put(&mpint(&n));
        format!("ssh-rsa {}\n", STANDARD.encode(wire))
    }

    /// SHA-1 over the PKCS#1 public key: the SubjectKeyId Go computes.
    pub fn subject_key_id(&self) -> Vec<u8> {
        Sha1::digest(&self.public_pkcs1).to_vec()
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, PkiError> {
        let kp = aws_lc_rs::rsa::KeyPair::from_der(&self.pkcs1).map_err(|_| PkiError::Sign)?;
        let mut sig = vec![0u8; kp.public_modulus_len()];
        kp.sign(
            &aws_lc_rs::signature::RSA_PKCS1_SHA256,
            &aws_lc_rs::rand::SystemRandom::new(),
            msg,
            &mut sig,
        )
        .map_err(|_| PkiError::Sign)?;
        Ok(sig)
    }
}

/// Generates `n` RSA-2048 keys on all available cores (std threads).
///
/// # Errors
/// The first generation failure.
pub fn generate_keys(n: usize) -> Result<Vec<RsaKey>, PkiError> {
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(2)
        .min(n.max(1));
    let per: Vec<usize> = (0..threads)
        .map(|i| n / threads + usize::from(i < n % threads))
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = per
            .iter()
            .map(|&k| {
                s.spawn(move || {
                    (0..k)
                        .map(|_| RsaKey::generate())
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(n);
        for h in handles {
            out.extend(h.join().map_err(|_| PkiError::KeyGeneration)??);
        }
        Ok(out)
    })
}

/// A background generator of a known number of keys: `start` spawns worker
/// threads at once, `take` hands out keys as they finish (blocking until one
/// is ready) and generates inline once the planned number is used up.
pub struct KeyPool {
    rx: Mutex<Receiver<Result<RsaKey, PkiError>>>,
}

impl KeyPool {
    /// Starts generating `n` RSA-2048 keys on `threads` threads.
    pub fn start(n: usize, threads: usize) -> KeyPool {
        let (tx, rx) = channel();
        let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(n));
        for _ in 0..threads.max(1).min(n.max(1)) {
            let tx = tx.clone();
            let remaining = Arc::clone(&remaining);
            std::thread::spawn(move || {
                use std::sync::atomic::Ordering;
                while remaining
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(1))
                    .is_ok()
                {
                    if tx.send(RsaKey::generate()).is_err() {
                        return;
                    }
                }
            });
        }
        KeyPool { rx: Mutex::new(rx) }
    }

    /// The next key: from the pool, or generated now when the pool is exhausted.
    ///
    /// # Errors
    /// [`PkiError::KeyGeneration`] if generation failed.
    pub fn take(&self) -> Result<RsaKey, PkiError> {
        let rx = self.rx.lock().map_err(|_| PkiError::KeyGeneration)?;
        match rx.recv() {
            Ok(k) => k,
            Err(_) => RsaKey::generate(),
        }
    }
}

/// Subject attribute types, in the order Go's `pkix.Name` writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NameAttr {
    /// C (2.5.4.6).
    Country,
    /// ST (2.5.4.8).
    Province,
    /// L (2.5.4.7).
    Locality,
    /// O (2.5.4.10).
    Organization,
    /// OU (2.5.4.11).
    OrganizationalUnit,
    /// CN (2.5.4.3).
    CommonName,
}

impl NameAttr {
    fn oid(self) -> Vec<u8> {
        let last = match self {
            NameAttr::Country => 6,
            NameAttr::Province => 8,
            NameAttr::Locality => 7,
            NameAttr::Organization => 10,
            NameAttr::OrganizationalUnit => 11,
            NameAttr::CommonName => 3,
        };
        oid(&[2, 5, 4, last])
    }
}

/// Key usage bits (RFC 5280 §4.2.1.3). All false = no extension at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyUsage {
    /// digitalSignature (bit 0).
    pub digital_signature: bool,
    /// keyEncipherment (bit 2).
    pub key_encipherment: bool,
    /// keyCertSign (bit 5).
    pub cert_sign: bool,
}

impl KeyUsage {
    fn is_empty(self) -> bool {
        !(self.digital_signature || self.key_encipherment || self.cert_sign)
    }

    /// The BIT STRING Go writes: minimal length, trailing zero bits unused.
    fn der(self) -> Vec<u8> {
        let mut byte = 0u8;
        let mut last_bit = 0u8;
        for (bit, on) in [
            (0u8, self.digital_signature),
            (2, self.key_encipherment),
            (5, self.cert_sign),
        ] {
            if on {
                byte |= 0x80 >> bit;
                last_bit = last_bit.max(bit + 1);
            }
        }
        bit_string(8 - last_bit, &[byte])
    }
}

/// Extended key usages (RFC 5280 §4.2.1.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtKeyUsage {
    /// id-kp-serverAuth, 1.3.6.1.5.5.7.3.1.
    ServerAuth,
    /// id-kp-clientAuth, 1.3.6.1.5.5.7.3.2.
    ClientAuth,
}

/// What to put in a certificate (the installer's `CertCfg`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertConfig {
    /// Subject attributes; order within one attribute type is kept.
    pub subject: Vec<(NameAttr, String)>,
    /// DNS SANs.
    pub dns_names: Vec<String>,
    /// IP SANs (4 or 16 bytes in the certificate).
    pub ip_addresses: Vec<IpAddr>,
    /// Key usage (no extension when empty).
    pub key_usage: KeyUsage,
    /// Extended key usages (no extension when empty).
    pub ext_key_usage: Vec<ExtKeyUsage>,
    /// NotAfter − now.
    pub validity: Duration,
    /// CA certificate (basic constraints CA:TRUE).
    pub is_ca: bool,
}

impl CertConfig {
    /// The installer's signer profile (`tls.CertCfg` of its `*SignerCertKey`
    /// assets): subject `OU=<ou>, CN=<cn>`, key usage digitalSignature +
    /// keyEncipherment + keyCertSign, no extended key usage, no SANs,
    /// CA:TRUE, valid for `validity`.
    pub fn signer(ou: &str, cn: &str, validity: Duration) -> CertConfig {
        CertConfig {
            subject: vec![
                (NameAttr::OrganizationalUnit, ou.to_string()),
                (NameAttr::CommonName, cn.to_string()),
            ],
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            key_usage: KeyUsage {
                digital_signature: true,
                key_encipherment: true,
                cert_sign: true,
            },
            ext_key_usage: Vec::new(),
            validity,
            is_ca: true,
        }
    }
}

/// A certificate with its DER, PEM and validity window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// DER encoding.
    pub der: Vec<u8>,
    /// One `CERTIFICATE` PEM block with a trailing newline.
    pub pem: String,
    /// Start of validity (whole seconds).
    pub not_before: OffsetDateTime,
    /// End of validity.
    pub not_after: OffsetDateTime,
}

/// A certificate and its private key.
#[derive(Debug, Clone)]
pub struct CertKey {
    /// The certificate.
    pub cert: Certificate,
    /// Its private key.
    pub key: RsaKey,
}

const OID_RSA_ENCRYPTION: [u64; 7] = [1, 2, 840, 113549, 1, 1, 1];
const OID_SHA256_RSA: [u64; 7] = [1, 2, 840, 113549, 1, 1, 11];

fn is_printable_string(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b" '()+,-./:=?*".contains(&b))
}

/// Encodes a subject like Go's `pkix.Name.ToRDNSequence`: attribute types in
/// C, ST, L, O, OU, CN order, several values of one type in one RDN.
fn name_der(subject: &[(NameAttr, String)]) -> Vec<u8> {
    let mut attrs: Vec<NameAttr> = subject.iter().map(|(a, _)| *a).collect();
    attrs.sort();
    attrs.dedup();
    let rdns: Vec<Vec<u8>> = attrs
        .iter()
        .map(|attr| {
            let values: Vec<Vec<u8>> = subject
                .iter()
                .filter(|(a, _)| a == attr)
                .map(|(_, v)| {
                    let tag = if is_printable_string(v) { 0x13 } else { 0x0c };
                    seq(&[attr.oid(), tlv(tag, v.as_bytes())])
                })
                .collect();
            set_of(&values)
        })
        .collect();
    seq(&rdns)
}

fn time_der(t: OffsetDateTime) -> Vec<u8> {
    let t = t.to_offset(time::UtcOffset::UTC);
    if (1950..2050).contains(&t.year()) {
        let s = format!(
            "{:02}{:02}{:02}{:02}{:02}{:02}Z",
            t.year() % 100,
            t.month() as u8,
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        );
        tlv(0x17, s.as_bytes())
    } else {
        let s = format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}Z",
            t.year(),
            t.month() as u8,
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        );
        tlv(0x18, s.as_bytes())
    }
}

fn extension(id: &[u64], critical: bool, value: Vec<u8>) -> Vec<u8> {
    let mut parts = vec![oid(id)];
    if critical {
        parts.push(vec![0x01, 0x01, 0xff]);
    }
    parts.push(tlv(0x04, &value));
    seq(&parts)
}

/// One past the largest serial number drawn: 2^63 − 1 (the installer draws
/// `rand.Int(rand.Reader, 2^63 − 1)`, `pkg/asset/tls/tls.go`).
pub const SERIAL_LIMIT: u64 = (1u64 << 63) - 1;

/// A random serial number below [`SERIAL_LIMIT`].
pub fn random_serial() -> u64 {
    use rand::Rng as _;
    rand::rng().random_range(0..SERIAL_LIMIT)
}

struct Issuer<'a> {
    name: Vec<u8>,
    key: &'a RsaKey,
    ski: Option<Vec<u8>>,
}

fn build(
    cfg: &CertConfig,
    key: &RsaKey,
    issuer: Issuer<'_>,
    not_before: OffsetDateTime,
    now: OffsetDateTime,
    serial: u64,
) -> Result<Certificate, PkiError> {
    let not_before = not_before.replace_nanosecond(0).unwrap_or(not_before);
    let not_after = (now + cfg.validity)
        .replace_nanosecond(0)
        .unwrap_or(now + cfg.validity);
    let subject = name_der(&cfg.subject);
    let mut exts = Vec::new();
    if !cfg.key_usage.is_empty() {
        exts.push(extension(&[2, 5, 29, 15], true, cfg.key_usage.der()));
    }
    if !cfg.ext_key_usage.is_empty() {
        let oids: Vec<Vec<u8>> = cfg
            .ext_key_usage
            .iter()
            .map(|e| match e {
                ExtKeyUsage::ServerAuth => oid(&[1, 3, 6, 1, 5, 5, 7, 3, 1]),
                ExtKeyUsage::ClientAuth => oid(&[1, 3, 6, 1, 5, 5, 7, 3, 2]),
            })
            .collect();
        exts.push(extension(&[2, 5, 29, 37], false, seq(&oids)));
    }
    let bc = if cfg.is_ca {
        seq(&[vec![0x01, 0x01, 0xff]])
    } else {
        seq(&[])
    };
    exts.push(extension(&[2, 5, 29, 19], true, bc));
    exts.push(extension(
        &[2, 5, 29, 14],
        false,
        tlv(0x04, &key.subject_key_id()),
    ));
    if let Some(aki) = issuer.ski.as_ref().filter(|_| issuer.name != subject) {
        exts.push(extension(&[2, 5, 29, 35], false, seq(&[tlv(0x80, aki)])));
    }
    if !cfg.dns_names.is_empty() || !cfg.ip_addresses.is_empty() {
        let mut names: Vec<Vec<u8>> = cfg
            .dns_names
            .iter()
            .map(|d| tlv(0x82, d.as_bytes()))
            .collect();
        for ip in &cfg.ip_addresses {
            let bytes = match ip {
                IpAddr::V4(v4) => v4.octets().to_vec(),
                IpAddr::V6(v6) => v6
                    .to_ipv4_mapped()
                    .map(|v4| v4.octets().to_vec())
                    .unwrap_or_else(|| v6.octets().to_vec()),
            };
            names.push(tlv(0x87, &bytes));
        }
        exts.push(extension(&[2, 5, 29, 17], subject == seq(&[]), seq(&names)));
    }
    let sig_alg = seq(&[oid(&OID_SHA256_RSA), vec![0x05, 0x00]]);
    let tbs = seq(&[
        tlv(0xa0, &uint(&[2])),
        uint(&serial.to_be_bytes()),
        sig_alg.clone(),
        issuer.name.clone(),
        seq(&[time_der(not_before), time_der(not_after)]),
        subject,
        key.public_spki_der(),
        tlv(0xa3, &seq(&exts)),
    ]);
    let sig = issuer.key.sign(&tbs)?;
    let der = seq(&[tbs, sig_alg, bit_string(0, &sig)]);
    let pem = pem_encode("CERTIFICATE", &der);
    Ok(Certificate {
        der,
        pem,
        not_before,
        not_after,
    })
}

/// A self-signed certificate (installer.md §4.1 "Self-signed CA"):
/// NotBefore = `now`, NotAfter = `now + validity`, no AuthorityKeyId.
///
/// # Errors
/// [`PkiError::Subject`] for a CA without CN and OU; [`PkiError::Sign`].
pub fn self_signed(
    cfg: &CertConfig,
    key: RsaKey,
    now: OffsetDateTime,
) -> Result<CertKey, PkiError> {
    self_signed_with_serial(cfg, key, now, random_serial())
}

/// [`self_signed`] with the serial number given (e.g. drawn from a seeded
/// generator, so a run can be repeated byte for byte).
///
/// # Errors
/// As [`self_signed`].
pub fn self_signed_with_serial(
    cfg: &CertConfig,
    key: RsaKey,
    now: OffsetDateTime,
    serial: u64,
) -> Result<CertKey, PkiError> {
    if cfg.is_ca {
        let has = |a: NameAttr| cfg.subject.iter().any(|(x, v)| *x == a && !v.is_empty());
        if !has(NameAttr::CommonName) || !has(NameAttr::OrganizationalUnit) {
            return Err(PkiError::Subject);
        }
    }
    let issuer = Issuer {
        name: name_der(&cfg.subject),
        key: &key,
        ski: None,
    };
    let cert = build(cfg, &key, issuer, now, now, serial)?;
    Ok(CertKey { cert, key })
}

/// A certificate signed by `ca` (installer.md §4.1 "Signed leaf"): issuer =
/// the CA's subject bytes, NotBefore = the CA's NotBefore, NotAfter = `now +
/// validity`, AuthorityKeyId = the CA's SubjectKeyId.
///
/// # Errors
/// [`PkiError::BadCertificate`] when the CA certificate cannot be parsed; [`PkiError::Sign`].
pub fn signed(
    cfg: &CertConfig,
    key: RsaKey,
    ca: &CertKey,
    now: OffsetDateTime,
) -> Result<CertKey, PkiError> {
    signed_with_serial(cfg, key, ca, now, random_serial())
}

/// [`signed`] with the serial number given.
///
/// # Errors
/// As [`signed`].
pub fn signed_with_serial(
    cfg: &CertConfig,
    key: RsaKey,
    ca: &CertKey,
    now: OffsetDateTime,
    serial: u64,
) -> Result<CertKey, PkiError> {
    use x509_parser::prelude::*;
    let (_, parsed) = X509Certificate::from_der(&ca.cert.der)
        .map_err(|e| PkiError::BadCertificate(e.to_string()))?;
    let name = parsed.tbs_certificate.subject.as_raw().to_vec();
    let ski = parsed
        .extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
            _ => None,
        });
    let issuer = Issuer {
        name,
        key: &ca.key,
        ski,
    };
    let cert = build(cfg, &key, issuer, ca.cert.not_before, now, serial)?;
    Ok(CertKey { cert, key })
}

/// A chained server certificate file: the leaf PEM, `\n`, then the signer PEM
/// (so a blank line separates them, installer.md §4.1 "AppendParent").
pub fn pem_with_parent(cert: &Certificate, parent: &Certificate) -> String {
    format!("{}\n{}", cert.pem, parent.pem)
}

/// The first `CERTIFICATE` PEM block of a bundle, re-encoded (64 columns).
pub fn first_cert_of_bundle(pem: &str) -> Option<String> {
    pem_blocks(pem)
        .into_iter()
        .find(|(l, _)| l == "CERTIFICATE")
        .map(|(_, der)| pem_encode("CERTIFICATE", &der))
}

/// What callers need to know about a parsed certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// Subject in RFC 4514 order (`CN=root-ca,OU=openshift`).
    pub subject: String,
    /// Issuer, same format.
    pub issuer: String,
    /// Start of validity.
    pub not_before: OffsetDateTime,
    /// End of validity.
    pub not_after: OffsetDateTime,
    /// DNS SANs.
    pub dns_names: Vec<String>,
    /// Basic constraints CA:TRUE.
    pub is_ca: bool,
}

fn rfc4514(name: &x509_parser::x509::X509Name<'_>) -> String {
    let mut rdns: Vec<String> = name
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(|atv| {
                    let key = match atv.attr_type().to_id_string().as_str() {
                        "2.5.4.3" => "CN".to_string(),
                        "2.5.4.10" => "O".to_string(),
                        "2.5.4.11" => "OU".to_string(),
                        "2.5.4.6" => "C".to_string(),
                        "2.5.4.8" => "ST".to_string(),
                        "2.5.4.7" => "L".to_string(),
                        other => other.to_string(),
                    };
                    format!("{key}={}", atv.as_str().unwrap_or("?"))
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    rdns.reverse();
    rdns.join(",")
}

/// Parses every `CERTIFICATE` block of a PEM text (e.g. a CA bundle).
///
/// # Errors
/// [`PkiError::NoPem`] when there is none; [`PkiError::BadCertificate`] for a malformed one.
pub fn parse_certs(pem: &str) -> Result<Vec<CertInfo>, PkiError> {
    use x509_parser::prelude::*;
    let blocks: Vec<Vec<u8>> = pem_blocks(pem)
        .into_iter()
        .filter(|(l, _)| l == "CERTIFICATE")
        .map(|(_, d)| d)
        .collect();
    if blocks.is_empty() {
        return Err(PkiError::NoPem("CERTIFICATE"));
    }
    blocks
        .iter()
        .map(|der| {
            let (_, c) = X509Certificate::from_der(der)
                .map_err(|e| PkiError::BadCertificate(e.to_string()))?;
            let dns_names = c
                .subject_alternative_name()
                .ok()
                .flatten()
                .map(|san| {
                    san.value
                        .general_names
                        .iter()
                        .filter_map(|g| match g {
                            GeneralName::DNSName(d) => Some(d.to_string()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let is_ca = c
                .basic_constraints()
                .ok()
                .flatten()
                .is_some_and(|b| b.value.ca);
            Ok(CertInfo {
                subject: rfc4514(c.subject()),
                issuer: rfc4514(c.issuer()),
                not_before: c.validity().not_before.to_datetime(),
                not_after: c.validity().not_after.to_datetime(),
                dns_names,
                is_ca,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_usage_bits_like_go() {
        assert_eq!(
            KeyUsage {
                digital_signature: true,
                key_encipherment: true,
                cert_sign: true
            }
            .der(),
            vec![0x03, 0x02, 0x02, 0xa4]
        );
        assert_eq!(
            KeyUsage {
                digital_signature: true,
                key_encipherment: true,
                cert_sign: false
            }
            .der(),
            vec![0x03, 0x02, 0x05, 0xa0]
        );
    }

    #[test]
    fn multi_valued_rdn_and_string_types() {
        let n = name_der(&[
            (NameAttr::CommonName, "a_b".into()),
            (NameAttr::Organization, "x".into()),
            (NameAttr::Organization, "y y".into()),
        ]);
        // SEQUENCE { SET { O=x, O="y y" } , SET { CN=a_b (UTF8String) } }
        let (_, body, _) = read_tlv(&n).unwrap();
        let (t1, set1, rest) = read_tlv(body).unwrap();
        assert_eq!(t1, 0x31);
        assert!(set1.iter().filter(|b| **b == 0x30).count() >= 2);
        let (_, set2, _) = read_tlv(rest).unwrap();
        assert!(set2.windows(2).any(|w| w == [0x0c, 0x03]));
    }
}
