//! `create install-config` on a terminal (issue #25, finding 7), driven in a
//! real pseudo-terminal by tmux: each answer is checked with the
//! install-config's own rule and asked again with its message; the pull
//! secret prompt shows nothing of what is pasted and is checked before the
//! config is written; Ctrl-C or end of input writes nothing and leaves the
//! terminal echoing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One tmux server on a private socket running one command in a
/// 200×60 pane; the server (and the command) are killed on drop.
struct Pane {
    tmux: PathBuf,
    socket: String,
}

impl Pane {
    /// Runs `okd-install create install-config --dir dir` with HOME=`home`,
    /// then prints `EXIT=<code>` and whether the terminal echoes.
    fn start(tmux: PathBuf, dir: &Path, home: &Path) -> Pane {
        let socket = format!(
            "okd-prompts-{}-{}",
            std::process::id(),
            dir.file_name().unwrap().to_string_lossy()
        );
        let script = format!(
            "trap true INT; env -u OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE HOME='{}' '{}' create install-config --dir '{}'; \
             echo \"EXIT=$?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -e echo -e -echo | sed 's/^/ECHO=/'; sleep 60",
            home.display(),
            env!("CARGO_BIN_EXE_okd-install"),
            dir.display()
        );
        let pane = Pane { tmux, socket };
        pane.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "60",
            "-s",
            "t",
            "sh",
            "-c",
            &script,
        ]);
        pane
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.tmux)
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane with its scrollback, wrapped lines joined.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-500", "-t", "t"])
    }

    /// Types `text` literally, then Enter.
    fn answer(&self, text: &str) {
        self.run(&["send-keys", "-t", "t", "-l", text]);
        self.run(&["send-keys", "-t", "t", "Enter"]);
    }

    fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "t", key]);
    }

    /// Waits (up to 30 s) until `text` shows `n` times; returns the screen.
    fn wait_for(&self, text: &str, n: usize) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.matches(text).count() >= n {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "waited 30 s for {n}× {text:?}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new(&self.tmux)
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn tmux() -> Option<PathBuf> {
    common::tool("tmux", &["/usr/bin/tmux"])
}

/// Every answer is checked by the install-config's rules and asked again;
/// the pasted pull secret never shows.
#[test]
fn prompts_check_each_answer_and_hide_the_pull_secret() {
    let Some(tmux) = tmux() else { return };
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = Pane::start(tmux, dir.path(), home.path());
    p.wait_for("SSH Public Key", 1);
    p.answer("1"); // <none>: HOME has no keys
    p.wait_for("? Platform", 1);
    p.answer("vsphere");
    p.wait_for(
        "Unsupported value: \"vsphere\": supported values: \"aws\", \"baremetal\", \"none\"",
        1,
    );
    p.wait_for("? Platform", 2);
    p.answer("none");
    p.wait_for("? Base Domain", 1);
    p.answer("example..com");
    p.wait_for("? Base Domain", 2);
    p.answer("example.com");
    p.wait_for("? Cluster Name", 1);
    p.answer("My_Cluster");
    p.wait_for("? Cluster Name", 2);
    p.answer("okd");
    p.wait_for("? Pull Secret", 1);
    // Not an image pull secret (no auth): refused, and not shown either.
    p.answer(r#"{"auths":{"r.example:5000":{"password":"SECRETMARK-ONE"}}}"#);
    p.wait_for("? Pull Secret", 2);
    p.answer(r#"{"auths":{"r.example:5000":{"auth":"U0VDUkVUTUFSSzpTRUNSRVRNQVJL"}}}"#);
    let screen = p.wait_for("ECHO=", 1);
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        screen.contains("ECHO=echo"),
        "terminal left without echo:\n{screen}"
    );
    assert_eq!(
        screen.matches("your reply was invalid").count(),
        4,
        "{screen}"
    );
    for secret in ["SECRETMARK", "U0VDUkVUTUFSSz"] {
        assert!(!screen.contains(secret), "{secret} on screen:\n{screen}");
    }
    let text = std::fs::read_to_string(dir.path().join("install-config.yaml")).unwrap();
    assert!(text.contains("baseDomain: example.com"), "{text}");
    assert!(text.contains("name: okd"), "{text}");
    assert!(text.contains("U0VDUkVUTUFSSzpTRUNSRVRNQVJL"), "{text}");
}

/// A pull secret given as a file path at the prompt is read; Ctrl-C at the
/// pull secret prompt and end of input at another write nothing.
#[test]
fn ctrl_c_and_end_of_input_write_nothing() {
    let Some(tmux) = tmux() else { return };
    let home = tempfile::tempdir().unwrap();
    for how in ["C-c", "C-d"] {
        let dir = tempfile::tempdir().unwrap();
        let p = Pane::start(tmux.clone(), dir.path(), home.path());
        p.wait_for("SSH Public Key", 1);
        p.answer("1");
        p.wait_for("? Platform", 1);
        p.answer("none");
        p.wait_for("? Base Domain", 1);
        if how == "C-d" {
            p.key(how);
        } else {
            p.answer("example.com");
            p.wait_for("? Cluster Name", 1);
            p.answer("okd");
            p.wait_for("? Pull Secret", 1);
            p.run(&["send-keys", "-t", "t", "-l", "{\"auths\":"]);
            p.key(how);
        }
        let screen = p.wait_for("ECHO=", 1);
        // Stopped by the user: exit code 8 (openshift-install's
        // "interrupted"), and no advice to run the command just run.
        assert!(screen.contains("EXIT=8"), "{how}: {screen}");
        assert!(screen.contains("nothing was written"), "{how}: {screen}");
        assert!(
            !screen.contains("is made by") && !screen.contains("create install-config --dir"),
            "{how}: suggests the command just run: {screen}"
        );
        assert!(
            screen.contains("ECHO=echo"),
            "{how}: terminal left without echo:\n{screen}"
        );
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".openshift_install.log" && n != ".openshift_install.lock")
            .collect();
        assert!(files.is_empty(), "{how}: wrote {files:?}");
    }

    // A file path at the pull secret prompt.
    let dir = tempfile::tempdir().unwrap();
    let ps = home.path().join("pull-secret.json");
    std::fs::write(&ps, r#"{"auths":{"r.example:5000":{"auth":"YTpi"}}}"#).unwrap();
    let p = Pane::start(tmux, dir.path(), home.path());
    p.wait_for("SSH Public Key", 1);
    p.answer("1");
    p.wait_for("? Platform", 1);
    p.answer("none");
    p.wait_for("? Base Domain", 1);
    p.answer("example.com");
    p.wait_for("? Cluster Name", 1);
    p.answer("okd");
    p.wait_for("? Pull Secret", 1);
    p.answer(&ps.display().to_string());
    let screen = p.wait_for("ECHO=", 1);
    assert!(screen.contains("EXIT=0"), "{screen}");
    let text = std::fs::read_to_string(dir.path().join("install-config.yaml")).unwrap();
    assert!(text.contains("YTpi"), "{text}");
}
