//! X.509 certificates (RFC 5280) DER-encoded the way Go's `crypto/x509`
//! writes them for openshift-install (openshift/installer `pkg/asset/tls/tls.go`).

use std::net::IpAddr;
use std::time::Duration;

use time::OffsetDateTime;

use crate::PkiError;
use crate::der::{bit_string, oid, seq, set_of, tlv, uint};
use crate::key::RsaKey;
use crate::pem::pem_encode;

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

impl CertKey {
    /// A certificate and key read back from PEM (the first `CERTIFICATE`
    /// block of `cert_pem`, a PKCS#1 or PKCS#8 RSA key), e.g. a signer an
    /// earlier step wrote to disk, to sign more certificates with.
    ///
    /// # Errors
    /// [`PkiError::NoPem`] without a certificate block,
    /// [`PkiError::BadCertificate`] / the key's error when either does not
    /// parse.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<CertKey, PkiError> {
        let first = crate::first_cert_of_bundle(cert_pem).ok_or(PkiError::NoPem("CERTIFICATE"))?;
        let der = crate::pem_blocks(&first)
            .into_iter()
            .find(|(l, _)| l == "CERTIFICATE")
            .map(|(_, d)| d)
            .ok_or(PkiError::NoPem("CERTIFICATE"))?;
        let info = crate::parse_certs(&first)?
            .into_iter()
            .next()
            .ok_or(PkiError::NoPem("CERTIFICATE"))?;
        Ok(CertKey {
            cert: Certificate {
                der,
                pem: first,
                not_before: info.not_before,
                not_after: info.not_after,
            },
            key: RsaKey::from_pem(key_pem)?,
        })
    }
}

/// OID sha256WithRSAEncryption (RFC 8017 Appendix C).
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

/// A self-signed certificate (openshift/installer `pkg/asset/tls/tls.go`
/// `SelfSignedCertificate`):
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

/// A certificate signed by `ca` (openshift/installer `pkg/asset/tls/tls.go`
/// `SignedCertificate`): issuer =
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
/// (so a blank line separates them, as the `AppendParent` option of
/// openshift/installer `pkg/asset/tls/` does).
pub fn pem_with_parent(cert: &Certificate, parent: &Certificate) -> String {
    format!("{}\n{}", cert.pem, parent.pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::der::read_tlv;

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
