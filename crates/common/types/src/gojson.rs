//! JSON as Go's `encoding/json` (and `github.com/clarketm/json`) writes it.
//!
//! Differences from serde_json's defaults that matter for byte compatibility
//! (openshift/installer `pkg/asset/ignition/node.go` and its vendored
//! `github.com/clarketm/json/encode.go`): `<`, `>` and `&` are written as `\u003c`,
//! `\u003e`, `\u0026`, and U+2028/U+2029 as `\u2028`/`\u2029` (HTML-safe
//! escaping). Field order is the serializing type's order (structs) or sorted
//! keys (`serde_json::Value` maps, like Go maps).

use serde::Serialize;

/// Applies Go's HTML-safe escaping to serde_json output. The characters
/// concerned never occur outside string literals in JSON text, so a textual
/// replacement is exact.
fn html_escape(s: String) -> String {
    if !s.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Compact JSON, like `json.Marshal`. Serialization of plain data cannot
/// fail; a type whose `Serialize` impl errors yields `null`.
pub fn to_string<T: Serialize + ?Sized>(v: &T) -> String {
    html_escape(serde_json::to_string(v).unwrap_or_else(|_| "null".into()))
}

/// Indented JSON, like `json.MarshalIndent(v, "", indent)`: `"key": value`,
/// one member per line, empty objects and arrays as `{}` and `[]`.
pub fn to_string_pretty<T: Serialize + ?Sized>(v: &T, indent: &str) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    if v.serialize(&mut ser).is_err() {
        return "null".into();
    }
    html_escape(String::from_utf8(buf).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_like_go() {
        assert_eq!(
            to_string(&json!({"a": "<b>&"})),
            r#"{"a":"\u003cb\u003e\u0026"}"#
        );
        assert_eq!(
            to_string_pretty(&json!({"a": [], "b": {}, "c": [1]}), "    "),
            "{\n    \"a\": [],\n    \"b\": {},\n    \"c\": [\n        1\n    ]\n}"
        );
    }
}
