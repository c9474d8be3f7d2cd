//! Harness of the fuzz targets (`crates/*/tests/fuzz_*.rs`, issue #10 item 9).
//!
//! The targets are [proptest](https://docs.rs/proptest) properties run on
//! the stable toolchain as ordinary tests, so `cargo test --workspace` runs a
//! bounded number of cases of each (a few seconds). Their inputs are
//! structured: valid documents (install-configs, host files, DNS messages,
//! manifests) mutated field by field and byte by byte, so most cases get
//! past the first parser and reach the checks behind it.
//!
//! Environment:
//! * `OKD_FUZZ_CASES=<n>` — cases per target instead of its CI default (the
//!   long run, see the README's test section);
//! * `OKD_FUZZ_SEED=<u64>` — a fixed seed (default: a random one per run);
//! * `PROPTEST_*` — proptest's own settings (e.g. `PROPTEST_MAX_SHRINK_ITERS`).
//!
//! A target prints one line `fuzz <name>: <cases> cases in <seconds> s`, the
//! figure the long run reports. Failures are not persisted to files: every
//! crash found becomes an explicit regression test beside its target.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_yaml_ng::{Mapping, Value};

/// The proptest configuration of a target: `OKD_FUZZ_CASES` cases, else
/// `default_cases`; `OKD_FUZZ_SEED` as a fixed seed when set; no failure
/// persistence.
pub fn config(default_cases: u32) -> Config {
    let cases = std::env::var("OKD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default_cases);
    let mut c = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    if let Some(seed) = std::env::var("OKD_FUZZ_SEED")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        c.rng_seed = RngSeed::Fixed(seed);
    }
    c
}

/// Runs `test` on `default_cases` cases (see [`config`]) drawn from
/// `strategy`, prints the case count and time, and panics with proptest's
/// minimal failing input when a case fails or panics.
pub fn run<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    run_with(name, config(default_cases), strategy, test);
}

/// [`run`] with a configuration of the caller's (e.g. [`config`] with
/// shrinking turned off, for targets whose failure leaves shared state
/// such as a server broken, so shrinking would only mislead).
pub fn run_with<S: Strategy>(
    name: &str,
    cfg: Config,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let cases = cfg.cases;
    let mut runner = TestRunner::new(cfg);
    let start = Instant::now();
    let result = runner.run(&strategy, test);
    let secs = start.elapsed().as_secs_f64();
    eprintln!("fuzz {name}: {cases} cases in {secs:.2} s");
    if let Err(e) = result {
        panic!("fuzz {name} failed: {e}");
    }
}

/// Counts of how far cases got (e.g. `parse error`, `invalid`, `loaded`),
/// printed after a run so a long run shows that inputs reach deep code.
#[derive(Debug, Default)]
pub struct Tally(Mutex<BTreeMap<&'static str, u64>>);

impl Tally {
    /// Counts one case with outcome `label`.
    pub fn hit(&self, label: &'static str) {
        *self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(label)
            .or_default() += 1;
    }

    /// Prints `fuzz <name> outcomes: label=count ...` to stderr.
    pub fn print(&self, name: &str) {
        let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
        eprintln!("fuzz {name} outcomes: {}", parts.join(" "));
    }
}

/// Draws one value of `strategy` (for building fixed inputs from a seed in
/// regression tests).
pub fn sample<S: Strategy>(strategy: &S, seed: u64) -> S::Value {
    let cfg = Config {
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(cfg);
    strategy
        .new_tree(&mut runner)
        .expect("strategy yields a value")
        .current()
}

/// Bytes of a generated input whose `Debug` form is their text (lossy
/// UTF-8), so a failing case reads as the document it is.
#[derive(Clone, PartialEq, Eq)]
pub struct Doc(pub Vec<u8>);

impl std::fmt::Debug for Doc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text: String = String::from_utf8_lossy(&self.0)
            .chars()
            .map(|c| match c {
                '\n' => "\n".to_string(),
                c if c.is_control() => c.escape_default().to_string(),
                c => c.to_string(),
            })
            .collect();
        write!(f, "Doc(\n{text}\n)")
    }
}

impl std::ops::Deref for Doc {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// One change to a byte string.
#[derive(Debug, Clone)]
pub enum ByteEdit {
    /// Flip bit `bit` of the byte at `at` (modulo the length).
    Flip {
        /// Position selector.
        at: usize,
        /// Bit 0..=7.
        bit: u8,
    },
    /// Overwrite the byte at `at` with `with`.
    Set {
        /// Position selector.
        at: usize,
        /// New value.
        with: u8,
    },
    /// Insert `bytes` before position `at`.
    Insert {
        /// Position selector.
        at: usize,
        /// Inserted bytes.
        bytes: Vec<u8>,
    },
    /// Remove up to `len` bytes from `at`.
    Remove {
        /// Position selector.
        at: usize,
        /// How many.
        len: usize,
    },
    /// Cut the input at `at`.
    Truncate {
        /// Position selector.
        at: usize,
    },
    /// Repeat the `len` bytes at `at` `times` times in place.
    Repeat {
        /// Position selector.
        at: usize,
        /// Length of the repeated run.
        len: usize,
        /// Extra copies.
        times: usize,
    },
}

/// Byte edits, with bytes biased to the interesting ones (0, 0xff,
/// separators, high bit).
pub fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    let byte = prop_oneof![
        any::<u8>(),
        prop::sample::select(vec![
            0u8, 0xff, 0x7f, 0x80, 0xc0, b'\n', b'\t', b' ', b':', b'-', b',', b';', b'=', b'"',
            b'\'', b'{', b'[', b'&', b'*', b'!', b'.', b'/', b'\\', b'0', b'9'
        ]),
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| ByteEdit::Flip { at, bit }),
        (any::<usize>(), byte.clone()).prop_map(|(at, with)| ByteEdit::Set { at, with }),
        (any::<usize>(), prop::collection::vec(byte, 1..8))
            .prop_map(|(at, bytes)| ByteEdit::Insert { at, bytes }),
        (any::<usize>(), 1usize..16).prop_map(|(at, len)| ByteEdit::Remove { at, len }),
        any::<usize>().prop_map(|at| ByteEdit::Truncate { at }),
        (any::<usize>(), 1usize..8, 1usize..64).prop_map(|(at, len, times)| ByteEdit::Repeat {
            at,
            len,
            times
        }),
    ]
}

/// Applies `edits` in order to `data`.
pub fn apply_byte_edits(data: &mut Vec<u8>, edits: &[ByteEdit]) {
    for e in edits {
        let n = data.len();
        let pos = |at: usize| if n == 0 { 0 } else { at % n };
        match e {
            ByteEdit::Flip { at, bit } if n > 0 => data[pos(*at)] ^= 1 << bit,
            ByteEdit::Set { at, with } if n > 0 => data[pos(*at)] = *with,
            ByteEdit::Insert { at, bytes } => {
                let p = if n == 0 { 0 } else { at % (n + 1) };
                data.splice(p..p, bytes.iter().copied());
            }
            ByteEdit::Remove { at, len } if n > 0 => {
                let p = pos(*at);
                data.drain(p..(p + len).min(n));
            }
            ByteEdit::Truncate { at } => data.truncate(if n == 0 { 0 } else { at % (n + 1) }),
            ByteEdit::Repeat { at, len, times } if n > 0 => {
                let p = pos(*at);
                let run: Vec<u8> = data[p..(p + len).min(n)].to_vec();
                let extra: Vec<u8> = run
                    .iter()
                    .copied()
                    .cycle()
                    .take(run.len() * times)
                    .collect();
                data.splice(p..p, extra);
            }
            _ => {}
        }
    }
}

/// Numbers that tend to break range checks and arithmetic.
pub const EDGE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "7",
    "23",
    "24",
    "31",
    "32",
    "33",
    "64",
    "127",
    "128",
    "129",
    "255",
    "256",
    "257",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1e400",
    "-0",
    "0x10",
    "0o7",
    ".nan",
    ".inf",
];

/// Strings that tend to break parsers of addresses, names, versions and
/// secrets.
pub const EDGE_STRINGS: &[&str] = &[
    "",
    " ",
    "-",
    ".",
    "..",
    "*",
    "/",
    "0.0.0.0/0",
    "::/0",
    "::",
    "::1",
    "10.0.0.0/8",
    "10.128.0.0/14",
    "172.30.0.0/16",
    "192.168.1.1",
    "192.168.1.1/33",
    "192.168.1.1/-1",
    "fe80::1%eth0",
    "fd00::/200",
    "1.2.3",
    "256.256.256.256",
    "a..b",
    "-a.b",
    "xn--",
    "ÄÖÜ.example",
    "\u{0}",
    "\u{1b}[31m",
    "line\nbreak",
    "{}",
    "[]",
    "{\"auths\":{}}",
    "{\"auths\":{\"r\":{\"auth\":\"!!\"}}}",
    "{\"auths\":{\"r\":{\"auth\":\"dTpw\"}}}",
    "ssh-rsa AAAA",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    "v1",
    "v2",
    "4.14",
    "OVNKubernetes",
    "OpenShiftSDN",
    "Enabled",
    "Disabled",
    "master",
    "worker",
    "none",
    "52:54:00:12:01:03",
    "52-54-00-12-01-0G",
    "%",
];

/// A YAML value that stresses a field: an edge number or string, a bool,
/// null, or a small sequence or mapping of those.
pub fn edge_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        prop::sample::select(EDGE_NUMBERS).prop_map(|s| {
            serde_yaml_ng::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.into()))
        }),
        prop::sample::select(EDGE_STRINGS).prop_map(|s| Value::String(s.into())),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        "[ -~]{0,40}".prop_map(Value::String),
        ".{0,12}".prop_map(Value::String),
        (1usize..300).prop_map(|n| Value::String("a".repeat(n))),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Sequence),
            prop::collection::vec(("[a-zA-Z]{1,10}", inner), 0..4).prop_map(|kv| {
                Value::Mapping(
                    kv.into_iter()
                        .map(|(k, v)| (Value::String(k), v))
                        .collect::<Mapping>(),
                )
            }),
        ]
    })
}

/// One structural change to a YAML tree. `at` selects a node among all
/// nodes in pre-order (modulo their count).
#[derive(Debug, Clone)]
pub enum TreeEdit {
    /// Replace the node with `with`; with `same_kind`, a string node
    /// gets `with` written as a string (a number or bool node keeps its
    /// kind only when `with` has it, else it is left alone), so the
    /// document still fits its schema and reaches validation.
    Replace {
        /// Node selector.
        at: usize,
        /// New value.
        with: Value,
        /// Keep the node's kind.
        same_kind: bool,
    },
    /// Remove the node from its mapping or sequence.
    Remove {
        /// Node selector.
        at: usize,
    },
    /// Add key `key` with `value` to a mapping, or push `value` to a sequence.
    Add {
        /// Node selector (the container nearest at or above it).
        at: usize,
        /// Key for a mapping.
        key: String,
        /// Added value.
        value: Value,
    },
    /// Append a copy of one of a sequence's elements (or, for a mapping,
    /// nothing).
    Duplicate {
        /// Node selector.
        at: usize,
    },
    /// In a string or number node, replace one run of digits with an edge
    /// number (`10.128.0.0/14` → `10.128.0.0/129`).
    Digits {
        /// Node selector.
        at: usize,
        /// Which digit run.
        run: usize,
        /// The replacement.
        with: &'static str,
    },
    /// Edit the text of a string node.
    Text {
        /// Node selector.
        at: usize,
        /// The edits to its bytes (invalid UTF-8 is replaced).
        edits: Vec<ByteEdit>,
    },
}

/// Tree edits with a bias to changing leaves' content.
pub fn tree_edit(field_names: &'static [&'static str]) -> impl Strategy<Value = TreeEdit> {
    let key = prop_oneof![
        prop::sample::select(field_names).prop_map(String::from),
        "[a-zA-Z]{1,12}",
    ];
    prop_oneof![
        4 => (any::<usize>(), edge_value(), any::<bool>())
            .prop_map(|(at, with, same_kind)| TreeEdit::Replace { at, with, same_kind }),
        1 => any::<usize>().prop_map(|at| TreeEdit::Remove { at }),
        2 => (any::<usize>(), key, edge_value())
            .prop_map(|(at, key, value)| TreeEdit::Add { at, key, value }),
        1 => any::<usize>().prop_map(|at| TreeEdit::Duplicate { at }),
        3 => (any::<usize>(), any::<usize>(), prop::sample::select(EDGE_NUMBERS))
            .prop_map(|(at, run, with)| TreeEdit::Digits { at, run, with }),
        2 => (any::<usize>(), prop::collection::vec(byte_edit(), 1..4))
            .prop_map(|(at, edits)| TreeEdit::Text { at, edits }),
    ]
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Sequence(s) => s.iter().map(count_nodes).sum(),
        Value::Mapping(m) => m.values().map(count_nodes).sum(),
        Value::Tagged(t) => count_nodes(&t.value),
        _ => 0,
    }
}

/// Calls `f` on the parent container of the `target`-th node in pre-order
/// (the root has no parent: `f` gets `None` as index then).
// Indexing, not `iter_mut`: `f` needs the whole parent while the loop runs.
#[allow(clippy::needless_range_loop)]
fn with_node(
    v: &mut Value,
    target: &mut usize,
    f: &mut dyn FnMut(&mut Value, Option<Slot>),
) -> bool {
    if *target == 0 {
        f(v, None);
        return true;
    }
    *target -= 1;
    match v {
        Value::Sequence(s) => {
            for i in 0..s.len() {
                if *target == 0 {
                    f(v, Some(Slot::Index(i)));
                    return true;
                }
                if with_node(&mut s[i], target, f) {
                    return true;
                }
            }
        }
        Value::Mapping(m) => {
            let keys: Vec<Value> = m.keys().cloned().collect();
            for k in keys {
                if *target == 0 {
                    f(v, Some(Slot::Key(k)));
                    return true;
                }
                let Value::Mapping(m) = v else { return false };
                let child = m.get_mut(&k).expect("key just listed");
                if with_node(child, target, f) {
                    return true;
                }
            }
        }
        Value::Tagged(t) => return with_node(&mut t.value, target, f),
        _ => {}
    }
    false
}

/// Where a node sits in its parent.
#[derive(Debug, Clone)]
enum Slot {
    Index(usize),
    Key(Value),
}

fn child_mut<'a>(parent: &'a mut Value, slot: &Slot) -> Option<&'a mut Value> {
    match (parent, slot) {
        (Value::Sequence(s), Slot::Index(i)) => s.get_mut(*i),
        (Value::Mapping(m), Slot::Key(k)) => m.get_mut(k),
        _ => None,
    }
}

fn replace_digit_run(s: &str, run: usize, with: &str) -> String {
    let b = s.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let st = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((st, i));
        } else {
            i += 1;
        }
    }
    if runs.is_empty() {
        return format!("{s}{with}");
    }
    let (st, en) = runs[run % runs.len()];
    format!("{}{with}{}", &s[..st], &s[en..])
}

/// Applies `edits` in order to the tree `root`.
pub fn apply_tree_edits(root: &mut Value, edits: &[TreeEdit]) {
    for e in edits {
        let n = count_nodes(root);
        let at = match e {
            TreeEdit::Replace { at, .. }
            | TreeEdit::Remove { at }
            | TreeEdit::Add { at, .. }
            | TreeEdit::Duplicate { at }
            | TreeEdit::Digits { at, .. }
            | TreeEdit::Text { at, .. } => *at % n,
        };
        let mut target = at;
        let mut f = |parent: &mut Value, slot: Option<Slot>| {
            let node: &mut Value = match &slot {
                None => &mut *parent,
                Some(s) => match child_mut(parent, s) {
                    Some(c) => c,
                    None => return,
                },
            };
            match e {
                TreeEdit::Replace {
                    with, same_kind, ..
                } => {
                    if !same_kind {
                        *node = with.clone();
                        return;
                    }
                    match (&*node, with) {
                        (Value::String(_), Value::String(_))
                        | (Value::Number(_), Value::Number(_))
                        | (Value::Bool(_), Value::Bool(_))
                        | (Value::Sequence(_), Value::Sequence(_))
                        | (Value::Mapping(_), Value::Mapping(_)) => *node = with.clone(),
                        (Value::String(_), Value::Number(n)) => {
                            *node = Value::String(n.to_string())
                        }
                        (Value::String(_), Value::Bool(b)) => *node = Value::String(b.to_string()),
                        _ => {}
                    }
                }
                TreeEdit::Remove { .. } => match (&mut *parent, &slot) {
                    (Value::Sequence(s), Some(Slot::Index(i))) => {
                        s.remove(*i);
                    }
                    (Value::Mapping(m), Some(Slot::Key(k))) => {
                        m.remove(k);
                    }
                    _ => *parent = Value::Null,
                },
                TreeEdit::Add { key, value, .. } => {
                    let target = if matches!(node, Value::Sequence(_) | Value::Mapping(_)) {
                        node
                    } else {
                        &mut *parent
                    };
                    match target {
                        Value::Sequence(s) => s.push(value.clone()),
                        Value::Mapping(m) => {
                            m.insert(Value::String(key.clone()), value.clone());
                        }
                        _ => {}
                    }
                }
                TreeEdit::Duplicate { .. } => {
                    if let Value::Sequence(s) = node
                        && let Some(first) = s.first().cloned()
                    {
                        s.push(first);
                    } else if let (Value::Sequence(s), Some(Slot::Index(i))) = (&mut *parent, &slot)
                    {
                        let c = s[*i].clone();
                        s.push(c);
                    }
                }
                TreeEdit::Digits { run, with, .. } => {
                    let text = match node {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        _ => return,
                    };
                    let out = replace_digit_run(&text, *run, with);
                    *node = if matches!(node, Value::Number(_)) {
                        serde_yaml_ng::from_str::<Value>(&out).unwrap_or(Value::String(out))
                    } else {
                        Value::String(out)
                    };
                }
                TreeEdit::Text { edits, .. } => {
                    if let Value::String(s) = node {
                        let mut b = s.clone().into_bytes();
                        apply_byte_edits(&mut b, edits);
                        *s = String::from_utf8_lossy(&b).into_owned();
                    }
                }
            }
        };
        with_node(root, &mut target, &mut f);
    }
}

/// A mutated copy of one of `seeds` (YAML documents) as bytes: tree edits
/// on the parsed document, serialized again, then (sometimes) byte edits of
/// the text. `field_names` are keys worth adding.
pub fn mutated_yaml(
    seeds: Vec<String>,
    field_names: &'static [&'static str],
) -> impl Strategy<Value = Doc> {
    let n = seeds.len();
    (
        0..n,
        prop::collection::vec(tree_edit(field_names), 0..5),
        prop_oneof![
            4 => Just(Vec::new()),
            1 => prop::collection::vec(byte_edit(), 1..4),
        ],
    )
        .prop_map(move |(i, tree, bytes)| {
            let seed = &seeds[i];
            let mut out = match serde_yaml_ng::from_str::<Value>(seed) {
                Ok(mut v) => {
                    apply_tree_edits(&mut v, &tree);
                    serde_yaml_ng::to_string(&v)
                        .unwrap_or_else(|_| seed.clone())
                        .into_bytes()
                }
                Err(_) => seed.clone().into_bytes(),
            };
            apply_byte_edits(&mut out, &bytes);
            Doc(out)
        })
}
