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
    /// HTTP status, when a request was made (the postflight asks the
    /// handshake only; the probe's own tests read it).
    #[cfg_attr(not(test), allow(dead_code))]
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
    /// The connection was refused: nothing listens on the port. A failed
    /// probe as the kubelet counts it (SPEC 12, v1.3).
    #[error("{0}")]
    Refused(String),
}

fn identity(m: String) -> ProbeError {
    ProbeError::Identity(m)
}

fn exchange(m: String) -> ProbeError {
    ProbeError::Exchange(m)
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

/// How a probe trusts the server it asks.
#[derive(Clone, Copy)]
pub enum Trust<'a> {
    /// Verified against the node's CA for a name, presenting a client
    /// certificate.
    Pinned { id: &'a TlsIdentity, name: &'a str },
    /// Not verified, no client certificate: kube-controller-manager and
    /// kube-scheduler serve certificates they sign themselves at start (SPEC
    /// 10); nothing secret is sent.
    Unverified,
}

/// One question to a local TLS endpoint.
#[derive(Clone, Copy)]
pub struct Question<'a> {
    pub host: std::net::IpAddr,
    pub port: u16,
    pub trust: Trust<'a>,
    /// The runbook's clock, for the server's validity.
    pub now: time::OffsetDateTime,
    /// With a path: one HTTP GET (a POST of `body`, JSON, when given);
    /// without: the handshake only.
    pub path: Option<&'a str>,
    pub body: Option<&'a [u8]>,
    pub budget: Duration,
}

/// What an endpoint answered.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The leaf the server presented (DER), whether or not it was trusted:
    /// an expired or foreign certificate is seen too.
    pub presented: Option<Vec<u8>>,
    /// The server proved it holds that leaf's key (its handshake signature
    /// verified).
    pub proven: bool,
    /// The HTTP status and the body (at most 64 KiB kept), or why none.
    pub reply: Result<(Option<u16>, Vec<u8>), ProbeError>,
}

/// Records the leaf a server presents, then verifies it (or not).
#[derive(Debug)]
struct Recording {
    inner: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    seen: std::sync::Mutex<Option<Vec<u8>>>,
    proven: std::sync::atomic::AtomicBool,
    algs: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl rustls::client::danger::ServerCertVerifier for Recording {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(end_entity.as_ref().to_vec());
        match &self.inner {
            Some(v) => v.verify_server_cert(end_entity, intermediates, server_name, ocsp, now),
            None => Ok(rustls::client::danger::ServerCertVerified::assertion()),
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let ok = rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)?;
        self.proven.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(ok)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        let ok = rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)?;
        self.proven.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(ok)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algs.supported_schemes()
    }
}

fn recording_config(
    trust: Trust<'_>,
    now: time::OffsetDateTime,
) -> Result<(Arc<rustls::ClientConfig>, Arc<Recording>), ProbeError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algs = provider.signature_verification_algorithms;
    let secs = now.unix_timestamp().max(0) as u64;
    let time = Arc::new(FixedTime(UnixTime::since_unix_epoch(Duration::from_secs(
        secs,
    ))));
    let builder = rustls::ClientConfig::builder_with_details(provider.clone(), time)
        .with_safe_default_protocol_versions()
        .map_err(|e| identity(e.to_string()))?;
    let (inner, client) = match trust {
        Trust::Unverified => (None, None),
        Trust::Pinned { id, .. } => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(&id.ca_pem) {
                let c = c.map_err(|_| identity("the CA file is not PEM".to_string()))?;
                roots
                    .add(c)
                    .map_err(|e| identity(format!("the CA certificate is not usable: {e}")))?;
            }
            let v = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|e| identity(format!("the CA certificate is not usable: {e}")))?;
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(&id.client_cert_pem)
                    .collect::<Result<_, _>>()
                    .map_err(|_| identity("the client certificate is not PEM".to_string()))?;
            let key = PrivateKeyDer::from_pem_slice(&id.client_key_pem)
                .map_err(|_| identity("the client key is not usable PEM".to_string()))?;
            (Some(v), Some((chain, key)))
        }
    };
    let rec = Arc::new(Recording {
        inner,
        seen: std::sync::Mutex::new(None),
        proven: std::sync::atomic::AtomicBool::new(false),
        algs,
    });
    let b = builder
        .dangerous()
        .with_custom_certificate_verifier(rec.clone());
    let cfg = match client {
        None => b.with_no_client_auth(),
        Some((chain, key)) => b.with_client_auth_cert(chain, key).map_err(|e| {
            identity(format!(
                "the client certificate and key do not go together: {e}"
            ))
        })?,
    };
    Ok((Arc::new(cfg), rec))
}

/// Where an HTTP answer ends: its header's end, and the body's length
/// when the header gives one.
fn body_start(buf: &[u8]) -> Option<(usize, Option<usize>)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok());
    Some((end, len))
}

/// Whether the head says `Transfer-Encoding: chunked` (Go's net/http
/// chunks an answer it did not finish within its first 2 KiB, and etcd's
/// JSON gateway answers an error so, with a trailer).
fn is_chunked(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .to_ascii_lowercase()
        .lines()
        .filter_map(|l| l.strip_prefix("transfer-encoding:"))
        .any(|v| v.split(',').any(|t| t.trim() == "chunked"))
}

/// A chunked body (RFC 9112 7.1), read to the end of the connection:
/// its data, without the sizes, extensions and trailer. None when it is not
/// well formed (a size that is not hex, data cut short, no last chunk).
fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n")?;
        let line = std::str::from_utf8(&rest[..eol]).ok()?;
        let size = line.split(';').next()?.trim();
        let size = usize::from_str_radix(size, 16).ok()?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        if rest.len() < size + 2 || &rest[size..size + 2] != b"\r\n" {
            return None;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// An I/O error in words: a read or write past its time is "no answer in
/// time", not the socket's EAGAIN.
fn io_words(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            "no answer within the probe's time".to_string()
        }
        _ => match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            Some(t) => tls_words(t),
            None => e.to_string(),
        },
    }
}

/// A TLS failure in words (SPEC 6, v1.3: never the TLS library's text):
/// what the certificate served, or the answer to ours, says.
fn tls_words(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C};
    let date = |t: &rustls::pki_types::UnixTime| {
        time::OffsetDateTime::from_unix_timestamp(t.as_secs() as i64)
            .map(crate::rules::expiry::date)
            .unwrap_or_else(|_| "a date out of range".to_string())
    };
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::ExpiredContext { not_after, .. } => {
                format!("it serves a certificate that expired {}", date(not_after))
            }
            C::Expired => "it serves a certificate that has expired".to_string(),
            C::NotValidYetContext { not_before, .. } => format!(
                "it serves a certificate not valid before {}",
                date(not_before)
            ),
            C::NotValidYet => "it serves a certificate not valid yet".to_string(),
            C::NotValidForNameContext { expected, .. } => format!(
                "it serves a certificate that does not name {}",
                expected.to_str()
            ),
            C::NotValidForName => {
                "it serves a certificate that does not name the address asked".to_string()
            }
            // A foreign CA of the same name fails the signature.
            C::UnknownIssuer | C::BadSignature => {
                "it serves a certificate not signed by this node's CA".to_string()
            }
            _ => "it serves a certificate that cannot be trusted".to_string(),
        },
        rustls::Error::AlertReceived(a) => match a {
            A::CertificateExpired => {
                "it refused the runbook's client certificate: expired".to_string()
            }
            A::BadCertificate | A::UnknownCA | A::CertificateUnknown => {
                "it refused the runbook's client certificate".to_string()
            }
            other => format!("it ended the handshake ({other:?})"),
        },
        rustls::Error::NoCertificatesPresented => "it presented no certificate".to_string(),
        other => format!("the handshake failed ({other})"),
    }
}

/// Ask one local TLS endpoint, bounded by the question's budget as a
/// whole. The presented leaf is kept even when the handshake then fails
/// (an expired or foreign certificate).
pub fn ask(q: &Question<'_>) -> Answer {
    let (cfg, rec) = match recording_config(q.trust, q.now) {
        Ok(c) => c,
        Err(e) => {
            return Answer {
                presented: None,
                proven: false,
                reply: Err(e),
            }
        }
    };
    let reply = exchange_with(q, cfg);
    let presented = rec.seen.lock().unwrap_or_else(|p| p.into_inner()).take();
    let proven = rec.proven.load(std::sync::atomic::Ordering::SeqCst);
    Answer {
        presented,
        proven,
        reply,
    }
}

fn exchange_with(
    q: &Question<'_>,
    cfg: Arc<rustls::ClientConfig>,
) -> Result<(Option<u16>, Vec<u8>), ProbeError> {
    // Never past the time the caller has left (SPEC 4 step 7, v1.1).
    let budget = q.budget.max(Duration::from_millis(1));
    let name = match q.trust {
        Trust::Pinned { name, .. } => name.to_string(),
        Trust::Unverified => q.host.to_string(),
    };
    let server_name = ServerName::try_from(name.clone())
        .map_err(|_| identity(format!("bad server name {name}")))?;
    let mut conn =
        rustls::ClientConnection::new(cfg, server_name).map_err(|e| exchange(e.to_string()))?;
    let addr = SocketAddr::from((q.host, q.port));
    let deadline = std::time::Instant::now() + budget;
    let sock = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT.min(budget)).map_err(|e| {
        let m = format!("connect {addr}: {e}");
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            ProbeError::Refused(m)
        } else {
            exchange(m)
        }
    })?;
    // No Nagle, as Go's net.Dial (etcd, kube-apiserver and kubelet's
    // probes): the request written after the handshake's last flight would
    // otherwise wait for its ACK, which the server delays (40 ms on Linux),
    // twice per question. Best effort: a socket that refuses still works.
    let _ = sock.set_nodelay(true);
    // The budget bounds the whole exchange, not each read: a server that
    // answers a byte at a time cannot stretch it.
    let mut sock = Bounded { sock, deadline };
    let mut tls = rustls::Stream::new(&mut conn, &mut sock);
    let Some(path) = q.path else {
        while tls.conn.is_handshaking() {
            tls.conn
                .complete_io(tls.sock)
                .map_err(|e| exchange(format!("TLS handshake with {addr}: {}", io_words(&e))))?;
        }
        return Ok((None, Vec::new()));
    };
    let request = match q.body {
        None => format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: nvke-cert-runbook\r\nConnection: close\r\n\r\n").into_bytes(),
        Some(body) => {
            let mut r = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: nvke-cert-runbook\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes();
            r.extend_from_slice(body);
            r
        }
    };
    tls.write_all(&request)
        .map_err(|e| exchange(format!("TLS to {addr}: {}", io_words(&e))))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some((start, Some(len))) = body_start(&buf) {
            if buf.len() >= start + len {
                break;
            }
        }
        match tls.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > RESPONSE_CAP {
                    // Bounded: no health answer is that long.
                    return Err(exchange(format!(
                        "{addr} answered more than {} KiB",
                        RESPONSE_CAP / 1024
                    )));
                }
            }
            // A server that closes without close_notify still answered.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !buf.is_empty() => break,
            Err(e) => return Err(exchange(format!("reading from {addr}: {}", io_words(&e)))),
        }
    }
    let line = String::from_utf8_lossy(&buf[..buf.len().min(256)]).to_string();
    let status = line
        .lines()
        .next()
        .filter(|l| l.starts_with("HTTP/"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| exchange(format!("{addr} did not answer HTTP")))?;
    let body = match body_start(&buf) {
        Some((start, _)) if is_chunked(&buf[..start]) => dechunk(&buf[start..])
            .ok_or_else(|| exchange(format!("{addr} answered a malformed chunked body")))?,
        Some((start, _)) => buf[start..].to_vec(),
        None => Vec::new(),
    };
    Ok((Some(status), body))
}

/// Connect to `addr`, verify the server for `name`, and (with a path) make
/// one HTTP GET. Returns the status and the presented leaf.
pub fn probe(
    addr: std::net::SocketAddr,
    name: &str,
    id: &TlsIdentity,
    now: time::OffsetDateTime,
    path: Option<&str>,
    budget: Duration,
) -> Result<ProbeResult, ProbeError> {
    let a = ask(&Question {
        host: addr.ip(),
        port: addr.port(),
        trust: Trust::Pinned { id, name },
        now,
        path,
        body: None,
        budget,
    });
    let (status, _) = a.reply?;
    let peer_cert = a
        .presented
        .ok_or_else(|| exchange(format!("{addr} presented no certificate")))?;
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
            ([127, 0, 0, 1], port).into(),
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

    /// A POST carries its JSON body, and a chunked answer with a trailer
    /// (what etcd 3.4.23's JSON gateway sent a learner asked for the member
    /// list, seen on this machine) is its data, without the framing.
    #[test]
    fn a_post_sends_its_body_and_a_chunked_answer_is_decoded() {
        let (port, server) = serve(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nTrailer: Grpc-Trailer-Content-Type\r\nTransfer-Encoding: chunked\r\n\r\n\
              75\r\n{\"error\":\"etcdserver: rpc not supported for learner\",\"message\":\"etcdserver: rpc not supported for learner\",\"code\":14}\r\n\
              0\r\nGrpc-Trailer-Content-Type: application/grpc\r\n\r\n",
        );
        let id = identity();
        let a = ask(&Question {
            host: std::net::Ipv4Addr::LOCALHOST.into(),
            port,
            trust: Trust::Pinned {
                id: &id,
                name: "kubernetes",
            },
            now: NOW,
            path: Some("/v3/cluster/member/list"),
            body: Some(b"{}"),
            budget: Duration::from_secs(5),
        });
        let (status, body) = a.reply.unwrap();
        assert_eq!(status, Some(503));
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "{\"error\":\"etcdserver: rpc not supported for learner\",\"message\":\"etcdserver: rpc not supported for learner\",\"code\":14}"
        );
        let (request, _) = server.join().unwrap().unwrap();
        assert!(
            request.starts_with("POST /v3/cluster/member/list HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(request.contains("Content-Length: 2\r\n"), "{request}");
    }

    #[test]
    fn chunked_bodies_are_decoded_and_malformed_ones_refused() {
        assert_eq!(dechunk(b"2\r\nok\r\n0\r\n\r\n").unwrap(), b"ok");
        assert_eq!(
            dechunk(b"3;ext=1\r\nabc\r\n1\r\nd\r\n0\r\nX: y\r\n\r\n").unwrap(),
            b"abcd"
        );
        assert_eq!(dechunk(b"zz\r\nok\r\n0\r\n\r\n"), None, "not hex");
        assert_eq!(dechunk(b"5\r\nok\r\n0\r\n\r\n"), None, "cut short");
        assert_eq!(dechunk(b"2\r\nok\r\n"), None, "no last chunk");
        assert!(is_chunked(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
        ));
        assert!(!is_chunked(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"));
    }

    /// kube-apiserver's answer is returned as it is: the gate judges it.
    #[test]
    fn a_status_other_than_200_is_returned_as_it_is() {
        let (port, server) = serve(b"HTTP/1.1 503 Service Unavailable\r\n\r\n");
        let r = probe(
            ([127, 0, 0, 1], port).into(),
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
            ([127, 0, 0, 1], port).into(),
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
            ([127, 0, 0, 1], port).into(),
            "etcd.example",
            &identity(),
            NOW,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref().is_err_and(|e| e
                .to_string()
                .contains("it serves a certificate that does not name etcd.example")),
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
            ([127, 0, 0, 1], port).into(),
            "kubernetes",
            &id,
            NOW,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref().is_err_and(|e| e
                .to_string()
                .contains("it serves a certificate not signed by this node's CA")),
            "{r:?}"
        );
        server.join().unwrap();
    }

    #[test]
    fn tls_failures_are_said_in_words_never_the_librarys() {
        use rustls::pki_types::UnixTime;
        use rustls::CertificateError as C;
        let at = |s: u64| UnixTime::since_unix_epoch(Duration::from_secs(s));
        let cases = [
            (
                rustls::Error::InvalidCertificate(C::ExpiredContext {
                    time: at(1_796_425_726),
                    not_after: at(1_796_256_000),
                }),
                "it serves a certificate that expired 2026-12-03",
            ),
            (
                rustls::Error::InvalidCertificate(C::NotValidYetContext {
                    time: at(1_796_256_000),
                    not_before: at(1_796_425_726),
                }),
                "it serves a certificate not valid before 2026-12-04",
            ),
            (
                rustls::Error::AlertReceived(rustls::AlertDescription::CertificateExpired),
                "it refused the runbook's client certificate: expired",
            ),
        ];
        for (e, want) in cases {
            let io = std::io::Error::new(std::io::ErrorKind::InvalidData, e);
            let got = io_words(&io);
            assert_eq!(got, want);
            assert!(!got.contains("UNIX"), "{got}");
        }
    }

    /// The server certificate is judged at the runbook's clock (`--now`),
    /// not the machine's: past its notAfter it is refused.
    #[test]
    fn the_certificate_is_judged_at_the_runbooks_clock() {
        let (port, server) = serve(OK);
        let later = datetime!(2028-01-01 00:00:00 UTC);
        let r = probe(
            ([127, 0, 0, 1], port).into(),
            "kubernetes",
            &identity(),
            later,
            Some("/readyz"),
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref().is_err_and(|e| e
                .to_string()
                .contains("it serves a certificate that expired 2027-06-01")),
            "{r:?}"
        );
        server.join().unwrap();
    }

    #[test]
    fn a_server_that_does_not_answer_http_is_an_error() {
        let (port, server) = serve(b"garbage\r\n\r\n");
        let r = probe(
            ([127, 0, 0, 1], port).into(),
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
            ([127, 0, 0, 1], port).into(),
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
            ([127, 0, 0, 1], port).into(),
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
            ([127, 0, 0, 1], port).into(),
            "kubernetes",
            &identity(),
            NOW,
            None,
            Duration::from_secs(5),
        );
        assert!(
            r.as_ref()
                .is_err_and(|e| matches!(e, ProbeError::Refused(m) if m.starts_with(&format!("connect 127.0.0.1:{port}")))),
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
            ([127, 0, 0, 1], port).into(),
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
            ([127, 0, 0, 1], port).into(),
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
