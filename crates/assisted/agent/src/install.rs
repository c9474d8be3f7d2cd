//! The `install` step (assisted-service `install_cmd_request`, the
//! reference's §6.4 and §7.5). The real agent starts the assisted-installer
//! container, which writes the OS to `boot_device` and reports the stages.
//! That per-host installer is not part of this agent yet (the next assisted
//! issue's): this step fetches the host's own Ignition from the service
//! (`GET /v2/infra-env/{ie}/hosts/{id}/downloads/ignition`), checks it is an
//! Ignition config, and keeps it with the request in the agent's state
//! directory (`<state_dir>/install/`, files 0600) for the installer, and
//! says so in its reply. It never claims a stage it did not reach. Its
//! `boot_device` must pass [`disk_guard::check`] first: the disk the
//! installer will write is one of this host's own eligible disks.

use std::path::Path;

use serde_json::Value;

use crate::{Root, disk_guard};

/// The files the step writes under `<state_dir>/install/`.
pub const IGNITION_FILE: &str = "ignition.ign";
/// See [`IGNITION_FILE`].
pub const REQUEST_FILE: &str = "install-request.json";

/// Runs the step: `args[0]` is the `install_cmd_request` JSON;
/// `ignition_url` the host's Ignition download; `root` the machine whose
/// disk `boot_device` must be. Returns (exit code, output, error): 0 with
/// a JSON summary (`{"role", "boot_device", "ignition", "request",
/// "installer"}`); -1 when `boot_device` is refused by
/// [`disk_guard::check`] (not a block device under the root's `/dev` that
/// this host's own inventory reports as eligible; the error names the
/// field, the path and the rule), checked before anything is fetched or
/// written; or 1 with the reason (a bad request, the download refused,
/// not an Ignition config, a write failure).
pub async fn run(
    args: &[String],
    client: &reqwest::Client,
    ignition_url: &str,
    state_dir: &Path,
    root: &Root,
) -> (i64, String, String) {
    let req = match request(args) {
        Ok(r) => r,
        Err(e) => return (1, String::new(), e),
    };
    let (root, disk) = (root.clone(), req.disk.clone());
    let checked = tokio::task::spawn_blocking(move || {
        disk_guard::check(&root, "install_cmd_request boot_device", &disk)
    })
    .await;
    match checked {
        Ok(Ok(_)) => {}
        Ok(Err(refused)) => return (-1, String::new(), refused.step_error()),
        Err(e) => {
            return (
                -1,
                String::new(),
                format!("the boot_device check task: {e}"),
            );
        }
    }
    match install(req, client, ignition_url, state_dir).await {
        Ok(out) => (0, out, String::new()),
        Err(e) => (1, String::new(), e),
    }
}

/// The install step's request: its JSON, role and boot device.
struct Request {
    json: Value,
    role: String,
    disk: String,
}

/// `args[0]` as an `install_cmd_request` with a known role.
fn request(args: &[String]) -> Result<Request, String> {
    let json: Value = args
        .first()
        .and_then(|a| serde_json::from_str(a).ok())
        .filter(Value::is_object)
        .ok_or("the install step's argument is not an install_cmd_request JSON object")?;
    let role = json["role"].as_str().unwrap_or_default().to_string();
    let disk = json["boot_device"].as_str().unwrap_or_default().to_string();
    if !matches!(role.as_str(), "master" | "worker" | "bootstrap") {
        return Err(format!(
            "install_cmd_request role {role:?}: not master, worker or bootstrap"
        ));
    }
    Ok(Request { json, role, disk })
}

async fn install(
    req: Request,
    client: &reqwest::Client,
    ignition_url: &str,
    state_dir: &Path,
) -> Result<String, String> {
    let Request {
        json: req,
        role,
        disk,
    } = req;
    let resp = client
        .get(ignition_url)
        .send()
        .await
        .map_err(|e| format!("fetching this host's Ignition from {ignition_url}: {e}"))?;
    let status = resp.status();
    let body = resp
        .bytes()
        .await
        .map_err(|e| format!("reading this host's Ignition from {ignition_url}: {e}"))?;
    if !status.is_success() {
        let reason = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v["reason"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        return Err(format!(
            "fetching this host's Ignition from {ignition_url}: {status}: {reason}"
        ));
    }
    let cfg: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("this host's Ignition from {ignition_url} is not JSON: {e}"))?;
    let version = cfg["ignition"]["version"].as_str().unwrap_or_default();
    if !version.starts_with("3.") {
        return Err(format!(
            "this host's Ignition from {ignition_url} is not an Ignition v3 config (ignition.version {version:?})"
        ));
    }
    let dir = state_dir.join("install");
    okd_fs::create_dir_all(&dir, 0o700).map_err(|e| format!("{}: {e}", dir.display()))?;
    let ign = dir.join(IGNITION_FILE);
    let reqf = dir.join(REQUEST_FILE);
    okd_fs::write_atomic(&ign, &body, 0o600).map_err(|e| format!("{}: {e}", ign.display()))?;
    let pretty = serde_json::to_vec_pretty(&req).unwrap_or_default();
    okd_fs::write_atomic(&reqf, &pretty, 0o600).map_err(|e| format!("{}: {e}", reqf.display()))?;
    tracing::info!(role, boot_device = disk, ignition = %ign.display(), "install step: this host's Ignition and request saved");
    Ok(serde_json::json!({
        "role": role,
        "boot_device": disk,
        "ignition": ign.display().to_string(),
        "request": reqf.display().to_string(),
        "installer": "install step received and saved; writing the disk is the per-host installer's, not part of this agent yet",
    })
    .to_string())
}
