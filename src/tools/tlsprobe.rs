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

/// Why a TLS probe gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// The node's CA, client certificate or key cannot make a TLS client:
    /// waiting does not fix that.
    #[error("{0}")]
    Identity(String),
    /// No connection, or the TLS exchange failed: the server may not be up yet.
    #[error("{0}")]
    Exchange(String),
}

fn identity(m: String) -> ProbeError {
    ProbeError::Identity(m)
}

fn exchange(m: String) -> ProbeError {
    ProbeError::Exchange(m)
}

fn config(
    id: &TlsIdentity,
    now: time::OffsetDateTime,
) -> Result<Arc<rustls::ClientConfig>, ProbeError> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&id.ca_pem) {
        let c = c.map_err(|_| identity("the CA file is not PEM".to_string()))?;
        roots
            .add(c)
            .map_err(|e| identity(format!("the CA certificate is not usable: {e}")))?;
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&id.client_cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|_| identity("the client certificate is not PEM".to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(&id.client_key_pem)
        .map_err(|_| identity("the client key is not usable PEM".to_string()))?;
    let secs = now.unix_timestamp().max(0) as u64;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_details(
        provider,
        Arc::new(FixedTime(UnixTime::since_unix_epoch(Duration::from_secs(
            secs,
        )))),
    )
    .with_safe_default_protocol_versions()
    .map_err(|e| identity(e.to_string()))?
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .map_err(|e| {
        identity(format!(
            "the client certificate and key do not go together: {e}"
        ))
    })?;
    Ok(Arc::new(cfg))
}

/// A socket whose every read and write gets only what is left of the
/// probe's budget (and at most [`IO_TIMEOUT`]).
struct Bounded {
    sock: TcpStream,
    deadline: std::time::Instant,
}

impl Bounded {
    fn left(&self) -> std::io::Result<Duration> {
        let left = self
            .deadline
            .saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the probe's time ran out",
            ))
        } else {
            Ok(left.min(IO_TIMEOUT))
        }
    }
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.sock.set_read_timeout(Some(left))?;
        self.sock.read(buf)
    }
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.sock.set_write_timeout(Some(left))?;
        self.sock.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.sock.flush()
    }
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
) -> Result<ProbeResult, ProbeError> {
    // Never past the time the caller has left (SPEC 4 step 7, v1.1).
    let budget = budget.max(Duration::from_millis(1));
    let cfg = config(id, now)?;
    let server_name = ServerName::try_from(name.to_string())
        .map_err(|_| identity(format!("bad server name {name}")))?;
    let mut conn =
        rustls::ClientConnection::new(cfg, server_name).map_err(|e| exchange(e.to_string()))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = std::time::Instant::now() + budget;
    let sock = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT.min(budget))
        .map_err(|e| exchange(format!("connect {addr}: {e}")))?;
    // The budget bounds the whole exchange, not each read: a server that
    // answers a byte at a time cannot stretch it.
    let mut sock = Bounded { sock, deadline };
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
                .map_err(|e| exchange(format!("TLS handshake with {addr}: {e}")))?;
        }
    } else {
        tls.write_all(request.as_bytes())
            .map_err(|e| exchange(format!("TLS to {addr}: {e}")))?;
    }
    let peer_cert = tls
        .conn
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .ok_or_else(|| exchange(format!("{addr} presented no certificate")))?;
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
                Err(e) => return Err(exchange(format!("reading from {addr}: {e}"))),
            }
        }
        let line = String::from_utf8_lossy(&buf);
        let status = line
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| exchange(format!("{addr} did not answer HTTP")))?;
        Some(status)
    };
    Ok(ProbeResult { status, peer_cert })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read the fixture PKI directly
mod tests {
    //! SPEC 4 step 7 and 10: the probe trusts only the CA read from the
    //! node, for the given name, at the runbook's clock, presents a client
    //! certificate, returns the status and the presented leaf, and never
    //! runs past its budget. Against a local rustls server on the fixture
    //! PKI (nodes/rsa: the apiserver certificate, signed by pki/ca.crt).
    use super::*;
    use std::net::TcpListener;
    use std::path::Path;
    use std::time::Instant;
    use time::macros::datetime;

    const NOW: time::OffsetDateTime = datetime!(2026-11-30 00:00:00 UTC);

    fn pki(name: &str) -> Vec<u8> {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let p = match name.strip_prefix("extra/") {
            Some(n) => base.join("pki-extra").join(n),
            None => base.join("nodes/rsa/etc/kubernetes/pki").join(name),
        };
        std::fs::read(p).unwrap()
    }

    fn der(pem: &[u8]) -> Vec<u8> {
        CertificateDer::from_pem_slice(pem)
            .unwrap()
            .as_ref()
            .to_vec()
    }

    /// Trust pki/ca.crt, present apiserver-kubelet-client (signed by it).
    fn identity() -> TlsIdentity {
        TlsIdentity {
            ca_pem: pki("ca.crt"),
            client_cert_pem: pki("apiserver-kubelet-client.crt"),
            client_key_pem: pki("apiserver-kubelet-client.key"),
        }
    }

    /// What the server saw: the request (empty for a handshake only) and
    /// the client's certificate.
    type Seen = Option<(String, Option<Vec<u8>>)>;

    /// A TLS server presenting the apiserver certificate that requires a
    /// client certificate signed by pki/ca.crt, for one connection, and
    /// answers a request with `answer`.
    fn serve(answer: &'static [u8]) -> (u16, std::thread::JoinHandle<Seen>) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(der(&pki("ca.crt"))))
            .unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let secs = NOW.unix_timestamp() as u64;
        let cfg = rustls::ServerConfig::builder_with_details(
            provider,
            Arc::new(FixedTime(UnixTime::since_unix_epoch(Duration::from_secs(
                secs,
            )))),
        )
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from(der(&pki("apiserver.crt")))],
            PrivateKeyDer::from_pem_slice(&pki("apiserver.key")).unwrap(),
        )
        .unwrap();
        let cfg = Arc::new(cfg);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().ok()?;
            sock.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let mut conn = rustls::ServerConnection::new(cfg).ok()?;
            let mut tls = rustls::Stream::new(&mut conn, &mut sock);
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match tls.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let client = tls
                .conn
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.as_ref().to_vec());
            if !buf.is_empty() {
                let _ = tls.write_all(answer);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
            Some((String::from_utf8_lossy(&buf).into_owned(), client))
        });
        (port, h)
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    #[test]
    fn a_probe_answers_the_status_and_the_certificate_the_server_presents() {
        let (port, server) = serve(OK);
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            NOW,
            Some("/readyz"),
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(r.status, Some(200));
        assert_eq!(r.peer_cert, der(&pki("apiserver.crt")));
        let (request, client) = server.join().unwrap().unwrap();
        assert!(request.starts_with("GET /readyz HTTP/1.1\r\n"), "{request}");
        assert_eq!(
            client,
            Some(der(&pki("apiserver-kubelet-client.crt"))),
            "the client certificate is presented"
        );
    }

    /// kube-apiserver's answer is returned as it is: the gate judges it.
    #[test]
    fn a_status_other_than_200_is_returned_as_it_is() {
        let (port, server) = serve(b"HTTP/1.1 503 Service Unavailable\r\n\r\n");
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            NOW,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert_eq!(r.unwrap().status, Some(503));
        server.join().unwrap();
    }

    /// Without a path: the handshake only, and the presented leaf (the
    /// postflight's "which certificate does this server present").
    #[test]
    fn a_handshake_only_probe_returns_the_presented_leaf() {
        let (port, server) = serve(OK);
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            NOW,
            None,
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(r.status, None);
        assert_eq!(r.peer_cert, der(&pki("apiserver.crt")));
        let (request, _) = server.join().unwrap().unwrap();
        assert_eq!(request, "", "no request made");
    }

    /// The server is verified for the name given (`kubernetes`, not the
    /// address).
    #[test]
    fn a_server_without_the_name_is_refused() {
        let (port, server) = serve(OK);
        let r = probe(
            port,
            "etcd.example",
            &identity(),
            NOW,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| e.to_string().contains("not valid for name")),
            "{r:?}"
        );
        server.join().unwrap();
    }

    /// The CA is pinned from the node: a server whose certificate another
    /// CA signed (even one also named `CN=kubernetes`) is refused.
    #[test]
    fn only_the_nodes_ca_is_trusted() {
        let (port, server) = serve(OK);
        let id = TlsIdentity {
            ca_pem: pki("extra/foreign-ca.crt"),
            ..identity()
        };
        let r = probe(
            port,
            "kubernetes",
            &id,
            NOW,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| e.to_string().contains("invalid peer certificate")),
            "{r:?}"
        );
        server.join().unwrap();
    }

    /// The server certificate is judged at the runbook's clock (`--now`),
    /// not the machine's: past its notAfter it is refused.
    #[test]
    fn the_certificate_is_judged_at_the_runbooks_clock() {
        let (port, server) = serve(OK);
        let later = datetime!(2028-01-01 00:00:00 UTC);
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            later,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| e.to_string().contains("certificate expired")),
            "{r:?}"
        );
        server.join().unwrap();
    }

    #[test]
    fn a_server_that_does_not_answer_http_is_an_error() {
        let (port, server) = serve(b"garbage\r\n\r\n");
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            NOW,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| e.to_string().contains("did not answer HTTP")),
            "{r:?}"
        );
        server.join().unwrap();
    }

    /// SPEC 4 step 7 (v1.1): a probe never runs past the time left, even
    /// when the server accepts and then says nothing.
    #[test]
    fn a_silent_server_costs_no_more_than_the_budget() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let held = listener.accept();
            std::thread::sleep(Duration::from_secs(10));
            drop(held);
        });
        let t0 = Instant::now();
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            NOW,
            Some("/readyz"),
            Duration::from_millis(300),
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| matches!(e, ProbeError::Exchange(m) if m.starts_with(&format!("TLS to 127.0.0.1:{port}")))),
            "{r:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }

    /// The budget bounds the whole exchange: a server that drips a byte
    /// every 200 ms (each read would wait less than a per-read timeout)
    /// still costs no more than the budget.
    #[test]
    fn a_dripping_server_costs_no_more_than_the_budget() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = listener.accept() {
                // A TLS record header, a byte at a time, never complete.
                for b in [0x16u8, 0x03, 0x03, 0x40, 0x00].iter().cycle().take(50) {
                    if s.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        });
        let t0 = Instant::now();
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            NOW,
            None,
            Duration::from_millis(700),
        );
        assert!(r.is_err(), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    }

    /// Nothing listening: an error at once, naming the address.
    #[test]
    fn a_closed_port_is_an_error_naming_the_address() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let r = probe(
            port,
            "kubernetes",
            &identity(),
            NOW,
            None,
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| matches!(e, ProbeError::Exchange(m) if m.starts_with(&format!("connect 127.0.0.1:{port}")))),
            "{r:?}"
        );
    }

    /// An identity that cannot be used is an error before anything is
    /// sent (never a probe without its client certificate).
    #[test]
    fn an_unusable_identity_is_an_error() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bad_key = TlsIdentity {
            client_key_pem: b"not a key".to_vec(),
            ..identity()
        };
        let r = probe(
            port,
            "kubernetes",
            &bad_key,
            NOW,
            None,
            Duration::from_secs(5),
        );
        // The identity's kind: waiting for the server does not fix it.
        assert!(
            r.as_ref()
                .is_err_and(|e| matches!(e, ProbeError::Identity(m) if m.contains("client key"))),
            "{r:?}"
        );
        let wrong_key = TlsIdentity {
            client_key_pem: pki("apiserver.key"),
            ..identity()
        };
        let r = probe(
            port,
            "kubernetes",
            &wrong_key,
            NOW,
            None,
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref().is_err_and(
                |e| matches!(e, ProbeError::Identity(m) if m.contains("do not go together"))
            ),
            "{r:?}"
        );
    }
}
