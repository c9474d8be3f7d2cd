//! RSA keys: generation (also on background threads), PKCS#1/PKCS#8
//! parsing, and the public forms openshift-install writes (PKIX DER,
//! `RSA PUBLIC KEY` PEM, OpenSSH, SubjectKeyId).

use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::signature::KeyPair as _;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha1::{Digest as _, Sha1};

use crate::PkiError;
use crate::der::{bit_string, oid, read_tlv, seq};
use crate::pem::{pem_blocks, pem_encode};

/// OID rsaEncryption (RFC 8017 Appendix C).
pub(crate) const OID_RSA_ENCRYPTION: [u64; 7] = [1, 2, 840, 113549, 1, 1, 1];

/// An RSA private key (RSA-2048 when generated here).
#[derive(Clone)]
pub struct RsaKey {
    pkcs1: Vec<u8>,
    public_pkcs1: Vec<u8>,
}

impl std::fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RsaKey({} bits, private part redacted)", self.bits())
    }
}

/// Extracts the PKCS#1 `RSAPrivateKey` from a PKCS#8 `PrivateKeyInfo` (RFC 5208).
fn pkcs8_to_pkcs1(pkcs8: &[u8]) -> Option<Vec<u8>> {
    let (_, body, _) = read_tlv(pkcs8)?;
    let (_, _, rest) = read_tlv(body)?; // version
    let (_, _, rest) = read_tlv(rest)?; // algorithm
    let (tag, key, _) = read_tlv(rest)?;
    (tag == 0x04).then(|| key.to_vec())
}

impl RsaKey {
    /// A key from its PKCS#1 `RSAPrivateKey` DER.
    fn from_pkcs1(pkcs1: Vec<u8>) -> Result<RsaKey, PkiError> {
        let kp = aws_lc_rs::rsa::KeyPair::from_der(&pkcs1)
            .map_err(|e| PkiError::BadKey(e.to_string()))?;
        let public_pkcs1 = kp.public_key().as_ref().to_vec();
        Ok(RsaKey {
            pkcs1,
            public_pkcs1,
        })
    }

    /// Generates an RSA-2048 key with public exponent 65537 (openshift/installer
    /// `pkg/asset/tls/tls.go`).
    ///
    /// # Errors
    /// [`PkiError::KeyGeneration`] if the generator fails.
    pub fn generate() -> Result<RsaKey, PkiError> {
        let kp = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
            .map_err(|_| PkiError::KeyGeneration)?;
        let pkcs8 = kp.as_der().map_err(|_| PkiError::KeyGeneration)?;
        let pkcs1 = pkcs8_to_pkcs1(pkcs8.as_ref()).ok_or(PkiError::KeyGeneration)?;
        Ok(RsaKey {
            pkcs1,
            public_pkcs1: kp.public_key().as_ref().to_vec(),
        })
    }

    /// Parses the first `RSA PRIVATE KEY` (PKCS#1) or `PRIVATE KEY` (PKCS#8) PEM block.
    ///
    /// # Errors
    /// [`PkiError::NoPem`] without such a block, [`PkiError::BadKey`] when it is not an RSA key.
    pub fn from_pem(pem: &str) -> Result<RsaKey, PkiError> {
        for (label, der) in pem_blocks(pem) {
            match label.as_str() {
                "RSA PRIVATE KEY" => return RsaKey::from_pkcs1(der),
                "PRIVATE KEY" => {
                    let pkcs1 = pkcs8_to_pkcs1(&der)
                        .ok_or_else(|| PkiError::BadKey("malformed PKCS#8".into()))?;
                    return RsaKey::from_pkcs1(pkcs1);
                }
                _ => {}
            }
        }
        Err(PkiError::NoPem("RSA PRIVATE KEY"))
    }

    /// Modulus size in bits.
    pub fn bits(&self) -> usize {
        self.modulus().len() * 8
    }

    /// The PKCS#1 `RSAPrivateKey` DER.
    pub fn private_der(&self) -> &[u8] {
        &self.pkcs1
    }

    /// PEM `RSA PRIVATE KEY` (PKCS#1), 64-column base64, trailing newline — like
    /// Go's `x509.MarshalPKCS1PrivateKey` + `pem.EncodeToMemory`.
    pub fn private_pem(&self) -> String {
        pem_encode("RSA PRIVATE KEY", &self.pkcs1)
    }

    /// The PKCS#1 `RSAPublicKey` DER (`SEQUENCE { n, e }`).
    pub fn public_pkcs1_der(&self) -> &[u8] {
        &self.public_pkcs1
    }

    /// The PKIX `SubjectPublicKeyInfo` DER (rsaEncryption, NULL parameters).
    pub fn public_spki_der(&self) -> Vec<u8> {
        seq(&[
            seq(&[oid(&OID_RSA_ENCRYPTION), vec![0x05, 0x00]]),
            bit_string(0, &self.public_pkcs1),
        ])
    }

    /// The public key as openshift-install writes `*.pub`: PKIX body under an
    /// `RSA PUBLIC KEY` header (an openshift/installer `pkg/asset/tls` quirk).
    pub fn public_pem(&self) -> String {
        pem_encode("RSA PUBLIC KEY", &self.public_spki_der())
    }

    /// The modulus, big-endian without leading zeros.
    fn modulus(&self) -> Vec<u8> {
        self.n_e().0
    }

    /// Modulus and public exponent, big-endian without leading zeros.
    fn n_e(&self) -> (Vec<u8>, Vec<u8>) {
        let parse = || {
            let (_, body, _) = read_tlv(&self.public_pkcs1)?;
            let (_, n, rest) = read_tlv(body)?;
            let (_, e, _) = read_tlv(rest)?;
            let strip = |v: &[u8]| {
                v.iter()
                    .skip_while(|b| **b == 0)
                    .copied()
                    .collect::<Vec<u8>>()
            };
            Some((strip(n), strip(e)))
        };
        parse().unwrap_or_default()
    }

    /// OpenSSH `authorized_keys` line `ssh-rsa <base64>\n` (RFC 4253 §6.6),
    /// as Go's `ssh.MarshalAuthorizedKey` writes it.
    pub fn ssh_authorized_key(&self) -> String {
        let (n, e) = self.n_e();
        let mut wire = Vec::new();
        let mut put = |b: &[u8]| {
            wire.extend_from_slice(&(b.len() as u32).to_be_bytes());
            wire.extend_from_slice(b);
        };
        let mpint = |v: &[u8]| {
            let mut m = v.to_vec();
            if m.first().is_some_and(|b| b & 0x80 != 0) {
                m.insert(0, 0);
            }
            m
        };
        put(b"ssh-rsa");
        put(&mpint(&e));
        put(&mpint(&n));
        format!("ssh-rsa {}\n", STANDARD.encode(wire))
    }

    /// SHA-1 over the PKCS#1 public key: the SubjectKeyId Go computes.
    pub fn subject_key_id(&self) -> Vec<u8> {
        Sha1::digest(&self.public_pkcs1).to_vec()
    }

    /// Signs `msg` with RSASSA-PKCS1-v1_5 SHA-256 (RFC 8017 §8.2).
    pub(crate) fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, PkiError> {
        let kp = aws_lc_rs::rsa::KeyPair::from_der(&self.pkcs1).map_err(|_| PkiError::Sign)?;
        let mut sig = vec![0u8; kp.public_modulus_len()];
        kp.sign(
            &aws_lc_rs::signature::RSA_PKCS1_SHA256,
            &aws_lc_rs::rand::SystemRandom::new(),
            msg,
            &mut sig,
        )
        .map_err(|_| PkiError::Sign)?;
        Ok(sig)
    }
}

/// Generates `n` RSA-2048 keys on all available cores (std threads).
///
/// # Errors
/// The first generation failure.
pub fn generate_keys(n: usize) -> Result<Vec<RsaKey>, PkiError> {
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(2)
        .min(n.max(1));
    let per: Vec<usize> = (0..threads)
        .map(|i| n / threads + usize::from(i < n % threads))
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = per
            .iter()
            .map(|&k| {
                s.spawn(move || {
                    (0..k)
                        .map(|_| RsaKey::generate())
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(n);
        for h in handles {
            out.extend(h.join().map_err(|_| PkiError::KeyGeneration)??);
        }
        Ok(out)
    })
}

/// A background generator of a known number of keys: `start` spawns worker
/// threads at once, `take` hands out keys as they finish (blocking until one
/// is ready) and generates inline once the planned number is used up.
pub struct KeyPool {
    rx: Mutex<Receiver<Result<RsaKey, PkiError>>>,
}

impl KeyPool {
    /// Starts generating `n` RSA-2048 keys on `threads` threads.
    pub fn start(n: usize, threads: usize) -> KeyPool {
        let (tx, rx) = channel();
        let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(n));
        for _ in 0..threads.max(1).min(n.max(1)) {
            let tx = tx.clone();
            let remaining = Arc::clone(&remaining);
            std::thread::spawn(move || {
                use std::sync::atomic::Ordering;
                while remaining
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(1))
                    .is_ok()
                {
                    if tx.send(RsaKey::generate()).is_err() {
                        return;
                    }
                }
            });
        }
        KeyPool { rx: Mutex::new(rx) }
    }

    /// The next key: from the pool, or generated now when the pool is exhausted.
    ///
    /// # Errors
    /// [`PkiError::KeyGeneration`] if generation failed.
    pub fn take(&self) -> Result<RsaKey, PkiError> {
        let rx = self.rx.lock().map_err(|_| PkiError::KeyGeneration)?;
        match rx.recv() {
            Ok(k) => k,
            Err(_) => RsaKey::generate(),
        }
    }
}
