//! Continuous traffic during a cycle, from the lab namespace, timestamped on
//! one clock (milliseconds since the traffic started):
//!
//! - **etcd writes**: one writer puts `nvke-e2e/<run>/<seq>` every
//!   [`WRITE_EVERY`] through etcd's JSON gateway (`POST /v3/kv/put`, mutual
//!   TLS with the controller's etcd client certificate) on the node the
//!   controller names (one not being renewed). A write is retried, as an
//!   etcd client does, on transient errors (no leader, leader changed,
//!   connection refused) until it is committed or [`WRITE_DEADLINE`] passes:
//!   then it **failed**. Every committed key is read back at the end.
//! - **`/readyz` probes**: one prober per node, every [`PROBE_EVERY`], against
//!   the node's kube-apiserver on `<node ip>:6443` (verified against the
//!   cluster CA for the node IP, with the controller's client certificate).

use crate::lab::{enter_netns_thread, Lab};
use crate::tlsclient;
use base64::Engine as _;
use serde::Serialize;
use serde_json::{json, Value};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const WRITE_EVERY: Duration = Duration::from_millis(100);
pub const WRITE_DEADLINE: Duration = Duration::from_secs(5);
const WRITE_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
const WRITE_RETRY_PAUSE: Duration = Duration::from_millis(50);
/// A bound on the loop, whatever happens to the stop flag.
const MAX_WRITES: u64 = 20_000;
pub const PROBE_EVERY: Duration = Duration::from_millis(100);
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteRec {
    pub seq: u64,
    pub key: String,
    pub start_ms: u64,
    pub end_ms: u64,
    pub ok: bool,
    pub attempts: u32,
    /// Node names the attempts went to.
    pub via: Vec<String>,
    /// Errors of the failed attempts (empty for a first-try success).
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeRec {
    pub node: String,
    pub t_ms: u64,
    pub ok: bool,
    pub status: Option<u16>,
    pub latency_ms: u64,
    pub error: Option<String>,
}

pub struct Traffic {
    t0: Instant,
    /// Unix nanoseconds at the traffic clock's zero.
    pub wall0_ns: i128,
    stop: Arc<AtomicBool>,
    target: Arc<AtomicUsize>,
    pub prefix: String,
    writer: Option<JoinHandle<Vec<WriteRec>>>,
    probers: Vec<JoinHandle<Vec<ProbeRec>>>,
    netns: PathBuf,
    etcd_cfg: Arc<rustls::ClientConfig>,
    nodes: Vec<(String, IpAddr)>,
}

pub struct TrafficLog {
    pub writes: Vec<WriteRec>,
    pub probes: Vec<ProbeRec>,
    /// Keys found under the prefix when reading back at the end.
    pub read_back: Result<Vec<String>, String>,
}

fn ms_since(t0: Instant) -> u64 {
    t0.elapsed().as_millis() as u64
}

fn b64(s: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// One put through etcd's gateway; Ok when etcd answered 200 with a header.
fn put(cfg: &Arc<rustls::ClientConfig>, ip: IpAddr, key: &str, value: &str) -> Result<(), String> {
    let body = json!({ "key": b64(key.as_bytes()), "value": b64(value.as_bytes()) }).to_string();
    let r = tlsclient::request(
        cfg,
        ip,
        2379,
        "POST",
        "/v3/kv/put",
        Some(body.as_bytes()),
        WRITE_ATTEMPT_TIMEOUT,
    )
    .map_err(|e| format!("{e:#}"))?;
    let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    if r.status == 200 && v.get("header").is_some() {
        Ok(())
    } else {
        Err(format!(
            "HTTP {}: {}",
            r.status,
            r.text().chars().take(200).collect::<String>()
        ))
    }
}

impl Traffic {
    pub fn start(lab: &Lab, run: &str) -> Traffic {
        let p = &lab.ctl_pki;
        let etcd_cfg = tlsclient::client_config(&p.etcd_ca, &p.etcd_cert, &p.etcd_key)
            .expect("controller etcd client identity");
        let api_cfg = tlsclient::client_config(&p.ca, &p.api_cert, &p.api_key)
            .expect("controller apiserver client identity");
        let nodes: Vec<(String, IpAddr)> = lab
            .nodes
            .iter()
            .map(|n| (n.name().to_string(), n.ip().parse().unwrap()))
            .collect();
        let t0 = Instant::now();
        let wall0_ns = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        let stop = Arc::new(AtomicBool::new(false));
        let target = Arc::new(AtomicUsize::new(0));
        let prefix = format!("nvke-e2e/{run}/");
        let netns = lab.lab_netns_path();
        let writer = {
            let (stop, target, cfg, nodes, prefix, netns) = (
                stop.clone(),
                target.clone(),
                etcd_cfg.clone(),
                nodes.clone(),
                prefix.clone(),
                netns.clone(),
            );
            std::thread::spawn(move || {
                enter_netns_thread(&netns).expect("enter the lab netns");
                let mut out = Vec::new();
                let mut seq = 0u64;
                while !stop.load(Ordering::SeqCst) && seq < MAX_WRITES {
                    let slot = Instant::now();
                    let key = format!("{prefix}{seq:08}");
                    let start = Instant::now();
                    let mut rec = WriteRec {
                        seq,
                        key: key.clone(),
                        start_ms: ms_since(t0),
                        end_ms: 0,
                        ok: false,
                        attempts: 0,
                        via: Vec::new(),
                        errors: Vec::new(),
                    };
                    loop {
                        let (name, ip) = &nodes[target.load(Ordering::SeqCst) % nodes.len()];
                        rec.attempts += 1;
                        rec.via.push(name.clone());
                        match put(&cfg, *ip, &key, &rec.start_ms.to_string()) {
                            Ok(()) => {
                                rec.ok = true;
                                break;
                            }
                            Err(e) => rec.errors.push(format!("{name}: {e}")),
                        }
                        if start.elapsed() + WRITE_RETRY_PAUSE >= WRITE_DEADLINE {
                            break;
                        }
                        std::thread::sleep(WRITE_RETRY_PAUSE);
                    }
                    rec.end_ms = ms_since(t0);
                    out.push(rec);
                    seq += 1;
                    if let Some(rest) = WRITE_EVERY.checked_sub(slot.elapsed()) {
                        std::thread::sleep(rest);
                    }
                }
                out
            })
        };
        let probers = nodes
            .iter()
            .map(|(name, ip)| {
                let (stop, cfg, name, ip, netns) = (
                    stop.clone(),
                    api_cfg.clone(),
                    name.clone(),
                    *ip,
                    netns.clone(),
                );
                std::thread::spawn(move || {
                    enter_netns_thread(&netns).expect("enter the lab netns");
                    // One probe every PROBE_EVERY, each on its own thread
                    // (it inherits the lab's netns): a probe that hangs for
                    // its PROBE_TIMEOUT does not delay the next, so a
                    // window's end is known to within one interval.
                    let out = std::sync::Mutex::new(Vec::new());
                    std::thread::scope(|s| {
                        while !stop.load(Ordering::SeqCst) {
                            let slot = Instant::now();
                            let t_ms = ms_since(t0);
                            let (cfg, name, out) = (&cfg, &name, &out);
                            s.spawn(move || {
                                let r = tlsclient::request(
                                    cfg,
                                    ip,
                                    6443,
                                    "GET",
                                    "/readyz",
                                    None,
                                    PROBE_TIMEOUT,
                                );
                                let latency_ms = slot.elapsed().as_millis() as u64;
                                let rec = match r {
                                    Ok(resp) => ProbeRec {
                                        node: name.clone(),
                                        t_ms,
                                        ok: resp.status == 200,
                                        status: Some(resp.status),
                                        latency_ms,
                                        error: (resp.status != 200)
                                            .then(|| resp.text().chars().take(120).collect()),
                                    },
                                    Err(e) => ProbeRec {
                                        node: name.clone(),
                                        t_ms,
                                        ok: false,
                                        status: None,
                                        latency_ms,
                                        error: Some(format!("{e:#}").chars().take(160).collect()),
                                    },
                                };
                                out.lock().unwrap().push(rec);
                            });
                            if let Some(rest) = PROBE_EVERY.checked_sub(slot.elapsed()) {
                                std::thread::sleep(rest);
                            }
                        }
                    });
                    let mut out = out.into_inner().unwrap();
                    out.sort_by_key(|p| p.t_ms);
                    out
                })
            })
            .collect();
        Traffic {
            t0,
            wall0_ns,
            stop,
            target,
            prefix,
            writer: Some(writer),
            probers,
            netns,
            etcd_cfg,
            nodes,
        }
    }

    /// Milliseconds on the traffic clock.
    pub fn now_ms(&self) -> u64 {
        ms_since(self.t0)
    }

    /// Writes go through node `index` (0-based) from now on.
    pub fn write_through(&self, index: usize) {
        self.target.store(index, Ordering::SeqCst);
    }

    /// Stops the traffic and reads every key back (through any node that
    /// answers).
    pub fn stop(mut self) -> TrafficLog {
        self.stop.store(true, Ordering::SeqCst);
        let writes = self
            .writer
            .take()
            .map(|h| h.join().expect("writer thread"))
            .unwrap_or_default();
        let mut probes: Vec<ProbeRec> = self
            .probers
            .drain(..)
            .flat_map(|h| h.join().expect("prober thread"))
            .collect();
        probes.sort_by_key(|p| p.t_ms);
        let (netns, cfg, nodes, prefix) = (
            self.netns.clone(),
            self.etcd_cfg.clone(),
            self.nodes.clone(),
            self.prefix.clone(),
        );
        let read_back = std::thread::spawn(move || -> Result<Vec<String>, String> {
            enter_netns_thread(&netns).map_err(|e| e.to_string())?;
            let mut end = prefix.clone().into_bytes();
            if let Some(last) = end.last_mut() {
                *last += 1;
            }
            let body = json!({
                "key": b64(prefix.as_bytes()),
                "range_end": b64(&end),
                "keys_only": true,
            })
            .to_string();
            let mut errors = Vec::new();
            for (name, ip) in &nodes {
                match tlsclient::request(
                    &cfg,
                    *ip,
                    2379,
                    "POST",
                    "/v3/kv/range",
                    Some(body.as_bytes()),
                    Duration::from_secs(10),
                ) {
                    Ok(r) if r.status == 200 => {
                        let v: Value =
                            serde_json::from_slice(&r.body).map_err(|e| e.to_string())?;
                        let b = base64::engine::general_purpose::STANDARD;
                        return Ok(v["kvs"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default()
                            .iter()
                            .filter_map(|kv| kv["key"].as_str())
                            .filter_map(|k| b.decode(k).ok())
                            .map(|k| String::from_utf8_lossy(&k).into_owned())
                            .collect());
                    }
                    Ok(r) => errors.push(format!("{name}: HTTP {}", r.status)),
                    Err(e) => errors.push(format!("{name}: {e:#}")),
                }
            }
            Err(errors.join("; "))
        })
        .join()
        .unwrap_or_else(|_| Err("read-back thread panicked".into()));
        TrafficLog {
            writes,
            probes,
            read_back,
        }
    }
}

impl Drop for Traffic {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A node's API unavailability in `[from, to]` (traffic clock): maximal runs
/// of failed probes, each from its first failed probe to the next successful
/// one (or the last probe of the range).
#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Unavailability {
    pub node: String,
    pub from_ms: u64,
    pub to_ms: u64,
    pub probes: usize,
    pub failed: usize,
    pub unavailable_ms: u64,
    /// `[start, end]` pairs, traffic clock.
    pub windows: Vec<(u64, u64)>,
    pub first_errors: Vec<String>,
}

pub fn unavailability(log: &TrafficLog, node: &str, from: u64, to: u64) -> Unavailability {
    let mut u = Unavailability {
        node: node.to_string(),
        from_ms: from,
        to_ms: to,
        ..Default::default()
    };
    let mut open: Option<u64> = None;
    let mut last_t = from;
    for p in log
        .probes
        .iter()
        .filter(|p| p.node == node && p.t_ms >= from && p.t_ms <= to)
    {
        u.probes += 1;
        last_t = p.t_ms;
        if p.ok {
            if let Some(s) = open.take() {
                u.windows.push((s, p.t_ms));
            }
        } else {
            u.failed += 1;
            if u.first_errors.len() < 3 {
                if let Some(e) = &p.error {
                    u.first_errors.push(e.clone());
                }
            }
            open.get_or_insert(p.t_ms);
        }
    }
    if let Some(s) = open {
        u.windows.push((s, last_t));
    }
    u.unavailable_ms = u.windows.iter().map(|(s, e)| e - s).sum();
    u
}

/// The etcd writes that started in `[from, to]`.
#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct WriteSummary {
    pub from_ms: u64,
    pub to_ms: u64,
    pub writes: usize,
    pub committed: usize,
    pub failed: usize,
    /// Committed only after a retry (a transient error first).
    pub retried: usize,
    pub max_latency_ms: u64,
    pub p99_latency_ms: u64,
    /// Committed writes the read-back did not find (must be 0).
    pub lost: usize,
    pub availability_percent: f64,
    pub first_errors: Vec<String>,
}

pub fn write_summary(log: &TrafficLog, from: u64, to: u64) -> WriteSummary {
    let found: std::collections::HashSet<&str> = match &log.read_back {
        Ok(keys) => keys.iter().map(String::as_str).collect(),
        Err(_) => Default::default(),
    };
    let ws: Vec<&WriteRec> = log
        .writes
        .iter()
        .filter(|w| w.start_ms >= from && w.start_ms <= to)
        .collect();
    let mut lat: Vec<u64> = ws.iter().map(|w| w.end_ms - w.start_ms).collect();
    lat.sort_unstable();
    let committed = ws.iter().filter(|w| w.ok).count();
    WriteSummary {
        from_ms: from,
        to_ms: to,
        writes: ws.len(),
        committed,
        failed: ws.len() - committed,
        retried: ws.iter().filter(|w| w.ok && w.attempts > 1).count(),
        max_latency_ms: lat.last().copied().unwrap_or(0),
        p99_latency_ms: lat
            .get((lat.len() * 99 / 100).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0),
        lost: if log.read_back.is_ok() {
            ws.iter()
                .filter(|w| w.ok && !found.contains(w.key.as_str()))
                .count()
        } else {
            committed
        },
        availability_percent: if ws.is_empty() {
            100.0
        } else {
            (committed as f64) * 100.0 / (ws.len() as f64)
        },
        first_errors: ws
            .iter()
            .flat_map(|w| w.errors.iter().cloned())
            .take(5)
            .collect(),
    }
}
