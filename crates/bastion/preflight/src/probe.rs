//! The load balancer as the nodes meet it: `lb.machine-config.ca` (the
//! 22623 frontend presents a certificate that Ignition accepts: issued by
//! master.ign's root CA, for `api-int`) and `lb.api.readyz` (`/readyz`
//! through the API address answers as the bootstrap's own).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use okd_hosts::{Inventory, Role};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::Check;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Delegates to `inner` (none: accepts every certificate, for `/readyz`
/// probes as HAProxy's `verify none`) and keeps the server's certificate.
#[derive(Debug)]
struct Keep {
    inner: Option<Arc<dyn ServerCertVerifier>>,
    seen: Mutex<Option<Vec<u8>>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Keep {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut s) = self.seen.lock() {
            *s = Some(end_entity.as_ref().to_vec());
        }
        match &self.inner {
            Some(v) => v.verify_server_cert(end_entity, intermediates, server_name, ocsp, now),
            None => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

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

/// A TLS handshake with `addr` for `name`, verified by `verifier`: the
/// stream, or the error text; the server's certificate either way when it
/// sent one.
async fn handshake(
    addr: SocketAddr,
    name: &str,
    verifier: Arc<Keep>,
    timeout: Duration,
) -> (
    Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String>,
    Option<Vec<u8>>,
) {
    let cfg = match rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
    {
        Ok(b) => b
            .dangerous()
            .with_custom_certificate_verifier(verifier.clone())
            .with_no_client_auth(),
        Err(e) => return (Err(e.to_string()), None),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg));
    let Ok(server_name) = ServerName::try_from(name.to_string()) else {
        return (Err(format!("{name:?} is not a server name")), None);
    };
    let r = tokio::time::timeout(timeout, async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        connector
            .connect(server_name, tcp)
            .await
            .map_err(|e| format!("TLS with {addr}: {e}"))
    })
    .await
    .unwrap_or_else(|_| {
        Err(format!(
            "{addr}: no answer within {} s",
            timeout.as_secs_f32()
        ))
    });
    let seen = verifier.seen.lock().ok().and_then(|s| s.clone());
    (r, seen)
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
    let mut roots = rustls::RootCertStore::empty();
    for der in rustls_pki_types::pem::PemObject::pem_slice_iter(ca.as_bytes())
        .filter_map(Result::ok)
        .collect::<Vec<CertificateDer<'static>>>()
    {
        let _ = roots.add(der);
    }
    if roots.is_empty() {
        return Check::skip(id, "master.ign's root CA holds no certificate");
    }
    let webpki = match rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider(),
    )
    .build()
    {
        Ok(v) => v,
        Err(e) => return Check::skip(id, format!("master.ign's root CA: {e}")),
    };
    let verifier = Arc::new(Keep {
        inner: Some(webpki),
        seen: Mutex::new(None),
        provider: provider(),
    });
    let name = format!("api-int.{}", inv.cluster_domain);
    let addr = SocketAddr::new(inv.api, inv.ports.machine_config);
    let (r, seen) = handshake(addr, &name, verifier, timeout).await;
    match (r, seen) {
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

/// `GET /readyz` over TLS without verification (the load balancer's own
/// check): the HTTP status and the body's first line, or why not.
async fn readyz(addr: SocketAddr, host: &str, timeout: Duration) -> Result<(u16, String), String> {
    let v = Arc::new(Keep {
        inner: None,
        seen: Mutex::new(None),
        provider: provider(),
    });
    let (r, _) = handshake(addr, host, v, timeout).await;
    let mut s = r?;
    let req = format!("GET /readyz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let io = async {
        s.write_all(req.as_bytes()).await?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while buf.len() < 16 * 1024 {
            match s.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if buf.is_empty() => return Err(e),
                Err(_) => break,
            }
        }
        Ok::<_, std::io::Error>(buf)
    };
    let buf = tokio::time::timeout(timeout, io)
        .await
        .map_err(|_| format!("{addr}: no HTTP answer within {} s", timeout.as_secs_f32()))?
        .map_err(|e| format!("{addr}: {e}"))?;
    let text = String::from_utf8_lossy(&buf);
    let status = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("{addr}: not an HTTP answer"))?;
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .and_then(|b| b.lines().next())
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    Ok((status, body))
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
    match readyz(own, &host, timeout).await {
        Ok((200, _)) => {}
        Ok((code, _)) => {
            return Check::skip(
                id,
                format!("the bootstrap's own API ({own}) answers /readyz with {code}: not up yet"),
            );
        }
        Err(e) => return Check::skip(id, format!("the bootstrap's own API is not up yet ({e})")),
    }
    let via = SocketAddr::new(inv.api, inv.ports.api);
    match readyz(via, &host, timeout).await {
        Ok((200, _)) => Check::pass(
            id,
            format!("/readyz is 200 through {via}, as on the bootstrap ({own})"),
        ),
        Ok((code, body)) => Check::fail(
            id,
            format!(
                "/readyz answers {code} ({body}) through {via} but 200 on the bootstrap itself ({own})"
            ),
            "point the API frontend at port 6443 of the bootstrap and masters, with `option httpchk GET /readyz` over TLS",
        ),
        Err(e) => Check::fail(
            id,
            format!(
                "/readyz fails through {via} ({e}) but is 200 on the bootstrap itself ({own}): the balancer has no API server UP"
            ),
            "check the API backend: servers on port 6443, `option httpchk GET /readyz`, `check check-ssl verify none` (not `GET /`, which the API refuses)",
        ),
    }
}
