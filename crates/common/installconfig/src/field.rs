//! Typed field errors: the shape of Kubernetes' `field.Error`
//! (`k8s.io/apimachinery/pkg/util/validation/field/errors.go`), which
//! openshift-install's validation returns and aggregates.
//!
//! A [`FieldError`] prints as `<path>: <kind>[: <value>][: <detail>]`, e.g.
//! `platform.aws.region: Required value: region must be specified` or
//! `networking.networkType: Unsupported value: "Foo": supported values:
//! "OVNKubernetes"` (openshift/installer `pkg/types/validation/installconfig.go`,
//! k8s.io/apimachinery `pkg/util/validation/field/errors.go`).

use std::fmt;

/// The rule class of a field error (`field.ErrorType`); [`ErrorKind::as_str`]
/// gives the text Kubernetes prints for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `Required value`: the field is missing or empty.
    Required,
    /// `Invalid value`: the value breaks a rule named in the detail.
    Invalid,
    /// `Unsupported value`: the value is not one of a fixed set (listed in the detail).
    Unsupported,
    /// `Forbidden`: the field may not be set in this combination.
    Forbidden,
    /// `Too long`: a string or list is longer than allowed.
    TooLong,
    /// `Too many`: a list has more items than allowed.
    TooMany,
    /// `Duplicate value`: the value occurs twice where it must be unique.
    Duplicate,
}

impl ErrorKind {
    /// The text of the kind as Kubernetes prints it, e.g. `Invalid value`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Required => "Required value",
            ErrorKind::Invalid => "Invalid value",
            ErrorKind::Unsupported => "Unsupported value",
            ErrorKind::Forbidden => "Forbidden",
            ErrorKind::TooLong => "Too long",
            ErrorKind::TooMany => "Too many",
            ErrorKind::Duplicate => "Duplicate value",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The offending value of a field error, as far as it may be shown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldValue {
    /// Not shown: the rule needs no value (`Required`, `Forbidden`) or the
    /// value is a secret (the pull secret).
    Omitted,
    /// A string value, printed quoted (Go `%q`; here JSON string escaping).
    Str(String),
    /// A number, printed as is.
    Int(i64),
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Omitted => Ok(()),
            FieldValue::Str(s) => f.write_str(&quote(s)),
            FieldValue::Int(n) => write!(f, "{n}"),
        }
    }
}

/// One validation failure of one field of install-config.yaml.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {kind}{}{}", value_part(value), detail_part(detail))]
pub struct FieldError {
    /// The field's path in the document, e.g. `compute[0].replicas`.
    pub path: String,
    /// Which kind of rule failed.
    pub kind: ErrorKind,
    /// The offending value ([`FieldValue::Omitted`] for secrets).
    pub value: FieldValue,
    /// The rule in words (may be empty, e.g. for `Duplicate value`).
    pub detail: String,
}

fn value_part(v: &FieldValue) -> String {
    match v {
        FieldValue::Omitted => String::new(),
        v => format!(": {v}"),
    }
}

fn detail_part(d: &str) -> String {
    if d.is_empty() {
        String::new()
    } else {
        format!(": {d}")
    }
}

impl FieldError {
    /// A field error of `kind` on `path`.
    pub fn new(
        path: impl Into<String>,
        kind: ErrorKind,
        value: FieldValue,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            path: path.into(),
            kind,
            value,
            detail: detail.into(),
        }
    }

    /// `Invalid value` with a string value.
    pub fn invalid(path: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        Self::new(
            path,
            ErrorKind::Invalid,
            FieldValue::Str(value.to_string()),
            detail,
        )
    }

    /// `Invalid value` with a numeric value.
    pub fn invalid_n(path: impl Into<String>, value: i64, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorKind::Invalid, FieldValue::Int(value), detail)
    }

    /// `Required value`.
    pub fn required(path: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorKind::Required, FieldValue::Omitted, detail)
    }
}

/// Go `%q` of a string (close enough: JSON string escaping).
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_kubernetes_field_errors() {
        let cases = [
            (
                FieldError::invalid("a.b", "x\"y", "must be z"),
                "a.b: Invalid value: \"x\\\"y\": must be z",
            ),
            (
                FieldError::invalid_n("n", -1, "must be positive"),
                "n: Invalid value: -1: must be positive",
            ),
            (
                FieldError::required("r", "r is required"),
                "r: Required value: r is required",
            ),
            (
                FieldError::new("d", ErrorKind::Duplicate, FieldValue::Str("v".into()), ""),
                "d: Duplicate value: \"v\"",
            ),
            (
                FieldError::new("p", ErrorKind::Invalid, FieldValue::Omitted, "bad secret"),
                "p: Invalid value: bad secret",
            ),
            (
                FieldError::new(
                    "l",
                    ErrorKind::TooMany,
                    FieldValue::Int(4),
                    "must have at most 3 items",
                ),
                "l: Too many: 4: must have at most 3 items",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }
}
