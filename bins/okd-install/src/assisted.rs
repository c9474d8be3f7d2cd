//! `okd-install assisted …`: the assisted flow's commands (issue #24).

use std::net::SocketAddr;
use std::path::Path;

use clap::{Args, Subcommand};

use crate::{Failure, fail, runtime};

/// `okd-install assisted <command>`.
#[derive(Subcommand, Debug)]
pub enum AssistedCmd {
    /// Run the assisted service: the REST API v2 under
    /// /api/assisted-install/v2 (clusters, infra-envs, hosts, next steps,
    /// events) with its monitor; state in <dir>/assisted.db (SQLite) or the
    /// PostgreSQL database of --db-url.
    Serve(ServeArgs),
}

/// `okd-install assisted serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// A PostgreSQL database (`postgres://user:password@host:5432/db`)
    /// instead of the SQLite file <dir>/assisted.db.
    #[arg(long = "db-url")]
    db_url: Option<String>,
    /// The address to listen on (assisted-service's port is 8090).
    #[arg(long, default_value = "0.0.0.0:8090")]
    listen: SocketAddr,
    /// Seconds agents wait between polls (assisted-service: 60).
    #[arg(long = "next-instruction-seconds", default_value_t = 60)]
    next_instruction_seconds: u64,
    /// The release image installs are generated for (default: okd-install's
    /// default release; assisted-service maps openshift_version to an image
    /// from its release list).
    #[arg(long = "release-image")]
    release_image: Option<String>,
    /// Between monitor passes (e.g. 8s, 500ms).
    #[arg(long = "monitor-interval", default_value = "8s", value_parser = crate::node::parse_duration)]
    monitor_interval: std::time::Duration,
}

/// Runs an `assisted` command.
pub fn run(dir: &Path, cmd: &AssistedCmd) -> Result<(), Failure> {
    match cmd {
        AssistedCmd::Serve(a) => serve(dir, a),
    }
}

fn serve(dir: &Path, a: &ServeArgs) -> Result<(), Failure> {
    let url = match &a.db_url {
        Some(u) => u.clone(),
        None => {
            okd_fs::create_dir_all(dir, 0o750).map_err(fail)?;
            okd_assisted_service::sqlite_url(dir)
        }
    };
    let mut opts = okd_assisted_service::Options::new(url, a.listen);
    opts.next_instruction_seconds = a.next_instruction_seconds.max(1);
    opts.monitor_interval = a.monitor_interval;
    if let Some(image) = &a.release_image {
        opts.release_image = image.clone();
    }
    runtime()
        .map_err(fail)?
        .block_on(okd_assisted_service::run(opts))
        .map_err(fail)
}
