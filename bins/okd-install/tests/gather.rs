//! `okd-install gather bootstrap` against real OpenSSH servers (issue #11
//! item 5). Hosts are network namespaces on a bridge; each host is an
//! `sshd` in its own mount and UTS namespace, so it has its own `/etc`
//! (an overlay: its own passwd with `core`, sudoers, hosts), `/home`,
//! `/tmp`, `/var/log`, `/opt` and `/usr/local/bin`, and no file of the
//! machine running the test is changed.
//!
//! The bootstrap host is built from our bootstrap.ign applied with the real
//! Ignition (its scripts, `/opt/openshift`, core's authorized keys: the
//! install-config key and the installer's bootstrap key), plus what its
//! services would have left: journal entries of its units (written by
//! systemd-journal-remote with this boot's ID), service records written by
//! the real bootstrap-service-record.sh with a failed `wait-for-etcd` stage,
//! a static pod manifest, and a real etcd (Debian etcd-server) on its
//! localhost:2379 with TLS, its client certificate where bootkube's
//! etcd-bootstrap stage puts it. The master authorizes only the user's key,
//! so its logs can only arrive through the agent forwarded to the bootstrap.

mod common;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::netns::Lab;
use common::serve::ignite;
use common::*;

const BASTION: &str = "192.168.120.101";
const BOOTSTRAP: &str = "192.168.120.102";
const MASTER: &str = "192.168.120.103";

/// Turns a host directory into a running host, inside `ip netns exec <ns>
/// unshare -m -u --propagation private`: hostname, an overlay over `/etc`
/// (upper layer on a tmpfs) with `core` (uid 1000, the uid Ignition gave it)
/// and passwordless sudo, `/run` a tmpfs, the host's own trees bound over
/// `/home /var/log /opt /usr/local/bin /root /tmp`, then `prepare.sh` and
/// sshd in the foreground (the process the test started, killed by PID).
const HOST_SH: &str = r#"#!/bin/bash
set -euo pipefail
R="$1"; NAME="$2"; ADDR="$3"
hostname "$NAME"
mount -t tmpfs -o mode=0755 tmpfs "$R/etcfs"
mkdir -p "$R/etcfs/upper" "$R/etcfs/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$R/etcfs/upper,workdir=$R/etcfs/work" /etc
awk -F: '$3 != 1000' /etc/passwd > /etc/passwd.new && mv /etc/passwd.new /etc/passwd
echo 'core:x:1000:100:CoreOS Admin:/home/core:/bin/bash' >> /etc/passwd
awk -F: '$1 != "core"' /etc/shadow > /etc/shadow.new && mv /etc/shadow.new /etc/shadow
echo 'core:*:19000:0:99999:7:::' >> /etc/shadow
chmod 0640 /etc/shadow
echo 'core ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/core
chmod 0440 /etc/sudoers.d/core
printf '127.0.0.1 localhost\n%s %s\n' "$ADDR" "$NAME" > /etc/hosts
printf 'nameserver 127.0.0.1\n' > /etc/resolv.conf
echo "$NAME" > /etc/hostname
if [ -d "$R/etc-kubernetes" ]; then cp -a "$R/etc-kubernetes" /etc/kubernetes; fi
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/sshd /run/lab
mount --bind "$R" /run/lab
for d in home var/log opt usr/local/bin root tmp; do
  mount --bind "$R/fs/$d" "/$d"
done
if [ -x /run/lab/prepare.sh ]; then /run/lab/prepare.sh; fi
exec /usr/sbin/sshd -D -e -f /run/lab/sshd_config
"#;

/// What the bootstrap's services left behind: journal entries of
/// release-image and bootkube (this boot's ID, so `journalctl --boot` shows
/// them), and their service records, written by the real
/// bootstrap-service-record.sh from bootstrap.ign (bootkube fails in
/// `wait-for-etcd`; its error message is the unit's last 3 journal lines).
const PREPARE_SH: &str = r#"#!/bin/bash
set -euo pipefail
BOOT=$(tr -d - < /proc/sys/kernel/random/boot_id)
NOW=$(date +%s%6N)
entry() {
  printf '__REALTIME_TIMESTAMP=%s\n__MONOTONIC_TIMESTAMP=%s\n_BOOT_ID=%s\n_SYSTEMD_UNIT=%s\nSYSLOG_IDENTIFIER=%s\nMESSAGE=%s\n_HOSTNAME=bootstrap\nPRIORITY=6\n\n' \
    "$NOW" "$((NOW % 100000000))" "$BOOT" "$1" "$2" "$3"
  NOW=$((NOW + 1000))
}
{
  entry release-image.service release-image-download.sh "Pulling quay.io/openshift/okd@sha256:0"
  entry bootkube.service bootkube.sh "Starting etcd-bootstrap"
  entry bootkube.service bootkube.sh "etcdctl: context deadline exceeded"
  entry bootkube.service bootkube.sh "Error: unhealthy cluster"
} | /lib/systemd/systemd-journal-remote -o /var/log/journal/system.journal -
SERVICE_NAME=release-image bash -c '. /usr/local/bin/bootstrap-service-record.sh
record_service_stage_start pull-release-image
record_service_stage_success'
SERVICE_NAME=bootkube bash -c '. /usr/local/bin/bootstrap-service-record.sh
record_service_stage_start wait-for-etcd
exit 1' || true
"#;

/// Every program the test drives; `None` (after a loud message, or a panic
/// under OKD_REQUIRE_TOOLS=1) when one is missing.
fn tools() -> Option<()> {
    let t = |name: &str, paths: &[&str], pkg: &str| okd_test_utils::tool(name, paths, Some(pkg));
    t("sshd", &["/usr/sbin/sshd"], "openssh-server")?;
    t("ssh", &["/usr/bin/ssh"], "openssh-client")?;
    t("ssh-agent", &["/usr/bin/ssh-agent"], "openssh-client")?;
    t("ssh-keygen", &["/usr/bin/ssh-keygen"], "openssh-client")?;
    t("sudo", &["/usr/bin/sudo"], "sudo")?;
    t("etcd", &["/usr/bin/etcd"], "etcd-server")?;
    t("etcdctl", &["/usr/bin/etcdctl"], "etcd-client")?;
    t(
        "systemd-journal-remote",
        &["/lib/systemd/systemd-journal-remote"],
        "systemd-journal-remote",
    )?;
    t("unshare", &["/usr/bin/unshare"], "util-linux")?;
    t("ignition", &[common::serve::IGNITION], "ignition")?;
    Some(())
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn keygen(path: &Path, comment: &str) -> String {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path));
    std::fs::read_to_string(path.with_extension("pub")).unwrap()
}

/// A host directory: `fs/` (the trees bound over the host's), a host key, an
/// sshd_config listening only on `addr:22`, public keys only, no PAM.
fn host_dir(base: &Path, name: &str, addr: &str) -> PathBuf {
    let r = base.join(name);
    for d in [
        "home",
        "var/log/journal",
        "var/log/openshift",
        "opt",
        "usr/local/bin",
        "root",
        "tmp",
    ] {
        std::fs::create_dir_all(r.join("fs").join(d)).unwrap();
    }
    std::fs::create_dir_all(r.join("etcfs")).unwrap();
    std::fs::set_permissions(r.join("fs/tmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::set_permissions(r.join("fs/root"), std::fs::Permissions::from_mode(0o700)).unwrap();
    keygen(&r.join("host_key"), name);
    std::fs::write(
        r.join("sshd_config"),
        format!(
            "ListenAddress {addr}\nPort 22\nHostKey /run/lab/host_key\nPidFile /run/lab/sshd.pid\n\
             AuthorizedKeysFile .ssh/authorized_keys .ssh/authorized_keys.d/ignition\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             PermitRootLogin no\nAllowAgentForwarding yes\nStrictModes no\nLogLevel VERBOSE\n"
        ),
    )
    .unwrap();
    std::fs::write(r.join("host.sh"), HOST_SH).unwrap();
    r
}

/// Starts the host of `dir` in namespace `ns`; waits (at most 30 s) until
/// its sshd listens.
fn start_host(lab: &mut Lab, ns: &str, dir: &Path, name: &str, addr: &str) {
    let log = dir.join("sshd.log");
    let d = dir.to_string_lossy().into_owned();
    let host_sh = dir.join("host.sh").to_string_lossy().into_owned();
    lab.spawn(
        ns,
        "unshare",
        &[
            "-m",
            "-u",
            "--propagation",
            "private",
            "/bin/bash",
            &host_sh,
            &d,
            name,
            addr,
        ],
        &log,
    );
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains(&format!("Server listening on {addr} port 22")) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{name}'s sshd did not start:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An etcd CA, a serving certificate for localhost/127.0.0.1 and a client
/// certificate, as cluster-etcd-operator's render makes them; returns the
/// directory with ca.crt, server.{crt,key}, client.{crt,key}.
fn etcd_pki(base: &Path) -> PathBuf {
    use okd_pki::{CertConfig, ExtKeyUsage, KeyUsage, NameAttr, RsaKey};
    let dir = base.join("etcd-pki");
    std::fs::create_dir_all(&dir).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let day = Duration::from_secs(86400);
    let ca = okd_pki::self_signed(
        &CertConfig::signer("openshift", "etcd-signer", day),
        RsaKey::generate().unwrap(),
        now,
    )
    .unwrap();
    let leaf = |cn: &str, server: bool| CertConfig {
        subject: vec![
            (NameAttr::Organization, "system:etcd".into()),
            (NameAttr::CommonName, cn.into()),
        ],
        dns_names: if server {
            vec!["localhost".into()]
        } else {
            Vec::new()
        },
        ip_addresses: if server {
            vec!["127.0.0.1".parse().unwrap()]
        } else {
            Vec::new()
        },
        key_usage: KeyUsage {
            digital_signature: true,
            key_encipherment: true,
            cert_sign: false,
        },
        ext_key_usage: if server {
            vec![ExtKeyUsage::ServerAuth, ExtKeyUsage::ClientAuth]
        } else {
            vec![ExtKeyUsage::ClientAuth]
        },
        validity: day,
        is_ca: false,
    };
    let server = okd_pki::signed(
        &leaf("localhost", true),
        RsaKey::generate().unwrap(),
        &ca,
        now,
    )
    .unwrap();
    let client = okd_pki::signed(
        &leaf("etcd-client", false),
        RsaKey::generate().unwrap(),
        &ca,
        now,
    )
    .unwrap();
    std::fs::write(dir.join("ca.crt"), &ca.cert.pem).unwrap();
    std::fs::write(dir.join("server.crt"), &server.cert.pem).unwrap();
    std::fs::write(dir.join("server.key"), server.key.private_pem()).unwrap();
    std::fs::write(dir.join("client.crt"), &client.cert.pem).unwrap();
    std::fs::write(dir.join("client.key"), client.key.private_pem()).unwrap();
    dir
}

/// `okd-install gather bootstrap <args> --dir dir` from the bastion namespace,
/// with a private HOME and TMPDIR and no SSH_AUTH_SOCK.
fn gather(lab: &Lab, dir: &Path, home: &Path, tmp: &Path, args: &[&str]) -> Output {
    lab.cmd(&lab.bastion.ns, env!("CARGO_BIN_EXE_okd-install"))
        .args(["gather", "bootstrap"])
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("OPENSHIFT_INSTALL_RELEASE_IMAGE_OVERRIDE")
        .output()
        .expect("run okd-install gather")
}

/// Every entry of a gzip tarball: (path, contents; empty for directories).
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).unwrap();
    let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut out = Vec::new();
    for e in a.entries().unwrap() {
        let mut e = e.unwrap();
        let p = e.path().unwrap().display().to_string();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        out.push((p, data));
    }
    out
}

/// The one file of `dir` whose name starts with `prefix`.
fn one_file(dir: &Path, prefix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    assert_eq!(found.len(), 1, "{prefix}* in {}: {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

/// No credential in a bundle: no `*.key`, kubeconfig or Secret manifest by
/// name, no private key or pull-secret login by content.
fn assert_no_secrets(list: &[(String, Vec<u8>)], which: &str) {
    for (p, data) in list {
        let lower = p.to_ascii_lowercase();
        assert!(
            !lower.ends_with(".key") && !lower.contains("kubeconfig"),
            "{which}: {p}"
        );
        assert!(
            !(lower.contains("rendered-assets") && lower.contains("secret")),
            "{which}: {p}"
        );
        let text = String::from_utf8_lossy(data);
        assert!(
            !text.contains("PRIVATE KEY-----"),
            "{which}: private key in {p}"
        );
        // The example's pull secret login (admin:admin).
        assert!(
            !text.contains("YWRtaW46YWRtaW4="),
            "{which}: pull secret in {p}"
        );
    }
}

#[test]
fn gather_needs_a_bootstrap_address_and_safe_hosts() {
    let d = tempfile::tempdir().unwrap();
    let out = okd(d.path(), &["gather", "bootstrap", "--master", "10.0.0.3"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("must provide bootstrap host address"), "{err}");

    // A host that would be an ssh option or a shell command is refused
    // before anything runs.
    for args in [
        [
            "--bootstrap=-oProxyCommand=touch /tmp/x",
            "--master=10.0.0.3",
        ],
        ["--bootstrap=10.0.0.2", "--master=10.0.0.3;reboot"],
    ] {
        let mut all = vec!["gather", "bootstrap"];
        all.extend_from_slice(&args);
        let out = okd(d.path(), &all);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not a host name or IP address"), "{err}");
    }
    let out = okd(
        d.path(),
        &[
            "gather",
            "bootstrap",
            "--bootstrap",
            "10.0.0.2",
            "--key",
            "/nonexistent/key",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read the SSH key /nonexistent/key"),
        "{err}"
    );
}

#[test]
fn gather_bootstrap_from_real_sshd_hosts() {
    if !common::netns::available() || tools().is_none() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let base = base.path();
    let home = base.join("home");
    let tmp = base.join("tmpdir");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();

    // The user's key is the install-config sshKey; bootstrap.ign authorizes
    // it and the installer's bootstrap key.
    let user_pub = keygen(&base.join("user"), "user@bastion");
    let d = example_dir("baremetal-single-master");
    let ic = std::fs::read_to_string(d.path().join("install-config.yaml")).unwrap();
    let start = ic.find("sshKey: '").unwrap();
    let end = start + ic[start..].find("'\n").unwrap();
    let ic = format!("{}sshKey: '{}{}", &ic[..start], user_pub.trim(), &ic[end..]);
    std::fs::write(d.path().join("install-config.yaml"), ic).unwrap();
    okd_ok(d.path(), &["create", "ignition-configs"]);

    let prefix = format!("ga{}", std::process::id() % 100000);
    let mut lab = Lab::new(
        &prefix,
        BASTION,
        &[("bootstrap", BOOTSTRAP), ("master", MASTER)],
        "okd.example",
    );
    let (boot_ns, master_ns) = (lab.nodes[0].ns.clone(), lab.nodes[1].ns.clone());

    // The bootstrap host: bootstrap.ign through the real Ignition.
    let (ok, log, root) = ignite(
        &lab,
        &boot_ns,
        &d.path().join("bootstrap.ign"),
        &base.join("ign"),
        120,
    );
    assert!(ok, "Ignition failed:\n{log}");
    let boot = host_dir(base, "bootstrap", BOOTSTRAP);
    for t in ["home", "opt", "usr/local/bin"] {
        run(Command::new("cp")
            .arg("-a")
            .arg(root.join(t).join("."))
            .arg(boot.join("fs").join(t)));
    }
    std::fs::write(boot.join("prepare.sh"), PREPARE_SH).unwrap();
    std::fs::set_permissions(
        boot.join("prepare.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // What bootkube's etcd-bootstrap stage leaves: the etcd static pod and
    // the etcd client certificate in /opt/openshift/tls.
    std::fs::create_dir_all(boot.join("etc-kubernetes/manifests")).unwrap();
    std::fs::write(
        boot.join("etc-kubernetes/manifests/etcd-member-pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd-bootstrap\n  namespace: openshift-etcd\nspec:\n  hostNetwork: true\n  containers:\n  - name: etcd\n    image: etcd\n",
    )
    .unwrap();
    let pki = etcd_pki(base);
    let tls = boot.join("fs/opt/openshift/tls");
    std::fs::copy(pki.join("ca.crt"), tls.join("etcd-ca-bundle.crt")).unwrap();
    std::fs::copy(pki.join("client.crt"), tls.join("etcd-client.crt")).unwrap();
    std::fs::copy(pki.join("client.key"), tls.join("etcd-client.key")).unwrap();
    let p = |n: &str| pki.join(n).to_string_lossy().into_owned();
    let data = base.join("etcd-data").to_string_lossy().into_owned();
    lab.spawn(
        &boot_ns,
        "etcd",
        &[
            "--name",
            "etcd-bootstrap",
            "--data-dir",
            &data,
            "--listen-client-urls",
            "https://127.0.0.1:2379",
            "--advertise-client-urls",
            "https://localhost:2379",
            "--listen-peer-urls",
            "http://127.0.0.1:2380",
            "--initial-advertise-peer-urls",
            "http://127.0.0.1:2380",
            "--initial-cluster",
            "etcd-bootstrap=http://127.0.0.1:2380",
            "--cert-file",
            &p("server.crt"),
            "--key-file",
            &p("server.key"),
            "--trusted-ca-file",
            &p("ca.crt"),
            "--client-cert-auth",
        ],
        &base.join("etcd.log"),
    );
    start_host(&mut lab, &boot_ns, &boot, "bootstrap", BOOTSTRAP);

    // The master authorizes only the user's key.
    let master = host_dir(base, "master", MASTER);
    let ssh_dir = master.join("fs/home/core/.ssh");
    std::fs::create_dir_all(&ssh_dir).unwrap();
    std::fs::write(ssh_dir.join("authorized_keys"), &user_pub).unwrap();
    run(Command::new("chown")
        .args(["-R", "1000:100"])
        .arg(master.join("fs/home/core")));
    start_host(&mut lab, &master_ns, &master, "master", MASTER);

    // Wait (bounded) until etcd answers with the client certificate.
    let start = Instant::now();
    loop {
        let out = lab
            .cmd(&boot_ns, "etcdctl")
            .args(["--endpoints=https://localhost:2379", "--dial-timeout=2s"])
            .arg(format!("--cacert={}", p("ca.crt")))
            .arg(format!("--cert={}", p("client.crt")))
            .arg(format!("--key={}", p("client.key")))
            .args(["endpoint", "health"])
            .output()
            .unwrap();
        if out.status.success() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "etcd did not become healthy: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(base.join("etcd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Wrong key: the bootstrap refuses it; the message names host and keys.
    // (A directory without a state file: no installer key is added.)
    keygen(&base.join("wrong"), "wrong@bastion");
    let empty = base.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let wrong = base.join("wrong").to_string_lossy().into_owned();
    let out = gather(
        &lab,
        &empty,
        &home,
        &tmp,
        &["--bootstrap", BOOTSTRAP, "--key", &wrong],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "failed to use the provided keys for authentication to core@{BOOTSTRAP}:22 (keys tried: {wrong})"
        )),
        "{err}"
    );

    // Unreachable: nobody has .150 on the bridge; bounded by ssh's connect.
    let started = Instant::now();
    let user_key = base.join("user").to_string_lossy().into_owned();
    let out = gather(
        &lab,
        &empty,
        &home,
        &tmp,
        &["--bootstrap", "192.168.120.150", "--key", &user_key],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("failed to connect to the bootstrap machine core@192.168.120.150:22"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );

    // The real gather: the user's key plus the installer's bootstrap key.
    let out = gather(
        &lab,
        d.path(),
        &home,
        &tmp,
        &[
            "--bootstrap",
            BOOTSTRAP,
            "--master",
            MASTER,
            "--key",
            &user_key,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let bundle = one_file(d.path(), "log-bundle-");
    let cluster = one_file(d.path(), "cluster-log-bundle-");
    let name = bundle.file_name().unwrap().to_string_lossy().into_owned();
    let id = name
        .strip_prefix("log-bundle-")
        .and_then(|n| n.strip_suffix(".tar.gz"))
        .unwrap()
        .to_string();
    assert_eq!(id.len(), 14, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_digit()), "{id}");
    assert!(
        err.contains(&format!(
            "Bootstrap gather logs captured here \"{}\"",
            bundle.display()
        )),
        "{err}"
    );
    assert_eq!(mode(&bundle) & 0o777, 0o600);
    assert_eq!(mode(&cluster) & 0o777, 0o600);
    // The analysis, in plain words, with the unit's last journal lines.
    assert!(
        err.contains("The bootkube service failed at stage \"wait-for-etcd\" (waiting for the bootstrap etcd to become healthy)"),
        "{err}"
    );
    assert!(err.contains("msg=Error: unhealthy cluster"), "{err}");
    assert!(
        !err.contains("release image"),
        "release-image succeeded: {err}"
    );

    let list = entries(&bundle);
    let top = format!("log-bundle-{id}/");
    for (p, _) in &list {
        assert!(
            p.starts_with(&top) || format!("{p}/") == top,
            "{p} outside {top}"
        );
    }
    let file = |rel: &str| -> String {
        let want = format!("{top}{rel}");
        let (_, data) = list.iter().find(|(p, _)| *p == want).unwrap_or_else(|| {
            panic!(
                "{want} not in the bundle: {:?}",
                list.iter().map(|(p, _)| p).collect::<Vec<_>>()
            )
        });
        String::from_utf8_lossy(data).into_owned()
    };
    assert!(file("gather.log").contains("Gathering bootstrap journals"));
    file("failed-units.txt");
    let journal = file("bootstrap/journals/bootkube.log");
    assert!(
        journal.contains("bootkube.sh: etcdctl: context deadline exceeded"),
        "{journal}"
    );
    assert!(file("bootstrap/journals/release-image.log").contains("Pulling quay.io"));
    let records: serde_json::Value =
        serde_json::from_str(&file("bootstrap/services/bootkube.json")).unwrap();
    let records = records
        .as_array()
        .expect("a JSON array, as openshift-install reads it");
    assert!(
        records
            .iter()
            .any(|e| e["stage"] == "wait-for-etcd" && e["result"] == "failure")
    );
    assert!(file("bootstrap/network/ip-addr.txt").contains(&format!("{BOOTSTRAP}/24")));
    assert_eq!(file("bootstrap/network/hostname.txt").trim(), "bootstrap");
    assert!(file("bootstrap/static-pods/etcd-member-pod.yaml").contains("etcd-bootstrap"));
    let members = file("bootstrap/etcd/member-list.txt");
    assert!(
        members.contains("etcd-bootstrap") && members.contains("started"),
        "{members}"
    );
    assert!(file("bootstrap/etcd/endpoint-health.txt").contains("is healthy"));
    assert!(file("rendered-assets/openshift/tls/root-ca.crt").contains("BEGIN CERTIFICATE"));
    let note = file("resources/not-gathered.txt");
    assert!(note.contains("did not answer within 5 s"), "{note}");
    // The master's part came through the bootstrap (the forwarded agent).
    assert_eq!(
        file(&format!("control-plane/{MASTER}/network/hostname.txt")).trim(),
        "master"
    );
    assert!(
        file(&format!("control-plane/{MASTER}/network/ip-addr.txt"))
            .contains(&format!("{MASTER}/24"))
    );
    assert_no_secrets(&list, "log-bundle");
    assert_no_secrets(
        &entries(&cluster),
        "cluster-log-bundle (as the bootstrap made it)",
    );
    // On the bootstrap host the bundle is core's and private.
    let remote = boot.join(format!("fs/home/core/log-bundle-{id}.tar.gz"));
    let meta = std::fs::metadata(&remote).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (1000, 0o600));
    // The run's temporary key file and agent are gone.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    assert!(!agent_running(&tmp), "the run's ssh-agent is still running");

    // Without the user's key: the installer's bootstrap key (from the state
    // file) still logs in to the bootstrap, but the master refuses it. No
    // --bootstrap and no --master either: the inventory beside the assets
    // names both (issue #26 item 8).
    for f in [&bundle, &cluster] {
        std::fs::remove_file(f).unwrap();
    }
    for f in ["agent-config.yaml", "bastion-config.yaml"] {
        std::fs::copy(
            repo().join("examples/baremetal-single-master").join(f),
            d.path().join(f),
        )
        .unwrap();
    }
    let out = gather(&lab, d.path(), &home, &tmp, &["--skipAnalysis"]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "Bootstrap host {BOOTSTRAP} (bootstrap.okd.example) from bastion-config.yaml"
        )),
        "{err}"
    );
    assert!(
        !err.contains("bootkube service failed"),
        "--skipAnalysis: {err}"
    );
    let list = entries(&one_file(d.path(), "log-bundle-"));
    assert!(
        list.iter()
            .any(|(p, _)| p.ends_with(&format!("control-plane/{MASTER}/gather-failed.txt"))),
        "the master accepted the bootstrap key"
    );
    assert!(
        !list
            .iter()
            .any(|(p, _)| p.ends_with(&format!("control-plane/{MASTER}/network/hostname.txt")))
    );
    drop(lab);
}

/// Whether a process still has `dir` in its command line (the run's
/// ssh-agent socket lives there).
fn agent_running(dir: &Path) -> bool {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&needle))
                .unwrap_or(false)
        })
}
