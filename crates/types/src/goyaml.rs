//! YAML exactly as openshift-install writes it.
//!
//! The installer marshals objects with `sigs.k8s.io/yaml`: JSON first, then
//! the JSON is re-read by go-yaml v2 into generic maps and emitted by its
//! libyaml port. This module reproduces that emitter for a
//! [`serde_json::Value`] (installer.md Appendix B, "YAML"):
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

use serde_json::Value;
use std::cmp::Ordering;

const BEST_WIDTH: usize = 80;
const BEST_INDENT: usize = 2;

/// Serializes a JSON value as go-yaml v2 / sigs.k8s.io/yaml would. Never fails.
pub fn to_string(v: &Value) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
    };
    match v {
        Value::Object(m) if !m.is_empty() => e.mapping(m, 0),
        Value::Array(a) if !a.is_empty() => e.sequence(a, 0),
        other => {
            e.node_inline(other, 0, false);
        }
    }
    if e.column > 0 {
        e.put_break();
    }
    e.out
}

/// go-yaml v2's `keyList.Less` for string keys.
pub fn key_less(a: &str, b: &str) -> bool {
    key_cmp(a, b) == Ordering::Less
}

fn key_cmp(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blankz(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => c == ' ' || c == '\t' || is_break(c) || c == '\0',
    }
}

fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let ch: Vec<char> = s.chars().collect();
    let (mut block_ind, mut flow_ind) = (false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_ind = true;
        flow_ind = true;
    }
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    let mut preceded_ws = true;
    let mut followed_ws = is_blankz(ch.get(1).copied());
    let last = ch.len() - 1;
    for (i, &c) in ch.iter().enumerate() {
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    flow_ind = true;
                    block_ind = true;
                }
                '?' | ':' => {
                    flow_ind = true;
                    if followed_ws {
                        block_ind = true;
                    }
                }
                '-' if followed_ws => {
                    flow_ind = true;
                    block_ind = true;
                }
                _ => {}
            }
        } else {
            match c {
                ',' | '?' | '[' | ']' | '{' | '}' => flow_ind = true,
                ':' => {
                    flow_ind = true;
                    if followed_ws {
                        block_ind = true;
                    }
                }
                '#' if preceded_ws => {
                    flow_ind = true;
                    block_ind = true;
                }
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if is_break(c) {
            line_breaks = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == last {
                trailing_space = true;
            }
            if prev_break {
                break_space = true;
            }
            prev_space = true;
            prev_break = false;
        } else if is_break(c) {
            if i == 0 {
                leading_break = true;
            }
            if i == last {
                trailing_break = true;
            }
            if prev_space {
                space_break = true;
            }
            prev_break = true;
            prev_space = false;
        } else {
            prev_space = false;
            prev_break = false;
        }
        preceded_ws = is_blankz(Some(c));
        followed_ws = is_blankz(ch.get(i + 2).copied());
    }
    let _ = flow_ind;
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.block_plain_allowed = false;
    }
    if block_ind {
        a.block_plain_allowed = false;
    }
    a
}

/// Whether go-yaml v2's resolver reads the plain scalar `s` as a non-string
/// (null, bool, int, float, timestamp, merge key) — such strings are quoted.
fn resolves_to_non_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true",
        "True", "TRUE", "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if SPECIAL.contains(&s) {
        return true;
    }
    let Some(first) = s.chars().next() else {
        return true;
    };
    if !(first.is_ascii_digit() || first == '+' || first == '-' || first == '.') {
        return false;
    }
    let plain = s.replace('_', "");
    if parses_go_int(&plain) {
        return true;
    }
    if is_yaml_float(&plain) {
        return true;
    }
    if let Some(rest) = plain.strip_prefix("0b")
        && !rest.is_empty()
        && rest.chars().all(|c| c == '0' || c == '1')
    {
        return true;
    }
    if let Some(rest) = plain.strip_prefix("-0b")
        && !rest.is_empty()
        && rest.chars().all(|c| c == '0' || c == '1')
    {
        return true;
    }
    if first.is_ascii_digit() && is_timestamp(s) {
        return true;
    }
    is_base60_float(s)
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint` acceptance (base prefixes 0x, 0o, 0b, leading 0 = octal).
fn parses_go_int(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() {
        return false;
    }
    let (digits, radix) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (r, 16)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (r, 8)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (r, 2)
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8)
        } else {
            (body, 10)
        };
    !digits.is_empty() && u128::from_str_radix(digits, radix).is_ok_and(|v| v <= u64::MAX as u128)
}

/// go-yaml v2's float regexp `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// YAML 1.1 sexagesimal floats (`1:20`, `190:20:30.15`), quoted by go-yaml v2.
fn is_base60_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut parts = body.split(':');
    let Some(head) = parts.next() else {
        return false;
    };
    if head.is_empty()
        || !head.as_bytes()[0].is_ascii_digit()
        || !head.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() {
        return false;
    }
    for (k, p) in rest.iter().enumerate() {
        let (int, frac) = match p.split_once('.') {
            Some((a, b)) if k == rest.len() - 1 => (a, Some(b)),
            Some(_) => return false,
            None => (*p, None),
        };
        if int.is_empty() || int.len() > 2 || !int.chars().all(|c| c.is_ascii_digit()) {
            return false;
        }
        if int.len() == 2 && int.as_bytes()[0] > b'5' {
            return false;
        }
        if let Some(f) = frac
            && !f.chars().all(|c| c.is_ascii_digit() || c == '_')
        {
            return false;
        }
    }
    true
}

/// The timestamp formats go-yaml v2 recognises on plain scalars.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let date_ok = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit);
    if !date_ok {
        return false;
    }
    if b.len() == 10 {
        return time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]"))
            .is_ok();
    }
    let rest = &s[10..];
    let Some(t) = rest.strip_prefix(['T', 't', ' ']) else {
        return false;
    };
    // 15:04:05 with optional fraction and zone; validate loosely but strictly enough for IDs.
    let tb = t.as_bytes();
    tb.len() >= 7
        && tb[..2].iter().all(u8::is_ascii_digit)
        && tb[2] == b':'
        && tb[3..5].iter().all(u8::is_ascii_digit)
        && tb[5] == b':'
}

fn choose_style(s: &str, simple_key: bool) -> Style {
    let requested = if s.contains('\n') {
        Style::Literal
    } else if !resolves_to_non_string(s) {
        Style::Plain
    } else {
        Style::Double
    };
    let a = analyze(s);
    let mut style = requested;
    if style == Style::Plain
        && (!a.block_plain_allowed || (s.is_empty() && simple_key) || (simple_key && a.multiline))
    {
        style = Style::Single;
    }
    if style == Style::Single && !a.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Shortest round-trip digits and decimal exponent.
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..21).contains(&exp) {
        let mut m = digits[..1].to_string();
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    format!("{f}")
}

struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_str(&mut self, s: &str) {
        for c in s.chars() {
            self.put(c);
        }
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_indent(&mut self, indent: usize) {
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    /// Writes an indicator like libyaml's `write_indicator`.
    fn indicator(
        &mut self,
        s: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        self.put_str(s);
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn mapping(&mut self, m: &serde_json::Map<String, Value>, indent: usize) {
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort_by(|a, b| key_cmp(a, b));
        for k in keys {
            self.write_indent(indent);
            self.scalar_str(k, indent + BEST_INDENT, true);
            self.indicator(":", false, false, false);
            self.value(&m[k.as_str()], indent, true);
        }
    }

    fn sequence(&mut self, a: &[Value], indent: usize) {
        for v in a {
            self.write_indent(indent);
            self.indicator("-", true, false, true);
            self.value(v, indent, false);
        }
    }

    /// Emits a mapping value or sequence item whose parent collection sits at `indent`.
    fn value(&mut self, v: &Value, indent: usize, in_mapping: bool) {
        match v {
            Value::Object(m) if !m.is_empty() => self.mapping(m, indent + BEST_INDENT),
            Value::Array(a) if !a.is_empty() => {
                // Sequences directly under a mapping key are not indented.
                self.sequence(
                    a,
                    if in_mapping {
                        indent
                    } else {
                        indent + BEST_INDENT
                    },
                )
            }
            other => self.node_inline(other, indent + BEST_INDENT, false),
        }
    }

    fn node_inline(&mut self, v: &Value, indent: usize, simple_key: bool) {
        match v {
            Value::Null => self.plain("null", indent, simple_key),
            Value::Bool(b) => self.plain(if *b { "true" } else { "false" }, indent, simple_key),
            Value::Number(n) => {
                let s = if n.is_f64() {
                    go_float(n.as_f64().unwrap_or(0.0))
                } else {
                    n.to_string()
                };
                self.plain(&s, indent, simple_key)
            }
            Value::String(s) => self.scalar_str(s, indent, simple_key),
            Value::Object(_) => {
                self.indicator("{", true, true, false);
                self.indicator("}", false, false, false);
            }
            Value::Array(_) => {
                self.indicator("[", true, true, false);
                self.indicator("]", false, false, false);
            }
        }
    }

    fn scalar_str(&mut self, s: &str, indent: usize, simple_key: bool) {
        match choose_style(s, simple_key) {
            Style::Plain => self.plain(s, indent, simple_key),
            Style::Single => self.single_quoted(s, indent, simple_key),
            Style::Double => self.double_quoted(s, indent, simple_key),
            Style::Literal => self.literal(s, indent),
        }
    }

    fn plain(&mut self, s: &str, indent: usize, simple_key: bool) {
        let allow_breaks = !simple_key;
        if !self.whitespace {
            self.put(' ');
        }
        let ch: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in ch.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && ch.get(i + 1) != Some(&' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn single_quoted(&mut self, s: &str, indent: usize, simple_key: bool) {
        let allow_breaks = !simple_key;
        self.indicator("'", true, false, false);
        let ch: Vec<char> = s.chars().collect();
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in ch.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i != ch.len() - 1
                    && ch.get(i + 1) != Some(&' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.put_break();
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.indicator("'", false, false, false);
    }

    fn double_quoted(&mut self, s: &str, indent: usize, simple_key: bool) {
        let allow_breaks = !simple_key;
        self.indicator("\"", true, false, false);
        let ch: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in ch.iter().enumerate() {
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let u = c as u32;
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ if u <= 0xFF => self.put_str(&format!("x{u:02X}")),
                    _ if u <= 0xFFFF => self.put_str(&format!("u{u:04X}")),
                    _ => self.put_str(&format!("U{u:08X}")),
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i != ch.len() - 1
                {
                    self.write_indent(indent);
                    if ch.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.indicator("\"", false, false, false);
    }

    fn literal(&mut self, s: &str, indent: usize) {
        self.indicator("|", true, false, false);
        let ch: Vec<char> = s.chars().collect();
        if ch.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let last = ch.last().copied();
        let chomp = if !last.is_some_and(is_break) {
            Some("-")
        } else if ch.len() == 1 || ch.get(ch.len() - 2).is_some_and(|&c| is_break(c)) {
            Some("+")
        } else {
            None
        };
        if let Some(h) = chomp {
            self.indicator(h, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &ch {
            if is_break(c) {
                self.put_break();
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
