//! A PostgreSQL server for the assisted service's tests (issue #24):
//! Debian's `postgresql` binaries (`/usr/lib/postgresql/<version>/bin`),
//! a fresh cluster made by `initdb` in a temporary directory owned by the
//! `postgres` user (the server refuses to run as root), listening on a
//! free loopback port with its socket in that directory. Stopped by PID
//! (fast shutdown, then kill) and removed when dropped, also when the
//! test fails.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running PostgreSQL server.
pub struct Postgres {
    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub url: String,
    /// The port.
    pub port: u16,
    bin: PathBuf,
    dir: PathBuf,
    uid: u32,
    gid: u32,
    netns: Option<String>,
    child: Option<Child>,
}

fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("postgres").is_file() && p.join("initdb").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn ids(user: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&user) && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

impl Postgres {
    /// Makes a cluster and starts the server; waits (at most 30 s) until it
    /// accepts connections. `None` when Debian's `postgresql` is missing
    /// outside CI (as [`crate::tool`]: a panic with `OKD_REQUIRE_TOOLS=1`).
    pub fn start() -> Option<Postgres> {
        Postgres::start_in_netns(None)
    }

    /// As [`Postgres::start`], the server in network namespace `netns`
    /// (`ip netns` name; entered with `nsenter`, which drops to the
    /// `postgres` user after joining it), listening on that namespace's
    /// 127.0.0.1.
    pub fn start_in_netns(netns: Option<&str>) -> Option<Postgres> {
        let (Some(bin), Some((uid, gid))) = (bin_dir(), ids("postgres")) else {
            crate::tool(
                "postgres",
                &["/usr/lib/postgresql/none/bin/postgres"],
                Some("postgresql"),
            );
            return None;
        };
        let dir = std::env::temp_dir().join(format!(
            "okd-pg-{}-{}",
            std::process::id(),
            crate::free_tcp_port()
        ));
        std::fs::create_dir_all(&dir).expect("create the PostgreSQL directory");
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown to postgres");
        let mut pg = Postgres {
            url: String::new(),
            port: 0,
            bin,
            dir,
            uid,
            gid,
            netns: netns.map(str::to_string),
            child: None,
        };
        let out = pg
            .as_postgres(&pg.bin.join("initdb"))
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
                "-D",
            ])
            .arg(pg.dir.join("data"))
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pg.port = crate::free_tcp_port();
        pg.url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
        pg.resume();
        Some(pg)
    }

    fn as_postgres(&self, prog: &Path) -> Command {
        let mut c = Command::new(prog);
        c.uid(self.uid).gid(self.gid).current_dir(&self.dir);
        c
    }

    /// Starts the server again after [`Postgres::stop`] (same data, same
    /// port) and waits until it accepts connections.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::File::create(self.dir.join("postgres.log")).expect("log");
        std::os::unix::fs::chown(
            self.dir.join("postgres.log"),
            Some(self.uid),
            Some(self.gid),
        )
        .expect("chown the log");
        let mut cmd = match &self.netns {
            None => self.as_postgres(&self.bin.join("postgres")),
            Some(ns) => {
                let mut c = Command::new("nsenter");
                c.arg(format!("--net=/run/netns/{ns}"))
                    .args(["-S", &self.uid.to_string(), "-G", &self.gid.to_string()])
                    .arg(self.bin.join("postgres"))
                    .current_dir(&self.dir);
                c
            }
        };
        let child = cmd
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(&self.dir)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start postgres");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = self.dir.join("data/postmaster.pid").exists()
                && (self.netns.is_some()
                    || std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok())
                && std::fs::read_to_string(self.dir.join("postgres.log"))
                    .unwrap_or_default()
                    .contains("ready to accept connections");
            if ready {
                return;
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                panic!(
                    "postgres exited ({st}):\n{}",
                    std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not accept connections within 30 s:\n{}",
                std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server (fast shutdown: SIGINT; killed after 15 s); the
    /// data stays for [`Postgres::resume`].
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
