//! Secrets never reach the output or the logs (issue #19 item 4): a whole
//! `create ignition-configs`, `serve --bootstrap-token` (with the bootstrap
//! fetching its config through the token, a wrong token and another host
//! refused), `serve status` and `wait-for bootstrap-complete` (no cluster:
//! it times out) run at `--log-level debug` on a copy of
//! `examples/baremetal-single-master`; then neither their stdout and stderr
//! nor any log file of the asset directory holds the pull secret (nor its
//! `auth` strings, nor its base64), the kubeadmin password, the bootstrap
//! token or any private key of the state file, in any of the escaped forms a
//! log line gives them.

mod common;

use std::path::Path;
use std::process::Output;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::serve::*;
use common::*;
use serde_json::Value;

/// One secret and the forms it takes in a log line: as is, as `{:?}` shows
/// it (quotes and backslashes escaped), and that again inside the log file's
/// quoted `msg="…"`.
struct Needle {
    name: String,
    forms: Vec<String>,
}

fn needle(name: impl Into<String>, value: &str) -> Needle {
    let name = name.into();
    assert!(
        value.len() >= 8,
        "{name}: too short to be a secret: {value:?}"
    );
    let debug = format!("{value:?}");
    let debug = debug[1..debug.len() - 1].to_string();
    let quoted = debug.replace('\\', "\\\\").replace('"', "\\\"");
    let mut forms = vec![value.to_string(), debug, quoted];
    forms.dedup();
    Needle { name, forms }
}

/// The names of the needles found in `haystack`.
fn leaks<'a>(haystack: &str, needles: &'a [Needle]) -> Vec<&'a str> {
    needles
        .iter()
        .filter(|n| n.forms.iter().any(|f| haystack.contains(f.as_str())))
        .map(|n| n.name.as_str())
        .collect()
}

/// The base64 body lines of a PEM block, and 64 characters of the PEM's own
/// base64 past its header (the form of a kubeconfig's `client-key-data` and
/// of an Ignition `data:` URL).
fn key_needles(name: &str, pem: &str, out: &mut Vec<Needle>) {
    let body: Vec<&str> = pem
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 32)
        .collect();
    assert!(!body.is_empty(), "{name}: no PEM body");
    out.push(needle(format!("{name} (PEM line)"), body[0]));
    out.push(needle(
        format!("{name} (PEM last line)"),
        body[body.len() - 1],
    ));
    let b64 = STANDARD.encode(pem);
    out.push(needle(format!("{name} (base64 of PEM)"), &b64[64..128]));
}

/// Every private key of the state file: the `KeyRaw`, `Pvt` and `Priv`
/// fields (base64 of PEM), wherever they are.
fn state_keys(v: &Value, path: &str, out: &mut Vec<Needle>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}/{k}");
                match (k.as_str(), x.as_str()) {
                    ("KeyRaw" | "Pvt" | "Priv", Some(b)) => {
                        let pem = String::from_utf8(STANDARD.decode(b).unwrap()).unwrap();
                        assert!(pem.contains("PRIVATE KEY"), "{p}");
                        key_needles(&p, &pem, out);
                    }
                    _ => state_keys(x, &p, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| state_keys(x, path, out)),
        _ => {}
    }
}

/// The pull secret of the example and its parts.
fn pull_secret_needles(out: &mut Vec<Needle>) {
    let text = std::fs::read_to_string(
        repo().join("examples/baremetal-single-master/install-config.yaml"),
    )
    .unwrap();
    let ic: Value = serde_yaml_ng::from_str(&text).unwrap();
    let ps = ic["pullSecret"].as_str().unwrap();
    out.push(needle("pull secret", ps));
    out.push(needle("pull secret (base64)", &STANDARD.encode(ps)));
    let doc: Value = serde_json::from_str(ps).unwrap();
    let auths = doc["auths"].as_object().unwrap();
    assert!(!auths.is_empty());
    for (registry, entry) in auths {
        let auth = entry["auth"].as_str().unwrap();
        out.push(needle(format!("auth of {registry}"), auth));
        let login = String::from_utf8(STANDARD.decode(auth).unwrap()).unwrap();
        out.push(needle(format!("login of {registry}"), &login));
    }
}

/// `okd-install <args> --log-level debug --dir d`, stdout and stderr kept.
fn run_debug(d: &Path, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    all.extend(["--log-level", "debug"]);
    okd(d, &all)
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// Every `*.log` file under `dir` (the asset directory's `.openshift_install.log`,
/// serve's log), with its text.
fn log_files(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            log_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "log") {
            let t = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            out.push((p.display().to_string(), t));
        }
    }
}

#[test]
fn no_secret_in_output_or_logs_of_a_whole_debug_run() {
    if !common::netns::available() || tool("curl", &["/usr/bin/curl"]).is_none() {
        return;
    }
    // The copy of the example `served_dir` makes, created at debug level.
    let d = example_dir("baremetal-single-master");
    let ex = repo().join("examples/baremetal-single-master");
    std::fs::copy(
        ex.join("agent-config.yaml"),
        d.path().join("agent-config.yaml"),
    )
    .unwrap();
    let bastion = std::fs::read_to_string(ex.join("bastion-config.yaml"))
        .unwrap()
        .replace("  - 8.8.8.8\n", "")
        .replace("upstreamResolvers:\n", "upstreamResolvers: []\n");
    std::fs::write(d.path().join("bastion-config.yaml"), bastion).unwrap();
    let mut outputs: Vec<(String, String)> = Vec::new();
    let create = run_debug(d.path(), &["create", "ignition-configs"]);
    assert!(create.status.success(), "{}", text(&create));
    outputs.push(("create ignition-configs".into(), text(&create)));

    let (mut lab, pid, serve_log) = lab_spawning_serve(
        d.path(),
        "sl",
        &BOOTSTRAP_AND_MASTER,
        &["--bootstrap-token", "--log-level", "debug"],
    );
    wait_ready(&serve_log);
    let (boot, master) = (lab.nodes[0].ns.clone(), lab.nodes[1].ns.clone());
    let url = std::fs::read_to_string(d.path().join("auth/bootstrap-ignition-url")).unwrap();
    let url = url.trim();
    let token = url.split("token=").nth(1).unwrap().to_string();
    let pxe = format!("http://{BASTION}:8080/pxe/ipxe?mac=52:54:00:12:01:02");
    let (code, script) = curl_in(&lab, &boot, &pxe);
    assert!(code == 200 && script.contains(url), "{code} {script}");
    let wrong = format!("{}0123456789abcdef0123456789abcdef", &url[..url.len() - 32]);
    assert_eq!(curl_in(&lab, &boot, &wrong).0, 403, "wrong token");
    assert_eq!(curl_in(&lab, &master, url).0, 403, "not the bootstrap");
    assert_eq!(
        curl_in(&lab, &boot, url).0,
        200,
        "the bootstrap with its token"
    );
    assert_eq!(
        curl_in(&lab, &boot, url).0,
        200,
        "a retry: valid until the bootstrap is seen running (issue #42)"
    );

    let status = run_debug(d.path(), &["serve", "status"]);
    outputs.push(("serve status".into(), text(&status)));
    // No cluster behind api.okd.example: the API wait gives up after 5 s.
    let wait = lab
        .cmd(&master, env!("CARGO_BIN_EXE_okd-install"))
        .args(["wait-for", "bootstrap-complete", "--log-level", "debug"])
        .args(["--timeouts", "api=5s", "--dir"])
        .arg(d.path())
        .output()
        .unwrap();
    assert!(!wait.status.success(), "{}", text(&wait));
    outputs.push(("wait-for bootstrap-complete".into(), text(&wait)));
    lab.kill(pid);

    // The secrets, each long enough to be one.
    let mut needles = Vec::new();
    pull_secret_needles(&mut needles);
    let password = std::fs::read_to_string(d.path().join("auth/kubeadmin-password")).unwrap();
    needles.push(needle("kubeadmin password", password.trim()));
    assert_eq!(token.len(), 32);
    needles.push(needle("bootstrap token", &token));
    let state: Value = serde_json::from_slice(
        &std::fs::read(d.path().join(".openshift_install_state.json")).unwrap(),
    )
    .unwrap();
    let before = needles.len();
    state_keys(&state, "", &mut needles);
    assert!(
        needles.len() - before >= 3 * 10,
        "few keys in the state file"
    );

    // The search finds each of them in a line that shows it.
    for n in &needles {
        let v = &n.forms[0];
        for line in [format!("level=debug msg={v:?}"), format!("msg=\"{v:?}\"")] {
            assert!(leaks(&line, &needles).contains(&n.name.as_str()), "{line}");
        }
    }

    log_files(d.path(), &mut outputs);
    let names: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
    let install_log = outputs
        .iter()
        .find(|(n, _)| n.ends_with("/.openshift_install.log"))
        .map(|(_, t)| t.as_str())
        .unwrap_or_else(|| panic!("no .openshift_install.log among {names:?}"));
    let serve = std::fs::read_to_string(&serve_log).unwrap();
    // The logs are the debug logs of these runs, and the search reads them.
    for (what, t, known) in [
        (".openshift_install.log", install_log, "api.okd.example"),
        ("serve's log", serve.as_str(), "bootstrap.ign"),
        ("wait-for", outputs[2].1.as_str(), "api.okd.example"),
    ] {
        assert!(t.contains("level=debug"), "{what} has no debug line:\n{t}");
        assert!(t.contains(known), "{what} does not name {known}:\n{t}");
    }
    for (what, t) in &outputs {
        let found = leaks(t, &needles);
        assert!(found.is_empty(), "{what} shows {found:?}:\n{t}");
    }
}
