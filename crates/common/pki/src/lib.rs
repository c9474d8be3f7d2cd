//! RSA keys and X.509 certificates made the way openshift-install makes them.
//!
//! Follows openshift/installer `pkg/asset/tls/tls.go` (Go's `crypto/x509` as
//! called by `pkg/asset/tls`): RSA-2048 keys written as PKCS#1 `RSA PRIVATE KEY` PEM;
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

mod cert;
mod der;
mod inspect;
mod key;
mod pem;

pub use cert::{
    CertConfig, CertKey, Certificate, ExtKeyUsage, KeyUsage, NameAttr, SERIAL_LIMIT,
    pem_with_parent, random_serial, self_signed, self_signed_with_serial, signed,
    signed_with_serial,
};
pub use inspect::{CertInfo, parse_certs};
pub use key::{KeyPool, RsaKey, generate_keys};
pub use pem::{first_cert_of_bundle, pem_blocks};

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
