//! Probes of the install's TLS endpoints as their clients meet them: a
//! handshake verified with given roots (Ignition fetching
//! `https://api-int.<domain>:22623/config/<pool>`, a node pulling from the
//! mirror registry), or not verified at all (HAProxy's health check,
//! `check check-ssl verify none`), keeping the certificate the server
//! presented either way; and `GET /readyz` as the load balancer asks it
//! (openshift/installer `upi/metal` HAProxy examples; Kubernetes
//! "Kubernetes API health endpoints",
//! <https://kubernetes.io/docs/reference/using-api/health-checks/>).
//!
//! One rustls client (aws-lc-rs provider, the safe default protocol
//! versions) for `okd-preflight`, `okd-wait-for` and anyone else probing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Why a probe got no answer.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The TCP connection failed (refused, unreachable).
    #[error("connect {addr}: {source}")]
    Connect {
        /// Where.
        addr: SocketAddr,
        /// The socket error.
        source: std::io::Error,
    },
    /// The TLS handshake failed: the certificate was refused (rustls'
    /// reason, e.g. `invalid peer certificate: UnknownIssuer`) or the peer
    /// closed the connection during it (`tls handshake eof`: a balancer
    /// with no server up does that).
    #[error("TLS with {addr}: {reason}")]
    Tls {
        /// Where.
        addr: SocketAddr,
        /// rustls' or the socket's words.
        reason: String,
    },
    /// Nothing within the limit.
    #[error("{addr}: no answer within {secs} s")]
    Timeout {
        /// Where.
        addr: SocketAddr,
        /// The limit, seconds.
        secs: f32,
    },
    /// The name to ask for is not a DNS name or IP address.
    #[error("{0:?} is not a server name")]
    Name(String),
    /// The answer was not HTTP, or the request failed after the handshake.
    #[error("{addr}: {reason}")]
    Http {
        /// Where.
        addr: SocketAddr,
        /// What was wrong.
        reason: String,
    },
    /// rustls refused the client configuration (no usable protocol
    /// version, bad roots).
    #[error("TLS client: {0}")]
    Client(String),
}

impl ProbeError {
    /// Whether the server was reached and the TLS handshake itself failed
    /// (a certificate refused, the connection closed mid-handshake), as
    /// opposed to nothing answering.
    pub fn is_tls(&self) -> bool {
        matches!(self, ProbeError::Tls { .. })
    }
}

/// How the server's certificate is checked.
#[derive(Debug, Clone)]
pub enum Verify {
    /// With these roots for the server name asked (WebPKI rules, as
    /// Ignition and CRI-O check).
    Roots(Arc<RootCertStore>),
    /// Not at all (HAProxy's `verify none`): only for health probes whose
    /// answer decides nothing secret.
    Nothing,
}

/// The crypto provider every probe uses (aws-lc-rs).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A root store of the PEM certificates in `pem` (others skipped); empty
/// when there are none.
pub fn roots_of_pem(pem: &[u8]) -> RootCertStore {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = RootCertStore::empty();
    for der in CertificateDer::pem_slice_iter(pem).filter_map(Result::ok) {
        let _ = roots.add(der);
    }
    roots
}

/// Verifies as `inner` says and keeps the server's certificate.
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

/// The outcome of [`handshake`].
#[derive(Debug)]
pub struct Handshake {
    /// The open stream, or why not.
    pub result: Result<TlsStream<TcpStream>, ProbeError>,
    /// The server's end-entity certificate (DER) when it sent one, also
    /// when it was refused.
    pub certificate: Option<Vec<u8>>,
}

/// A TLS handshake with `addr` for server name `name` (SNI and the name
/// verified), checked as `verify` says, within `timeout` (connect and
/// handshake together).
pub async fn handshake(
    addr: SocketAddr,
    name: &str,
    verify: Verify,
    timeout: Duration,
) -> Handshake {
    let provider = provider();
    let inner: Option<Arc<dyn ServerCertVerifier>> = match verify {
        Verify::Nothing => None,
        Verify::Roots(roots) => {
            match rustls::client::WebPkiServerVerifier::builder_with_provider(
                roots,
                provider.clone(),
            )
            .build()
            {
                Ok(v) => Some(v),
                Err(e) => {
                    return Handshake {
                        result: Err(ProbeError::Client(e.to_string())),
                        certificate: None,
                    };
                }
            }
        }
    };
    let keep = Arc::new(Keep {
        inner,
        seen: Mutex::new(None),
        provider: provider.clone(),
    });
    let result = connect(addr, name, keep.clone(), provider, timeout).await;
    let certificate = keep.seen.lock().ok().and_then(|s| s.clone());
    Handshake {
        result,
        certificate,
    }
}

async fn connect(
    addr: SocketAddr,
    name: &str,
    keep: Arc<Keep>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    timeout: Duration,
) -> Result<TlsStream<TcpStream>, ProbeError> {
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ProbeError::Client(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(keep)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg));
    let server_name =
        ServerName::try_from(name.to_string()).map_err(|_| ProbeError::Name(name.to_string()))?;
    tokio::time::timeout(timeout, async {
        let tcp = TcpStream::connect(addr)
            .await
            .map_err(|source| ProbeError::Connect { addr, source })?;
        connector
            .connect(server_name, tcp)
            .await
            .map_err(|e| ProbeError::Tls {
                addr,
                reason: tls_words(&e),
            })
    })
    .await
    .unwrap_or(Err(ProbeError::Timeout {
        addr,
        secs: timeout.as_secs_f32(),
    }))
}

/// rustls' reason, or "the peer closed the connection during the TLS
/// handshake" for a socket closed (EOF) or reset early (Go clients print
/// `tls: handshake eof` or `connection reset by peer`).
fn tls_words(e: &std::io::Error) -> String {
    use std::io::ErrorKind::{ConnectionReset, UnexpectedEof};
    match e.kind() {
        UnexpectedEof => "the peer closed the connection during the TLS handshake (EOF)".into(),
        ConnectionReset => "the peer closed the connection during the TLS handshake (reset)".into(),
        _ => e.to_string(),
    }
}

/// An answer to `GET /readyz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readyz {
    /// The HTTP status code.
    pub status: u16,
    /// The body's first line, at most 120 characters (`ok`, or the first
    /// failed check).
    pub body: String,
}

/// `GET /readyz` over TLS without verification, as HAProxy's health check
/// asks it (`option httpchk GET /readyz`, `check-ssl verify none`), with
/// `host` as SNI and `Host:`; at most 16 KiB of the answer are read.
///
/// # Errors
/// [`ProbeError`]: nothing answered, the handshake failed, or the answer
/// is not HTTP.
pub async fn readyz(addr: SocketAddr, host: &str, timeout: Duration) -> Result<Readyz, ProbeError> {
    let mut s = handshake(addr, host, Verify::Nothing, timeout)
        .await
        .result?;
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
        .map_err(|_| ProbeError::Timeout {
            addr,
            secs: timeout.as_secs_f32(),
        })?
        .map_err(|e| ProbeError::Http {
            addr,
            reason: e.to_string(),
        })?;
    parse_answer(&buf).ok_or(ProbeError::Http {
        addr,
        reason: "not an HTTP answer".to_string(),
    })
}

fn parse_answer(buf: &[u8]) -> Option<Readyz> {
    let text = String::from_utf8_lossy(buf);
    let status = text
        .lines()
        .next()
        .filter(|l| l.starts_with("HTTP/"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())?;
    let body = text
        .split("\r\n\r\n")
        .nth(1)
        .and_then(|b| b.lines().next())
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    Some(Readyz { status, body })
}

/// The fix for an API frontend whose servers are all DOWN while the
/// bootstrap's API is ready (the upstream UPI HAProxy examples check
/// `GET /readyz` over TLS; `GET /` is refused with 403 for anonymous
/// clients, so a check of `/` never passes).
pub const API_BACKEND_FIX: &str = "check the API backend of the load balancer: servers on port 6443 of the bootstrap and masters, `option httpchk GET /readyz`, `check check-ssl verify none` (not `GET /`, which the API refuses with 403)";

/// `/readyz` through the API address compared with the bootstrap's own.
#[derive(Debug)]
pub enum ApiPath {
    /// The bootstrap's own API is not ready yet: nothing to compare
    /// (its status or the error).
    BootstrapNotReady(String),
    /// 200 both ways.
    Same,
    /// Through the balancer another answer (status, first body line).
    Differs(Readyz),
    /// Through the balancer no answer at all (a balancer with no server UP
    /// closes the connection: [`ProbeError::Tls`] with EOF).
    Fails(ProbeError),
}

/// How long a load balancer may take to put a server that just became
/// ready into service: HAProxy's default `rise 2` at the generated
/// configuration's `inter 2s`, with slack (serve's balancer is quicker).
pub const BALANCER_RISE: Duration = Duration::from_secs(6);

/// Asks `/readyz` of the bootstrap's own API at `own` (its address, port
/// 6443) and, once that says 200, through the load balancer at `via`
/// (the API address and port), both with `host` (`api.<domain>`). An
/// answer through the balancer other than 200 is asked again every 2 s
/// for up to `settle` (a balancer has not checked a server that just came
/// up yet; [`BALANCER_RISE`] for a verdict, zero for a look).
pub async fn compare_api(
    own: SocketAddr,
    via: SocketAddr,
    host: &str,
    timeout: Duration,
    settle: Duration,
) -> ApiPath {
    match readyz(own, host, timeout).await {
        Ok(r) if r.status == 200 => {}
        Ok(r) => return ApiPath::BootstrapNotReady(format!("/readyz answers {}", r.status)),
        Err(e) => return ApiPath::BootstrapNotReady(e.to_string()),
    }
    let until = tokio::time::Instant::now() + settle;
    loop {
        let verdict = match readyz(via, host, timeout).await {
            Ok(r) if r.status == 200 => return ApiPath::Same,
            Ok(r) => ApiPath::Differs(r),
            Err(e) => ApiPath::Fails(e),
        };
        if tokio::time::Instant::now() + Duration::from_secs(2) > until {
            return verdict;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_and_others_do_not() {
        assert_eq!(
            parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
            Some(Readyz {
                status: 200,
                body: "ok".into()
            })
        );
        assert_eq!(
            parse_answer(b"HTTP/1.1 500 Internal\r\n\r\n[-]etcd failed\n[+]ping ok\n")
                .unwrap()
                .body,
            "[-]etcd failed"
        );
        assert_eq!(parse_answer(b"SSH-2.0-OpenSSH_9.2\r\n"), None);
        assert_eq!(parse_answer(b""), None);
    }

    #[test]
    fn pem_roots_skip_what_is_not_a_certificate() {
        assert!(roots_of_pem(b"no pem here").is_empty());
        assert!(
            roots_of_pem(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_closed_port_and_a_peer_that_hangs_up_are_told_apart() {
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let r = handshake(closed, "localhost", Verify::Nothing, Duration::from_secs(2)).await;
        let e = r.result.unwrap_err();
        assert!(matches!(e, ProbeError::Connect { .. }), "{e}");
        assert!(!e.is_tls());

        // A balancer with no server up accepts and closes at once.
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            use tokio::io::AsyncReadExt as _;
            let (mut s, _) = l.accept().await.unwrap();
            // Reads the ClientHello, then hangs up (FIN, not RST).
            let mut hello = [0u8; 512];
            let _ = s.read(&mut hello).await;
            drop(s);
        });
        let r = readyz(addr, "api.example", Duration::from_secs(2)).await;
        server.await.unwrap();
        let e = r.unwrap_err();
        assert!(e.is_tls(), "{e}");
        assert!(
            e.to_string()
                .contains("the peer closed the connection during the TLS handshake"),
            "{e}"
        );
    }
}
