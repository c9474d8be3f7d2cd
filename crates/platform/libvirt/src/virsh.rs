//! The typed operations of a [`Virsh`] session: networks, pools, volumes,
//! domains and DHCP leases, each one or a few virsh commands
//! (virsh(1), <https://libvirt.org/manpages/virsh.html>).

use std::io::Write as _;

use crate::session::Reply;
use crate::xml::{DhcpHost, DnsHost, Network, Pool, info_field, parse_network, parse_pool};
use crate::{LibvirtError, Virsh};

impl Virsh {
    /// The network `name`: `net-dumpxml` parsed, `active` from `net-info`.
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "network" }` when there is
    /// no such network; [`LibvirtError::Parse`] for XML this crate cannot
    /// read; session errors as [`Virsh::run`].
    pub fn network(&mut self, name: &str) -> Result<Network, LibvirtError> {
        let option = format!("--network={name}");
        let reply = self.exchange(&["net-dumpxml", &option])?;
        let (what, xml) = found(reply, "network", "network", name)?;
        let active = self.network_active(name)?;
        parse_network(&xml, active).map_err(|message| LibvirtError::Parse { what, message })
    }

    /// Whether the network `name` is running (`net-info`, `Active:`).
    /// Errors as [`Virsh::network`].
    pub fn network_active(&mut self, name: &str) -> Result<bool, LibvirtError> {
        let option = format!("--network={name}");
        let reply = self.exchange(&["net-info", &option])?;
        let (what, info) = found(reply, "network", "network", name)?;
        yes_no(&info, "Active", what)
    }

    /// Every network's name (`net-list --all --name`), active or not.
    pub fn networks(&mut self) -> Result<Vec<String>, LibvirtError> {
        Ok(names(&self.run(&["net-list", "--all", "--name"])?))
    }

    /// The storage pool `name`: `pool-dumpxml` parsed, `active` from
    /// `pool-info` (`State: running`).
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "pool" }` when there is no
    /// such pool; [`LibvirtError::Parse`]; session errors as [`Virsh::run`].
    pub fn pool(&mut self, name: &str) -> Result<Pool, LibvirtError> {
        let option = format!("--pool={name}");
        let reply = self.exchange(&["pool-dumpxml", &option])?;
        let (what, xml) = found(reply, "pool", "pool", name)?;
        let reply = self.exchange(&["pool-info", &option])?;
        let (info_what, info) = found(reply, "pool", "pool", name)?;
        let Some(state) = info_field(&info, "State") else {
            return Err(LibvirtError::Parse {
                what: info_what,
                message: "no `State:` line".into(),
            });
        };
        parse_pool(&xml, state == "running")
            .map_err(|message| LibvirtError::Parse { what, message })
    }

    /// Every storage pool's name (`pool-list --all --name`).
    pub fn pools(&mut self) -> Result<Vec<String>, LibvirtError> {
        Ok(names(&self.run(&["pool-list", "--all", "--name"])?))
    }

    /// The names of the volumes in `pool` (`vol-list`), in virsh's order.
    ///
    /// virsh prints name and path in columns at least three spaces apart;
    /// a name containing three spaces in a row would be cut there.
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "pool" }`.
    pub fn volumes(&mut self, pool: &str) -> Result<Vec<String>, LibvirtError> {
        let option = format!("--pool={pool}");
        let reply = self.exchange(&["vol-list", &option])?;
        let (_, text) = found(reply, "pool", "pool", pool)?;
        Ok(text
            .lines()
            .filter_map(|line| {
                let line = line.strip_prefix(' ').unwrap_or(line);
                let name = line.split_once("   ").map_or(line, |(name, _)| name);
                let name = name.trim_end();
                (!name.is_empty()).then(|| name.to_owned())
            })
            .collect())
    }

    /// Every domain's name, running or not (`list --all --name`).
    pub fn domains(&mut self) -> Result<Vec<String>, LibvirtError> {
        Ok(names(&self.run(&["list", "--all", "--name"])?))
    }

    /// Whether the domain `name` exists (defined or running).
    pub fn domain_exists(&mut self, name: &str) -> Result<bool, LibvirtError> {
        Ok(self.domain_state(name)?.is_some())
    }

    /// The domain's state as `domstate` prints it: `running`, `shut off`,
    /// `paused`, `in shutdown`, `crashed`, `pmsuspended`; None when there is
    /// no such domain.
    pub fn domain_state(&mut self, name: &str) -> Result<Option<String>, LibvirtError> {
        let option = format!("--domain={name}");
        let reply = self.exchange(&["domstate", &option])?;
        if reply.not_found("domain") {
            return Ok(None);
        }
        let text = reply.ok()?;
        Ok(Some(
            text.lines().next().unwrap_or_default().trim().to_owned(),
        ))
    }

    /// The domain's XML (`dumpxml`, the live definition when running).
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "domain" }`.
    pub fn domain_xml(&mut self, name: &str) -> Result<String, LibvirtError> {
        let option = format!("--domain={name}");
        let reply = self.exchange(&["dumpxml", &option])?;
        Ok(found(reply, "domain", "domain", name)?.1)
    }

    /// Defines (creates or, for the same UUID, replaces) a persistent domain
    /// from its XML, e.g. [`crate::domain_xml`]. The XML goes through a
    /// temporary file (`define --file=…`).
    ///
    /// Errors: [`LibvirtError::Command`] with libvirt's message, e.g. for a
    /// name that exists with another UUID (`operation failed: domain 'x'
    /// already exists with uuid …`); [`LibvirtError::Io`] for the file.
    pub fn define(&mut self, xml: &str) -> Result<(), LibvirtError> {
        let io = |source| LibvirtError::Io {
            action: "writing the domain XML to a temporary file".into(),
            source,
        };
        let mut file = tempfile::Builder::new()
            .prefix("okd-libvirt-")
            .suffix(".xml")
            .tempfile()
            .map_err(io)?;
        file.write_all(xml.as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        let Some(path) = file.path().to_str() else {
            return Err(LibvirtError::Argument {
                command: "define".into(),
                arg: file.path().to_string_lossy().into_owned(),
                rule: "is not UTF-8 (set TMPDIR to a UTF-8 path)",
            });
        };
        let option = format!("--file={path}");
        self.run(&["define", &option])?;
        Ok(())
    }

    /// Starts the defined domain `name`.
    ///
    /// Errors: [`LibvirtError::Command`] naming `start --domain=<name>` with
    /// virsh's text, also when the domain does not exist or already runs.
    pub fn start(&mut self, name: &str) -> Result<(), LibvirtError> {
        let option = format!("--domain={name}");
        self.run(&["start", &option])?;
        Ok(())
    }

    /// Turns starting with the host on (`autostart`) or off (`--disable`).
    /// Errors: [`LibvirtError::Command`].
    pub fn set_autostart(&mut self, name: &str, on: bool) -> Result<(), LibvirtError> {
        let option = format!("--domain={name}");
        let mut args = vec!["autostart", option.as_str()];
        if !on {
            args.push("--disable");
        }
        self.run(&args)?;
        Ok(())
    }

    /// Removes the domain `name`: powers it off (`destroy`) unless it is
    /// shut off, then `undefine`s it, with `--nvram` when its XML has an
    /// `<nvram>` (UEFI variables); when that flag is refused (the test
    /// driver: "unsupported flags") plain `undefine` is tried. Volumes are
    /// left alone ([`Virsh::delete_volume`]).
    ///
    /// Returns Ok(false) when there is no such domain, Ok(true) when removed.
    /// Errors: [`LibvirtError::Command`].
    pub fn remove_domain(&mut self, name: &str) -> Result<bool, LibvirtError> {
        let Some(state) = self.domain_state(name)? else {
            return Ok(false);
        };
        let option = format!("--domain={name}");
        if state != "shut off" {
            self.run(&["destroy", &option])?;
        }
        let has_nvram = self.domain_xml(name)?.contains("<nvram");
        if has_nvram {
            let reply = self.exchange(&["undefine", &option, "--nvram"])?;
            if reply.errors.is_empty() {
                return Ok(true);
            }
            tracing::debug!(error = %reply.failure(), "undefine --nvram refused, trying without");
        }
        self.run(&["undefine", &option])?;
        Ok(true)
    }

    /// Whether `pool` has a volume `name` (`vol-path`).
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "pool" }` when the pool
    /// does not exist.
    pub fn volume_exists(&mut self, pool: &str, name: &str) -> Result<bool, LibvirtError> {
        Ok(self.volume_path(pool, name)?.is_some())
    }

    /// The path of volume `name` in `pool` (`vol-path`), None when absent.
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "pool" }`.
    pub fn volume_path(&mut self, pool: &str, name: &str) -> Result<Option<String>, LibvirtError> {
        let vol = format!("--vol={name}");
        let pool_option = format!("--pool={pool}");
        let reply = self.exchange(&["vol-path", &vol, &pool_option])?;
        if reply.not_found("vol") {
            return Ok(None);
        }
        if reply.not_found("pool") {
            return Err(not_found("pool", pool));
        }
        Ok(Some(reply.ok()?.trim().to_owned()))
    }

    /// Creates volume `name` of `size_gb` GiB (virsh's `G` suffix is
    /// 1024³ bytes) in `pool`: `vol-create-as --format <format>`, backed by
    /// the qcow2 volume `backing` of the same pool when given (a copy-on-write
    /// overlay of the CoreOS image, as kcli does). Returns its path
    /// (`vol-path`), e.g. `/var/lib/libvirt/images/c1-master-0.img`.
    ///
    /// Errors: [`LibvirtError::Command`] with libvirt's message (volume
    /// exists, no such pool or backing volume).
    pub fn create_volume(
        &mut self,
        pool: &str,
        name: &str,
        size_gb: u32,
        format: &str,
        backing: Option<&str>,
    ) -> Result<String, LibvirtError> {
        let pool_option = format!("--pool={pool}");
        let name_option = format!("--name={name}");
        let capacity = format!("--capacity={size_gb}G");
        let format_option = format!("--format={format}");
        let mut args = vec![
            "vol-create-as",
            &pool_option,
            &name_option,
            &capacity,
            &format_option,
        ];
        let backing_option = backing.map(|b| format!("--backing-vol={b}"));
        if let Some(b) = &backing_option {
            args.extend([b.as_str(), "--backing-vol-format=qcow2"]);
        }
        self.run(&args)?;
        self.volume_path(pool, name)?
            .ok_or_else(|| not_found("volume", name))
    }

    /// Deletes volume `name` of `pool` (`vol-delete`). Returns Ok(false) when
    /// there is no such volume.
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "pool" }`;
    /// [`LibvirtError::Command`] (e.g. the volume is in use).
    pub fn delete_volume(&mut self, pool: &str, name: &str) -> Result<bool, LibvirtError> {
        if !self.volume_exists(pool, name)? {
            return Ok(false);
        }
        let vol = format!("--vol={name}");
        let pool_option = format!("--pool={pool}");
        self.run(&["vol-delete", &vol, &pool_option])?;
        Ok(true)
    }

    /// Adds a static DHCP lease to `network`: `net-update add-last
    /// ip-dhcp-host '<host mac=… name=… ip=…/>'` with `--live --config` when
    /// the network runs, `--config` alone when it does not (libvirt refuses
    /// `--live` then). Nothing is done when the same lease is already there,
    /// so a re-run is harmless.
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "network" }`;
    /// [`LibvirtError::Command`] with libvirt's message, e.g. when another
    /// lease has this MAC, name or address.
    pub fn add_dhcp_host(&mut self, network: &str, host: &DhcpHost) -> Result<(), LibvirtError> {
        let net = self.network(network)?;
        if net.dhcp_hosts.iter().any(|h| h.same_as(host)) {
            return Ok(());
        }
        self.update_dhcp_host(network, net.active, "add-last", host)
    }

    /// Removes the lease equal to `host` ([`DhcpHost::same_as`]) from
    /// `network`, live and in the config as for [`Virsh::add_dhcp_host`].
    /// Returns Ok(false) when there is no such lease.
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "network" }`;
    /// [`LibvirtError::Command`].
    pub fn remove_dhcp_host(
        &mut self,
        network: &str,
        host: &DhcpHost,
    ) -> Result<bool, LibvirtError> {
        let net = self.network(network)?;
        let Some(existing) = net.dhcp_hosts.iter().find(|h| h.same_as(host)) else {
            return Ok(false);
        };
        let existing = existing.clone();
        self.update_dhcp_host(network, net.active, "delete", &existing)?;
        Ok(true)
    }

    /// Adds `host` to `network`'s DNS (`net-update <network> add-last
    /// dns-host '<host ip=…><hostname>…</hostname></host>'`, live and in the
    /// config as for [`Virsh::add_dhcp_host`]); nothing when an entry for
    /// the same address and names is there already.
    ///
    /// Errors: [`LibvirtError::NotFound`] `{ kind: "network" }`;
    /// [`LibvirtError::Command`] with libvirt's message.
    pub fn add_dns_host(&mut self, network: &str, host: &DnsHost) -> Result<(), LibvirtError> {
        let net = self.network(network)?;
        if net.dns_hosts.iter().any(|h| h == host) {
            return Ok(());
        }
        self.update_section(network, net.active, "add-last", "dns-host", &host.to_xml())
    }

    /// Removes the DNS entry equal to `host` from `network` (named to
    /// libvirt by its address); Ok(false) when there is none.
    ///
    /// Errors: as [`Virsh::add_dns_host`].
    pub fn remove_dns_host(&mut self, network: &str, host: &DnsHost) -> Result<bool, LibvirtError> {
        let net = self.network(network)?;
        if !net.dns_hosts.iter().any(|h| h == host) {
            return Ok(false);
        }
        // libvirt deletes the record that matches the address or any of
        // the names, and refuses when several do (names shared between
        // records, such as a pool name): the address alone names one.
        let by_address = DnsHost {
            ip: host.ip,
            hostnames: Vec::new(),
        };
        self.update_section(
            network,
            net.active,
            "delete",
            "dns-host",
            &by_address.to_xml(),
        )?;
        Ok(true)
    }

    fn update_dhcp_host(
        &mut self,
        network: &str,
        active: bool,
        command: &str,
        host: &DhcpHost,
    ) -> Result<(), LibvirtError> {
        self.update_section(network, active, command, "ip-dhcp-host", &host.to_xml())
    }

    fn update_section(
        &mut self,
        network: &str,
        active: bool,
        command: &str,
        section: &str,
        xml: &str,
    ) -> Result<(), LibvirtError> {
        let net_option = format!("--network={network}");
        let command_option = format!("--command={command}");
        let section_option = format!("--section={section}");
        let xml_option = format!("--xml={xml}");
        let mut args = vec![
            "net-update",
            &net_option,
            &command_option,
            &section_option,
            &xml_option,
        ];
        if active {
            args.push("--live");
        }
        args.push("--config");
        self.run(&args)?;
        Ok(())
    }
}

/// The reply's stdout, [`LibvirtError::NotFound`] when virsh's lookup of
/// `object` (its word) failed, or the command error. Also returns the
/// command line, for parse errors.
fn found(
    reply: Reply,
    object: &str,
    kind: &'static str,
    name: &str,
) -> Result<(String, String), LibvirtError> {
    if reply.not_found(object) {
        return Err(not_found(kind, name));
    }
    let command = reply.command.clone();
    Ok((command, reply.ok()?))
}

fn not_found(kind: &'static str, name: &str) -> LibvirtError {
    LibvirtError::NotFound {
        kind,
        name: name.to_owned(),
    }
}

fn yes_no(info: &str, label: &str, what: String) -> Result<bool, LibvirtError> {
    match info_field(info, label) {
        Some("yes") => Ok(true),
        Some("no") => Ok(false),
        other => Err(LibvirtError::Parse {
            what,
            message: format!("`{label}:` is {other:?}, not yes or no"),
        }),
    }
}

/// One name per non-empty line (`--name` listings).
fn names(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}
