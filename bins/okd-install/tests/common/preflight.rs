//! `okd-install preflight` run as a user runs it, and its report checked
//! one check at a time (the preflight tests).
#![allow(dead_code)]

use std::path::Path;

use super::netns::Lab;
use okd_serve_api::preflight::{Check, Outcome, Report};

/// Runs `okd-install preflight --output json` with `args` in the bastion
/// namespace; the report and the exit status.
pub fn preflight(lab: &Lab, dir: &Path, args: &[&str]) -> (Report, Option<i32>) {
    let out = lab
        .cmd(&lab.bastion.ns, env!("CARGO_BIN_EXE_okd-install"))
        .args(["preflight", "--output", "json", "--dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    let report: Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "preflight printed no report ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out.status.code())
}

/// Check `id` of `r`; panics with the report when there is none.
pub fn check<'a>(r: &'a Report, id: &str) -> &'a Check {
    r.checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}: {r:#?}"))
}

/// The report as its text lines, for messages.
pub fn lines(r: &Report) -> String {
    r.checks
        .iter()
        .map(|c| c.line())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts that check `id` of `r` came out as `outcome`, that its cause
/// holds each of `cause` and its fix each of `fix`; the check, for more.
pub fn expect<'a>(
    r: &'a Report,
    id: &str,
    outcome: Outcome,
    cause: &[&str],
    fix: &[&str],
) -> &'a Check {
    let c = check(r, id);
    assert_eq!(c.result, outcome, "{id}:\n{}", lines(r));
    for part in cause {
        assert!(
            c.cause.contains(part),
            "{id}: no {part:?} in the cause {:?}",
            c.cause
        );
    }
    let given = c.fix.as_deref().unwrap_or_default();
    for part in fix {
        assert!(
            given.contains(part),
            "{id}: no {part:?} in the fix {given:?}"
        );
    }
    c
}

/// The bootstrap's "API" on 192.168.120.102:6443 in namespace `ns`: an
/// HAProxy terminating TLS with a certificate of another CA (`openssl
/// req`, files in `www`), answering `GET /readyz` and `GET /healthz` with
/// 200 and everything else with 403, as a kube-apiserver answers anonymous
/// clients. Killed with the lab.
pub fn bootstrap_api(lab: &mut Lab, ns: &str, haproxy: &Path, openssl: &Path, www: &Path) {
    self_signed(openssl, www, "api", "kube-apiserver-of-another-ca", None);
    let api_cfg = www.join("api.cfg");
    std::fs::write(
        &api_cfg,
        format!(
            "global\n  log stdout format raw local0\n  maxconn 200\n\
             defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n\
             frontend api\n  bind 192.168.120.102:6443 ssl crt {}\n\
             \x20 http-request return status 200 content-type text/plain string ok if {{ path /readyz }} || {{ path /healthz }}\n\
             \x20 http-request return status 403 content-type text/plain string forbidden\n",
            www.join("api.pem").display()
        ),
    )
    .unwrap();
    lab.spawn(
        ns,
        &haproxy.to_string_lossy(),
        &["-db", "-f", &api_cfg.to_string_lossy()],
        &www.join("api-haproxy.log"),
    );
}

/// A self-signed certificate for `cn` (2 days, RSA 2048) by `openssl req`,
/// with `san` as subjectAltName when given: `<name>.crt`, `<name>.key`
/// and `<name>.pem` (certificate then key, as HAProxy's `crt` reads it)
/// in `dir`.
pub fn self_signed(openssl: &Path, dir: &Path, name: &str, cn: &str, san: Option<&str>) {
    let mut cmd = std::process::Command::new(openssl);
    cmd.args([
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
    ])
    .arg("-subj")
    .arg(format!("/CN={cn}"));
    if let Some(san) = san {
        cmd.arg("-addext").arg(format!("subjectAltName={san}"));
    }
    let st = cmd
        .arg("-keyout")
        .arg(dir.join(format!("{name}.key")))
        .arg("-out")
        .arg(dir.join(format!("{name}.crt")))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let pem = std::fs::read_to_string(dir.join(format!("{name}.crt"))).unwrap()
        + &std::fs::read_to_string(dir.join(format!("{name}.key"))).unwrap();
    std::fs::write(dir.join(format!("{name}.pem")), pem).unwrap();
}
