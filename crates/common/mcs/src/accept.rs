//! Accept-header negotiation of the Ignition spec version
//! (openshift/machine-config-operator `pkg/server/api.go`; the header Ignition
//! sends is built in coreos/ignition `internal/resource/url.go`).

use std::fmt;

/// The newest spec 3 minor version this server serves (`3.5.0`, as the
/// machine-config server does, openshift/machine-config-operator `pkg/server/api.go`). Conversions
/// between 3.x minors only rewrite `ignition.version` and refuse fields a lower minor
/// lacks, so serving 3.5.0 needs no typed 3.5 model.
pub const MAX_SPEC3_MINOR: u8 = 5;

/// The oldest spec 3 minor served (`3.1.0`); 3.0.0 requests get 400.
pub const MIN_SPEC3_MINOR: u8 = 1;

/// An Ignition spec version the server can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SpecVersion {
    /// Spec 2.2.0 (Ignition 0.x clients and requests naming no version).
    V2_2,
    /// Spec `3.<minor>.0`, minor in [`MIN_SPEC3_MINOR`]..=[`MAX_SPEC3_MINOR`].
    V3(u8),
}

impl SpecVersion {
    /// Every version the server produces, oldest first: 2.2.0, 3.1.0 … 3.5.0.
    pub fn all() -> Vec<SpecVersion> {
        let mut v = vec![SpecVersion::V2_2];
        v.extend((MIN_SPEC3_MINOR..=MAX_SPEC3_MINOR).map(SpecVersion::V3));
        v
    }

    /// The `ignition.version` string, e.g. `"3.2.0"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SpecVersion::V2_2 => "2.2.0",
            SpecVersion::V3(0) => "3.0.0",
            SpecVersion::V3(1) => "3.1.0",
            SpecVersion::V3(2) => "3.2.0",
            SpecVersion::V3(3) => "3.3.0",
            SpecVersion::V3(4) => "3.4.0",
            SpecVersion::V3(_) => "3.5.0",
        }
    }

    /// The spec 3 minor (`None` for 2.2).
    pub fn minor3(self) -> Option<u8> {
        match self {
            SpecVersion::V2_2 => None,
            SpecVersion::V3(m) => Some(m),
        }
    }
}

impl fmt::Display for SpecVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Accept header named an Ignition version the server does not serve
/// (HTTP 400, openshift/machine-config-operator `pkg/server/api.go`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported Ignition version in Accept header: {header}")]
pub struct UnsupportedVersion {
    /// The whole Accept header as received.
    pub header: String,
}

/// A `major.minor.patch[-pre][+build]` version, as `go-semver` parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SemVer {
    major: u64,
    minor: u64,
    patch: u64,
    pre: bool,
}

impl SemVer {
    fn parse(s: &str) -> Option<SemVer> {
        let s = s.split('+').next().unwrap_or(s);
        let (core, pre) = match s.split_once('-') {
            Some((c, p)) if !p.is_empty() => (c, true),
            Some(_) => return None,
            None => (s, false),
        };
        let mut it = core.split('.');
        let num = |p: Option<&str>| -> Option<u64> {
            let p = p?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            p.parse().ok()
        };
        let v = SemVer {
            major: num(it.next())?,
            minor: num(it.next())?,
            patch: num(it.next())?,
            pre,
        };
        if it.next().is_some() {
            return None;
        }
        Some(v)
    }

    /// `self >= major.minor.0` (a pre-release sorts below its release).
    fn at_least(&self, major: u64, minor: u64) -> bool {
        let core = (self.major, self.minor, self.patch);
        core > (major, minor, 0) || (core == (major, minor, 0) && !self.pre)
    }
}

/// One parsed Accept entry.
struct Entry {
    subtype: String,
    version: Option<SemVer>,
    /// Quality in thousandths, 0..=1000 (RFC 9110 §12.4.2 allows three
    /// decimals), so entries sort by a total order.
    q: u16,
}

/// Parses a `q` value to thousandths: any finite number (Go's `ParseFloat`
/// takes `0.5`, `.5`, `1e-1`, `0.5000`) clamped to 0..=1 and rounded to
/// three decimals; NaN, infinities and non-numbers are `None` (ignored, as
/// the MCO ignores a `q` it cannot parse).
fn parse_q(v: &str) -> Option<u16> {
    let q = v.parse::<f64>().ok().filter(|q| q.is_finite())?;
    // In range 0..=1000 after the clamp, so the cast is exact.
    Some((q.clamp(0.0, 1.0) * 1000.0).round() as u16)
}

/// Parses like the MCO's `parseAcceptHeader`: entries split on `,`, parts
/// on `;`, each trimmed; an entry without `/` in its media type is dropped;
/// the first parseable `version=` and the first parseable `q=` count
/// (parameter names are case-sensitive, a bad `q` is ignored and q stays
/// 1, see [`parse_q`]); stable-sorted by q, highest first.
fn parse_accept(header: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    for raw in header.split(',') {
        let mut parts = raw.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let Some((_ty, subtype)) = media.split_once('/') else {
            continue;
        };
        let mut e = Entry {
            subtype: subtype.to_string(),
            version: None,
            q: 1000,
        };
        let mut q = None;
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match k {
                "version" if e.version.is_none() => e.version = SemVer::parse(v),
                "q" if q.is_none() => q = parse_q(v),
                _ => {}
            }
        }
        e.q = q.unwrap_or(1000);
        out.push(e);
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.q));
    out
}

/// Picks the spec version for a request's Accept header, as the MCO's
/// `detectSpecVersionFromAcceptHeader` does (`pkg/server/api.go`).
///
/// Entries are taken in q order (highest first, stable); among those with
/// subtype `vnd.coreos.ignition+json` and a parseable semantic version:
/// - `3.1.0` up to `4.0.0` (exclusive) → that minor, capped at 3.5
///   (`3.2.7` → 3.2.0, `3.6.0` → 3.5.0, `3.4.0-experimental` → 3.3.0);
/// - `2.2.0` up to `3.0.0` (exclusive) → [`SpecVersion::V2_2`];
/// - anything else (3.0, 2.1, 4.0, …) is skipped, and if no later entry is
///   served the answer is [`UnsupportedVersion`].
///
/// No header, an unparseable one or no versioned Ignition entry gives spec
/// 2.2.0.
///
/// # Errors
/// [`UnsupportedVersion`] (served as HTTP 400).
pub fn negotiate(accept: Option<&str>) -> Result<SpecVersion, UnsupportedVersion> {
    let Some(header) = accept else {
        return Ok(SpecVersion::V2_2);
    };
    let mut unsupported = false;
    for e in parse_accept(header) {
        if e.subtype != "vnd.coreos.ignition+json" {
            continue;
        }
        let Some(v) = e.version else { continue };
        if v.major == 3 && v.at_least(3, u64::from(MIN_SPEC3_MINOR)) {
            // A pre-release sorts below its release: 3.4.0-x is a 3.3 client.
            let minor = if v.pre && v.patch == 0 {
                v.minor.saturating_sub(1)
            } else {
                v.minor
            };
            let minor = minor.min(u64::from(MAX_SPEC3_MINOR)) as u8;
            return Ok(SpecVersion::V3(minor));
        }
        if v.major == 2 && v.at_least(2, 2) {
            return Ok(SpecVersion::V2_2);
        }
        unsupported = true;
    }
    if unsupported {
        return Err(UnsupportedVersion {
            header: header.to_string(),
        });
    }
    Ok(SpecVersion::V2_2)
}
