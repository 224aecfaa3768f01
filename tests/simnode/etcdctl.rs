//! etcdctl 3.5, as run by `crictl exec <etcd container> etcdctl ...`:
//! `endpoint health [--cluster]` and `member list`, with `-w json|simple|table`.
//!
//! The TLS flags name paths as the container sees them; they are mapped
//! through the container's volume mounts (hostPath volumes of the manifest)
//! under the simulation root and must exist. Every command first connects to
//! the local etcd stand-in with them (mutual TLS, server verified for the
//! endpoint's host), as the real etcdctl would; the rest of the cluster is
//! made up from sim.json's `etcd` knobs.

use crate::sim::{self, EtcdKnobs};
use crate::state::Container;
use crate::tls;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const CLUSTER_ID: u64 = 14841639068965178418;
const MEMBER_ID_BASE: u64 = 10276657743932975437;

/// Member N's ID (N >= 1): above 2^53 and odd, so a float parse changes it.
pub fn member_id(n: u32) -> u64 {
    MEMBER_ID_BASE.wrapping_sub(u64::from(n - 1) * 1_234_567_890_123_458)
}

pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Output {
    fn fail(msg: impl Into<String>) -> Output {
        let mut stderr = msg.into();
        if !stderr.ends_with('\n') {
            stderr.push('\n');
        }
        Output {
            stdout: String::new(),
            stderr,
            code: 1,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Member {
    pub n: u32,
    pub id: u64,
    pub learner: bool,
    pub healthy: bool,
    /// Does not answer at all (sim.json `etcd.unreachable`).
    pub reachable: bool,
}

impl Member {
    fn ip(&self) -> String {
        format!("10.0.0.1{}", self.n)
    }
    pub fn client_url(&self) -> String {
        format!("https://{}:2379", self.ip())
    }
    pub fn peer_url(&self) -> String {
        format!("https://{}:2380", self.ip())
    }
    pub fn name(&self) -> Option<String> {
        (!self.learner).then(|| format!("cp-{}", self.n))
    }
}

/// The members: this node is member 1 (first in the list); `voters` voters
/// and `learners` learners in all (with `selfIsLearner`, member 1 is one of
/// the learners, at least one); the last `unhealthy` members are unhealthy,
/// the last `unreachable` ones do not answer.
pub fn members(k: &EtcdKnobs) -> Vec<Member> {
    let mut kinds: Vec<bool> = Vec::new(); // learner?
    if k.self_is_learner {
        kinds.push(true);
        kinds.extend(std::iter::repeat_n(false, k.voters as usize));
        kinds.extend(std::iter::repeat_n(
            true,
            k.learners.saturating_sub(1) as usize,
        ));
    } else {
        kinds.extend(std::iter::repeat_n(false, k.voters as usize));
        kinds.extend(std::iter::repeat_n(true, k.learners as usize));
    }
    let total = kinds.len();
    let unhealthy = (k.unhealthy as usize).min(total);
    let unreachable = (k.unreachable as usize).min(total);
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, learner)| Member {
            n: i as u32 + 1,
            id: member_id(i as u32 + 1),
            learner,
            healthy: i < total - unhealthy,
            reachable: i < total - unreachable,
        })
        .collect()
}

#[derive(Default)]
struct Flags {
    endpoints: Option<String>,
    cacert: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    dial_timeout: Duration,
    command_timeout: Duration,
    write_out: String,
    cluster: bool,
    hex: bool,
    positional: Vec<String>,
}

/// Go's time.ParseDuration for the common forms: `5s`, `500ms`, `1m30s`, `2.5s`.
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(Duration::ZERO);
    }
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += n * mult;
        rest = &rest[unit_end..];
    }
    Some(Duration::from_secs_f64(total))
}

/// Go's `Duration.String()`: `812ns`, `1.2µs`, `1.234567ms`,
/// `5.000925637s`, `1m30.5s`.
fn go_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    let frac = |v: u128, digits: u32| {
        let unit = 10u128.pow(digits);
        let f = format!("{:0w$}", v % unit, w = digits as usize);
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            format!("{}", v / unit)
        } else {
            format!("{}.{f}", v / unit)
        }
    };
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{}µs", frac(ns, 3))
    } else if ns < 1_000_000_000 {
        format!("{}ms", frac(ns, 6))
    } else {
        let secs = ns / 1_000_000_000;
        let sub = ns % 1_000_000_000;
        let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
        let s = frac(s * 1_000_000_000 + sub, 9);
        match (h, m) {
            (0, 0) => format!("{s}s"),
            (0, m) => format!("{m}m{s}s"),
            (h, m) => format!("{h}h{m}m{s}s"),
        }
    }
}

fn parse_flags(args: &[String]) -> Result<Flags, String> {
    let mut f = Flags {
        dial_timeout: Duration::from_secs(2),
        command_timeout: Duration::from_secs(5),
        write_out: "simple".to_string(),
        ..Flags::default()
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            f.positional.extend(it.by_ref().cloned());
            break;
        }
        if !a.starts_with('-') || a == "-" {
            f.positional.push(a.clone());
            continue;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let mut value = || -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("Error: flag needs an argument: {name}")),
            }
        };
        let boolean = |inline: &Option<String>| -> Result<bool, String> {
            match inline.as_deref() {
                None | Some("true") | Some("1") => Ok(true),
                Some("false") | Some("0") => Ok(false),
                Some(v) => Err(format!("Error: invalid argument {v:?} for {name} flag")),
            }
        };
        match name.as_str() {
            "--endpoints" => f.endpoints = Some(value()?),
            "--cacert" => f.cacert = Some(value()?),
            "--cert" => f.cert = Some(value()?),
            "--key" => f.key = Some(value()?),
            "--dial-timeout" => {
                let v = value()?;
                f.dial_timeout = parse_go_duration(&v)
                    .ok_or_else(|| format!("Error: invalid argument {v:?} for \"--dial-timeout\" flag: time: invalid duration {v:?}"))?;
            }
            "--command-timeout" | "--keepalive-time" | "--keepalive-timeout" => {
                let v = value()?;
                let d = parse_go_duration(&v).ok_or_else(|| {
                    format!("Error: invalid argument {v:?} for \"{name}\" flag: time: invalid duration {v:?}")
                })?;
                if name == "--command-timeout" {
                    f.command_timeout = d;
                }
            }
            "-w" | "--write-out" => f.write_out = value()?,
            "--user" | "--password" | "--discovery-srv" | "--discovery-srv-name" => {
                value()?;
            }
            "--cluster" => f.cluster = boolean(&inline)?,
            "--hex" => f.hex = boolean(&inline)?,
            "--insecure-skip-tls-verify"
            | "--insecure-transport"
            | "--insecure-discovery"
            | "--debug" => {
                boolean(&inline)?;
            }
            _ => return Err(format!("Error: unknown flag: {name}")),
        }
    }
    Ok(f)
}

/// Maps a path inside the container to the node: through the container's
/// mounts (longest match), or as is when the manifest has no mounts.
fn container_path(root: &Path, ctr: &Container, path: &str) -> Option<PathBuf> {
    if !path.starts_with('/') {
        return None;
    }
    if ctr.mounts.is_empty() {
        return Some(sim::under_root(root, path));
    }
    let m = ctr
        .mounts
        .iter()
        .filter(|m| {
            let mp = m.container_path.trim_end_matches('/');
            path == mp || path.starts_with(&format!("{mp}/"))
        })
        .max_by_key(|m| m.container_path.len())?;
    let rest = &path[m.container_path.trim_end_matches('/').len()..];
    Some(sim::under_root(
        root,
        &format!("{}{rest}", m.host_path.trim_end_matches('/')),
    ))
}

struct Probe {
    ok: Result<(), String>,
    took: Duration,
}

/// The TLS files of `--cacert`, `--cert`, `--key` on the node; a file the
/// container cannot see is an error, as for etcdctl (before connecting).
fn tls_files(root: &Path, ctr: &Container, f: &Flags) -> Result<[Option<PathBuf>; 3], String> {
    let mut files: [Option<PathBuf>; 3] = [None, None, None];
    for (i, v) in [&f.cacert, &f.cert, &f.key].into_iter().enumerate() {
        if let Some(p) = v {
            match container_path(root, ctr, p) {
                Some(host_path) if host_path.is_file() => files[i] = Some(host_path),
                _ => return Err(format!("Error: open {p}: no such file or directory")),
            }
        }
    }
    Ok(files)
}

/// Connects to the local etcd stand-in with the given TLS material.
fn probe(
    ctr: &Container,
    f: &Flags,
    files: &[Option<PathBuf>; 3],
    host: &str,
    tls_now: Option<i64>,
) -> Probe {
    let start = Instant::now();
    let ok = (|| -> Result<(), String> {
        let (Some(ca), cert, key) = (files[0].clone(), files[1].clone(), files[2].clone()) else {
            return Err("x509: certificate signed by unknown authority (no --cacert)".into());
        };
        let client = match (&cert, &key) {
            (Some(c), Some(k)) => Some((c.as_path(), k.as_path())),
            (None, None) => None,
            _ => return Err("KeyFile and CertFile must both be present[key: , cert: ]".into()),
        };
        let cfg = tls::client_config(&ca, client, tls_now).map_err(|e| format!("{e:#}"))?;
        let port = ctr.port.ok_or("etcd container has no port")?;
        // A container is RUNNING as soon as its process starts, before it
        // listens: etcd's client keeps redialling (gRPC's reconnect
        // back-off: 1 s, times 1.6) until the call's --command-timeout, so
        // an etcd that comes up within it answers, one that does not costs
        // the whole timeout (measured with etcdctl 3.4.23).
        let deadline = start + f.command_timeout;
        let mut backoff = Duration::from_secs(1);
        let addr = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
        while std::net::TcpStream::connect_timeout(&addr, f.dial_timeout).is_err() {
            let now = Instant::now();
            if now >= deadline {
                return Err("context deadline exceeded".into());
            }
            std::thread::sleep(backoff.min(deadline - now));
            backoff = backoff.mul_f64(1.6).min(Duration::from_secs(120));
        }
        match tls::https_get(cfg, port, host, "/health", f.dial_timeout) {
            Ok((200, _, _)) => Ok(()),
            Ok((code, _, _)) => Err(format!("unexpected status {code}")),
            Err(e) => Err(format!("context deadline exceeded ({e:#})")),
        }
    })();
    Probe {
        ok,
        took: start.elapsed(),
    }
}

/// sim.json `realEtcdctl` (e2e): runs the real etcdctl (`ETCDCTL_API=3`,
/// clean environment) with `args`, after mapping the TLS file flags
/// (`--cacert`, `--cert`, `--key`) through the container's mounts exactly as
/// the emulation does (a file the container cannot see fails the same way).
/// Everything else, output formats and exit codes included, is etcdctl's own.
pub fn run_real(program: &str, root: &Path, ctr: &Container, args: &[String]) -> Output {
    let mut mapped = Vec::with_capacity(args.len());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if !["--cacert", "--cert", "--key"].contains(&name) {
            mapped.push(a.clone());
            continue;
        }
        let Some(path) = inline.or_else(|| it.next().cloned()) else {
            return Output::fail(format!("Error: flag needs an argument: {name}"));
        };
        match container_path(root, ctr, &path) {
            Some(host) if host.is_file() => mapped.push(format!("{name}={}", host.display())),
            _ => return Output::fail(format!("Error: open {path}: no such file or directory")),
        }
    }
    match std::process::Command::new(program)
        .args(&mapped)
        .env_clear()
        .env("ETCDCTL_API", "3")
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) => Output {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(1),
        },
        Err(e) => Output::fail(format!(
            "OCI runtime exec failed: exec: {program:?}: {e} (sim.json realEtcdctl)"
        )),
    }
}

/// `scheme://host:port` split as etcdctl reads an endpoint (no scheme:
/// TLS when TLS flags are given).
fn split_endpoint(ep: &str) -> (Option<&str>, String, Option<u16>) {
    let (scheme, rest) = match ep.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, ep),
    };
    let hostport = rest.split('/').next().unwrap_or(rest);
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') => (h, p.parse().ok()),
        _ => (hostport, None),
    };
    (
        scheme,
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    )
}

/// What an endpoint reaches.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    /// The etcd stand-in of this container, really connected to (over
    /// 127.0.0.1), verified for `host`.
    Local { host: String },
    /// A member of the (simulated) cluster, by its client URL.
    Member(usize),
    /// Nobody answers there.
    Nowhere,
}

/// Only what the node's etcd really serves answers: its own port on
/// loopback (`127.0.0.1`, `localhost`), or a member's client URL
/// (`https://10.0.0.1N:2379`; member 1 is this container's etcd). A plain
/// `http://` URL to the TLS port never gets an answer either.
fn target(ctr: &Container, members: &[Member], ep: &str) -> Target {
    let (scheme, host, port) = split_endpoint(ep);
    if scheme.is_some_and(|s| s != "https") {
        return Target::Nowhere;
    }
    let Some(port) = port else {
        return Target::Nowhere;
    };
    if let Some(i) = members.iter().position(|m| {
        let (_, h, p) = split_endpoint(&m.client_url());
        h == host && p == Some(port)
    }) {
        return if i == 0 {
            Target::Local { host }
        } else {
            Target::Member(i)
        };
    }
    if ["127.0.0.1", "localhost"].contains(&host.as_str()) && ctr.port == Some(port) {
        return Target::Local { host };
    }
    Target::Nowhere
}

/// The zap warning etcd's client logs when a call ran into its deadline
/// (client/v3 retry_interceptor.go), one JSON line on stderr.
fn deadline_warning(logger: &str, ep: &str) -> String {
    let (_, host, port) = split_endpoint(ep);
    let port = port.unwrap_or(2379);
    let why = if host == "127.0.0.1" || host == "localhost" {
        "connect: connection refused"
    } else {
        "connect: no route to host"
    };
    let error = format!(
        "rpc error: code = DeadlineExceeded desc = latest balancer error: last connection error: connection error: desc = \"transport: Error while dialing: dial tcp {host}:{port}: {why}\""
    );
    let now = time::OffsetDateTime::now_utc();
    let ts = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.microsecond()
    );
    let q = |v: &str| serde_json::to_string(v).expect("json string");
    format!(
        "{{\"level\":\"warn\",\"ts\":{},\"logger\":{},\"caller\":\"v3@v3.5.15/retry_interceptor.go:62\",\"msg\":\"retrying of unary invoker failed\",\"target\":{},\"attempt\":0,\"error\":{}}}\n",
        q(&ts),
        q(logger),
        q(&format!("etcd-endpoints://0xc0001a4000/{host}:{port}")),
        q(&error)
    )
}

/// What etcdctl 3.4 does when the member it asks is a learner: etcd
/// answers MemberList (and the list under `endpoint health --cluster`)
/// with `Unavailable: etcdserver: rpc not supported for learner`; the
/// client's retry interceptor tries again about every 27 ms, 100 attempts
/// (measured against Debian's etcd 3.4.23: 2.7 s, exit 1), then prints the
/// error. Nothing on stdout.
fn learner_refusal(ep: &str, command_timeout: Duration) -> Output {
    const PAUSE: Duration = Duration::from_millis(27);
    let attempts = (command_timeout.as_millis() / PAUSE.as_millis()).clamp(1, 100) as u32;
    std::thread::sleep(PAUSE * attempts);
    let (_, host, port) = split_endpoint(ep);
    let port = port.unwrap_or(2379);
    let mut stderr = String::new();
    for n in 0..attempts {
        let _ = writeln!(
            stderr,
            "{{\"level\":\"warn\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"caller\":\"clientv3/retry_interceptor.go:62\",\"msg\":\"retrying of unary invoker failed\",\"target\":\"endpoint://client-sim/{host}:{port}\",\"attempt\":{n},\"error\":\"rpc error: code = Unavailable desc = etcdserver: rpc not supported for learner\"}}"
        );
    }
    if attempts < 100 {
        stderr.push_str("Error: context deadline exceeded\n");
    } else {
        stderr.push_str("Error: etcdserver: rpc not supported for learner\n");
    }
    Output {
        stdout: String::new(),
        stderr,
        code: 1,
    }
}

/// One endpoint's health, as etcdctl's `epHealth`.
struct Health {
    ep: String,
    ok: bool,
    took: Duration,
    error: Option<String>,
    /// Finished only at the command timeout (never answered).
    slow: bool,
}

pub fn run(
    root: &Path,
    ctr: &Container,
    knobs: &EtcdKnobs,
    tls_now: Option<i64>,
    args: &[String],
) -> Output {
    let f = match parse_flags(args) {
        Ok(f) => f,
        Err(e) => return Output::fail(e),
    };
    if !["json", "simple", "table", "fields", "protobuf"].contains(&f.write_out.as_str()) {
        // etcdctl's ExitBadFeature (4), before it dials anything.
        return Output {
            code: 4,
            ..Output::fail("Error: unsupported output format")
        };
    }
    if !["json", "simple", "table"].contains(&f.write_out.as_str()) {
        return Output::fail(format!(
            "Error: unsupported output format {:?} (simnode etcdctl: json, simple, table)",
            f.write_out
        ));
    }
    let endpoints: Vec<String> = f
        .endpoints
        .as_deref()
        .unwrap_or("127.0.0.1:2379")
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let cmd: Vec<&str> = f.positional.iter().map(String::as_str).collect();
    let members = members(knobs);
    let files = match tls_files(root, ctr, &f) {
        Ok(files) => files,
        Err(e) => return Output::fail(e),
    };
    let start = Instant::now();
    // Waits out the command timeout (from `start`), as etcdctl does when
    // an endpoint never answers.
    let wait_deadline = || {
        let left = f.command_timeout.saturating_sub(start.elapsed());
        std::thread::sleep(left);
    };
    // The check of one endpoint (`cli.Get(ctx, "health")`).
    let check = |ep: &str| -> Health {
        let t0 = Instant::now();
        let fast = |ok: bool, took: Duration, error: Option<String>| Health {
            ep: ep.to_string(),
            ok,
            took,
            error,
            slow: false,
        };
        match target(ctr, &members, ep) {
            Target::Local { .. } if !members[0].reachable => slow(ep),
            Target::Local { host } => {
                let p = probe(ctr, &f, &files, &host, tls_now);
                match p.ok {
                    Err(e) => fast(false, p.took, Some(e)),
                    Ok(()) if !members[0].healthy => {
                        fast(false, p.took, Some("context deadline exceeded".into()))
                    }
                    Ok(()) => fast(true, p.took, None),
                }
            }
            Target::Member(i) if !members[i].reachable => slow(ep),
            Target::Member(i) if members[i].healthy => fast(
                true,
                Duration::from_micros(1_800 + 317 * u64::from(members[i].n)),
                None,
            ),
            Target::Member(_) => fast(
                false,
                f.dial_timeout.max(Duration::from_secs(5)) + t0.elapsed(),
                Some("context deadline exceeded".into()),
            ),
            Target::Nowhere => slow(ep),
        }
    };
    // Lists the members through the given endpoints (the first that
    // answers); Err: what etcdctl prints, after waiting when none answers.
    let member_list = |logger: &str| -> Result<(), Output> {
        let mut slow_eps = Vec::new();
        for ep in &endpoints {
            match target(ctr, &members, ep) {
                Target::Local { .. } if !members[0].reachable => slow_eps.push(ep),
                Target::Local { host } => {
                    let p = probe(ctr, &f, &files, &host, tls_now);
                    p.ok.map_err(|e| Output::fail(format!("Error: {e}")))?;
                    if knobs.self_is_learner {
                        return Err(learner_refusal(ep, f.command_timeout));
                    }
                    return Ok(());
                }
                Target::Member(i) if members[i].reachable => return Ok(()),
                _ => slow_eps.push(ep),
            }
        }
        wait_deadline();
        Err(Output {
            stdout: String::new(),
            stderr: slow_eps
                .iter()
                .map(|ep| deadline_warning(logger, ep))
                .collect(),
            code: 1,
        })
    };
    match cmd.as_slice() {
        ["endpoint", "health"] => {
            let eps: Vec<String> = if f.cluster {
                // etcdctl lists the members first, then checks each client URL.
                if let Err(mut out) = member_list("etcd-client") {
                    // etcdctl wraps the member list's error (its last line).
                    let at = out.stderr.rfind("Error: ");
                    match at {
                        Some(i) if i == 0 || out.stderr[..i].ends_with('\n') => {
                            out.stderr.insert_str(
                                i + "Error: ".len(),
                                "failed to fetch endpoints from etcd cluster member list: ",
                            );
                        }
                        _ => out.stderr.push_str("Error: failed to fetch endpoints from etcd cluster member list: context deadline exceeded\n"),
                    }
                    return out;
                }
                members.iter().map(Member::client_url).collect()
            } else {
                endpoints.clone()
            };
            // Concurrent checks: etcdctl waits for the slowest and prints
            // the results as they completed.
            let mut results: Vec<Health> = eps.iter().map(|ep| check(ep)).collect();
            let mut stderr = String::new();
            if results.iter().any(|h| h.slow) {
                wait_deadline();
                for h in results.iter_mut().filter(|h| h.slow) {
                    h.took = start.elapsed();
                    stderr.push_str(&deadline_warning("client", &h.ep));
                }
            }
            results.sort_by_key(|h| (h.slow, h.took));
            let mut out = String::new();
            if f.write_out == "json" {
                // etcdctl's field order: endpoint, health, took, error.
                let q = |v: &str| serde_json::to_string(v).expect("json string");
                let items: Vec<String> = results
                    .iter()
                    .map(|h| {
                        let mut o = format!(
                            "{{\"endpoint\":{},\"health\":{},\"took\":{}",
                            q(&h.ep),
                            h.ok,
                            q(&go_duration(h.took))
                        );
                        if let Some(e) = &h.error {
                            let _ = write!(o, ",\"error\":{}", q(e));
                        }
                        o.push('}');
                        o
                    })
                    .collect();
                out.push('[');
                out.push_str(&items.join(","));
                out.push(']');
                out.push('\n');
            } else {
                // The simple printer: healthy lines on stdout, unhealthy
                // ones on stderr.
                for h in &results {
                    if h.ok {
                        let _ = writeln!(
                            out,
                            "{} is healthy: successfully committed proposal: took = {}",
                            h.ep,
                            go_duration(h.took)
                        );
                    } else {
                        let _ = writeln!(
                            stderr,
                            "{} is unhealthy: failed to commit proposal: {}",
                            h.ep,
                            h.error.as_deref().unwrap_or("")
                        );
                    }
                }
            }
            let all_ok = results.iter().all(|h| h.ok);
            if !all_ok {
                stderr.push_str("Error: unhealthy cluster\n");
            }
            Output {
                stdout: out,
                stderr,
                code: if all_ok { 0 } else { 1 },
            }
        }
        ["member", "list"] => {
            if let Err(mut out) = member_list("etcd-client") {
                if !out.stderr.contains("Error: ") {
                    out.stderr.push_str("Error: context deadline exceeded\n");
                }
                return out;
            }
            let out = if f.write_out == "json" {
                member_list_json(&members, f.hex)
            } else {
                let mut s = String::new();
                for m in &members {
                    let _ = writeln!(
                        s,
                        "{:x}, {}, {}, {}, {}, {}",
                        m.id,
                        if m.learner { "unstarted" } else { "started" },
                        m.name().unwrap_or_default(),
                        m.peer_url(),
                        m.client_url(),
                        m.learner
                    );
                }
                s
            };
            Output {
                stdout: out,
                stderr: String::new(),
                code: 0,
            }
        }
        _ => Output::fail(format!(
            "unsupported etcdctl command: {} (nvke-simnode emulates endpoint health [--cluster] and member list)",
            cmd.join(" ")
        )),
    }
}

/// An endpoint that never answers: its result once the timeout is over.
fn slow(ep: &str) -> Health {
    Health {
        ep: ep.to_string(),
        ok: false,
        took: Duration::ZERO,
        error: Some("context deadline exceeded".to_string()),
        slow: true,
    }
}

/// etcdctl's JSON printer: one line, u64 IDs as JSON numbers (or hex
/// strings with --hex), omitempty fields omitted (`isLearner` for voters,
/// `name` for learners).
fn member_list_json(members: &[Member], hex: bool) -> String {
    let id = |v: u64| {
        if hex {
            format!("\"{v:x}\"")
        } else {
            v.to_string()
        }
    };
    let mut s = format!(
        "{{\"header\":{{\"cluster_id\":{},\"member_id\":{},\"raft_term\":2}},\"members\":[",
        id(CLUSTER_ID),
        id(member_id(1))
    );
    for (i, m) in members.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{{\"ID\":{}", id(m.id));
        if let Some(name) = m.name() {
            let _ = write!(s, ",\"name\":\"{name}\"");
        }
        let _ = write!(
            s,
            ",\"peerURLs\":[\"{}\"],\"clientURLs\":[\"{}\"]",
            m.peer_url(),
            m.client_url()
        );
        if m.learner {
            s.push_str(",\"isLearner\":true");
        }
        s.push('}');
    }
    s.push_str("]}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_ids_do_not_survive_f64() {
        for n in 1..10 {
            let id = member_id(n);
            assert!(id > 1u64 << 53);
            assert_ne!(id as f64 as u64, id, "member {n}");
        }
    }

    #[test]
    fn member_list_is_valid_json_with_u64_ids() {
        let k = EtcdKnobs {
            voters: 3,
            learners: 1,
            ..EtcdKnobs::default()
        };
        let out = member_list_json(&members(&k), false);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["header"]["member_id"].as_u64(), Some(member_id(1)));
        let ms = v["members"].as_array().unwrap();
        assert_eq!(ms.len(), 4);
        assert!(ms[0].get("isLearner").is_none());
        assert_eq!(ms[3]["isLearner"], true);
        assert!(ms[3].get("name").is_none());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_go_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("5"), None);
        assert_eq!(go_duration(Duration::from_micros(1_200)), "1.2ms");
        assert_eq!(go_duration(Duration::from_secs(5)), "5s");
    }
}
