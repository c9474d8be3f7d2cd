//! moto's server for the AWS tests (issue #23): `tests/aws/moto_server.py`
//! (moto 5.2.1 with its CloudFormation gaps patched, see its docstring)
//! on a free loopback port, killed by PID when dropped; and
//! `tests/aws/account.py`, boto3 seeding and reading it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{ChildGuard, py_tool};

/// A running moto server.
pub struct Moto {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    python: PathBuf,
    repo: PathBuf,
    log: PathBuf,
    _child: ChildGuard,
}

impl Moto {
    /// Starts the server with `env` added (e.g. `OKD_MOTO_THROTTLE`,
    /// `MOTO_ENABLE_AMI_VALIDATION`), logging to `log`; waits (at most 30 s)
    /// until it answers. `None` when python3 with moto is missing outside
    /// CI (as [`py_tool`]).
    pub fn start(repo: &Path, log: &Path, env: &[(&str, &str)]) -> Option<Moto> {
        let python = py_tool("python3")?;
        let out = std::fs::File::create(log).expect("moto log");
        // Port 0: the server binds a free port itself and prints it, so two
        // tests starting servers at once never race for one.
        let mut cmd = Command::new(&python);
        cmd.arg(repo.join("tests/aws/moto_server.py"))
            .args(["-H", "127.0.0.1", "-p", "0"])
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = ChildGuard(cmd.spawn().expect("start moto_server.py"));
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if let Some(p) = text
                .split("Running on http://127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|p| p.parse::<u16>().ok())
            {
                break p;
            }
            assert!(
                child.0.try_wait().expect("wait").is_none(),
                "moto_server.py exited:\n{text}"
            );
            assert!(
                Instant::now() < deadline,
                "moto_server.py did not listen within 30 s:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let url = format!("http://127.0.0.1:{port}");
        Some(Moto {
            url,
            python,
            repo: repo.to_path_buf(),
            log: log.to_path_buf(),
            _child: child,
        })
    }

    /// The environment an AWS client needs to reach only this server:
    /// the endpoint, test credentials, and no file or instance metadata
    /// consulted.
    pub fn env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.url.as_str()),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_CONFIG_FILE", "/dev/null"),
            ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Runs `tests/aws/account.py <args>` against this server; its stdout.
    pub fn inspect(&self, args: &[&str]) -> String {
        let out = Command::new(&self.python)
            .arg(self.repo.join("tests/aws/account.py"))
            .args(args)
            .envs(self.env())
            .output()
            .expect("run account.py");
        assert!(
            out.status.success(),
            "account.py {args:?}: {}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log_tail()
        );
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    }

    /// The last 40 lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// `GET <url><path>` as text (the harness's `/okd-moto/throttled`).
    pub fn get(&self, path: &str) -> String {
        self.request("GET", path, "")
    }

    /// Throttles the next `n` CloudFormation requests (the harness's
    /// `POST /okd-moto/throttle`).
    pub fn throttle(&self, n: u32) {
        self.request("POST", "/okd-moto/throttle", &n.to_string());
    }

    fn request(&self, method: &str, path: &str, body: &str) -> String {
        use std::io::{Read, Write};
        let addr = self.url.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).expect("connect moto");
        s.set_read_timeout(Some(Duration::from_secs(10))).ok();
        write!(
            s,
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("read");
        text.split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .trim()
            .to_string()
    }
}
