//! Stage ends from the bootstrap node's service records, for the benchmark
//! (bench/bootstrap.sh).

use std::path::Path;

/// Each stage's end from the bootstrap's service records
/// (`/var/log/openshift/bootkube.json`, `progress.json` and, on a single
/// node after its reboot, `post-reboot.json` under `root`), in seconds
/// since the first record (the records' resolution is
/// one second), one line per stage end: `<unit> <stage> <at> (+<since the
/// previous end>)`; a restart's repeated stages show again. For the
/// benchmark (bench/bootstrap.sh).
pub fn stage_times(root: &Path) -> String {
    let secs = |ts: &str| {
        time::PrimitiveDateTime::parse(
            ts.trim_end_matches('Z'),
            time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
        )
        .map(|t| t.assume_utc().unix_timestamp())
        .ok()
    };
    let mut ends: Vec<(i64, String)> = Vec::new();
    let mut first = None;
    for unit in ["bootkube", "progress", "post-reboot"] {
        let text = std::fs::read_to_string(root.join(format!("var/log/openshift/{unit}.json")))
            .unwrap_or_default();
        for e in okd_service_record::parse_entries(text.as_bytes()).unwrap_or_default() {
            let Some(t) = secs(&e.timestamp) else {
                continue;
            };
            first = Some(first.map_or(t, |f: i64| f.min(t)));
            if e.phase == "stage end" {
                ends.push((t, format!("{unit} {} ({})", e.stage, e.result)));
            }
        }
    }
    ends.sort_by_key(|(t, _)| *t);
    let start = first.unwrap_or(0);
    let mut out = String::new();
    let mut last = start;
    for (t, what) in ends {
        out.push_str(&format!(
            "  {what:<58} {:5} s  (+{})\n",
            t - start,
            t - last
        ));
        last = t;
    }
    out
}
