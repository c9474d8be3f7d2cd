//! Health checks of backends: TCP connect, or `GET` over HTTP or TLS
//! (HAProxy `check`, `option httpchk`, `check-ssl verify none`), with
//! `rise`/`fall` counting.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::proxy::stopped;
use crate::{BackendState, CheckKind, CheckResult, HealthCheck, io_reason, lock};

pub(crate) async fn check_loop(
    check: HealthCheck,
    be: Arc<BackendState>,
    tls: Arc<rustls::ClientConfig>,
    mut stop: watch::Receiver<bool>,
) {
    let successes = AtomicU32::new(0);
    let failures = AtomicU32::new(0);
    let mut tick = tokio::time::interval(check.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            _ = tick.tick() => {}
        }
        if be.removed.load(Ordering::SeqCst) {
            break;
        }
        let started = Instant::now();
        let outcome = tokio::select! {
            _ = stopped(&mut stop) => break,
            r = tokio::time::timeout(check.timeout, run_check(&check.kind, be.addr, &tls)) => match r {
                Ok(r) => r,
                Err(_) => Err(format!("timeout after {:?}", check.timeout)),
            },
        };
        let result = CheckResult {
            ok: outcome.is_ok(),
            detail: match &outcome {
                Ok(d) | Err(d) => d.clone(),
            },
            at_unix_ms: crate::now_unix_ms(),
            duration_ms: started.elapsed().as_millis() as u64,
        };
        if be.removed.load(Ordering::SeqCst) {
            break;
        }
        let up = be.up.load(Ordering::SeqCst);
        if !be.checked.swap(true, Ordering::SeqCst) {
            // The first check decides: no rise/fall counting from "not checked yet".
            be.up.store(result.ok, Ordering::SeqCst);
            be.since_unix_ms.store(result.at_unix_ms, Ordering::SeqCst);
            if result.ok {
                be.last_ok_unix_ms
                    .store(result.at_unix_ms, Ordering::SeqCst);
                successes.store(1, Ordering::Relaxed);
            } else {
                failures.store(1, Ordering::Relaxed);
            }
            // Not a warning either way: a host not booted yet is the usual
            // state at the start of an install. Only a backend that passed
            // its checks and then failed them is warned about.
            if result.ok {
                tracing::info!(
                    "backend {} ({}) of frontend {} is UP: {}",
                    be.name,
                    be.addr,
                    be.frontend,
                    result.detail
                );
            } else {
                tracing::info!(
                    "backend {} ({}) of frontend {} is not serving yet (DOWN until a check passes): {}",
                    be.name,
                    be.addr,
                    be.frontend,
                    result.detail
                );
            }
            *lock(&be.last_check) = Some(result);
            continue;
        }
        if result.ok {
            be.last_ok_unix_ms
                .store(result.at_unix_ms, Ordering::SeqCst);
            failures.store(0, Ordering::Relaxed);
            let s = successes.fetch_add(1, Ordering::Relaxed) + 1;
            if !up && s >= check.rise {
                be.up.store(true, Ordering::SeqCst);
                be.since_unix_ms.store(result.at_unix_ms, Ordering::SeqCst);
                tracing::info!(
                    "backend {} ({}) of frontend {} is UP: {}",
                    be.name,
                    be.addr,
                    be.frontend,
                    result.detail
                );
            }
        } else {
            successes.store(0, Ordering::Relaxed);
            let f = failures.fetch_add(1, Ordering::Relaxed) + 1;
            if up && f >= check.fall {
                be.up.store(false, Ordering::SeqCst);
                be.since_unix_ms.store(result.at_unix_ms, Ordering::SeqCst);
                tracing::warn!(
                    "backend {} ({}) of frontend {} is DOWN: {}",
                    be.name,
                    be.addr,
                    be.frontend,
                    result.detail
                );
            }
        }
        *lock(&be.last_check) = Some(result);
    }
}

/// Runs one check; `Ok(detail)` when it passed, `Err(reason)` otherwise.
async fn run_check(
    kind: &CheckKind,
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<String, String> {
    let tcp = match kind {
        CheckKind::None => return Ok("no check".into()),
        _ => TcpStream::connect(addr).await.map_err(|e| io_reason(&e))?,
    };
    match kind {
        CheckKind::None | CheckKind::Tcp => Ok("connected".into()),
        CheckKind::HttpGet { path } => http_get(tcp, addr, path).await,
        CheckKind::HttpsGet { path } => {
            let connector = tokio_rustls::TlsConnector::from(tls.clone());
            let name = rustls_pki_types::ServerName::IpAddress(addr.ip().into());
            let stream = connector
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS handshake failed: {e}"))?;
            http_get(stream, addr, path).await
        }
    }
}

/// Sends `GET path HTTP/1.0` and judges the status line (2xx/3xx pass).
async fn http_get<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    addr: SocketAddr,
    path: &str,
) -> Result<String, String> {
    let req = format!(
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nUser-Agent: okd-lb-check\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| format!("sending check request: {}", io_reason(&e)))?;
    s.flush()
        .await
        .map_err(|e| format!("sending check request: {}", io_reason(&e)))?;
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 256];
    while !buf.windows(2).any(|w| w == b"\r\n") && buf.len() < 4096 {
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading check response: {}", io_reason(&e)))?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let line = String::from_utf8_lossy(&buf);
    let line = line.lines().next().unwrap_or("");
    let mut parts = line.split_whitespace();
    let (Some(version), Some(code)) = (parts.next(), parts.next()) else {
        return Err(format!("bad HTTP response {line:?}"));
    };
    if !version.starts_with("HTTP/") {
        return Err(format!("bad HTTP response {line:?}"));
    }
    let code: u16 = code
        .parse()
        .map_err(|_| format!("bad HTTP status in {line:?}"))?;
    if (200..400).contains(&code) {
        Ok(format!("HTTP {code}"))
    } else {
        Err(format!("HTTP {code}"))
    }
}

/// Accepts any server certificate (HAProxy `check-ssl verify none`); the
/// handshake signature is still checked against the presented key.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls_pki_types::CertificateDer<'_>,
        _intermediates: &[rustls_pki_types::CertificateDer<'_>],
        _server_name: &rustls_pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

pub(crate) fn insecure_tls_config() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports TLS 1.2 and 1.3");
    builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        .with_no_client_auth()
}
