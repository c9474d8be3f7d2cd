//! The page itself: bootstrap.ign fetches, escaping, times in words.

use super::*;

/// Every bootstrap.ign request is on the page with the bytes sent of the
/// size; a transfer that broke off does not count as "Ignition fetched";
/// the page has no MAC column.
#[test]
fn bootstrap_ign_fetches() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let broke_off = http(
        "2026-11-24T10:01:00Z",
        "/ignition/bootstrap.ign",
        200,
        180,
        Some(300_000),
    );
    let mut d = doc();
    d.hosts[0].http = vec![broke_off.clone()];
    annotate(&mut d, now);
    let ign = boot_stage(&d, "Ignition fetched");
    assert!(!ign.done, "{ign:?}");
    assert_eq!(
        ign.detail,
        "1 fetch(es) of bootstrap.ign, none complete; the last sent 180 of 300000 bytes"
    );
    let html = page(&d, now);
    for want in [
        "<h2 id=\"fetches\">bootstrap.ign fetches</h2>",
        "<th scope=\"row\">bootstrap</th><td data-label=\"Address\">192.168.120.102</td><td data-label=\"HTTP\">200</td><td data-label=\"Sent\">180 B of 293.0 KiB, broke off</td>",
        "<th scope=\"row\">master</th><td data-label=\"Address\">192.168.120.103</td><td data-label=\"HTTP\">403</td><td data-label=\"Sent\">refused</td>",
        "<th scope=\"row\">not in the inventory</th><td data-label=\"Address\">192.168.120.66</td>",
    ] {
        assert!(html.contains(want), "{want} not in {html}");
    }
    assert!(
        !html.contains(">MAC<") && !html.contains("data-label=\"MAC\""),
        "{html}"
    );

    let mut d = doc();
    d.hosts[0].http.insert(0, broke_off);
    annotate(&mut d, now);
    let ign = boot_stage(&d, "Ignition fetched");
    assert!(ign.done, "{ign:?}");
    assert_eq!(
        ign.time.as_deref(),
        Some("2026-11-24T10:01:05Z"),
        "the complete fetch counts"
    );
    assert!(page(&d, now).contains("293.0 KiB of 293.0 KiB, complete"));
}

/// Strings from the network (a request path, a host name) are escaped on
/// the page.
#[test]
fn page_escapes_what_it_shows() {
    let now = datetime!(2026-11-24 10:10 UTC);
    let mut d = doc();
    d.unknown_clients[0].http[0].path = "/ignition/<script>&\"x\"/bootstrap.ign".into();
    d.hosts[2].hostname = "w<1>".into();
    annotate(&mut d, now);
    let html = page(&d, now);
    assert!(html.contains("<th scope=\"row\">w&lt;1&gt;</th>"), "{html}");
    assert!(!html.contains("w<1>"), "{html}");
}

#[test]
fn human_times() {
    let now = datetime!(2026-11-24 10:00 UTC);
    assert_eq!(ago(now, now), "just now");
    assert_eq!(ago(datetime!(2026-11-24 09:59:18 UTC), now), "42 s ago");
    assert_eq!(ago(datetime!(2026-11-24 09:58 UTC), now), "2 min ago");
    assert_eq!(ago(datetime!(2026-11-24 07:00 UTC), now), "3 h ago");
    assert_eq!(ago(datetime!(2026-11-22 10:00 UTC), now), "2 days ago");
}
