//! PKCS#10 certification requests built byte by byte, for tests of CSR
//! checks against what generators (rcgen, `openssl req`) never write:
//! several `extensionRequest` attributes, an attribute with several values,
//! a duplicate extension, an extension whose value does not parse.
//!
//! Layout (RFC 2986 §4): `CertificationRequest ::= SEQUENCE {
//! certificationRequestInfo, signatureAlgorithm, signature BIT STRING }`,
//! the info `SEQUENCE { version INTEGER 0, subject Name,
//! subjectPKInfo, attributes [0] IMPLICIT SET OF Attribute }`; the
//! `extensionRequest` attribute is PKCS#9 (RFC 2985 §5.4.2, OID
//! 1.2.840.113549.1.9.14) holding `Extensions` (RFC 5280 §4.1). Signed with
//! ECDSA P-256/SHA-256 (RFC 5758 §3.2) by an rcgen key, so an API server's
//! signature check passes.

use std::net::IpAddr;

use base64::Engine as _;
use rcgen::{PublicKeyData as _, SigningKey as _};

/// One requested extension (RFC 5280 §4.1 `Extension`).
#[derive(Debug, Clone)]
pub struct Extension {
    /// The extension's OID, as arcs (`[2, 5, 29, 17]`).
    pub oid: Vec<u64>,
    /// The `critical` flag (written only when true, as DER requires).
    pub critical: bool,
    /// The DER inside `extnValue`'s OCTET STRING.
    pub value: Vec<u8>,
}

impl Extension {
    /// subjectAltName (2.5.29.17) naming `names`: each an IP address
    /// (`iPAddress`, 4 or 16 bytes) when it parses as one, else a `dNSName`.
    pub fn san(names: &[&str]) -> Extension {
        let mut seq = Vec::new();
        for n in names {
            match n.parse::<IpAddr>() {
                Ok(IpAddr::V4(a)) => seq.extend(tlv(0x87, &a.octets())),
                Ok(IpAddr::V6(a)) => seq.extend(tlv(0x87, &a.octets())),
                Err(_) => seq.extend(tlv(0x82, n.as_bytes())),
            }
        }
        Extension::raw(&[2, 5, 29, 17], tlv(0x30, &seq))
    }

    /// keyUsage (2.5.29.15) `digitalSignature`, critical.
    pub fn key_usage_digital_signature() -> Extension {
        Extension {
            critical: true,
            ..Extension::raw(&[2, 5, 29, 15], tlv(0x03, &[0x07, 0x80]))
        }
    }

    /// Extension `oid` with `value` as given (well-formed or not).
    pub fn raw(oid: &[u64], value: Vec<u8>) -> Extension {
        Extension {
            oid: oid.to_vec(),
            critical: false,
            value,
        }
    }

    fn der(&self) -> Vec<u8> {
        let mut body = tlv(0x06, &oid(&self.oid));
        if self.critical {
            body.extend(tlv(0x01, &[0xff]));
        }
        body.extend(tlv(0x04, &self.value));
        tlv(0x30, &body)
    }
}

/// A request for subject `CN=<cn>, O=<org>` (UTF8String values; no O when
/// `org` is empty) carrying one `extensionRequest` attribute per element of
/// `extension_requests`; each element lists the values of that attribute's
/// SET (one for a well-formed request), each value its extensions.
/// Returns the PEM (`CERTIFICATE REQUEST`).
///
/// # Panics
/// When `key` cannot sign (it must be an ECDSA P-256 rcgen key).
pub fn request_pem(
    key: &rcgen::KeyPair,
    cn: &str,
    org: &str,
    extension_requests: &[Vec<Vec<Extension>>],
) -> Vec<u8> {
    assert!(
        key.algorithm() == &rcgen::PKCS_ECDSA_P256_SHA256,
        "pkcs10::request_pem signs with ECDSA P-256/SHA-256 only"
    );
    let mut name = Vec::new();
    if !org.is_empty() {
        name.extend(rdn(&[2, 5, 4, 10], org));
    }
    name.extend(rdn(&[2, 5, 4, 3], cn));
    let mut attrs = Vec::new();
    for values in extension_requests {
        let mut set = Vec::new();
        for exts in values {
            let list: Vec<u8> = exts.iter().flat_map(Extension::der).collect();
            set.extend(tlv(0x30, &list));
        }
        let mut attr = tlv(0x06, &oid(&[1, 2, 840, 113_549, 1, 9, 14]));
        attr.extend(tlv(0x31, &set));
        attrs.extend(tlv(0x30, &attr));
    }
    let mut info = tlv(0x02, &[0]);
    info.extend(tlv(0x30, &name));
    info.extend(key.subject_public_key_info());
    info.extend(tlv(0xa0, &attrs));
    let info = tlv(0x30, &info);
    let sig = key.sign(&info).expect("signing the request");
    let mut bits = vec![0];
    bits.extend(sig);
    let mut req = info;
    req.extend(tlv(0x30, &tlv(0x06, &oid(&[1, 2, 840, 10045, 4, 3, 2]))));
    req.extend(tlv(0x03, &bits));
    let der = tlv(0x30, &req);
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE REQUEST-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE REQUEST-----\n");
    pem.into_bytes()
}

/// One `RelativeDistinguishedName` with one UTF8String attribute.
fn rdn(attr: &[u64], value: &str) -> Vec<u8> {
    let mut atv = tlv(0x06, &oid(attr));
    atv.extend(tlv(0x0c, value.as_bytes()));
    tlv(0x31, &tlv(0x30, &atv))
}

/// DER tag-length-value with a definite length (X.690 §8.1.3).
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// The content octets of an OBJECT IDENTIFIER (X.690 §8.19).
fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut push = |mut v: u64| {
        let mut groups = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            groups.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        out.extend(groups.into_iter().rev());
    };
    push(arcs[0] * 40 + arcs[1]);
    for a in &arcs[2..] {
        push(*a);
    }
    out
}
