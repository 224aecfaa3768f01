//! rustls (ring provider) helpers: loading PEM files, mutual-TLS server and
//! client configurations, a one-request-per-connection HTTP/1.1 server and a
//! matching client.

use anyhow::{anyhow, bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("failed to open {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("failed to parse certificates in {}", path.display()))?;
    if certs.is_empty() {
        bail!("no certificate in {}", path.display());
    }
    Ok(certs)
}

pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path)
        .with_context(|| format!("failed to load private key {}", path.display()))
}

pub fn load_roots(path: &Path) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for c in load_certs(path)? {
        roots
            .add(c)
            .with_context(|| format!("bad CA certificate in {}", path.display()))?;
    }
    Ok(roots)
}

/// Verifies client certificates with webpki as of a fixed time (sim.json
/// `tlsNow`) instead of the real clock.
#[derive(Debug)]
struct ClientVerifierAt {
    inner: Arc<dyn ClientCertVerifier>,
    at: UnixTime,
}

impl ClientCertVerifier for ClientVerifierAt {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }
    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }
    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.inner
            .verify_client_cert(end_entity, intermediates, self.at)
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Verifies server certificates with webpki as of a fixed time.
#[derive(Debug)]
struct ServerVerifierAt {
    inner: Arc<dyn ServerCertVerifier>,
    at: UnixTime,
}

impl ServerCertVerifier for ServerVerifierAt {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            self.at,
        )
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

fn unix_time(at: Option<i64>) -> Option<UnixTime> {
    at.map(|secs| UnixTime::since_unix_epoch(Duration::from_secs(secs.max(0) as u64)))
}

/// Client certificates must chain to `client_ca`, verified as of `at`.
fn client_verifier(
    provider: &Arc<CryptoProvider>,
    client_ca: &Path,
    at: Option<i64>,
) -> Result<Arc<dyn ClientCertVerifier>> {
    let roots = Arc::new(load_roots(client_ca)?);
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .context("failed to build the client certificate verifier")?;
    Ok(match unix_time(at) {
        Some(at) => Arc::new(ClientVerifierAt {
            inner: verifier,
            at,
        }),
        None => verifier,
    })
}

/// A server presenting `cert`/`key` that requires a client certificate
/// chaining to `client_ca`, verified as of `at` (unix seconds; None: now).
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: &Path,
    at: Option<i64>,
) -> Result<Arc<ServerConfig>> {
    let provider = provider();
    let verifier = client_verifier(&provider, client_ca, at)?;
    let cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(load_certs(cert)?, load_key(key)?)
        .with_context(|| {
            format!(
                "serving certificate {} and key {} are unusable",
                cert.display(),
                key.display()
            )
        })?;
    Ok(Arc::new(cfg))
}

/// Presents `cert`/`key` as they are on disk at each handshake: real etcd
/// reloads its certificate files on every new TLS connection (measured
/// with etcd 3.4: a replaced `server.crt` is served at once).
#[derive(Debug)]
struct Reloading {
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
}

impl rustls::server::ResolvesServerCert for Reloading {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        let chain = load_certs(&self.cert).ok()?;
        let key = load_key(&self.key).ok()?;
        let signer = provider().key_provider.load_private_key(key).ok()?;
        Some(Arc::new(rustls::sign::CertifiedKey::new(chain, signer)))
    }
}

/// As [`server_config`], with the serving certificate re-read from disk at
/// every handshake (etcd's behaviour).
pub fn reloading_server_config(
    cert: &Path,
    key: &Path,
    client_ca: &Path,
    at: Option<i64>,
) -> Result<Arc<ServerConfig>> {
    // Fail at start on unusable files, as etcd does.
    server_config(cert, key, client_ca, at)?;
    let provider = provider();
    let verifier = client_verifier(&provider, client_ca, at)?;
    let cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(Arc::new(Reloading {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        }));
    Ok(Arc::new(cfg))
}

/// A server presenting a certificate and key given as PEM bytes, asking
/// no client certificate (kube-controller-manager's and kube-scheduler's
/// self-signed serving certificate).
pub fn plain_server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .context("bad certificate PEM")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).context("bad key PEM")?;
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    Ok(Arc::new(cfg))
}

/// A client that verifies the server against `ca` (as of `at`, unix
/// seconds; None: now) and, when given, presents `cert`/`key`.
pub fn client_config(
    ca: &Path,
    client: Option<(&Path, &Path)>,
    at: Option<i64>,
) -> Result<Arc<ClientConfig>> {
    let provider = provider();
    let roots = Arc::new(load_roots(ca)?);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match unix_time(at) {
        None => builder.with_root_certificates(roots),
        Some(at) => {
            let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .context("failed to build the server certificate verifier")?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ServerVerifierAt { inner, at }))
        }
    };
    let cfg = match client {
        Some((cert, key)) => builder
            .with_client_auth_cert(load_certs(cert)?, load_key(key)?)
            .with_context(|| {
                format!(
                    "client certificate {} and key {} are unusable",
                    cert.display(),
                    key.display()
                )
            })?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(cfg))
}

pub struct Request {
    pub method: String,
    pub target: String,
}

pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Response {
    /// Bytes that are not HTTP at all, written as they are.
    pub const RAW: u16 = 0;
    /// Accept, read the request, never answer.
    pub const SILENT: u16 = 1;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Binds `bind`:`port` and serves forever, one request per connection,
/// one thread per connection.
pub fn serve<F>(
    name: &str,
    bind: IpAddr,
    port: u16,
    config: Arc<ServerConfig>,
    handler: F,
) -> Result<()>
where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    let listener = bind_retrying(name, bind, port)?;
    eprintln!("{name}: listening on https://{bind}:{port}");
    serve_listener(listener, config, handler)
}

/// Binds `bind`:`port`, retrying for up to 5 s while it is in use: the
/// previous container's process may still be exiting (the simulated
/// kubelet does not wait for it), which would otherwise make a start
/// fail, or a server lose its second port, at random.
pub fn bind_retrying(name: &str, bind: IpAddr, port: u16) -> Result<TcpListener> {
    let until = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match TcpListener::bind(SocketAddr::from((bind, port))) {
            Ok(l) => return Ok(l),
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                return Err(e).with_context(|| format!("{name}: failed to listen on {bind}:{port}"))
            }
        }
    }
}

/// Serves forever on a listener already bound, as [`serve`].
pub fn serve_listener<F>(listener: TcpListener, config: Arc<ServerConfig>, handler: F) -> Result<()>
where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    let handler = Arc::new(handler);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        // As Go's net/http server (etcd, kube-apiserver): no Nagle.
        let _ = stream.set_nodelay(true);
        let config = config.clone();
        let handler = handler.clone();
        std::thread::spawn(move || {
            let _ = handle_conn(stream, config, &*handler);
        });
    }
    Ok(())
}

fn handle_conn<F>(sock: TcpStream, config: Arc<ServerConfig>, handler: &F) -> Result<()>
where
    F: Fn(&Request) -> Response,
{
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    sock.set_write_timeout(Some(Duration::from_secs(10)))?;
    let conn = ServerConnection::new(config)?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !contains(&buf, b"\r\n\r\n") {
        let n = tls.read(&mut chunk)?;
        if n == 0 {
            bail!("connection closed before the request was complete");
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 64 * 1024 {
            bail!("request header too large");
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split_whitespace();
    let resp = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if v.starts_with("HTTP/1.") => handler(&Request {
            method: m.to_string(),
            target: t.to_string(),
        }),
        _ => Response {
            status: 400,
            content_type: "text/plain; charset=utf-8",
            body: "bad request\n".to_string(),
        },
    };
    if resp.status == Response::SILENT {
        std::thread::sleep(Duration::from_secs(120));
        return Ok(());
    }
    if resp.status == Response::RAW {
        tls.write_all(resp.body.as_bytes())?;
        tls.flush()?;
        return Ok(());
    }
    let out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nX-Content-Type-Options: nosniff\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        resp.status,
        reason(resp.status),
        resp.content_type,
        resp.body.len(),
        resp.body
    );
    tls.write_all(out.as_bytes())?;
    tls.conn.send_close_notify();
    tls.flush()?;
    let _ = tls.sock.shutdown(std::net::Shutdown::Write);
    Ok(())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `GET path` over TLS to 127.0.0.1:`port`, verifying the server for
/// `server_name`. Returns the status code, the body and the server's
/// certificate chain.
pub fn https_get(
    config: Arc<ClientConfig>,
    port: u16,
    server_name: &str,
    path: &str,
    timeout: Duration,
) -> Result<(u16, String, Vec<CertificateDer<'static>>)> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    https_get_at(config, addr, server_name, path, timeout)
}

/// [`https_get`] of `addr` (either family).
pub fn https_get_at(
    config: Arc<ClientConfig>,
    addr: SocketAddr,
    server_name: &str,
    path: &str,
    timeout: Duration,
) -> Result<(u16, String, Vec<CertificateDer<'static>>)> {
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| anyhow!("bad server name {server_name}: {e}"))?;
    let sock =
        TcpStream::connect_timeout(&addr, timeout).with_context(|| format!("dial tcp {addr}"))?;
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    let conn = ClientConnection::new(config, name)?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: nvke-simnode\r\nConnection: close\r\n\r\n"
    );
    tls.write_all(req.as_bytes())
        .context("TLS handshake or write failed")?;
    tls.flush()?;
    let mut out = Vec::new();
    match tls.read_to_end(&mut out) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => {}
        Err(e) => return Err(e).context("TLS read failed"),
    }
    let peer: Vec<CertificateDer<'static>> = tls
        .conn
        .peer_certificates()
        .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .with_context(|| format!("malformed HTTP response from {addr}"))?;
    Ok((status, body.to_string(), peer))
}
