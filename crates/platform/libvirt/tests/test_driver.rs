//! The default state of libvirt's test driver (`test:///default`), lookups,
//! and errors, through a real `virsh` session.

mod common;

use std::net::IpAddr;

use std::time::Duration;

use okd_libvirt::{
    DEFAULT_TIMEOUT, DiskSpec, DomainSpec, LibvirtError, NicSpec, Virsh, domain_xml,
};

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn default_network_and_pool_are_read() {
    let Some(mut virsh) = common::connect("test:///default") else {
        return;
    };
    assert_eq!(virsh.uri(), "test:///default");

    let net = virsh.network("default").unwrap();
    assert_eq!(net.name, "default");
    assert!(net.active);
    assert_eq!(net.bridge.as_deref(), Some("virbr0"));
    assert_eq!(net.forward.as_deref(), Some("nat"));
    let v4 = net.ipv4.unwrap();
    assert_eq!((v4.address, v4.prefix), (ip("192.168.122.1"), 24));
    assert_eq!(
        v4.dhcp_range,
        Some((ip("192.168.122.2"), ip("192.168.122.254")))
    );
    assert!(net.dhcp_hosts.is_empty());
    assert_eq!(virsh.networks().unwrap(), ["default"]);

    let pool = virsh.pool("default-pool").unwrap();
    assert_eq!(pool.name, "default-pool");
    assert!(pool.active);
    assert_eq!(pool.path.as_deref(), Some("/default-pool".as_ref()));
    assert_eq!(virsh.pools().unwrap(), ["default-pool"]);

    assert_eq!(virsh.domains().unwrap(), ["test"]);
    assert_eq!(
        virsh.domain_state("test").unwrap().as_deref(),
        Some("running")
    );
    assert!(!virsh.domain_exists("c1-master-0").unwrap());
    assert_eq!(virsh.domain_state("c1-master-0").unwrap(), None);
}

#[test]
fn missing_network_pool_and_domain_are_not_found() {
    let Some(mut virsh) = common::connect("test:///default") else {
        return;
    };
    let err = virsh.network("nope-net").unwrap_err();
    assert!(
        matches!(&err, LibvirtError::NotFound { kind: "network", name } if name == "nope-net"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "libvirt network 'nope-net' not found");

    let err = virsh.pool("nope-pool").unwrap_err();
    assert!(
        matches!(&err, LibvirtError::NotFound { kind: "pool", name } if name == "nope-pool"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "libvirt pool 'nope-pool' not found");

    let err = virsh.domain_xml("nope").unwrap_err();
    assert!(
        matches!(&err, LibvirtError::NotFound { kind: "domain", .. }),
        "{err:?}"
    );
    let err = virsh.volume_exists("nope-pool", "x.qcow2").unwrap_err();
    assert!(
        matches!(&err, LibvirtError::NotFound { kind: "pool", .. }),
        "{err:?}"
    );
    assert!(!virsh.volume_exists("default-pool", "x.qcow2").unwrap());
    assert!(!virsh.delete_volume("default-pool", "x.qcow2").unwrap());
    assert!(!virsh.remove_domain("nope").unwrap());
}

fn small_vm(name: &str) -> DomainSpec {
    DomainSpec {
        name: name.into(),
        domain_type: "qemu".into(),
        memory_mib: 1024,
        cpus: 1,
        disks: vec![DiskSpec {
            pool: "default-pool".into(),
            volume: format!("{name}.qcow2"),
            format: "qcow2".into(),
        }],
        nics: vec![NicSpec {
            network: "default".into(),
            mac: "52:54:00:10:00:01".into(),
        }],
        ignition: None,
        cluster: "errs".into(),
        role: "worker".into(),
        virtual_router_id: None,
        side_disk: None,
    }
}

#[test]
fn command_errors_keep_virsh_text_and_the_session_goes_on() {
    let Some(mut virsh) = common::connect("test:///default") else {
        return;
    };
    let xml = domain_xml(&small_vm("errs-worker-0"));
    virsh.define(&xml).unwrap();

    // The same name again: libvirt refuses (another UUID is generated).
    let err = virsh.define(&xml).unwrap_err();
    match &err {
        LibvirtError::Command { command, message } => {
            assert!(command.starts_with("define --file="), "{command}");
            assert!(
                message.contains("domain 'errs-worker-0' already exists"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }

    let err = virsh.start("no-such-vm").unwrap_err();
    match &err {
        LibvirtError::Command { command, message } => {
            assert_eq!(command, "start --domain=no-such-vm");
            assert_eq!(message, "failed to get domain 'no-such-vm'");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "virsh start --domain=no-such-vm: failed to get domain 'no-such-vm'"
    );

    let err = virsh.run(&["frobnicate"]).unwrap_err();
    assert!(
        err.to_string().contains("unknown command: 'frobnicate'"),
        "{err}"
    );

    let err = virsh.run(&["echo", "two\nlines"]).unwrap_err();
    assert!(matches!(err, LibvirtError::Argument { .. }), "{err:?}");

    // After all that, the session still answers, in order.
    assert_eq!(virsh.run(&["uri"]).unwrap().trim(), "test:///default");
    assert_eq!(
        virsh.domain_state("errs-worker-0").unwrap().as_deref(),
        Some("shut off")
    );
    assert!(virsh.remove_domain("errs-worker-0").unwrap());
}

#[test]
fn arguments_survive_virsh_quoting() {
    let Some(mut virsh) = common::connect("test:///default") else {
        return;
    };
    let words = [
        "it's",
        "a \"b\" c",
        "back\\slash",
        ";semi",
        "--dash",
        "#hash",
        "ünï",
    ];
    // `--` ends echo's options; virsh's echo joins its arguments with spaces.
    let mut args = vec!["echo", "--"];
    args.extend(words);
    assert_eq!(virsh.run(&args).unwrap().trim_end(), words.join(" "));

    // A domain whose name needs quoting, and one that looks like an option.
    for name in ["it's a vm", "--force"] {
        let mut vm = small_vm(name);
        vm.nics.clear();
        virsh.define(&domain_xml(&vm)).unwrap();
        assert!(virsh.domains().unwrap().iter().any(|d| d == name));
        virsh.start(name).unwrap();
        assert_eq!(
            virsh.domain_state(name).unwrap().as_deref(),
            Some("running")
        );
        assert!(virsh.remove_domain(name).unwrap());
        assert!(!virsh.domain_exists(name).unwrap());
    }

    // A long line (readline garbles its echo past 80 columns).
    let long = "x".repeat(5000);
    assert_eq!(virsh.run(&["echo", &long]).unwrap().trim_end(), long);
}

#[test]
fn missing_virsh_names_the_package() {
    let err =
        Virsh::connect_with("/nonexistent/virsh", "test:///default", DEFAULT_TIMEOUT).unwrap_err();
    assert!(matches!(err, LibvirtError::Missing { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("libvirt-clients"), "{text}");
    assert!(
        text.contains("apt-get install -y libvirt-clients"),
        "{text}"
    );
}

#[test]
fn connection_failures_carry_virsh_message() {
    if common::connect("test:///default").is_none() {
        return;
    }
    let err = Virsh::connect("test:///nonexistent/node.xml").unwrap_err();
    match &err {
        LibvirtError::Connect { uri, message } => {
            assert_eq!(uri, "test:///nonexistent/node.xml");
            assert!(
                message.contains("failed to connect to the hypervisor"),
                "{message}"
            );
            assert!(message.contains("/nonexistent/node.xml"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A program that exits at once: the session never answers.
    let err = Virsh::connect_with("false", "test:///default", DEFAULT_TIMEOUT).unwrap_err();
    assert!(
        matches!(&err, LibvirtError::Connect { message, .. } if message == "virsh exited"),
        "{err:?}"
    );
}

#[test]
fn test_driver_state_lives_in_the_session() {
    let Some(mut first) = common::connect("test:///default") else {
        return;
    };
    let mut vm = small_vm("only-here");
    vm.nics.clear();
    first.define(&domain_xml(&vm)).unwrap();
    assert!(first.domain_exists("only-here").unwrap());
    // Another virsh process starts from the driver's initial state.
    let mut second = common::connect("test:///default").unwrap();
    assert!(!second.domain_exists("only-here").unwrap());
    assert!(first.domain_exists("only-here").unwrap());
}

#[test]
fn a_silent_program_times_out_and_is_killed() {
    // A "virsh" that reads its input and never answers.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("silent-virsh");
    std::fs::write(&script, "#!/bin/sh\nwhile read -r line; do :; done\n").unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();

    // Another test's fork may still hold the script's write descriptor for a
    // moment ("Text file busy"): try again then.
    let mut tries = 0;
    let (started, err) = loop {
        let started = std::time::Instant::now();
        match Virsh::connect_with(&script, "test:///default", Duration::from_millis(300)) {
            Err(LibvirtError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => break (started, e),
            Ok(_) => panic!("a silent program cannot be a session"),
        }
    };
    assert!(
        matches!(&err, LibvirtError::Timeout { command, .. } if command == "uri"),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        err.to_string(),
        "virsh uri: no answer within 300ms, session closed"
    );
}
