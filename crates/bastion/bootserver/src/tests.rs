use super::*;
use crate::files::civil_from_days;
use std::time::UNIX_EPOCH;

#[test]
fn ranges() {
    let h = |s: &str| HeaderValue::from_str(s).unwrap();
    assert_eq!(parse_range(None, 10), RangeReq::Full);
    assert_eq!(parse_range(Some(&h("bytes=0-4")), 10), RangeReq::Part(0, 4));
    assert_eq!(parse_range(Some(&h("bytes=5-")), 10), RangeReq::Part(5, 9));
    assert_eq!(parse_range(Some(&h("bytes=-3")), 10), RangeReq::Part(7, 9));
    assert_eq!(parse_range(Some(&h("bytes=-30")), 10), RangeReq::Part(0, 9));
    assert_eq!(
        parse_range(Some(&h("bytes=8-100")), 10),
        RangeReq::Part(8, 9)
    );
    assert_eq!(
        parse_range(Some(&h("bytes=10-")), 10),
        RangeReq::Unsatisfiable
    );
    assert_eq!(
        parse_range(Some(&h("bytes=-0")), 10),
        RangeReq::Unsatisfiable
    );
    assert_eq!(parse_range(Some(&h("bytes=4-2")), 10), RangeReq::Full);
    assert_eq!(parse_range(Some(&h("bytes=0-1,4-5")), 10), RangeReq::Full);
    assert_eq!(parse_range(Some(&h("items=0-1")), 10), RangeReq::Full);
    assert_eq!(parse_range(Some(&h("bytes=x-1")), 10), RangeReq::Full);
}

#[test]
fn dates() {
    let t = UNIX_EPOCH + std::time::Duration::from_secs(784_111_777);
    assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(civil_from_days(19_782), (2024, 2, 29));
}

/// Ranges merge, overlap and touch; the file is whole once `[0, len)`
/// is covered; a new version of the file starts over.
#[test]
fn one_time_coverage() {
    let t0 = Some(UNIX_EPOCH);
    let mut t = OneTime::default();
    assert!(!t.deliver(50, 50, 100, t0));
    assert!(!t.deliver(0, 10, 100, t0));
    assert_eq!(t.covered, [(0, 10), (50, 100)]);
    assert!(!t.deliver(20, 10, 100, t0));
    assert!(
        !t.deliver(10, 10, 100, t0),
        "20..30 is still apart from 50.."
    );
    assert_eq!(t.covered, [(0, 30), (50, 100)]);
    assert!(!t.deliver(0, 10, 101, t0), "another size: another file");
    assert_eq!(t.covered, [(0, 10)]);
    assert!(t.deliver(5, 96, 101, t0));
    assert!(t.deliver(0, 0, 0, None), "an empty file is whole at once");
}

#[test]
fn names() {
    assert!(safe_name("coreos.raw.xz"));
    for bad in ["", ".", "..", "../x", "a/b", "a\\b", "a\0"] {
        assert!(!safe_name(bad), "{bad:?}");
    }
}
