//! Fuzz target (issue #10 item 9): Accept-header negotiation of the
//! Ignition spec version ([`okd_mcs::negotiate`]).
//!
//! Inputs are Accept headers built from entries (Ignition and other media
//! types, `version=` values around every boundary, `q=` values including
//! odd ones, stray parameters and whitespace), sometimes byte-mutated.
//! Properties: no panic; a spec 3 answer is within the served minors; an
//! entry of another media type added anywhere changes nothing; with
//! distinct q values the entries' order changes nothing; an answer asked
//! for again alone gives the same answer.
//! `q=NaN` and other odd q spellings are generated too (they once panicked
//! the sort; see the regression test at the end).
//!
//! CI runs a few thousand cases; `OKD_FUZZ_CASES=<n>` runs more (README).

use okd_mcs::{MAX_SPEC3_MINOR, MIN_SPEC3_MINOR, SpecVersion, negotiate};
use okd_test_utils::fuzz;
use proptest::prelude::*;

const IGN: &str = "application/vnd.coreos.ignition+json";

/// One generated Accept entry.
#[derive(Debug, Clone)]
struct Entry {
    media: String,
    params: Vec<(String, String)>,
    /// Spaces around separators.
    pad: bool,
}

impl Entry {
    fn render(&self) -> String {
        let sep = if self.pad { " ; " } else { ";" };
        let mut s = self.media.clone();
        for (k, v) in &self.params {
            s.push_str(sep);
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }

    /// The q value negotiate uses: the first parseable `q=` (1 without).
    /// Each `;` part is trimmed, so only trailing space around a value goes:
    /// `q= 0.3` is not a number (as for Go's `strconv.ParseFloat` in the MCO).
    /// The quality the server ranks by, in thousandths: a finite number
    /// clamped to 0..=1 and rounded to three decimals (RFC 9110 §12.4.2);
    /// NaN, infinities and non-numbers count as absent (1).
    fn q(&self) -> u16 {
        self.params
            .iter()
            .filter(|(k, _)| k == "q")
            .find_map(|(_, v)| v.trim_end().parse::<f64>().ok().filter(|q| q.is_finite()))
            .map_or(1000, |q| (q.clamp(0.0, 1.0) * 1000.0).round() as u16)
    }
}

fn version() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..6, 0u64..9, 0u64..3).prop_map(|(a, b, c)| format!("{a}.{b}.{c}")),
        (0u64..6, 0u64..9, 0u64..3, "[a-z0-9.]{0,8}")
            .prop_map(|(a, b, c, p)| format!("{a}.{b}.{c}-{p}")),
        (0u64..6, 0u64..9, 0u64..3, "[a-z0-9.]{0,8}")
            .prop_map(|(a, b, c, p)| format!("{a}.{b}.{c}+{p}")),
        prop::sample::select(vec![
            "3.2",
            "3",
            "",
            "3.2.0.1",
            "03.2.0",
            "3..0",
            "-3.2.0",
            "3.4.0-experimental",
            "3.18446744073709551615.0",
            "3.18446744073709551616.0",
            "18446744073709551615.0.0",
            "2.2.0",
            "2.1.9",
            "4.0.0",
            "3.0.0",
            "3.1.0",
            "3.5.0",
            "3.6.0",
            "banana",
        ])
        .prop_map(String::from),
        "[ -~]{0,12}",
    ]
}

/// q values, NaN spellings included.
fn q_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..=1000).prop_map(|n| format!("{}", f64::from(n) / 1000.0)),
        prop::sample::select(vec![
            "0", "1", "1.0", "0.5", "0.001", "-1", "2", "1e3", "1e-50", "inf", "-inf", "+0.5", "",
            "x", " 0.3 ", "0x1", "1.", ".5", "NaN", "nan", "-NaN",
        ])
        .prop_map(String::from),
    ]
}

fn entry() -> impl Strategy<Value = Entry> {
    let media = prop_oneof![
        4 => Just(IGN.to_string()),
        1 => prop::sample::select(vec![
            "*/*",
            "application/json",
            "text/html",
            "application/vnd.coreos.ignition+json ",
            "Application/vnd.coreos.ignition+json",
            "vnd.coreos.ignition+json",
            "/vnd.coreos.ignition+json",
            "application/",
            "",
        ])
        .prop_map(String::from),
        1 => "[ -~&&[^,;]]{0,20}",
    ];
    let param = prop_oneof![
        4 => version().prop_map(|v| ("version".to_string(), v)),
        3 => q_value().prop_map(|v| ("q".to_string(), v)),
        1 => ("[a-zA-Z]{1,8}", "[ -~&&[^,;]]{0,8}"),
        1 => prop::sample::select(vec![("VERSION", "3.2.0"), ("Q", "0.1"), ("version", "")])
            .prop_map(|(k, v)| (k.to_string(), v.to_string())),
    ];
    (media, prop::collection::vec(param, 0..4), any::<bool>())
        .prop_map(|(media, params, pad)| Entry { media, params, pad })
}

/// The answer without the header text an error carries.
fn answer(h: &str) -> Result<SpecVersion, ()> {
    negotiate(Some(h)).map_err(|_| ())
}

fn header(entries: &[Entry]) -> String {
    entries
        .iter()
        .map(Entry::render)
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn fuzz_accept_negotiation() {
    let strategy = (
        prop::collection::vec(entry(), 0..6),
        prop_oneof![
            4 => Just(Vec::new()),
            1 => prop::collection::vec(fuzz::byte_edit(), 1..4),
        ],
        any::<usize>(),
    );
    let tally = fuzz::Tally::default();
    fuzz::run(
        "mcs accept negotiation",
        3000,
        strategy,
        |(entries, edits, at)| {
            let h = header(&entries);
            let mut bytes = h.clone().into_bytes();
            fuzz::apply_byte_edits(&mut bytes, &edits);
            let mutated = String::from_utf8_lossy(&bytes).into_owned();
            let r = negotiate(Some(&mutated));
            if let Ok(SpecVersion::V3(m)) = r {
                prop_assert!((MIN_SPEC3_MINOR..=MAX_SPEC3_MINOR).contains(&m), "{r:?}");
            }
            if !edits.is_empty() {
                tally.hit("byte-mutated");
                return Ok(());
            }
            let got = answer(&h);
            tally.hit(match got {
                Ok(SpecVersion::V2_2) => "2.2",
                Ok(SpecVersion::V3(_)) => "3.x",
                Err(_) => "400",
            });
            if let Ok(SpecVersion::V3(m)) = got {
                prop_assert!((MIN_SPEC3_MINOR..=MAX_SPEC3_MINOR).contains(&m), "{got:?}");
            }
            // Another media type anywhere changes nothing.
            let mut more = entries.clone();
            let other = Entry {
                media: "text/html".into(),
                params: vec![
                    ("version".into(), "3.3.0".into()),
                    ("q".into(), "0.7".into()),
                ],
                pad: false,
            };
            more.insert(at % (entries.len() + 1), other);
            prop_assert_eq!(answer(&header(&more)), got, "{}", h);
            // With distinct q values, order does not matter.
            let mut qs: Vec<u16> = entries.iter().map(Entry::q).collect();
            qs.sort_unstable();
            if qs.windows(2).all(|w| w[0] != w[1]) {
                let reversed: Vec<Entry> = entries.iter().rev().cloned().collect();
                prop_assert_eq!(answer(&header(&reversed)), got, "{}", h);
            }
            // The answer, asked for alone, is the same answer.
            if let Ok(v) = got {
                let alone = format!("{IGN};version={}", v.as_str());
                prop_assert_eq!(answer(&alone), Ok(v), "{}", h);
            }
            Ok(())
        },
    );
    tally.print("mcs accept negotiation");
}

/// Regression input: `q=NaN` in an Accept header reached the q sort,
/// which is not a total order with NaN: Rust's sort panics
/// ("user-provided comparison function does not correctly implement a
/// total order"). q values are now compared as integer thousandths and
/// NaN is ignored (issue #10 item 7).
#[test]
fn q_nan_does_not_panic_or_misorder() {
    let mut h: Vec<String> = (0..40)
        .map(|i| format!("{IGN};version=3.{}.0;q=0.{i:02}", 1 + i % 5))
        .collect();
    for i in (0..40).step_by(3) {
        h[i] = format!("{IGN};version=3.1.0;q=NaN");
    }
    let r = std::panic::catch_unwind(|| negotiate(Some(&h.join(", "))));
    let Ok(Ok(SpecVersion::V3(m))) = r else {
        panic!("negotiate on q=NaN entries: {r:?}");
    };
    assert!((MIN_SPEC3_MINOR..=MAX_SPEC3_MINOR).contains(&m));
}
