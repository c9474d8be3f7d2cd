//! Secrets that cannot be printed.
//!
//! [`Secret`] holds a secret string (a pull secret, a password, a token, a
//! private key in PEM) in a [`secrecy::SecretString`]: its `Debug` output is
//! `[REDACTED]`, it has no `Display`, and its memory is wiped when dropped. So
//! a `#[derive(Debug)]` type holding one can be logged (`tracing`'s `?value`),
//! put in an error message or printed with `{:?}` without showing the value.
//!
//! The value is read only through [`ExposeSecret::expose_secret`], at the
//! places that really write it (a file, an Ignition data URL, an HTTP header),
//! so each of them is found by searching for `expose_secret`.
//!
//! Deserializing reads a plain string. There is deliberately no `Serialize`
//! impl: a field that is written to a file says so with
//! `#[serde(serialize_with = "okd_secret::serialize")]`, which writes the plain
//! string, so files keep their exact bytes.

use std::fmt;

pub use secrecy::ExposeSecret;
use secrecy::SecretString;
use serde::{Deserialize, Deserializer, Serializer};

/// A secret string: `Debug` prints `[REDACTED]` (or `""` when empty, which
/// tells nothing), no `Display`, wiped on drop. Read it with
/// [`ExposeSecret::expose_secret`].
#[derive(Clone, Default)]
pub struct Secret(SecretString);

/// What `Debug` prints for a non-empty [`Secret`].
pub const REDACTED: &str = "[REDACTED]";

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(SecretString::from(value.into()))
    }

    /// True when the secret is the empty string (e.g. a redacted pull secret).
    pub fn is_empty(&self) -> bool {
        self.0.expose_secret().is_empty()
    }
}

impl ExposeSecret<str> for Secret {
    fn expose_secret(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            f.write_str("\"\"")
        } else {
            f.write_str(REDACTED)
        }
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        self.expose_secret() == other.expose_secret()
    }
}

impl Eq for Secret {}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret::new(value)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Secret, D::Error> {
        String::deserialize(d).map(Secret::new)
    }
}

/// Serializes a [`Secret`] as its plain string, for the fields that are
/// written to a file: `#[serde(serialize_with = "okd_secret::serialize")]`.
///
/// # Errors
/// The serializer's.
pub fn serialize<S: Serializer>(secret: &Secret, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose_secret())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Serialize, serde::Deserialize)]
    struct Holder {
        name: String,
        #[serde(serialize_with = "crate::serialize")]
        secret: Secret,
    }

    #[test]
    fn debug_redacts_and_empty_shows_empty() {
        let h = Holder {
            name: "visible".into(),
            secret: Secret::new("hunter2"),
        };
        let d = format!("{h:?} {h:#?}");
        assert!(d.contains("visible"), "{d}");
        assert!(d.contains(REDACTED), "{d}");
        assert!(!d.contains("hunter2"), "{d}");
        assert_eq!(format!("{:?}", Secret::default()), "\"\"");
    }

    #[test]
    fn serde_round_trip_is_the_plain_string() {
        let text = r#"{"name":"n","secret":"p\"w"}"#;
        let h: Holder = serde_json::from_str(text).unwrap();
        assert_eq!(h.secret.expose_secret(), "p\"w");
        assert_eq!(serde_json::to_string(&h).unwrap(), text);
    }

    #[test]
    fn equality_compares_values() {
        assert_eq!(Secret::from("a"), Secret::new(String::from("a")));
        assert_ne!(Secret::from("a"), Secret::from("b"));
        assert!(Secret::default().is_empty());
    }
}
