//! The identity rules: which node CSRs may be approved.
//!
//! Facts followed: the kubelet's TLS bootstrap (Kubernetes docs, "TLS
//! bootstrapping"; `k8s.io/kubernetes/pkg/kubelet/certificate/bootstrap`)
//! files a client CSR for signer `kubernetes.io/kube-apiserver-client-kubelet`
//! with subject `CN=system:node:<name>, O=system:nodes`, no SANs, usages
//! `digital signature` + `client auth` (plus `key encipherment` from
//! kubelets before 1.27 or with RSA keys), as the bootstrap identity — on
//! OpenShift the MCO's `node-bootstrapper` service account
//! (openshift/installer `pkg/asset/tls/kubelet.go`, `kubelet-client`). Once it has its client
//! certificate it files a serving CSR for signer
//! `kubernetes.io/kubelet-serving` as `system:node:<name>` with its host
//! names and addresses as SANs and `server auth` usage.
//!
//! The requested extensions must read here as they read to the API server
//! and the kubelet-serving signer: Go's
//! `x509.ParseCertificateRequest` (`crypto/x509/parser.go`,
//! `parseCSRExtensions`) merges every PKCS#9 `extensionRequest` attribute
//! (RFC 2985 §5.4.2), and the signer copies every SAN it finds
//! (`k8s.io/kubernetes/pkg/controller/certificates/authority`). So a request
//! with more than one such attribute, an attribute with more than one value,
//! a repeated extension or an extension (SAN or other) that does not parse
//! is refused rather than partly read.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::cri_attributes::{ParsedCriAttribute, X509CriAttribute};
use x509_parser::der_parser::asn1_rs::{Header, Length};
use x509_parser::extensions::{GeneralName, ParsedExtension, SubjectAlternativeName};
use x509_parser::oid_registry::OID_PKCS9_EXTENSION_REQUEST;
use x509_parser::prelude::FromDer;

/// The identity of the kubelet bootstrap kubeconfig (`auth/kubeconfig-kubelet`).
pub const NODE_BOOTSTRAPPER: &str =
    "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper";
/// Signer of kubelet client certificates.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// Signer of kubelet serving certificates.
pub const SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// The group of every node.
pub const NODES_GROUP: &str = "system:nodes";

/// A node okd-install knows: its names (host name, FQDN) and addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownNode {
    /// Names a kubelet may register as (lower case).
    pub names: Vec<String>,
    /// Addresses it may put in a serving certificate.
    pub addresses: Vec<IpAddr>,
}

/// The nodes whose CSRs may be approved: those of the inventory, plus any
/// node name matching an explicit pattern (`--node-name-pattern`).
#[derive(Debug, Clone, Default)]
pub struct Identities {
    nodes: Vec<KnownNode>,
    patterns: Vec<glob::Pattern>,
}

/// A `--node-name-pattern` that is not a valid glob.
#[derive(Debug, thiserror::Error)]
#[error("--node-name-pattern {pattern:?}: not a valid glob pattern")]
pub struct PatternError {
    /// The pattern as given.
    pub pattern: String,
    /// The glob parser's error.
    #[source]
    pub source: glob::PatternError,
}

impl Identities {
    /// The control-plane and compute hosts of `inv` (not the bootstrap,
    /// which never joins as a node).
    pub fn from_inventory(inv: &okd_hosts::Inventory) -> Identities {
        Identities::from_node_identities(&inv.node_identities())
    }

    /// The nodes of bootstrap.ign's `okd-node-identities.json`.
    pub fn from_node_identities(ids: &okd_types::node_identities::NodeIdentities) -> Identities {
        Identities {
            nodes: ids
                .nodes
                .iter()
                .map(|n| KnownNode {
                    names: n.names.iter().map(|s| s.to_lowercase()).collect(),
                    addresses: n.addresses.clone(),
                })
                .collect(),
            patterns: Vec::new(),
        }
    }

    /// Adds known nodes.
    pub fn with_nodes(mut self, nodes: impl IntoIterator<Item = KnownNode>) -> Identities {
        self.nodes.extend(nodes);
        self
    }

    /// Adds glob patterns (`*`, `?`, `[...]`) that node names may match.
    ///
    /// # Errors
    /// [`PatternError`] for a pattern that does not parse.
    pub fn with_patterns(mut self, patterns: &[String]) -> Result<Identities, PatternError> {
        for p in patterns {
            let g = glob::Pattern::new(p).map_err(|source| PatternError {
                pattern: p.clone(),
                source,
            })?;
            self.patterns.push(g);
        }
        Ok(self)
    }

    /// Whether any node or pattern is configured at all.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.patterns.is_empty()
    }

    /// The inventory entry naming `name`.
    pub fn known(&self, name: &str) -> Option<&KnownNode> {
        let name = name.to_lowercase();
        self.nodes.iter().find(|n| n.names.contains(&name))
    }

    /// Whether `name` matches a `--node-name-pattern`.
    pub fn matches_pattern(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| p.matches(name))
    }

    /// The one identity behind node name `name`, for "one bootstrap client
    /// certificate per node": an inventory node's first name (its host
    /// name) for any of its names, else `name` in lower case.
    pub fn identity(&self, name: &str) -> String {
        self.known(name)
            .and_then(|k| k.names.first().cloned())
            .unwrap_or_else(|| name.to_lowercase())
    }

    /// The names Node objects of `name`'s identity may have: all of an
    /// inventory node's names, else `name` in lower case.
    pub fn node_names(&self, name: &str) -> Vec<String> {
        self.known(name)
            .map(|k| k.names.clone())
            .unwrap_or_else(|| vec![name.to_lowercase()])
    }

    /// Number of inventory nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

/// The fields of a CertificateSigningRequest the rules read.
#[derive(Debug, Clone, Default)]
pub struct CsrView {
    /// `metadata.name`.
    pub name: String,
    /// `spec.signerName`.
    pub signer: String,
    /// `spec.username`: who filed it, as the API server authenticated them.
    pub username: String,
    /// `spec.groups`.
    pub groups: Vec<String>,
    /// `spec.usages`.
    pub usages: Vec<String>,
    /// `spec.request`: the PKCS#10 request, PEM.
    pub request: Vec<u8>,
}

impl CsrView {
    /// Reads the fields of an API object.
    pub fn of(csr: &k8s_openapi::api::certificates::v1::CertificateSigningRequest) -> CsrView {
        CsrView {
            name: csr.metadata.name.clone().unwrap_or_default(),
            signer: csr.spec.signer_name.clone(),
            username: csr.spec.username.clone().unwrap_or_default(),
            groups: csr.spec.groups.clone().unwrap_or_default(),
            usages: csr.spec.usages.clone().unwrap_or_default(),
            request: csr.spec.request.0.clone(),
        }
    }
}

/// What kind of node certificate a CSR asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsrKind {
    /// The kubelet's client certificate (first join).
    Client,
    /// The kubelet's serving certificate.
    Serving,
}

impl fmt::Display for CsrKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CsrKind::Client => "client",
            CsrKind::Serving => "serving",
        })
    }
}

/// Why a CSR is left pending. Each names the rule it broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a node signer.
    Signer(String),
    /// Filed by someone else than the rule's requester.
    Requester {
        /// Who must file it.
        expected: String,
        /// Who did.
        got: String,
    },
    /// `spec.request` is not a PKCS#10 request in PEM.
    Request(String),
    /// The subject is not exactly `CN=system:node:<name>, O=system:nodes`.
    Subject(String),
    /// The node name is neither in the inventory nor matched by a pattern.
    UnknownNode(String),
    /// The usages are not exactly those the kubelet asks for.
    Usages(Vec<String>),
    /// A client CSR carries SANs.
    ClientSans,
    /// A serving CSR names something the node does not own.
    San(String),
    /// The node's addresses could not be learned, so the SANs cannot be checked.
    NoAddresses(String),
    /// The requested extensions cannot be read unambiguously (several
    /// `extensionRequest` attributes or values, a repeated extension, one
    /// that does not parse).
    Extensions(String),
    /// A bootstrap client CSR for a node whose Node object exists.
    NodeExists(String),
    /// A second bootstrap client CSR for a node that already has one approved.
    ClientIssued {
        /// The node.
        node: String,
        /// The approved CSR.
        csr: String,
    },
    /// Whether the node has joined could not be read; retried.
    NodeLookup(String),
}

impl Refusal {
    /// A short CamelCase reason for the Kubernetes event.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Signer(_) => "UnknownSigner",
            Refusal::Requester { .. } => "WrongRequester",
            Refusal::Request(_) => "BadRequest",
            Refusal::Subject(_) => "BadSubject",
            Refusal::UnknownNode(_) => "UnknownNode",
            Refusal::Usages(_) => "BadUsages",
            Refusal::ClientSans => "ClientSANs",
            Refusal::San(_) => "SANNotOwned",
            Refusal::NoAddresses(_) => "NodeAddressesUnknown",
            Refusal::Extensions(_) => "BadExtensions",
            Refusal::NodeExists(_) => "NodeAlreadyJoined",
            Refusal::ClientIssued { .. } => "ClientAlreadyIssued",
            Refusal::NodeLookup(_) => "NodeLookupFailed",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Signer(s) => write!(
                f,
                "signer {s:?} is not a node signer ({CLIENT_SIGNER} or {SERVING_SIGNER})"
            ),
            Refusal::Requester { expected, got } => {
                write!(
                    f,
                    "requested by {got:?}, but only {expected:?} may request it"
                )
            }
            Refusal::Request(e) => write!(f, "spec.request is not a PEM certificate request: {e}"),
            Refusal::Subject(s) => write!(
                f,
                "subject {s:?} is not exactly CN=system:node:<name>, O=system:nodes"
            ),
            Refusal::UnknownNode(n) => write!(
                f,
                "node {n:?} is not in agent-config.yaml/bastion-config.yaml and matches no --node-name-pattern"
            ),
            Refusal::Usages(u) => write!(f, "usages {u:?} are not exactly what a kubelet requests"),
            Refusal::ClientSans => {
                f.write_str("a kubelet client certificate request carries no SANs, this one does")
            }
            Refusal::San(s) => write!(
                f,
                "SAN {s} is neither the node's host name nor one of its addresses"
            ),
            Refusal::NoAddresses(e) => write!(
                f,
                "the node's addresses are unknown, so its SANs cannot be checked: {e}"
            ),
            Refusal::Extensions(e) => write!(f, "requested extensions: {e}"),
            Refusal::NodeExists(n) => write!(
                f,
                "node {n:?} has joined already (its Node object exists): a bootstrap client \
                 certificate is issued once per node, renewals come from the node itself"
            ),
            Refusal::ClientIssued { node, csr } => write!(
                f,
                "node {node:?} already has a bootstrap client certificate (CSR {csr} was \
                 approved): a second one is not approved"
            ),
            Refusal::NodeLookup(e) => write!(
                f,
                "cannot tell whether the node has joined, so its client CSR waits: {e}"
            ),
        }
    }
}

/// The decision on one CSR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Approve: a certificate of `kind` for node `node`.
    Approve {
        /// Client or serving.
        kind: CsrKind,
        /// The node name from the subject.
        node: String,
    },
    /// Leave pending.
    Refuse(Refusal),
}

const CLIENT_USAGES: [&[&str]; 2] = [
    &["client auth", "digital signature"],
    &["client auth", "digital signature", "key encipherment"],
];
const SERVING_USAGES: [&[&str]; 2] = [
    &["digital signature", "server auth"],
    &["digital signature", "key encipherment", "server auth"],
];

/// The parsed request: subject parts and SANs.
struct Parsed {
    cns: Vec<String>,
    orgs: Vec<String>,
    other_attrs: usize,
    dns: Vec<String>,
    ips: Vec<IpAddr>,
    other_sans: Vec<String>,
    /// Why the requested extensions cannot be trusted, if they cannot.
    bad_extensions: Option<String>,
}

fn parse(pem: &[u8]) -> Result<Parsed, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem).map_err(|e| e.to_string())?;
    if pem.label != "CERTIFICATE REQUEST" && pem.label != "NEW CERTIFICATE REQUEST" {
        return Err(format!("PEM block is {:?}", pem.label));
    }
    let (_, req) = X509CertificationRequest::from_der(&pem.contents).map_err(|e| e.to_string())?;
    let info = &req.certification_request_info;
    let mut p = Parsed {
        cns: Vec::new(),
        orgs: Vec::new(),
        other_attrs: 0,
        dns: Vec::new(),
        ips: Vec::new(),
        other_sans: Vec::new(),
        bad_extensions: None,
    };
    for attr in info.subject.iter_attributes() {
        let v = attr.as_str().map_err(|e| e.to_string())?.to_string();
        let oid = attr.attr_type();
        if *oid == x509_parser::oid_registry::OID_X509_COMMON_NAME {
            p.cns.push(v);
        } else if *oid == x509_parser::oid_registry::OID_X509_ORGANIZATION_NAME {
            p.orgs.push(v);
        } else {
            p.other_attrs += 1;
        }
    }
    if let Err(e) = requested_extensions(&req, &mut p) {
        p.bad_extensions = Some(e);
    }
    Ok(p)
}

/// Reads the SANs of the one `extensionRequest` attribute into `p`.
///
/// # Errors
/// A description when there is more than one such attribute, its SET holds
/// other than one value, an extension repeats, or an extension does not
/// parse (a SAN also when bytes follow its SEQUENCE).
fn requested_extensions(req: &X509CertificationRequest<'_>, p: &mut Parsed) -> Result<(), String> {
    let attrs: Vec<&X509CriAttribute<'_>> = req
        .certification_request_info
        .iter_attributes()
        .filter(|a| a.oid == OID_PKCS9_EXTENSION_REQUEST)
        .collect();
    let attr = match attrs.as_slice() {
        [] => return Ok(()),
        [one] => *one,
        more => {
            return Err(format!(
                "{} extensionRequest attributes (PKCS#9); the API server's parser merges them, \
                 so all would be signed",
                more.len()
            ));
        }
    };
    // `value` spans the SET's header and the one value the parser read.
    let (first, hdr) =
        Header::from_der(attr.value).map_err(|e| format!("extensionRequest: {e}"))?;
    if hdr.length() != Length::Definite(first.len()) {
        return Err("the extensionRequest attribute holds more than one value".into());
    }
    let ParsedCriAttribute::ExtensionRequest(er) = attr.parsed_attribute() else {
        return Err("the extensionRequest attribute does not parse".into());
    };
    let mut seen = BTreeSet::new();
    for ext in &er.extensions {
        let oid = ext.oid.to_id_string();
        if !seen.insert(oid.clone()) {
            return Err(format!("extension {oid} is requested more than once"));
        }
        match ext.parsed_extension() {
            ParsedExtension::SubjectAlternativeName(san) => {
                let (rest, _) = x509_parser::der_parser::parse_der(ext.value)
                    .map_err(|e| format!("subjectAltName does not parse: {e}"))?;
                if !rest.is_empty() {
                    return Err(format!(
                        "subjectAltName has {} bytes after its SEQUENCE",
                        rest.len()
                    ));
                }
                sans(san, p);
            }
            ParsedExtension::ParseError { error } => {
                return Err(format!("extension {oid} does not parse: {error}"));
            }
            _ => {}
        }
    }
    Ok(())
}

fn sans(san: &SubjectAlternativeName<'_>, p: &mut Parsed) {
    for n in &san.general_names {
        match n {
            GeneralName::DNSName(d) => p.dns.push(d.to_string()),
            GeneralName::IPAddress(b) => match b.len() {
                4 => p
                    .ips
                    .push(IpAddr::from(<[u8; 4]>::try_from(*b).unwrap_or_default())),
                16 => p
                    .ips
                    .push(IpAddr::from(<[u8; 16]>::try_from(*b).unwrap_or_default())),
                _ => p.other_sans.push(format!("IP of {} bytes", b.len())),
            },
            other => p.other_sans.push(format!("{other}")),
        }
    }
}

/// The node name from a subject that is exactly `CN=system:node:<name>,
/// O=system:nodes`.
fn node_name(p: &Parsed) -> Result<String, Refusal> {
    let shown = format!("CN={:?}, O={:?}", p.cns, p.orgs);
    let name = match (p.cns.as_slice(), p.orgs.as_slice(), p.other_attrs) {
        ([cn], [o], 0) if o == NODES_GROUP => cn.strip_prefix("system:node:"),
        _ => None,
    };
    match name {
        Some(n) if !n.is_empty() => Ok(n.to_string()),
        _ => Err(Refusal::Subject(shown)),
    }
}

fn usages_ok(got: &[String], allowed: &[&[&str]]) -> bool {
    let set: BTreeSet<&str> = got.iter().map(String::as_str).collect();
    set.len() == got.len()
        && allowed
            .iter()
            .any(|a| a.len() == set.len() && a.iter().all(|u| set.contains(u)))
}

/// Decides one CSR. `addresses_of` gives the addresses of a node matched
/// only by a pattern (read from its Node object by the caller); it is asked
/// only for serving CSRs of such nodes.
pub fn decide(
    csr: &CsrView,
    ids: &Identities,
    addresses_of: &mut dyn FnMut(&str) -> Result<Vec<IpAddr>, String>,
) -> Verdict {
    match decide_inner(csr, ids, addresses_of) {
        Ok(v) => v,
        Err(r) => Verdict::Refuse(r),
    }
}

fn decide_inner(
    csr: &CsrView,
    ids: &Identities,
    addresses_of: &mut dyn FnMut(&str) -> Result<Vec<IpAddr>, String>,
) -> Result<Verdict, Refusal> {
    let kind = match csr.signer.as_str() {
        CLIENT_SIGNER => CsrKind::Client,
        SERVING_SIGNER => CsrKind::Serving,
        other => return Err(Refusal::Signer(other.to_string())),
    };
    if kind == CsrKind::Client && csr.username != NODE_BOOTSTRAPPER {
        return Err(Refusal::Requester {
            expected: NODE_BOOTSTRAPPER.to_string(),
            got: csr.username.clone(),
        });
    }
    let parsed = parse(&csr.request).map_err(Refusal::Request)?;
    let node = node_name(&parsed)?;
    if kind == CsrKind::Serving {
        let expected = format!("system:node:{node}");
        if csr.username != expected || !csr.groups.iter().any(|g| g == NODES_GROUP) {
            return Err(Refusal::Requester {
                expected: format!("{expected} (group {NODES_GROUP})"),
                got: csr.username.clone(),
            });
        }
    }
    let known = ids.known(&node);
    if known.is_none() && !ids.matches_pattern(&node) {
        return Err(Refusal::UnknownNode(node));
    }
    let allowed: &[&[&str]] = match kind {
        CsrKind::Client => &CLIENT_USAGES,
        CsrKind::Serving => &SERVING_USAGES,
    };
    if !usages_ok(&csr.usages, allowed) {
        return Err(Refusal::Usages(csr.usages.clone()));
    }
    if let Some(e) = parsed.bad_extensions {
        return Err(Refusal::Extensions(e));
    }
    if let Some(s) = parsed.other_sans.first() {
        return Err(Refusal::San(s.clone()));
    }
    match kind {
        CsrKind::Client => {
            if !parsed.dns.is_empty() || !parsed.ips.is_empty() {
                return Err(Refusal::ClientSans);
            }
        }
        CsrKind::Serving => {
            let (names, addresses) = match known {
                Some(k) => (k.names.clone(), k.addresses.clone()),
                None => (
                    vec![node.to_lowercase()],
                    addresses_of(&node).map_err(Refusal::NoAddresses)?,
                ),
            };
            if let Some(d) = parsed
                .dns
                .iter()
                .find(|d| !names.contains(&d.to_lowercase()))
            {
                return Err(Refusal::San(format!("DNS:{d}")));
            }
            if let Some(ip) = parsed.ips.iter().find(|ip| !addresses.contains(ip)) {
                return Err(Refusal::San(format!("IP:{ip}")));
            }
        }
    }
    Ok(Verdict::Approve { kind, node })
}

/// The node a PKCS#10 request (PEM) names, when its subject is exactly
/// `CN=system:node:<name>, O=system:nodes`.
pub fn requested_node(pem: &[u8]) -> Option<String> {
    parse(pem).ok().and_then(|p| node_name(&p).ok())
}
