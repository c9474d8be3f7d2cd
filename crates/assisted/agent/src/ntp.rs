//! The `ntp-synchronizer` step (openshift/assisted-installer-agent
//! `src/ntp_synchronizer`): the cluster's NTP sources added to chrony, then
//! chrony's view of its sources reported in assisted-service's
//! `ntp_synchronization_response` shape.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The time limit of one `chronyc` command.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The error of an `ntp-synchronizer` step on a host without `chronyc`.
pub const NO_CHRONYC: &str = "chronyc is not installed on this host";

/// The `ntp-synchronizer` step's argument (assisted-service
/// `ntp_synchronization_request`): `{"ntp_source": "a,b"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NtpRequest {
    /// NTP servers to add, comma-separated (host names or addresses).
    #[serde(default)]
    pub ntp_source: String,
}

/// The `ntp-synchronizer` step's output (assisted-service
/// `ntp_synchronization_response`): `{"ntp_sources":[…]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NtpResponse {
    /// The sources chrony uses.
    pub ntp_sources: Vec<NtpSource>,
}

/// One NTP source (swagger `ntp_source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NtpSource {
    /// The source's address (`chronyc -n`: no name resolution).
    pub source_name: String,
    /// `synced`, `combined`, `not_combined`, `error`, `variable` or
    /// `unreachable`.
    pub source_state: String,
}

/// The `ntp-synchronizer` step (reference `src/ntp_synchronizer`) with
/// `chronyc` at `chronyc` (`None`: not installed): each source of `args[0]`
/// (`{"ntp_source":"a,b"}`) added with `chronyc add server <s> iburst`
/// (failures ignored), then `chronyc -n sources` read by
/// [`parse_chronyc_sources`]. Returns `(exit_code, output, error)`:
/// `(0, {"ntp_sources":[…]}, "")`; without `chronyc` `(1, "",
/// `[`NO_CHRONYC`]`)`; when `chronyc -n sources` fails, its exit code (-1
/// when killed or not started) and its standard error.
pub async fn ntp_synchronizer(args: &[String], chronyc: Option<&Path>) -> (i64, String, String) {
    let Some(chronyc) = chronyc else {
        return (1, String::new(), NO_CHRONYC.to_string());
    };
    let req = match args.first() {
        None => NtpRequest::default(),
        Some(a) => match serde_json::from_str::<NtpRequest>(a) {
            Ok(r) => r,
            Err(e) => {
                return (
                    -1,
                    String::new(),
                    format!("ntp-synchronizer: args[0] is not {{\"ntp_source\": \"a,b\"}}: {e}"),
                );
            }
        },
    };
    for source in req
        .ntp_source
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let ok = !source.starts_with('-')
            && source
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'));
        if !ok {
            tracing::warn!(source, "not an NTP server name or address; not added");
            continue;
        }
        if let Err(e) = command(chronyc, &["add", "server", source, "iburst"]).await {
            tracing::debug!(source, error = %e, "chronyc add server failed");
        }
    }
    match command(chronyc, &["-n", "sources"]).await {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let resp = NtpResponse {
                ntp_sources: parse_chronyc_sources(&text),
            };
            match serde_json::to_string(&resp) {
                Ok(json) => (0, json, String::new()),
                Err(e) => (-1, String::new(), format!("NTP sources as JSON: {e}")),
            }
        }
        Ok(out) => (
            out.status.code().map_or(-1, i64::from),
            String::new(),
            format!(
                "chronyc -n sources failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ),
        Err(e) => (-1, String::new(), e),
    }
}

/// Runs `program args…` with [`COMMAND_TIMEOUT`] (killed when it runs
/// longer or the step is abandoned).
async fn command(program: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let what = format!("{} {}", program.display(), args.join(" "));
    match tokio::time::timeout(COMMAND_TIMEOUT, cmd.output()).await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!(
            "{what}: no answer within {} s",
            COMMAND_TIMEOUT.as_secs()
        )),
    }
}

/// The sources of `chronyc -n sources` output: lines of servers (`^`
/// then the state character, then the address), `^*` synced, `^+`
/// combined, `^-` not_combined, `^?` unreachable, `^x` error, `^~`
/// variable (an unknown character: error). Headers, peers (`=`) and
/// reference clocks (`#`) are left out.
pub fn parse_chronyc_sources(text: &str) -> Vec<NtpSource> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('^')?;
            let mut chars = rest.chars();
            let state = match chars.next()? {
                '*' => "synced",
                '+' => "combined",
                '-' => "not_combined",
                '?' => "unreachable",
                'x' => "error",
                '~' => "variable",
                _ => "error",
            };
            let name = chars.as_str().split_whitespace().next()?;
            Some(NtpSource {
                source_name: name.to_string(),
                source_state: state.to_string(),
            })
        })
        .collect()
}

/// The first executable file `name` in the directories of `path` (a
/// `PATH` value).
pub fn which(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chronyc_sources_as_the_service_wants_them() {
        let text = "\
MS Name/IP address         Stratum Poll Reach LastRx Last sample
===============================================================================
^* 192.0.2.1                     2   6   377    34   +123us[ +456us] +/-   20ms
^+ 192.0.2.2                     2   6   377    35   -12us[  -12us] +/-   25ms
^- 2001:db8::1                   3   6   377    36   +1ms[  +1ms] +/-   40ms
^? 198.51.100.7                  0   6     0     -     +0ns[   +0ns] +/-    0ns
^x 198.51.100.8                  2   6   377    37   +9ms[  +9ms] +/-   30ms
^~ 198.51.100.9                  2   6   377    38   +5ms[  +5ms] +/-   30ms
=* 203.0.113.1                   2   6   377    39   +1us[  +1us] +/-   10ms
#* GPS0                          0   4   377    10   +1us[  +1us] +/-  100ns
";
        let got: Vec<(String, String)> = parse_chronyc_sources(text)
            .into_iter()
            .map(|s| (s.source_name, s.source_state))
            .collect();
        let want = [
            ("192.0.2.1", "synced"),
            ("192.0.2.2", "combined"),
            ("2001:db8::1", "not_combined"),
            ("198.51.100.7", "unreachable"),
            ("198.51.100.8", "error"),
            ("198.51.100.9", "variable"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn which_finds_executables_only() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("chronyc"), "not executable").unwrap();
        let path = std::env::join_paths([d.path().join("none"), bin.clone()]).unwrap();
        assert_eq!(which("chronyc", Some(&path)), None);
        let p = script(&bin, "chronyc", "exit 0");
        assert_eq!(which("chronyc", Some(&path)), Some(p));
        assert_eq!(which("chronyc", None), None);
    }

    #[tokio::test]
    async fn ntp_without_chronyc_says_so() {
        let args = vec![r#"{"ntp_source":"192.0.2.1"}"#.to_string()];
        assert_eq!(
            ntp_synchronizer(&args, None).await,
            (1, String::new(), NO_CHRONYC.to_string())
        );
    }

    #[tokio::test]
    async fn ntp_adds_the_sources_then_reports_chronys() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("calls");
        let chronyc = script(
            d.path(),
            "chronyc",
            &format!(
                "echo \"$*\" >> {}\nif [ \"$1\" = -n ]; then printf '%s\\n' 'MS Name' '====' '^* 192.0.2.1  2 6 377 1 +1us[+1us] +/- 1ms' '^? 192.0.2.2  0 6 0 - +0ns[+0ns] +/- 0ns'; else exit 3; fi",
                log.display()
            ),
        );
        let args = vec![r#"{"ntp_source":"192.0.2.1, 192.0.2.2,,-bad"}"#.to_string()];
        let (code, out, err) = ntp_synchronizer(&args, Some(&chronyc)).await;
        assert_eq!((code, err.as_str()), (0, ""));
        let resp: NtpResponse = serde_json::from_str(&out).unwrap();
        assert_eq!(
            resp.ntp_sources,
            [
                NtpSource {
                    source_name: "192.0.2.1".into(),
                    source_state: "synced".into()
                },
                NtpSource {
                    source_name: "192.0.2.2".into(),
                    source_state: "unreachable".into()
                },
            ]
        );
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "add server 192.0.2.1 iburst\nadd server 192.0.2.2 iburst\n-n sources\n",
            "failures of add ignored, a bad source never passed on"
        );
        // chronyc -n sources failing: its exit code and standard error.
        let broken = script(
            d.path(),
            "broken",
            "echo 'cannot talk to chronyd' >&2; exit 5",
        );
        let (code, out, err) = ntp_synchronizer(&[], Some(&broken)).await;
        assert_eq!((code, out.as_str()), (5, ""));
        assert!(err.contains("cannot talk to chronyd"), "{err}");
        // Arguments that are not the request: refused, nothing run.
        let (code, _, err) = ntp_synchronizer(&["[1]".into()], Some(&broken)).await;
        assert_eq!(code, -1);
        assert!(err.contains("ntp_source"), "{err}");
    }
}
