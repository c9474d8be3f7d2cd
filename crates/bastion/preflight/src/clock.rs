//! The `clock.bastion` check: whether this machine's clock is synchronized.
//! The 24-hour certificates are judged by the clocks of the machine that
//! made them and of every node; a bastion clock off by hours makes
//! `create ignition-configs` issue certificates the nodes refuse.

use std::time::Duration;

use crate::Check;

/// How long one of the clock programs may take.
const LIMIT: Duration = Duration::from_secs(3);

/// Runs `prog args` with a time limit; its stdout when it exits 0.
async fn output(prog: &str, args: &[&str]) -> Option<String> {
    let child = tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(LIMIT, child).await {
        Ok(Ok(o)) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        _ => None,
    }
}

/// The clock's synchronization as systemd (`timedatectl show`, the
/// kernel's `STA_UNSYNC` flag as timedated reads it) or chrony (`chronyc
/// tracking`'s leap status) reports it.
pub(crate) async fn bastion() -> Check {
    let id = "clock.bastion";
    let fix = "enable NTP on this machine (`timedatectl set-ntp true`, or chronyd with a reachable server) and on the nodes' network";
    if let Some(v) = output(
        "timedatectl",
        &["show", "--property=NTPSynchronized", "--value"],
    )
    .await
    {
        return match v.trim() {
            "yes" => Check::pass(id, "synchronized (timedatectl: NTPSynchronized=yes)"),
            other => Check::warn(
                id,
                format!(
                    "not synchronized (timedatectl: NTPSynchronized={other}): certificates made here may not be valid yet, or no longer, on the nodes"
                ),
                fix,
            ),
        };
    }
    if let Some(t) = output("chronyc", &["-n", "tracking"]).await {
        let leap = t
            .lines()
            .find_map(|l| l.strip_prefix("Leap status"))
            .map(|v| v.trim_start_matches([' ', ':']).trim().to_string())
            .unwrap_or_default();
        return if leap == "Normal" {
            Check::pass(id, "synchronized (chronyc tracking: Leap status Normal)")
        } else {
            Check::warn(
                id,
                format!("not synchronized (chronyc tracking: Leap status {leap:?})"),
                fix,
            )
        };
    }
    Check::skip(
        id,
        "cannot tell whether this machine's clock is synchronized: neither timedatectl nor chronyc answers",
    )
}
