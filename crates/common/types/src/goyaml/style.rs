//! Scalar style selection: libyaml's `yaml_emitter_analyze_scalar` and
//! `yaml_emitter_select_scalar_style` (emitterc.go in yaml.v2).

use super::resolve::resolves_to_non_string;

/// The scalar styles a JSON string can be written in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// What libyaml's scalar analysis allows for one string.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// libyaml's `is_break`: the YAML line-break characters.
pub(super) fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_blankz`: blank, line break, NUL or end of input (`None`).
fn is_blankz(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => c == ' ' || c == '\t' || is_break(c) || c == '\0',
    }
}

/// libyaml's `is_printable` (YAML 1.1 printable set, BOM excluded).
pub(super) fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
}

/// Whether `ch` (the string `s` as chars, non-empty) contains a block
/// indicator that makes it unusable as a plain scalar in block context:
/// a document marker at the start, a leading indicator character, `- `,
/// `? `/`: ` at the start, `: ` anywhere, or ` #`.
fn has_block_indicator(s: &str, ch: &[char]) -> bool {
    if s.starts_with("---") || s.starts_with("...") {
        return true;
    }
    ch.iter().enumerate().any(|(i, &c)| {
        let followed_ws = is_blankz(ch.get(i + 1).copied());
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => true,
                '?' | ':' | '-' => followed_ws,
                _ => false,
            }
        } else {
            match c {
                ':' => followed_ws,
                '#' => is_blankz(Some(ch[i - 1])),
                _ => false,
            }
        }
    })
}

/// Where spaces, line breaks and unprintable characters sit in a string.
#[derive(Default)]
struct Whitespace {
    line_breaks: bool,
    special: bool,
    leading_space: bool,
    leading_break: bool,
    trailing_space: bool,
    trailing_break: bool,
    /// A space directly after a line break.
    break_space: bool,
    /// A line break directly after a space.
    space_break: bool,
}

/// Scans `ch` (non-empty) for [`Whitespace`].
fn whitespace(ch: &[char]) -> Whitespace {
    let mut w = Whitespace::default();
    let last = ch.len() - 1;
    let (mut prev_space, mut prev_break) = (false, false);
    for (i, &c) in ch.iter().enumerate() {
        if !is_printable(c) {
            w.special = true;
        }
        if c == ' ' {
            w.leading_space |= i == 0;
            w.trailing_space |= i == last;
            w.break_space |= prev_break;
            prev_space = true;
            prev_break = false;
        } else if is_break(c) {
            w.line_breaks = true;
            w.leading_break |= i == 0;
            w.trailing_break |= i == last;
            w.space_break |= prev_space;
            prev_break = true;
            prev_space = false;
        } else {
            prev_space = false;
            prev_break = false;
        }
    }
    w
}

/// libyaml's `yaml_emitter_analyze_scalar`, reduced to the flags the block
/// emitter consults.
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
    let block_ind = has_block_indicator(s, &ch);
    let w = whitespace(&ch);
    let edge_ws = w.leading_space || w.leading_break || w.trailing_space || w.trailing_break;
    let unquotable = w.space_break || w.special;
    Analysis {
        multiline: w.line_breaks,
        block_plain_allowed: !(edge_ws
            || w.break_space
            || unquotable
            || w.line_breaks
            || block_ind),
        single_quoted_allowed: !(w.break_space || unquotable),
        block_allowed: !(w.trailing_space || unquotable),
    }
}

/// The style go-yaml v2 writes `s` in; `simple_key` when `s` is a mapping key.
pub(super) fn choose_style(s: &str, simple_key: bool) -> Style {
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
