//! Reading certificates back: subject, issuer, validity, SANs, CA flag.

use time::OffsetDateTime;

use crate::PkiError;
use crate::pem::pem_blocks;

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
