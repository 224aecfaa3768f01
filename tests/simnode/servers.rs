//! The processes the kubelet stand-in runs for the etcd and kube-apiserver
//! containers: mutual-TLS servers that load their certificates once, at
//! start, like the real ones.
//!
//! `nvke-simnode etcd --root R --port P [--tls-now UNIX]`
//! `nvke-simnode apiserver --root R --port P --etcd-port E [--tls-now UNIX] [--bind-address IP]`
//!
//! Both keep the default SIGTERM disposition: they exit at once.

use crate::tls::{self, Request, Response};
use anyhow::{bail, Context, Result};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

struct ServerArgs {
    root: PathBuf,
    port: u16,
    etcd_port: u16,
    /// Listen address (default 127.0.0.1; sim.json `apiserverBindAddress`).
    bind: IpAddr,
    /// Verify certificates as of this unix time (sim.json `tlsNow`).
    tls_now: Option<i64>,
}

fn parse_args(args: &[String]) -> Result<ServerArgs> {
    let mut root = None;
    let mut port = None;
    let mut etcd_port = 2379u16;
    let mut tls_now = None;
    let mut bind = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || -> Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .cloned()
                    .with_context(|| format!("{flag} needs a value")),
            }
        };
        match flag {
            "--root" => root = Some(PathBuf::from(value()?)),
            "--port" => port = Some(value()?.parse().context("--port")?),
            "--etcd-port" => etcd_port = value()?.parse().context("--etcd-port")?,
            "--tls-now" => tls_now = Some(value()?.parse().context("--tls-now")?),
            "--bind-address" => bind = value()?.parse().context("--bind-address")?,
            other => bail!("unknown argument {other}"),
        }
    }
    Ok(ServerArgs {
        root: root.context("--root is required")?,
        port: port.context("--port is required")?,
        etcd_port,
        bind,
        tls_now,
    })
}

fn pki(root: &Path, rel: &str) -> PathBuf {
    root.join("etc/kubernetes/pki").join(rel)
}

fn text(status: u16, body: impl Into<String>) -> Response {
    Response {
        status,
        content_type: "text/plain; charset=utf-8",
        body: body.into(),
    }
}

pub fn etcd_main(args: &[String]) -> Result<()> {
    let a = parse_args(args)?;
    let cfg = tls::server_config(
        &pki(&a.root, "etcd/server.crt"),
        &pki(&a.root, "etcd/server.key"),
        &pki(&a.root, "etcd/ca.crt"),
        a.tls_now,
    )?;
    tls::serve("etcd", a.bind, a.port, cfg, |_req: &Request| Response {
        status: 200,
        content_type: "application/json",
        body: "{\"health\":\"true\"}".to_string(),
    })
}

pub fn apiserver_main(args: &[String]) -> Result<()> {
    let a = parse_args(args)?;
    let cfg = tls::server_config(
        &pki(&a.root, "apiserver.crt"),
        &pki(&a.root, "apiserver.key"),
        &pki(&a.root, "ca.crt"),
        a.tls_now,
    )?;
    // Like --etcd-cafile/--etcd-certfile/--etcd-keyfile: read once, at start.
    let etcd_client = tls::client_config(
        &pki(&a.root, "etcd/ca.crt"),
        Some((
            &pki(&a.root, "apiserver-etcd-client.crt"),
            &pki(&a.root, "apiserver-etcd-client.key"),
        )),
        a.tls_now,
    )?;
    let etcd_port = a.etcd_port;
    tls::serve(
        "kube-apiserver",
        a.bind,
        a.port,
        cfg,
        move |req: &Request| {
            if req.method != "GET" && req.method != "HEAD" {
                return text(405, "method not allowed\n");
            }
            let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
            let verbose = query
                .split('&')
                .any(|q| q == "verbose" || q.starts_with("verbose="));
            match path {
                "/readyz" => {
                    let etcd_ok = etcd_healthy(&etcd_client, etcd_port);
                    if etcd_ok {
                        if verbose {
                            text(
                            200,
                            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\nreadyz check passed\n",
                        )
                        } else {
                            text(200, "ok")
                        }
                    } else {
                        eprintln!(
                        "kube-apiserver: readyz: etcd on 127.0.0.1:{etcd_port} is not reachable"
                    );
                        text(
                        500,
                        "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\nreadyz check failed\n",
                    )
                    }
                }
                "/livez" | "/healthz" => text(200, "ok"),
                _ => text(404, "404 page not found\n"),
            }
        },
    )
}

/// A TLS handshake and request to etcd with the apiserver's etcd client
/// certificate, verifying etcd's serving certificate for 127.0.0.1 (then
/// localhost).
fn etcd_healthy(cfg: &std::sync::Arc<rustls::ClientConfig>, port: u16) -> bool {
    ["127.0.0.1", "localhost"].iter().any(|name| {
        matches!(
            tls::https_get(cfg.clone(), port, name, "/health", Duration::from_secs(2)),
            Ok((200, _, _))
        )
    })
}
