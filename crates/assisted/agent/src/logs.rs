//! The `logs-gather` step (assisted-service
//! `internal/host/hostcommands/logs_cmd.go`; the reference agent's
//! `logs_sender`): the host's logs packed into one gzip-compressed tar and
//! uploaded to `POST /v2/clusters/{cluster_id}/logs?logs_type=host&
//! infra_env_id=…&host_id=…` as the multipart form field `upfile`, the
//! upload the reference's agent makes. The service hands it out once each
//! time a host enters `error` or `cancelled`.
//!
//! The archive holds, under `<host id>/`:
//! - `agent.txt`: this agent's version, ids, service and its last step
//!   results;
//! - `inventory.json`: the inventory as the `inventory` step reports it;
//! - `install-request.json`: the install step's request, when one came
//!   (the Ignition kept beside it is not included: the service has it);
//! - `journal.log`: the systemd journal of the last 24 hours
//!   (`journalctl --root <root>`), at most [`MAX_JOURNAL_BYTES`], or why
//!   there is none.

use std::path::Path;
use std::time::Duration;

use okd_assisted_api::steps::LogsGatherCmdRequest;

use crate::Root;

/// The most journal text packed, bytes (32 MiB; the newest lines are
/// kept when there is more).
pub const MAX_JOURNAL_BYTES: usize = 32 << 20;

/// How long `journalctl` may take.
pub const JOURNAL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the upload may take (the service's request timeout is the
/// agent's usual 30 s; an archive is up to tens of MiB).
pub const UPLOAD_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The systemd journal of the last 24 hours under `root` (`journalctl
/// --root <root> --since -24h --no-pager -o short-iso`), its newest
/// [`MAX_JOURNAL_BYTES`]; on failure (no `journalctl`, a time-out, an
/// error exit) a one-line explanation instead, so that the archive says
/// why the journal is missing.
pub async fn journal(root: &Root) -> Vec<u8> {
    let Some(journalctl) = crate::ntp::which("journalctl", std::env::var_os("PATH").as_deref())
    else {
        return b"journal not collected: journalctl is not installed\n".to_vec();
    };
    let mut cmd = tokio::process::Command::new(journalctl);
    cmd.args(["--no-pager", "-o", "short-iso", "--since", "-24h"])
        .arg("--root")
        .arg(&root.0)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(JOURNAL_TIMEOUT, cmd.output()).await {
        Err(_) => format!(
            "journal not collected: journalctl did not finish within {} s\n",
            JOURNAL_TIMEOUT.as_secs()
        )
        .into_bytes(),
        Ok(Err(e)) => format!("journal not collected: running journalctl: {e}\n").into_bytes(),
        Ok(Ok(out)) if !out.status.success() => format!(
            "journal not collected: journalctl {}: {}\n",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into_bytes(),
        Ok(Ok(out)) => {
            let text = out.stdout;
            if text.len() <= MAX_JOURNAL_BYTES {
                text
            } else {
                let mut cut = text.len() - MAX_JOURNAL_BYTES;
                // Start at a line.
                while cut < text.len() && text[cut - 1] != b'\n' {
                    cut += 1;
                }
                let mut kept = format!(
                    "(the journal's first {cut} bytes are left out: at most {MAX_JOURNAL_BYTES} are kept)\n"
                )
                .into_bytes();
                kept.extend_from_slice(&text[cut..]);
                kept
            }
        }
    }
}

/// The archive: a gzip-compressed tar (ustar) of the files listed in the
/// module's documentation under `<host_id>/`, each 0644 and stamped
/// `mtime` (Unix s). `install-request.json` is read from
/// `<state_dir>/install/` when it is there.
///
/// # Errors
/// Reading the install request (other than its absence) or writing the
/// archive into memory.
pub fn pack(
    host_id: &str,
    agent_txt: &str,
    inventory_json: &str,
    journal: &[u8],
    state_dir: &Path,
    mtime: u64,
) -> std::io::Result<Vec<u8>> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut add = |name: &str, data: &[u8]| -> std::io::Result<()> {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(mtime);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, format!("{host_id}/{name}"), data)
    };
    add("agent.txt", agent_txt.as_bytes())?;
    add("inventory.json", inventory_json.as_bytes())?;
    let req = state_dir.join("install").join(crate::install::REQUEST_FILE);
    match std::fs::read(&req) {
        Ok(b) => add("install-request.json", &b)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", req.display()),
            ));
        }
    }
    add("journal.log", journal)?;
    tar.into_inner()?.finish()
}

/// What the step needs besides its argument.
#[derive(Debug, Clone)]
pub struct Context {
    /// The HTTP client (with the agent token and CA).
    pub client: reqwest::Client,
    /// `<service>/api/assisted-install/v2`.
    pub api_base: String,
    /// This host's id and infra-env, which the request must name.
    pub host_id: String,
    /// See `host_id`.
    pub infra_env_id: String,
    /// The agent's state directory.
    pub state_dir: std::path::PathBuf,
    /// The machine's root.
    pub root: Root,
    /// `agent.txt`'s text.
    pub agent_txt: String,
}

/// Runs the step: `args[0]` is a [`LogsGatherCmdRequest`] for this host.
/// Returns (exit code, output, error): 0 with `{"uploaded_bytes": n,
/// "files": […]}`, or 1 with the reason (a bad or foreign request, the
/// archive, the upload refused with the service's reason).
pub async fn run(args: &[String], ctx: Context) -> (i64, String, String) {
    match gather(args, ctx).await {
        Ok(out) => (0, out, String::new()),
        Err(e) => (1, String::new(), e),
    }
}

async fn gather(args: &[String], ctx: Context) -> Result<String, String> {
    let req: LogsGatherCmdRequest = args
        .first()
        .and_then(|a| serde_json::from_str(a).ok())
        .ok_or("the logs-gather step's argument is not a logs_gather_cmd_request JSON object")?;
    if req.host_id != ctx.host_id || req.infra_env_id != ctx.infra_env_id {
        return Err(format!(
            "the logs-gather request is for host {} of infra-env {}, not this host ({} of {})",
            req.host_id, req.infra_env_id, ctx.host_id, ctx.infra_env_id
        ));
    }
    if req.cluster_id.is_empty()
        || !req
            .cluster_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(format!(
            "the logs-gather request's cluster_id {:?} is not an id",
            req.cluster_id
        ));
    }
    let journal = journal(&ctx.root).await;
    let root = ctx.root.clone();
    let inventory = tokio::task::spawn_blocking(move || {
        serde_json::to_string_pretty(&crate::inventory::gather(&root)).unwrap_or_default()
    })
    .await
    .map_err(|e| format!("gathering the inventory: {e}"))?;
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (host_id, agent_txt, state_dir) = (
        ctx.host_id.clone(),
        ctx.agent_txt.clone(),
        ctx.state_dir.clone(),
    );
    let archive = tokio::task::spawn_blocking(move || {
        pack(
            &host_id, &agent_txt, &inventory, &journal, &state_dir, mtime,
        )
    })
    .await
    .map_err(|e| format!("packing the logs: {e}"))?
    .map_err(|e| format!("packing the logs: {e}"))?;
    let size = archive.len();
    let url = format!(
        "{}/clusters/{}/logs?logs_type=host&infra_env_id={}&host_id={}",
        ctx.api_base, req.cluster_id, ctx.infra_env_id, ctx.host_id
    );
    let part = reqwest::multipart::Part::bytes(archive)
        .file_name(format!("logs_host_{}.tar.gz", ctx.host_id))
        .mime_str("application/gzip")
        .map_err(|e| format!("the upload's content type: {e}"))?;
    let form = reqwest::multipart::Form::new().part("upfile", part);
    let resp = ctx
        .client
        .post(&url)
        .multipart(form)
        .timeout(UPLOAD_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("uploading the logs to {url}: {e}"))?;
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        let reason = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| {
                v["reason"]
                    .as_str()
                    .or(v["message"].as_str())
                    .map(str::to_string)
            })
            .unwrap_or(body);
        return Err(format!("uploading the logs to {url}: {status}: {reason}"));
    }
    tracing::info!(bytes = size, "logs-gather: this host's logs uploaded");
    Ok(serde_json::json!({
        "uploaded_bytes": size,
        "files": ["agent.txt", "inventory.json", "install-request.json (when installing)", "journal.log"],
    })
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_archive_holds_the_hosts_files_under_its_id() {
        let d = tempfile::tempdir().unwrap();
        let gz = pack(
            "h-1",
            "agent 1.0\n",
            "{}",
            b"line\n",
            d.path(),
            1_700_000_000,
        )
        .unwrap();
        let mut names = Vec::new();
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&gz[..]));
        for e in tar.entries().unwrap() {
            let mut e = e.unwrap();
            let mut body = String::new();
            e.read_to_string(&mut body).unwrap();
            assert_eq!(e.header().mode().unwrap(), 0o644);
            names.push((e.path().unwrap().display().to_string(), body));
        }
        assert_eq!(
            names,
            vec![
                ("h-1/agent.txt".to_string(), "agent 1.0\n".to_string()),
                ("h-1/inventory.json".to_string(), "{}".to_string()),
                ("h-1/journal.log".to_string(), "line\n".to_string()),
            ]
        );
        // With an install request kept by the install step.
        std::fs::create_dir_all(d.path().join("install")).unwrap();
        std::fs::write(
            d.path().join("install").join(crate::install::REQUEST_FILE),
            r#"{"role":"master"}"#,
        )
        .unwrap();
        let gz = pack("h-1", "", "{}", b"", d.path(), 0).unwrap();
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&gz[..]));
        let paths: Vec<String> = tar
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert!(
            paths.contains(&"h-1/install-request.json".to_string()),
            "{paths:?}"
        );
    }

    #[tokio::test]
    async fn a_request_for_another_host_is_refused_before_anything_is_read() {
        let ctx = Context {
            client: reqwest::Client::new(),
            api_base: "http://127.0.0.1:9/api/assisted-install/v2".into(),
            host_id: "h-1".into(),
            infra_env_id: "ie-1".into(),
            state_dir: std::env::temp_dir(),
            root: Root::default(),
            agent_txt: String::new(),
        };
        let arg = serde_json::to_string(&LogsGatherCmdRequest {
            cluster_id: "c-1".into(),
            infra_env_id: "ie-1".into(),
            host_id: "h-2".into(),
            ..Default::default()
        })
        .unwrap();
        let (code, _, err) = run(&[arg], ctx.clone()).await;
        assert_eq!(code, 1);
        assert!(err.contains("for host h-2"), "{err}");
        let (code, _, err) = run(&["[]".into()], ctx).await;
        assert_eq!(code, 1);
        assert!(err.contains("logs_gather_cmd_request"), "{err}");
    }
}
