//! Fuzz target (issue #10 item 9): the HTTP server's `Range` header
//! ([`okd_bootserver::parse_range`], RFC 9110 §14.2).
//!
//! Inputs are `Range` headers built from parts (unit, first and last
//! positions around 0, the file length and the u64 limit, suffix ranges,
//! several ranges, whitespace) and sometimes byte-mutated, against file
//! lengths around the same boundaries. Properties: no panic; a partial
//! answer is a non-empty range inside the file; an unmutated single range
//! gets exactly the RFC's answer (the model below).
//!
//! CI runs a few thousand cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use axum::http::HeaderValue;
use okd_bootserver::{RangeReq, parse_range};
use okd_test_utils::fuzz;
use proptest::prelude::*;

/// A generated `Range` header.
#[derive(Debug, Clone)]
struct Spec {
    unit: &'static str,
    first: Option<String>,
    last: Option<String>,
    /// Extra `,a-b` ranges (any makes the whole header ignored).
    more: Vec<(u64, u64)>,
    pad: bool,
}

impl Spec {
    fn render(&self) -> String {
        let p = if self.pad { " " } else { "" };
        let mut s = format!(
            "{p}{}{p}={p}{}{p}-{p}{}",
            self.unit,
            self.first.as_deref().unwrap_or(""),
            self.last.as_deref().unwrap_or("")
        );
        for (a, b) in &self.more {
            s.push_str(&format!(",{p}{a}-{b}"));
        }
        s
    }

    /// RFC 9110 §14.1.1/§14.2 for one range, as the server implements it.
    fn model(&self, len: u64) -> RangeReq {
        let num = |s: &Option<String>| -> Option<Option<u64>> {
            // Whitespace around a position is allowed; an empty one is absent.
            match s.as_deref().map(str::trim) {
                None | Some("") => Some(None),
                Some(t) if t.bytes().all(|c| c.is_ascii_digit()) => t.parse().ok().map(Some),
                Some(_) => None,
            }
        };
        if !self.unit.eq_ignore_ascii_case("bytes") || !self.more.is_empty() {
            return RangeReq::Full;
        }
        let (Some(a), Some(b)) = (num(&self.first), num(&self.last)) else {
            return RangeReq::Full;
        };
        match (a, b) {
            (None, None) => RangeReq::Full,
            (None, Some(0)) => RangeReq::Unsatisfiable,
            (None, Some(_)) if len == 0 => RangeReq::Unsatisfiable,
            (None, Some(n)) => RangeReq::Part(len - n.min(len), len - 1),
            (Some(a), None) if a >= len => RangeReq::Unsatisfiable,
            (Some(a), None) => RangeReq::Part(a, len - 1),
            (Some(a), Some(b)) if a > b => RangeReq::Full,
            (Some(a), Some(_)) if a >= len => RangeReq::Unsatisfiable,
            (Some(a), Some(b)) => RangeReq::Part(a, b.min(len - 1)),
        }
    }
}

fn length() -> impl Strategy<Value = u64> {
    prop_oneof![
        prop::sample::select(vec![0u64, 1, 2, 9, 10, 11, 4096, u64::MAX - 1, u64::MAX]),
        any::<u64>(),
        0u64..100,
    ]
}

fn position() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        4 => (0u64..20).prop_map(|n| Some(n.to_string())),
        2 => any::<u64>().prop_map(|n| Some(n.to_string())),
        2 => prop::sample::select(vec![
            "0", "00", "9", "10", "11", "18446744073709551614", "18446744073709551615",
            "18446744073709551616", "99999999999999999999999", "-1", "+1", "1e3", " 1", "x", "",
            "0x10", "١",
        ])
        .prop_map(|s| Some(s.to_string())),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![
            6 => Just("bytes"),
            1 => prop::sample::select(vec!["BYTES", "Bytes", "items", "byte", ""]),
        ],
        position(),
        position(),
        prop_oneof![
            6 => Just(Vec::new()),
            1 => prop::collection::vec((0u64..20, 0u64..20), 1..3),
        ],
        any::<bool>(),
    )
        .prop_map(|(unit, first, last, more, pad)| Spec {
            unit,
            first,
            last,
            more,
            pad,
        })
}

#[test]
fn fuzz_range_header() {
    let strategy = (
        spec(),
        length(),
        prop_oneof![
            4 => Just(Vec::new()),
            1 => prop::collection::vec(fuzz::byte_edit(), 1..4),
        ],
    );
    let tally = fuzz::Tally::default();
    fuzz::run(
        "bastion range header",
        5000,
        strategy,
        |(spec, len, edits)| {
            let text = spec.render();
            let mut bytes = text.clone().into_bytes();
            fuzz::apply_byte_edits(&mut bytes, &edits);
            let Ok(value) = HeaderValue::from_bytes(&bytes) else {
                tally.hit("not a header value");
                return Ok(());
            };
            let got = parse_range(Some(&value), len);
            if let RangeReq::Part(s, e) = got {
                prop_assert!(s <= e && e < len, "{got:?} for {value:?}, len {len}");
            }
            tally.hit(match got {
                RangeReq::Full => "full",
                RangeReq::Part(..) => "part",
                RangeReq::Unsatisfiable => "416",
            });
            if edits.is_empty() {
                prop_assert_eq!(got, spec.model(len), "{:?}, len {}", text, len);
            }
            Ok(())
        },
    );
    tally.print("bastion range header");
    assert_eq!(parse_range(None, 10), RangeReq::Full);
}
