//! The block-style emitter: libyaml's writer functions (emitterc.go in
//! yaml.v2) for the subset of events a JSON value produces.

use super::keys::key_cmp;
use super::resolve::go_float;
use super::style::{Style, choose_style, is_break, is_printable};
use super::{BEST_INDENT, BEST_WIDTH};
use serde_json::Value;

/// Output buffer and libyaml's writer state.
pub(super) struct Emitter {
    out: String,
    /// Column of the next character (0-based, in chars).
    column: usize,
    /// The last character written was whitespace (or nothing yet).
    whitespace: bool,
    /// Only indentation has been written on the current line so far.
    indention: bool,
}

impl Emitter {
    /// An emitter at the start of a document.
    pub(super) fn new() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            whitespace: true,
            indention: true,
        }
    }

    /// Ends the last line and returns the document.
    pub(super) fn finish(mut self) -> String {
        if self.column > 0 {
            self.put_break();
        }
        self.out
    }

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

    pub(super) fn mapping(&mut self, m: &serde_json::Map<String, Value>, indent: usize) {
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort_by(|a, b| key_cmp(a, b));
        for k in keys {
            self.write_indent(indent);
            self.scalar_str(k, indent + BEST_INDENT, true);
            self.indicator(":", false, false, false);
            self.value(&m[k.as_str()], indent, true);
        }
    }

    pub(super) fn sequence(&mut self, a: &[Value], indent: usize) {
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

    pub(super) fn node_inline(&mut self, v: &Value, indent: usize, simple_key: bool) {
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
