//! A small mutual-TLS HTTP/1.1 client (rustls, ring) for the controller's
//! probes: `/readyz` of every kube-apiserver stand-in and etcd's JSON gateway
//! (`/v3/kv/put`, `/v3/kv/range`) on the real etcd. One request per
//! connection, `Connection: close`; the server is verified against a pinned
//! CA for its IP address (the node certificates carry their node IP).

use anyhow::{anyhow, bail, Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A client identity: the CA the servers must chain to, and the client
/// certificate and key presented to them.
pub fn client_config(ca: &Path, cert: &Path, key: &Path) -> Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).with_context(|| format!("open {}", ca.display()))? {
        roots.add(c.with_context(|| format!("parse {}", ca.display()))?)?;
    }
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("open {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parse {}", cert.display()))?;
    let key =
        PrivateKeyDer::from_pem_file(key).with_context(|| format!("load {}", key.display()))?;
    let cfg = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)?;
    Ok(Arc::new(cfg))
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTPS request to `ip:port`, verifying the server certificate for
/// `ip`. `timeout` bounds the connect and every read and write.
pub fn request(
    cfg: &Arc<ClientConfig>,
    ip: IpAddr,
    port: u16,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    timeout: Duration,
) -> Result<Response> {
    let sock = TcpStream::connect_timeout(&SocketAddr::new(ip, port), timeout)
        .with_context(|| format!("connect {ip}:{port}"))?;
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    let conn = ClientConnection::new(cfg.clone(), ServerName::IpAddress(ip.into()))?;
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let body = body.unwrap_or_default();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {ip}:{port}\r\nUser-Agent: nvke-e2e-controller\r\nAccept: */*\r\nConnection: close\r\n"
    );
    if method != "GET" {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    tls.write_all(&bytes)
        .with_context(|| format!("TLS handshake or write to {ip}:{port}"))?;
    tls.flush()?;
    let mut out = Vec::new();
    match tls.read_to_end(&mut out) {
        Ok(_) => {}
        // Servers that close without close_notify (Go does, sometimes).
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => {}
        Err(e) => return Err(e).with_context(|| format!("read from {ip}:{port}")),
    }
    parse_response(&out).with_context(|| format!("response from {ip}:{port}"))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Status line, headers, and a body that is either length-delimited, chunked,
/// or read to the end of the connection.
fn parse_response(raw: &[u8]) -> Result<Response> {
    let head_end = find(raw, b"\r\n\r\n").ok_or_else(|| anyhow!("no HTTP header"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("malformed status line"))?;
    let mut chunked = false;
    let mut length = None;
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
            if k == "content-length" {
                length = v.parse::<usize>().ok();
            }
        }
    }
    let rest = &raw[head_end + 4..];
    let body = if chunked {
        let mut body = Vec::new();
        let mut at = 0;
        loop {
            let eol = find(&rest[at..], b"\r\n").ok_or_else(|| anyhow!("truncated chunk"))?;
            let size_txt = String::from_utf8_lossy(&rest[at..at + eol]);
            let size = usize::from_str_radix(size_txt.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| anyhow!("bad chunk size {size_txt:?}"))?;
            at += eol + 2;
            if size == 0 {
                break;
            }
            if at + size > rest.len() {
                bail!("truncated chunk body");
            }
            body.extend_from_slice(&rest[at..at + size]);
            at += size + 2;
        }
        body
    } else if let Some(n) = length {
        if rest.len() < n {
            bail!("truncated body ({} of {n} bytes)", rest.len());
        }
        rest[..n].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_and_length_bodies() {
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"abcde"[..]));
        let r = parse_response(b"HTTP/1.1 500 X\r\nContent-Length: 2\r\n\r\nok").unwrap();
        assert_eq!((r.status, r.text().as_str()), (500, "ok"));
    }
}
