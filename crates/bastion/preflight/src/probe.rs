//! The load balancer as the nodes meet it: `lb.machine-config.ca` (the
//! 22623 frontend presents a certificate that Ignition accepts: issued by
//! master.ign's root CA, for `api-int`) and `lb.api.readyz` (`/readyz`
//! through the API address answers as the bootstrap's own).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use okd_hosts::{Inventory, Role};
use okd_probe::{API_BACKEND_FIX, ApiPath, Verify, compare_api};

use crate::Check;

/// The root CA of master.ign (`ignition.security.tls.certificateAuthorities`,
/// a data URL), PEM.
fn master_ign_ca(dir: &Path) -> Result<String, String> {
    let bytes = std::fs::read(dir.join("master.ign")).map_err(|e| {
        format!("no master.ign ({e}): `okd-install create ignition-configs` makes it")
    })?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("master.ign is not JSON: {e}"))?;
    let src = v
        .pointer("/ignition/security/tls/certificateAuthorities/0/source")
        .and_then(serde_json::Value::as_str)
        .ok_or("master.ign names no root CA (ignition.security.tls.certificateAuthorities)")?;
    let pem = okd_types::dataurl::decode(src).map_err(|e| format!("master.ign's root CA: {e}"))?;
    String::from_utf8(pem).map_err(|_| "master.ign's root CA is not PEM text".to_string())
}

fn pem_of(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out + "-----END CERTIFICATE-----\n"
}

/// Subject, issuer and validity of a DER certificate, for a cause.
fn describe(der: &[u8]) -> String {
    match okd_pki::parse_certs(&pem_of(der)) {
        Ok(c) if !c.is_empty() => format!(
            "subject {}, issuer {}, valid {} to {}",
            c[0].subject,
            c[0].issuer,
            c[0].not_before.date(),
            c[0].not_after.date()
        ),
        _ => "a certificate that does not parse".to_string(),
    }
}

/// `lb.machine-config.ca`: Ignition fetches `https://api-int.<domain>:22623/config/<pool>`
/// and trusts only master.ign's root CA; the frontend at the API address
/// must present a certificate it accepts (a 22623 pointed at the API's
/// 6443 presents the API's, from another CA).
pub(crate) async fn machine_config_ca(dir: &Path, inv: &Inventory, timeout: Duration) -> Check {
    let id = "lb.machine-config.ca";
    let ca = match master_ign_ca(dir) {
        Ok(c) => c,
        Err(e) => return Check::skip(id, e),
    };
    let roots = okd_probe::roots_of_pem(ca.as_bytes());
    if roots.is_empty() {
        return Check::skip(id, "master.ign's root CA holds no certificate");
    }
    let name = format!("api-int.{}", inv.cluster_domain);
    let addr = SocketAddr::new(inv.api, inv.ports.machine_config);
    let hs = okd_probe::handshake(addr, &name, Verify::Roots(Arc::new(roots)), timeout).await;
    match (hs.result, hs.certificate) {
        (Ok(_), Some(der)) => Check::pass(
            id,
            format!(
                "{name}:{} ({addr}) presents {}, accepted with master.ign's root CA",
                inv.ports.machine_config,
                describe(&der)
            ),
        ),
        (Ok(_), None) => Check::pass(id, format!("{addr} accepted with master.ign's root CA")),
        (Err(e), Some(der)) => Check::fail(
            id,
            format!(
                "{name}:{} ({addr}) presents {} which Ignition refuses: {e}",
                inv.ports.machine_config,
                describe(&der)
            ),
            format!(
                "send port {} only to the machine-config servers on port 22623 of the bootstrap and masters (and serve's on {}), not to the API's 6443",
                inv.ports.machine_config, inv.ports.machine_config_server
            ),
        ),
        (Err(e), None) => Check::warn(
            id,
            format!(
                "nothing presents a certificate on {name}:{} ({addr}): {e}",
                inv.ports.machine_config
            ),
            "start the load balancer (okd-install serve, or your HAProxy) before the nodes boot",
        ),
    }
}

/// `lb.api.readyz`: once the bootstrap's API answers `/readyz` with 200,
/// the API address must too (a balancer that checks `GET /` keeps every
/// server DOWN and answers with an EOF; one that points elsewhere answers
/// something else).
pub(crate) async fn api_readyz(inv: &Inventory, timeout: Duration) -> Check {
    let id = "lb.api.readyz";
    let host = format!("api.{}", inv.cluster_domain);
    let Some(boot) = inv.role(Role::Bootstrap).next() else {
        return Check::skip(id, "no bootstrap host in the inventory to compare with");
    };
    let own = SocketAddr::new(boot.address, 6443);
    let via = SocketAddr::new(inv.api, inv.ports.api);
    match compare_api(own, via, &host, timeout, okd_probe::BALANCER_RISE).await {
        ApiPath::BootstrapNotReady(why) => Check::skip(
            id,
            format!("the bootstrap's own API ({own}) is not ready yet: {why}"),
        ),
        ApiPath::Same => Check::pass(
            id,
            format!("/readyz is 200 through {via}, as on the bootstrap ({own})"),
        ),
        ApiPath::Differs(r) => Check::fail(
            id,
            format!(
                "/readyz answers {} ({}) through {via} but 200 on the bootstrap itself ({own})",
                r.status, r.body
            ),
            "point the API frontend at port 6443 of the bootstrap and masters, with `option httpchk GET /readyz` over TLS",
        ),
        ApiPath::Fails(e) => Check::fail(
            id,
            format!(
                "/readyz fails through {via} ({e}) but is 200 on the bootstrap itself ({own}): the balancer has no API server UP"
            ),
            API_BACKEND_FIX,
        ),
    }
}
