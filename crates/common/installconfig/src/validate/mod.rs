//! `ValidateInstallConfig` (openshift/installer
//! `pkg/types/validation/installconfig.go`), in evaluation order, one
//! module per area of the config.
//!
//! Every error is a typed [`FieldError`] (Kubernetes' `field.Error`) that prints
//! as today's text (`<path>: Invalid value: "<v>": <detail>`, `Required value`,
//! `Unsupported value`, `Forbidden`, `Duplicate value`, `Too many`).

use std::net::IpAddr;

use base64::Engine as _;
use ipnet::IpNet;
use serde_json::Value;

use crate::LoadOptions;
use crate::PlatformName as P;
pub(super) use crate::field::quote;
use crate::field::{ErrorKind, FieldError, FieldValue};
use crate::types::*;

mod features;
mod keys;
mod names;
mod networking;
mod pools;
mod sources;

use features::*;
use keys::*;
use names::*;
use networking::*;
use pools::*;
use sources::*;

pub(crate) use keys::ssh_key_error;
pub(crate) use names::{base_domain_error, cluster_name_error};
pub(crate) use pools::unsupported_platform;
pub(crate) use sources::pull_secret_error;

pub(super) const RFC1123_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// The platforms okd-install generates for ([`crate::PlatformName::SUPPORTED`]),
/// as openshift-install lists platforms in "must specify one of the platforms".
pub(super) const PLATFORMS: &str = "aws, baremetal, none";

/// Collector of field errors, in evaluation order.
#[derive(Default)]
pub(super) struct Errs(Vec<FieldError>);

impl Errs {
    pub(super) fn invalid(&mut self, path: &str, value: &str, detail: impl AsRef<str>) {
        self.0
            .push(FieldError::invalid(path, value, detail.as_ref()));
    }
    pub(super) fn invalid_n(&mut self, path: &str, value: i64, detail: impl AsRef<str>) {
        self.0
            .push(FieldError::invalid_n(path, value, detail.as_ref()));
    }
    /// `Invalid value` without the value (apimachinery's omitted value), for
    /// fields whose value is a secret.
    pub(super) fn invalid_omitted(&mut self, path: &str, detail: impl AsRef<str>) {
        self.0.push(FieldError::new(
            path,
            ErrorKind::Invalid,
            FieldValue::Omitted,
            detail.as_ref(),
        ));
    }
    pub(super) fn required(&mut self, path: &str, detail: &str) {
        self.0.push(FieldError::required(path, detail));
    }
    pub(super) fn unsupported(&mut self, path: &str, value: &str, supported: &[&str]) {
        let s: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        self.0.push(FieldError::new(
            path,
            ErrorKind::Unsupported,
            FieldValue::Str(value.to_string()),
            format!("supported values: {}", s.join(", ")),
        ));
    }
    pub(super) fn forbidden(&mut self, path: &str, detail: &str) {
        self.0.push(FieldError::new(
            path,
            ErrorKind::Forbidden,
            FieldValue::Omitted,
            detail,
        ));
    }
    pub(super) fn duplicate(&mut self, path: &str, value: &str) {
        self.0.push(FieldError::new(
            path,
            ErrorKind::Duplicate,
            FieldValue::Str(value.to_string()),
            "",
        ));
    }
    pub(super) fn too_many(&mut self, path: &str, n: usize, max: usize) {
        self.0.push(FieldError::new(
            path,
            ErrorKind::TooMany,
            FieldValue::Int(i64::try_from(n).unwrap_or(i64::MAX)),
            format!("must have at most {max} items"),
        ));
    }
}

/// Runs every rule; returns the errors (empty when valid) and appends warnings.
pub(crate) fn validate(
    c: &InstallConfig,
    o: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Vec<FieldError> {
    let mut e = Errs::default();
    if c.api_version.is_empty() {
        e.required("apiVersion", "install-config version required");
        return e.0;
    }
    if c.api_version != "v1" {
        e.invalid(
            "apiVersion",
            &c.api_version,
            "install-config version must be \"v1\"",
        );
        return e.0;
    }
    ssh_key(c, o, &mut e);
    trust_bundle(c, &mut e, warnings);
    if let Some(p) = c.additional_trust_bundle_policy.as_deref()
        && p != "Proxyonly"
        && p != "Always"
    {
        e.unsupported("additionalTrustBundlePolicy", p, &["Proxyonly", "Always"]);
    }
    names(c, &mut e);
    match &c.networking {
        Some(n) => networking(c, n, o, &mut e, warnings),
        None => e.required("networking", "networking is required"),
    }
    platform(c, &mut e);
    pools(c, &mut e);
    pull_secret(c, &mut e);
    if let Some(p) = &c.proxy {
        proxy(c, p, &mut e);
    }
    mirrors(c, o, &mut e, warnings);
    publish(c, &mut e);
    capabilities(c, o, &mut e);
    feature_set(c, &mut e);
    if let Some(m) = c.cpu_partitioning_mode.as_deref()
        && m != "None"
        && m != "AllNodes"
    {
        e.unsupported("cpuPartitioningMode", m, &["AllNodes", "None"]);
    }
    e.0
}
