//! PEM text (RFC 7468): encoding DER under a label, finding the blocks of
//! a text.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// `der` as one PEM block labelled `label`: 64-column base64, trailing
/// newline (RFC 7468 §2, as Go's `pem.EncodeToMemory`).
pub(crate) fn pem_encode(label: &str, der: &[u8]) -> String {
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

/// The first `CERTIFICATE` PEM block of a bundle, re-encoded (64 columns).
pub fn first_cert_of_bundle(pem: &str) -> Option<String> {
    pem_blocks(pem)
        .into_iter()
        .find(|(l, _)| l == "CERTIFICATE")
        .map(|(_, der)| pem_encode("CERTIFICATE", &der))
}
