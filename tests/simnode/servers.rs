//! The processes the kubelet stand-in runs for the etcd and kube-apiserver
//! containers: mutual-TLS servers that load their certificates once, at
//! start, like the real ones.
//!
//! `nvke-simnode etcd --root R --port P [--peer-address IP:PORT] [--sim DIR] [--tls-now UNIX] [--no-gateway]`
//! `nvke-simnode etcd --root R --listen-client-urls URLS [--advertise-client-urls URLS] [--initial-advertise-peer-urls URLS] [--listen-peer-urls URLS] ...`
//! `nvke-simnode apiserver --root R --port P --etcd-port E [--sim DIR] [--tls-now UNIX] [--bind-address IP]`
//! `nvke-simnode healthz --port P --name NAME [--sim DIR]`
//!
//! etcd re-reads its certificate files at every TLS handshake, as real
//! etcd does (its client and peer ports); kube-apiserver reads its once.
//! etcd serves `/health`, and its JSON gateway's member list (`POST
//! /v3/cluster/member/list`, unless `--no-gateway`: the manifest's
//! `--enable-grpc-gateway=false`) from sim.json `etcd`; the other members
//! it lists answer `/health` on loopback ports of their own, in the family
//! of its (first) client address. With etcd's own `--listen-client-urls`
//! it listens on every one of them, as etcd does (else on `--bind-address`
//! and `--port`); with `--advertise-client-urls` and
//! `--initial-advertise-peer-urls` it lists itself at those URLs (else at
//! etcdctl's emulated `10.0.0.11`).
//! `healthz` is kube-controller-manager's or kube-scheduler's `/healthz`
//! on its `--secure-port`, over TLS with a self-signed certificate and no
//! client certificate asked, as the real ones serve it. With `--sim`, each
//! answers as sim.json `health` says, re-read at every request.
//!
//! All keep the default SIGTERM disposition: they exit at once.

use crate::tls::{self, Request, Response};
use anyhow::{bail, Context, Result};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

struct ServerArgs {
    root: PathBuf,
    port: u16,
    etcd_port: u16,
    /// kube-apiserver: where etcd listens (the etcd pod's loopback client
    /// URL, as the kubelet read it).
    etcd_host: IpAddr,
    /// Listen address (default 127.0.0.1; sim.json `apiserverBindAddress`).
    bind: IpAddr,
    /// Verify certificates as of this unix time (sim.json `tlsNow`).
    tls_now: Option<i64>,
    /// etcd's peer addresses (its `--listen-peer-urls`, or
    /// `--peer-address`), each once.
    peers: Vec<std::net::SocketAddr>,
    /// The simulation directory: sim.json `health`.
    sim: Option<PathBuf>,
    /// `healthz`: which component it stands in for.
    name: String,
    /// kube-apiserver: its `--tls-cert-file` and `--tls-private-key-file`
    /// (node paths; default pki/apiserver.crt and .key).
    cert: Option<(String, String)>,
    /// etcd: `--enable-grpc-gateway=false` in its manifest.
    no_gateway: bool,
    /// etcd: its `--listen-client-urls` (every one listened on).
    listen_client: Vec<std::net::SocketAddr>,
    /// etcd: its `--advertise-client-urls` and
    /// `--initial-advertise-peer-urls`, as its member list gives them.
    advertise_client: Vec<String>,
    advertise_peer: Vec<String>,
}

/// etcd's comma-separated URLs (`--listen-client-urls`, ...), each
/// trimmed of spaces and a trailing `/`.
fn url_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .filter(|u| !u.is_empty())
        .collect()
}

/// Each address once, in order: etcd binds a listen URL's host once and
/// serves every URL naming it there (`embed` `configureClientListeners`:
/// a second URL on the same host:port joins the first one's listener), so
/// kubeadm's `https://127.0.0.1:2379,https://127.0.0.1:2379` (a node
/// advertising a loopback address) is one listener.
fn once_each(v: Vec<std::net::SocketAddr>) -> Vec<std::net::SocketAddr> {
    let mut out = Vec::new();
    for a in v {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// The address of an `https://IP:PORT` or `http://IP:PORT` URL (`[v6]`
/// for IPv6), as etcd reads a URL it listens on.
fn url_address(url: &str) -> Result<std::net::SocketAddr> {
    url.strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("not a URL with an IP address and a port: {url}"))
}

fn parse_args(args: &[String]) -> Result<ServerArgs> {
    let mut root = None;
    let mut port = None;
    let mut etcd_port = 2379u16;
    let mut etcd_host = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut tls_now = None;
    let mut bind = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let (mut peers, mut sim, mut name) = (Vec::new(), None, String::new());
    let mut no_gateway = false;
    let (mut cert, mut key) = (None, None);
    let mut listen_client = Vec::new();
    let (mut advertise_client, mut advertise_peer) = (Vec::new(), Vec::new());
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
            "--etcd-host" => etcd_host = value()?.parse().context("--etcd-host")?,
            "--tls-now" => tls_now = Some(value()?.parse().context("--tls-now")?),
            "--bind-address" => bind = value()?.parse().context("--bind-address")?,
            "--peer-address" => peers = vec![value()?.parse().context("--peer-address")?],
            "--listen-peer-urls" => {
                peers = url_list(&value()?)
                    .iter()
                    .map(|u| url_address(u))
                    .collect::<Result<_>>()
                    .context("--listen-peer-urls")?;
            }
            "--sim" => sim = Some(PathBuf::from(value()?)),
            "--name" => name = value()?,
            "--no-gateway" => no_gateway = true,
            "--tls-cert-file" => cert = Some(value()?),
            "--tls-private-key-file" => key = Some(value()?),
            "--listen-client-urls" => {
                listen_client = url_list(&value()?)
                    .iter()
                    .map(|u| url_address(u))
                    .collect::<Result<_>>()
                    .context("--listen-client-urls")?;
            }
            "--advertise-client-urls" => advertise_client = url_list(&value()?),
            "--initial-advertise-peer-urls" => advertise_peer = url_list(&value()?),
            other => bail!("unknown argument {other}"),
        }
    }
    // etcd given its own client URLs: the first one's port, unless --port.
    let port = port.or_else(|| {
        listen_client
            .first()
            .map(|a: &std::net::SocketAddr| a.port())
    });
    Ok(ServerArgs {
        root: root.unwrap_or_else(|| PathBuf::from("/")),
        port: port.context("--port is required")?,
        etcd_port,
        etcd_host,
        bind,
        tls_now,
        peers: once_each(peers),
        sim,
        name,
        no_gateway,
        cert: cert.zip(key),
        listen_client: once_each(listen_client),
        advertise_client,
        advertise_peer,
    })
}

/// sim.json `health` for `name` (`ok` when unset or unreadable).
fn health_knob(sim: &Option<PathBuf>, name: &str) -> String {
    sim.as_ref()
        .and_then(|d| crate::sim::Sim::new(d.clone()).load_config().ok())
        .and_then(|c| c.health.get(name).cloned())
        .unwrap_or_else(|| "ok".to_string())
}

/// The answers every stand-in gives for the knobs they share.
fn knob_response(knob: &str) -> Option<Response> {
    match knob {
        "slow" => Some(Response {
            status: Response::SILENT,
            content_type: "text/plain",
            body: String::new(),
        }),
        "garbage" => Some(Response {
            status: Response::RAW,
            content_type: "text/plain",
            body: "\u{1b}[31mSSH-2.0-OpenSSH_9.6\r\n".to_string(),
        }),
        "huge" => Some(text(200, "x".repeat(10 * 1024 * 1024))),
        _ => None,
    }
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
    let cfg = tls::reloading_server_config(
        &pki(&a.root, "etcd/server.crt"),
        &pki(&a.root, "etcd/server.key"),
        &pki(&a.root, "etcd/ca.crt"),
        a.tls_now,
    )?;
    for &peer in &a.peers {
        // The peer port: peer.crt, client certificates from the etcd CA
        // (--peer-client-cert-auth), re-read per connection too.
        let peer_cfg = tls::reloading_server_config(
            &pki(&a.root, "etcd/peer.crt"),
            &pki(&a.root, "etcd/peer.key"),
            &pki(&a.root, "etcd/ca.crt"),
            a.tls_now,
        )?;
        // Bound before the client port, as etcd binds its listeners at
        // start: in use for good, the process fails, as etcd does. Not on
        // this machine (a fixture's 10.0.0.11): the client port still
        // serves; the runbook does not ask a peer address that is not the
        // host's.
        match tls::bind_retrying("etcd peer", peer.ip(), peer.port()) {
            Ok(listener) => {
                std::thread::spawn(move || {
                    let r = tls::serve_listener(listener, peer_cfg, |_req: &Request| {
                        text(404, "404 page not found\n")
                    });
                    if let Err(e) = r {
                        eprintln!("etcd: {e:#}");
                    }
                });
            }
            Err(e)
                if e.root_cause()
                    .to_string()
                    .contains("Cannot assign requested address") =>
            {
                eprintln!("etcd: {e:#}");
            }
            Err(e) => return Err(e),
        }
    }
    // The client port before the other members' ports: bound after them,
    // the kernel could hand one of them (a port 0 bind) this very port,
    // freed a moment ago by the container this one replaces, and this
    // member would fail to listen on its own client port (CI saw it).
    // Every client URL (etcd's `--listen-client-urls`), else
    // `--bind-address` and `--port`; one that cannot be bound ends the
    // process, as it ends etcd.
    let addresses = if a.listen_client.is_empty() {
        vec![std::net::SocketAddr::new(a.bind, a.port)]
    } else {
        a.listen_client.clone()
    };
    let clients = addresses
        .iter()
        .map(|c| tls::bind_retrying("etcd", c.ip(), c.port()))
        .collect::<Result<Vec<_>>>()?;
    // The other members (sim.json `etcd`), as this member's JSON gateway
    // lists them: each on its own loopback port, bound now, answering
    // `/health` as its knobs say at each request (gone, or unreachable: the
    // connection closes unanswered). On the loopback of this member's
    // family (an IPv6 node's members are IPv6 too: nothing on 127.0.0.1
    // when its etcd does not listen there). Their certificate is this
    // node's server.crt (127.0.0.1 and ::1 are in it), re-read per
    // handshake.
    let loopback: IpAddr = match addresses[0].ip() {
        IpAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
    };
    let mut others = Vec::new();
    for n in 2..=OTHER_MEMBERS + 1 {
        let listener = std::net::TcpListener::bind((loopback, 0))
            .context("etcd: failed to listen for another member")?;
        others.push((n, listener.local_addr()?));
        let (sim, cfg) = (a.sim.clone(), cfg.clone());
        std::thread::spawn(move || {
            let r = tls::serve_listener(listener, cfg, move |req: &Request| {
                let me = etcd_members(&sim).into_iter().find(|m| m.n == n);
                match me {
                    Some(m) if m.reachable && req.target == "/health" => member_health(m.healthy),
                    Some(m) if m.reachable => text(404, "404 page not found\n"),
                    _ => Response {
                        status: Response::RAW,
                        content_type: "text/plain",
                        body: String::new(),
                    },
                }
            });
            if let Err(e) = r {
                eprintln!("etcd member {n}: {e:#}");
            }
        });
    }
    let sim = a.sim.clone();
    let gateway = !a.no_gateway;
    let advertised = Advertised {
        client: a.advertise_client.clone(),
        peer: a.advertise_peer.clone(),
    };
    let handler = std::sync::Arc::new(move |req: &Request| {
        let knob = health_knob(&sim, "etcd");
        if let Some(r) = knob_response(&knob) {
            return r;
        }
        match (req.method.as_str(), req.target.as_str()) {
            ("POST", "/v3/cluster/member/list") if gateway && etcd_knobs(&sim).gateway => {
                match etcd_knobs(&sim).gateway_answer {
                    Some(body) => Response {
                        status: 200,
                        content_type: "application/json",
                        body,
                    },
                    None => gateway_member_list(&etcd_members(&sim), &others, &advertised),
                }
            }
            (_, "/health") => {
                // This member's health: the knob, or member 1's in sim.json
                // `etcd` (the members etcdctl's emulation reports too).
                let local = etcd_members(&sim).into_iter().find(|m| m.n == 1);
                member_health(knob != "unhealthy" && local.is_none_or(|m| m.healthy))
            }
            // etcd's mux: anything else, and the gateway's paths with
            // --enable-grpc-gateway=false.
            _ => text(404, "404 page not found\n"),
        }
    });
    let mut clients = clients.into_iter();
    let first = clients.next().context("etcd: no client URL")?;
    for (listener, addr) in clients.zip(addresses.iter().skip(1)) {
        let (cfg, handler, addr) = (cfg.clone(), handler.clone(), *addr);
        std::thread::spawn(move || {
            let r = tls::serve_listener(listener, cfg, move |req: &Request| handler(req));
            if let Err(e) = r {
                eprintln!("etcd {addr}: {e:#}");
            }
        });
    }
    for c in &addresses {
        eprintln!("etcd: listening on https://{c}");
    }
    tls::serve_listener(first, cfg, move |req: &Request| handler(req))
}

/// This member's own URLs in its member list (its flags; empty: the
/// emulated ones).
struct Advertised {
    client: Vec<String>,
    peer: Vec<String>,
}

/// How many other members the simulated etcd can stand in for.
const OTHER_MEMBERS: u32 = 6;

/// sim.json `etcd` (the defaults when unset).
fn etcd_knobs(sim: &Option<PathBuf>) -> crate::sim::EtcdKnobs {
    sim.as_ref()
        .and_then(|d| crate::sim::Sim::new(d.clone()).load_config().ok())
        .map(|c| c.etcd)
        .unwrap_or_default()
}

/// sim.json `etcd`'s members (the default single voter when unset).
fn etcd_members(sim: &Option<PathBuf>) -> Vec<crate::etcdctl::Member> {
    crate::etcdctl::members(&etcd_knobs(sim))
}

/// etcd's `/health` (3.4): 200 `{"health":"true"}`, or 503.
fn member_health(healthy: bool) -> Response {
    if healthy {
        Response {
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: "{\"health\":\"true\"}".to_string(),
        }
    } else {
        Response {
            status: 503,
            content_type: "text/plain; charset=utf-8",
            body: "{\"health\":\"false\"}".to_string(),
        }
    }
}

/// The JSON gateway's member list, as etcd 3.4.23 writes it (proto field
/// names, IDs as strings, `isLearner` only when true, no `name` for a
/// member not started yet): this member (1) advertises its
/// `--advertise-client-urls` and `--initial-advertise-peer-urls` (unset: the
/// node's emulated address); the others their loopback ports. Asked of a
/// learner: etcd's 503.
fn gateway_member_list(
    members: &[crate::etcdctl::Member],
    others: &[(u32, std::net::SocketAddr)],
    me: &Advertised,
) -> Response {
    if members.first().is_some_and(|m| m.learner) {
        return Response {
            status: 503,
            content_type: "application/json",
            body: "{\"error\":\"etcdserver: rpc not supported for learner\",\"message\":\"etcdserver: rpc not supported for learner\",\"code\":14}".to_string(),
        };
    }
    let each: Vec<String> = members
        .iter()
        .map(|m| {
            // This member: its advertised URLs, else (like one beyond what
            // the simulation stands in for) etcdctl's emulated addresses.
            let quoted = |urls: &[String]| {
                let q: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
                q.join(",")
            };
            let emulated = (quoted(&[m.client_url()]), quoted(&[m.peer_url()]));
            let (client, peer) = match others.iter().find(|(n, _)| *n == m.n) {
                Some((_, addr)) => (format!("\"https://{addr}\""), emulated.1),
                None if m.n == 1 => (
                    if me.client.is_empty() {
                        emulated.0
                    } else {
                        quoted(&me.client)
                    },
                    if me.peer.is_empty() {
                        emulated.1
                    } else {
                        quoted(&me.peer)
                    },
                ),
                None => emulated,
            };
            let name = m
                .name()
                .map(|n| format!(",\"name\":\"{n}\""))
                .unwrap_or_default();
            let learner = if m.learner { ",\"isLearner\":true" } else { "" };
            format!(
                "{{\"ID\":\"{}\"{name},\"peerURLs\":[{peer}],\"clientURLs\":[{client}]{learner}}}",
                m.id,
            )
        })
        .collect();
    Response {
        status: 200,
        content_type: "application/json",
        body: format!(
            "{{\"header\":{{\"cluster_id\":\"{}\",\"member_id\":\"{}\",\"raft_term\":\"2\"}},\"members\":[{}]}}",
            crate::etcdctl::CLUSTER_ID,
            crate::etcdctl::member_id(1),
            each.join(",")
        ),
    }
}

/// kube-controller-manager's or kube-scheduler's `/healthz`.
pub fn healthz_main(args: &[String]) -> Result<()> {
    let a = parse_args(args)?;
    if health_knob(&a.sim, &a.name) == "closed" {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let cfg = tls::plain_server_config(
        include_bytes!("../../fixtures/pki-extra/selfsigned-healthz.crt"),
        include_bytes!("../../fixtures/pki-extra/selfsigned-healthz.key"),
    )?;
    let (sim, name) = (a.sim.clone(), a.name.clone());
    let label = a.name.clone();
    tls::serve(&label, a.bind, a.port, cfg, move |req: &Request| {
        let knob = health_knob(&sim, &name);
        if let Some(r) = knob_response(&knob) {
            return r;
        }
        match req.target.split('?').next().unwrap_or("") {
            "/healthz" | "/livez" | "/readyz" if knob == "unhealthy" => text(
                500,
                "[+]ping ok\n[-]leaderElection failed: reason withheld\nhealthz check failed\n",
            ),
            "/healthz" | "/livez" | "/readyz" => text(200, "ok"),
            _ => text(404, "404 page not found\n"),
        }
    })
}

pub fn apiserver_main(args: &[String]) -> Result<()> {
    let a = parse_args(args)?;
    // The serving files the manifest's flags name, else kubeadm's.
    let (crt, key) = match &a.cert {
        Some((c, k)) => (
            a.root.join(c.trim_start_matches('/')),
            a.root.join(k.trim_start_matches('/')),
        ),
        None => (pki(&a.root, "apiserver.crt"), pki(&a.root, "apiserver.key")),
    };
    let cfg = tls::server_config(&crt, &key, &pki(&a.root, "ca.crt"), a.tls_now)?;
    // Like --etcd-cafile/--etcd-certfile/--etcd-keyfile: read once, at start.
    let etcd_client = tls::client_config(
        &pki(&a.root, "etcd/ca.crt"),
        Some((
            &pki(&a.root, "apiserver-etcd-client.crt"),
            &pki(&a.root, "apiserver-etcd-client.key"),
        )),
        a.tls_now,
    )?;
    let etcd = std::net::SocketAddr::new(a.etcd_host, a.etcd_port);
    let sim = a.sim.clone();
    tls::serve(
        "kube-apiserver",
        a.bind,
        a.port,
        cfg,
        move |req: &Request| {
            let knob = health_knob(&sim, "kube-apiserver");
            if let Some(r) = knob_response(&knob) {
                return r;
            }
            if knob == "unhealthy" {
                return text(
                    500,
                    "[+]ping ok\n[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\nreadyz check failed\n",
                );
            }
            if req.method != "GET" && req.method != "HEAD" {
                return text(405, "method not allowed\n");
            }
            let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
            let verbose = query
                .split('&')
                .any(|q| q == "verbose" || q.starts_with("verbose="));
            match path {
                "/readyz" => {
                    let etcd_ok = etcd_healthy(&etcd_client, etcd);
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
                        eprintln!("kube-apiserver: readyz: etcd on {etcd} is not reachable");
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
/// certificate, verifying etcd's serving certificate for the address asked
/// (then localhost).
fn etcd_healthy(cfg: &std::sync::Arc<rustls::ClientConfig>, etcd: std::net::SocketAddr) -> bool {
    let ip = etcd.ip().to_string();
    [ip.as_str(), "localhost"].iter().any(|name| {
        matches!(
            tls::https_get_at(cfg.clone(), etcd, name, "/health", Duration::from_secs(2)),
            Ok((200, _, _))
        )
    })
}
