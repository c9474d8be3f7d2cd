//! How go-yaml v2 reads plain scalars back (its resolver, yaml.v2 resolve.go)
//! and how it writes numbers: strings that would resolve to another type must
//! be quoted by the emitter.

/// Whether go-yaml v2's resolver reads the plain scalar `s` as a non-string
/// (null, bool, int, float, timestamp, merge key) — such strings are quoted.
pub(super) fn resolves_to_non_string(s: &str) -> bool {
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

/// Formats a float like go-yaml v2 (`strconv.FormatFloat(f, 'g', -1, 64)` with
/// YAML spellings for NaN and infinities).
pub(super) fn go_float(f: f64) -> String {
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
