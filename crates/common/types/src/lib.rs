//! Wire types and encodings shared by okd-install.
//!
//! * [`release`]: the target release and the rules that depend on it.
//! * [`goyaml`]: YAML exactly as openshift-install writes it (sigs.k8s.io/yaml
//!   over go-yaml v2: sorted keys, compact lists, 80-column folding).
//! * [`gojson`]: JSON as Go's encoding/json writes it (HTML-escaped, compact or
//!   indented).
//! * [`dataurl`]: RFC 2397 data URLs with Go's `http.DetectContentType` sniffing.
//! * [`ignition`]: Ignition config spec 3.0–3.4 types in Go field order.
//! * [`exit`]: the exit codes of every command, one table.
//! * [`large_strings`]: reading JSON without holding its very large strings
//!   (an Ignition config's embedded files).

pub mod control_plane;
pub mod dataurl;
pub mod exit;
pub mod gojson;
pub mod goyaml;
pub mod ignition;
pub mod large_strings;
pub mod node_identities;
pub mod release;
