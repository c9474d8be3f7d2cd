//! YAML exactly as openshift-install writes it.
//!
//! The installer marshals objects with `sigs.k8s.io/yaml`: JSON first, then
//! the JSON is re-read by go-yaml v2 into generic maps and emitted by its
//! libyaml port. This module reproduces that emitter for a
//! [`serde_json::Value`] (`sigs.k8s.io/yaml` `yaml.go` and go-yaml v2's
//! `emitterc.go`, as vendored by openshift/installer):
//!
//! * block style, 2-space indentation, sequences inside mappings not indented
//!   (`key:\n- a`), mappings inside sequences compact (`- a: 1\n  b: 2`);
//! * mapping keys sorted with go-yaml's natural order (letters after other
//!   characters, digit runs compared as numbers);
//! * strings that would read back as another type (`"true"`, `"4.13"`,
//!   `""`, `"0600"`, timestamps) double-quoted; strings with indicators
//!   (`*.apps`, `: `, ` #`) single-quoted; multi-line strings as literal
//!   blocks (`|`, `|-`, `|+`) unless they contain characters that need escapes;
//! * plain and quoted scalars folded at the first space past column 80;
//! * empty mappings and sequences as `{}` and `[]`; output ends with `\n`.

mod emitter;
mod keys;
mod resolve;
mod style;

use emitter::Emitter;
use serde_json::Value;
use std::cmp::Ordering;

/// libyaml's `best_width`: plain and quoted scalars fold past this column.
const BEST_WIDTH: usize = 80;
/// libyaml's `best_indent`: spaces per nesting level.
const BEST_INDENT: usize = 2;

/// Serializes a JSON value as go-yaml v2 / sigs.k8s.io/yaml would. Never fails.
pub fn to_string(v: &Value) -> String {
    let mut e = Emitter::new();
    match v {
        Value::Object(m) if !m.is_empty() => e.mapping(m, 0),
        Value::Array(a) if !a.is_empty() => e.sequence(a, 0),
        other => {
            e.node_inline(other, 0, false);
        }
    }
    e.finish()
}

/// go-yaml v2's `keyList.Less` for string keys.
pub fn key_less(a: &str, b: &str) -> bool {
    keys::key_cmp(a, b) == Ordering::Less
}

#[cfg(test)]
mod tests {
    use super::keys::key_cmp;
    use super::*;
    use serde_json::json;

    #[test]
    fn layout() {
        let v = json!({
            "apiVersion": "v1",
            "metadata": {"name": "c", "creationTimestamp": null},
            "spec": {"list": ["a", "b"], "maps": [{"x": 1, "w": {"z": true}}], "empty": {}, "none": [], "nested": [["a", "b"]]},
        });
        assert_eq!(
            to_string(&v),
            "apiVersion: v1\nmetadata:\n  creationTimestamp: null\n  name: c\nspec:\n  empty: {}\n  list:\n  - a\n  - b\n  maps:\n  - w:\n      z: true\n    x: 1\n  nested:\n  - - a\n    - b\n  none: []\n"
        );
    }

    #[test]
    fn quoting() {
        let v = json!({"a": "true", "b": "4.13", "c": "", "d": "*.apps.x", "e": "a: b", "f": "0600", "g": "10.0.0.0/16", "h": "3.2.0", "i": "x #y", "j": "2020-08-12", "k": "it's", "l": "tab\there", "m": "-x", "n": "- x", "o": "1:20", "p": "null"});
        assert_eq!(
            to_string(&v),
            "a: \"true\"\nb: \"4.13\"\nc: \"\"\nd: '*.apps.x'\ne: 'a: b'\nf: \"0600\"\ng: 10.0.0.0/16\nh: 3.2.0\ni: 'x #y'\nj: \"2020-08-12\"\nk: it's\nl: \"tab\\there\"\nm: -x\n\"n\": '- x'\no: \"1:20\"\np: \"null\"\n"
        );
    }

    #[test]
    fn literal_blocks() {
        let v = json!({"a": "x\ny\n", "b": "x\ny", "c": "x\n\n", "d": ["l1\n\nl3\n"], "e": " lead\n", "f": "trail \nx"});
        assert_eq!(
            to_string(&v),
            "a: |\n  x\n  y\nb: |-\n  x\n  y\nc: |+\n  x\n\nd:\n- |\n  l1\n\n  l3\ne: |2\n   lead\nf: \"trail \\nx\"\n"
        );
    }

    #[test]
    fn folding_at_80_columns() {
        let long = format!("ssh-rsa {} user@host", "A".repeat(100));
        let out = to_string(&json!({ "sshKey": long }));
        assert_eq!(
            out,
            format!("sshKey: ssh-rsa {}\n  user@host\n", "A".repeat(100))
        );
        let words = "word ".repeat(30).trim_end().to_string();
        let out = to_string(&json!({ "k": words }));
        for line in out.lines() {
            assert!(line.len() <= 86, "{line}");
        }
        assert_eq!(out.replace("\n  ", " "), format!("k: {words}\n"));
    }

    #[test]
    fn key_order_is_natural() {
        let mut keys = vec!["b", "a10", "a2", "A", "_x", "a"];
        keys.sort_by(|a, b| key_cmp(a, b));
        assert_eq!(keys, vec!["_x", "A", "a", "a2", "a10", "b"]);
    }
}
