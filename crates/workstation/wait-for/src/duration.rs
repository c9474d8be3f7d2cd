//! Durations as openshift-install prints them (Go's `time.Duration`
//! String: `20m0s`, `1h0m0s`, `45s`) and the `until 3:04PM UTC` clock, plus
//! the `--timeouts` parser.

use std::time::Duration;

/// Go's `Duration.String()` for whole seconds: `0s`, `45s`, `1m2s`, `1h0m0s`.
pub fn go_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else if d.as_secs() == 0 && d.subsec_millis() > 0 {
        format!("{}ms", d.subsec_millis())
    } else {
        format!("{s}s")
    }
}

/// Go's `time.Kitchen` clock plus zone, in UTC: `3:04PM UTC`.
pub fn kitchen_utc(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let (h, m) = (t.hour(), t.minute());
    let (h12, ampm) = match h {
        0 => (12, "AM"),
        1..=11 => (h, "AM"),
        12 => (12, "PM"),
        _ => (h - 12, "PM"),
    };
    format!("{h12}:{m:02}{ampm} UTC")
}

/// `"Waiting up to 20m0s (until 3:04PM UTC)"`-style prefix for a wait of `d`
/// starting now.
pub fn up_to(d: Duration) -> String {
    let until = time::OffsetDateTime::now_utc() + d;
    format!("{} (until {})", go_duration(d), kitchen_utc(until))
}

/// Parses `90s`, `20m`, `1h30m`, `1500ms`, or plain seconds `45`.
///
/// # Errors
/// A message naming the text when it is not such a duration.
pub fn parse(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(Duration::from_secs(n));
    }
    let mut total = Duration::ZERO;
    let mut num = String::new();
    let mut chars = t.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let unit = if c == 'm' && chars.peek() == Some(&'s') {
            chars.next();
            "ms".to_string()
        } else {
            c.to_string()
        };
        let n: u64 = num
            .parse()
            .map_err(|_| format!("{text:?} is not a duration like 90s, 20m or 1h30m"))?;
        num.clear();
        total += match unit.as_str() {
            "h" => Duration::from_secs(n.saturating_mul(3600)),
            "m" => Duration::from_secs(n.saturating_mul(60)),
            "s" => Duration::from_secs(n),
            "ms" => Duration::from_millis(n),
            _ => {
                return Err(format!(
                    "{text:?}: unknown unit {unit:?} (use h, m, s or ms)"
                ));
            }
        };
        any = true;
    }
    if !num.is_empty() || !any {
        return Err(format!("{text:?} is not a duration like 90s, 20m or 1h30m"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_format() {
        assert_eq!(go_duration(Duration::from_secs(20 * 60)), "20m0s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::from_secs(62)), "1m2s");
        assert_eq!(go_duration(Duration::from_secs(0)), "0s");
        assert_eq!(go_duration(Duration::from_secs(45 * 60)), "45m0s");
    }

    #[test]
    fn kitchen() {
        let t = time::macros::datetime!(2026-11-24 15:04 UTC);
        assert_eq!(kitchen_utc(t), "3:04PM UTC");
        let t = time::macros::datetime!(2026-11-24 00:30 UTC);
        assert_eq!(kitchen_utc(t), "12:30AM UTC");
    }

    #[test]
    fn parses() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("7"), Ok(Duration::from_secs(7)));
        assert!(parse("5x").is_err());
        assert!(parse("m").is_err());
        assert!(parse("").is_err());
    }
}
