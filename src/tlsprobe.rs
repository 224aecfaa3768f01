//! TLS probes of local endpoints: kube-apiserver `/readyz` and "which
//! certificate does this server present". The server is verified against a
//! CA read from the node (pinned), for a given name, at the runbook's clock;
//! a client certificate is presented. No curl, no openssl.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const IO_TIMEOUT: Duration = Duration::from_secs(5);
const RESPONSE_CAP: usize = 64 * 1024;

#[derive(Debug)]
struct FixedTime(UnixTime);

impl rustls::time_provider::TimeProvider for FixedTime {
    fn current_time(&self) -> Option<UnixTime> {
        Some(self.0)
    }
}

/// What to present and what to trust. PEM bytes; never logged.
pub struct TlsIdentity {
    pub ca_pem: Vec<u8>,
    pub client_cert_pem: Vec<u8>,
    pub client_key_pem: Vec<u8>,
}

/// The result of one probe.
#[derive(Debug, Clone)]
pub struct ProbeResult {
    /// HTTP status, when a request was made.
    pub status: Option<u16>,
    /// The server's leaf certificate (DER).
    pub peer_cert: Vec<u8>,
}

fn config(
    id: &TlsIdentity,
    now: time::OffsetDateTime,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&id.ca_pem) {
        let c = c.map_err(|_| "the CA file is not PEM".to_string())?;
        roots
            .add(c)
            .map_err(|e| format!("the CA certificate is not usable: {e}"))?;
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&id.client_cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| "the client certificate is not PEM".to_string())?;
    let key = PrivateKeyDer::from_pem_slice(&id.client_key_pem)
        .map_err(|_| "the client key is not usable PEM".to_string())?;
    let secs = now.unix_timestamp().max(0) as u64;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_details(
        provider,
        Arc::new(FixedTime(UnixTime::since_unix_epoch(Duration::from_secs(
            secs,
        )))),
    )
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .map_err(|e| format!("the client certificate and key do not go together: {e}"))?;
    Ok(Arc::new(cfg))
}

/// Connect to `127.0.0.1:port`, verify the server for `name`, and (with a
/// path) make one HTTP GET. Returns the status and the presented leaf.
pub fn probe(
    port: u16,
    name: &str,
    id: &TlsIdentity,
    now: time::OffsetDateTime,
    path: Option<&str>,
    budget: Duration,
) -> Result<ProbeResult, String> {
    // Never past the time the caller has left (SPEC 4 step 7, v1.1).
    let budget = budget.max(Duration::from_millis(1));
    let cfg = config(id, now)?;
    let server_name =
        ServerName::try_from(name.to_string()).map_err(|_| format!("bad server name {name}"))?;
    let mut conn = rustls::ClientConnection::new(cfg, server_name).map_err(|e| e.to_string())?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut sock = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT.min(budget))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    sock.set_read_timeout(Some(IO_TIMEOUT.min(budget))).ok();
    sock.set_write_timeout(Some(IO_TIMEOUT.min(budget))).ok();
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    let request = match path {
        Some(p) => format!("GET {p} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: nvke-cert-runbook\r\nConnection: close\r\n\r\n"),
        None => String::new(),
    };
    if request.is_empty() {
        // Handshake only.
        while tls.conn.is_handshaking() {
            tls.conn
                .complete_io(tls.sock)
                .map_err(|e| format!("TLS handshake with {addr}: {e}"))?;
        }
    } else {
        tls.write_all(request.as_bytes())
            .map_err(|e| format!("TLS to {addr}: {e}"))?;
    }
    let peer_cert = tls
        .conn
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .ok_or_else(|| format!("{addr} presented no certificate"))?;
    let status = if request.is_empty() {
        None
    } else {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match tls.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.len() > RESPONSE_CAP || buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                // A server that closes without close_notify still answered.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !buf.is_empty() => break,
                Err(e) => return Err(format!("reading from {addr}: {e}")),
            }
        }
        let line = String::from_utf8_lossy(&buf);
        let status = line
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| format!("{addr} did not answer HTTP"))?;
        Some(status)
    };
    Ok(ProbeResult { status, peer_cert })
}
