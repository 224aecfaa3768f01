//! End to end: simulated control-plane nodes made of Linux namespaces, with
//! real etcd (a real TLS cluster across the nodes), real sshd, the simulated
//! kubelet/crictl/kubeadm/kube-apiserver of `tests/simnode`, and a
//! controller driver that pushes the runbook over SSH and runs the guide's
//! cycle (check, cluster health, renewal, cluster health, cleanup by fencing)
//! under continuous etcd writes and `/readyz` probes. See
//! `tests/e2e/README.md`.
//!
//! Needs root, `etcd`/`etcdctl` (Debian `etcd-server`, `etcd-client`),
//! `sshd`/`ssh`/`ssh-keygen` (`openssh-server`, `openssh-client`), `ip`
//! (`iproute2`), `unshare`/`nsenter` (`util-linux`) and `openssl`. Without
//! them every test prints why and passes, unless `NVKE_E2E_REQUIRED=1` (CI),
//! which turns a missing prerequisite into a failure.
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
// They also make the system calls the runbook makes, to plant and provoke
// (signals, pre_exec, raw fds): unsafe as the tests need it.
#![allow(unsafe_code)]

mod support;

#[path = "e2e/controller.rs"]
mod controller;
#[path = "e2e/evidence.rs"]
mod evidence;
#[path = "e2e/golab.rs"]
mod golab;
#[path = "e2e/lab.rs"]
mod lab;
#[path = "e2e/mountpoints.rs"]
mod mountpoints;
#[path = "e2e/pki.rs"]
mod pki;
#[path = "e2e/tlsclient.rs"]
mod tlsclient;
#[path = "e2e/traffic.rs"]
mod traffic;

use controller::{Controller, CycleReport, Hook};
use lab::{Lab, Node, COMPONENTS};
use pki::Keys;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::hex::sha256_file;
use support::node::restarted;
use traffic::{Traffic, TrafficLog};

/// Prints a line on the test process's stderr, past libtest's output
/// capture: skips, evidence paths and measurements show in a plain
/// `cargo test` run.
pub fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The cases share two CPUs with each other and with real etcd: one at a
/// time.
static SERIAL: Mutex<()> = Mutex::new(());

fn prerequisites() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not running as root (namespaces, mounts, sshd)".into());
    }
    for (tool, pkg) in [
        (lab::ETCD, "etcd-server"),
        (lab::ETCDCTL, "etcd-client"),
        (lab::SSHD, "openssh-server"),
    ] {
        if !std::path::Path::new(tool).is_file() {
            return Err(format!("{tool} is missing (apt-get install {pkg})"));
        }
    }
    for (tool, pkg) in [
        ("ssh", "openssh-client"),
        ("ssh-keygen", "openssh-client"),
        ("ip", "iproute2"),
        ("unshare", "util-linux"),
        ("nsenter", "util-linux"),
        ("openssl", "openssl"),
        ("sha256sum", "coreutils"),
    ] {
        let on_path = ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/bin"]
            .iter()
            .any(|d| std::path::Path::new(d).join(tool).is_file());
        if !on_path {
            return Err(format!("{tool} is missing (apt-get install {pkg})"));
        }
    }
    // Namespaces may be forbidden (an unprivileged container).
    let probe = format!("nvke-e2e-{}-probe", std::process::id());
    let ok = std::process::Command::new("ip")
        .args(["netns", "add", &probe])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let _ = std::process::Command::new("ip")
        .args(["netns", "del", &probe])
        .output();
    if !ok {
        return Err("cannot create network namespaces (ip netns add failed)".into());
    }
    Ok(())
}

/// A case running: the other cases wait (one at a time), and when it ends
/// without a failure (after its lab is dropped) the host is as it was: the
/// mount points and parents its lab created are gone again, and the ones
/// that were there before are still there.
struct Running {
    case: String,
    /// Absent when the case started.
    absent: Vec<PathBuf>,
    /// There when the case started, and not made by a lab (another run's
    /// lab may have made one; the last lab out removes it).
    present: Vec<PathBuf>,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let case = &self.case;
        let removed: Vec<&PathBuf> = self.present.iter().filter(|p| !p.is_dir()).collect();
        assert!(
            removed.is_empty(),
            "e2e {case}: the lab removed {removed:?}, which were on the host before"
        );
        // Held while looking: no lab can start meanwhile.
        let Some(_alone) = mountpoints::HOST.alone() else {
            say(&format!(
                "e2e {case}: another run's lab is alive: the host mount points it shares are its to remove ({:?} not checked)",
                self.absent
            ));
            return;
        };
        let left: Vec<&PathBuf> = self.absent.iter().filter(|p| p.exists()).collect();
        assert!(
            left.is_empty(),
            "e2e {case}: the lab left {left:?} on the host"
        );
        say(&format!(
            "e2e {case}: host mount points as before: {:?} absent again, {:?} still there",
            self.absent, self.present
        ));
    }
}

/// Runs the case only when the lab can be built; otherwise prints why and
/// passes, or fails when `NVKE_E2E_REQUIRED=1`.
fn setup(case: &str) -> Option<Running> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    match prerequisites() {
        Ok(()) => {
            say(&format!("e2e {case}: starting"));
            let host = &mountpoints::HOST;
            let absent = host.absent();
            let made = host.made();
            let present = host
                .points()
                .iter()
                .filter(|p| p.is_dir() && !made.contains(p))
                .cloned()
                .collect();
            Some(Running {
                case: case.to_string(),
                absent,
                present,
                _serial: guard,
            })
        }
        Err(why) if std::env::var("NVKE_E2E_REQUIRED").as_deref() == Ok("1") => {
            panic!("e2e {case}: NVKE_E2E_REQUIRED=1 but {why}")
        }
        Err(why) => {
            say(&format!(
                "e2e {case}: SKIPPED: {why} (set NVKE_E2E_REQUIRED=1 to make this a failure)"
            ));
            None
        }
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// sha256 of each CA file of a node, read on the host (test oracle).
fn host_cas(node: &Node) -> BTreeMap<String, String> {
    ["ca.crt", "etcd/ca.crt", "front-proxy-ca.crt"]
        .iter()
        .map(|rel| {
            (
                rel.to_string(),
                sha256_file(&node.etc().join("pki").join(rel)),
            )
        })
        .collect()
}

/// Every leaf of SPEC 2 on the node as its files hold it: kubeadm's name
/// to (serial, notAfter), read with the runbook's own parsers.
fn host_leaves(node: &Node) -> BTreeMap<String, (String, String)> {
    use nvke_cert_runbook::rules::pki::{self, KubeconfigCert, LeafKind};
    let mut out = BTreeMap::new();
    for spec in pki::LEAVES.iter() {
        let rel = spec.path.strip_prefix("etc/kubernetes/").unwrap();
        let Ok(bytes) = std::fs::read(node.etc().join(rel)) else {
            continue;
        };
        let pem = match spec.kind {
            LeafKind::Pem => bytes,
            LeafKind::Kubeconfig => match pki::kubeconfig_client_cert(&bytes).unwrap() {
                KubeconfigCert::Embedded(pem) => pem,
                KubeconfigCert::File(f) => panic!("{}: names {f}", spec.name),
            },
        };
        let c = pki::parse_pem_certificate(&pem).unwrap();
        let end = c
            .not_after
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        out.insert(spec.name.to_string(), (c.serial, end));
    }
    out
}

/// SPEC 4 step 8, "Leaf by leaf" (v1.3): the renewed receipt lists every
/// leaf the node has, each with the serial and end it had before the cycle
/// and the ones its files hold now, a new serial for each.
fn receipt_lists_every_leaf(
    node: &Node,
    receipt: &Value,
    before: &BTreeMap<String, (String, String)>,
) {
    let now = host_leaves(node);
    let listed = receipt["certificates"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no certificates in {receipt:#}", node.name()));
    assert_eq!(listed.len(), now.len(), "{}: {receipt:#}", node.name());
    for l in listed {
        let name = l["name"].as_str().unwrap();
        let (serial, end) = &now[name];
        let (serial_before, end_before) = &before[name];
        assert_eq!(l["serialAfter"], serial.as_str(), "{}: {l}", node.name());
        assert_eq!(l["notAfterAfter"], end.as_str(), "{}: {l}", node.name());
        assert_eq!(
            l["serialBefore"],
            serial_before.as_str(),
            "{}: {l}",
            node.name()
        );
        assert_eq!(
            l["notAfterBefore"],
            end_before.as_str(),
            "{}: {l}",
            node.name()
        );
        assert_ne!(serial, serial_before, "{}: {name} not renewed", node.name());
    }
}

fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

fn phase_file(node: &Node) -> Value {
    std::fs::read(node.state().join("phase"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// One cycle under continuous traffic.
fn cycle_with_traffic(
    ctl: &Controller,
    label: &str,
    force: bool,
    hooks: &[(&str, Hook)],
) -> (CycleReport, TrafficLog) {
    let traffic = Traffic::start(ctl.lab, label);
    // Some traffic before the first node: a baseline for every probe.
    std::thread::sleep(Duration::from_millis(500));
    let id = format!("renew-k8s-certs-e2e-{label}-{}", unix_secs());
    let rep = ctl.cycle(&id, force, hooks, Some(&traffic));
    std::thread::sleep(Duration::from_millis(300));
    (rep, traffic.stop())
}

/// The evidence report of a case; prints its path.
fn report(
    case: &str,
    ctl: &Controller,
    started: (Instant, String),
    before: &Value,
    cycles: &[(&CycleReport, &TrafficLog)],
    after: &Value,
    notes: &[String],
) -> (std::path::PathBuf, Value) {
    let version = ctl
        .runbook(&ctl.lab.nodes[0], &["--version"])
        .doc
        .unwrap_or(Value::Null);
    let cycles: Vec<Value> = cycles
        .iter()
        .map(|(rep, log)| {
            json!({
                "cycle": rep,
                "traffic": evidence::traffic_report(ctl, rep, log),
            })
        })
        .collect();
    let r = json!({
        "case": case,
        "startedAt": started.1,
        "durationSecs": started.0.elapsed().as_secs_f64(),
        "runbookVersion": version,
        "runbookSha256": ctl.sha256,
        "runbookPath": ctl.remote_path,
        "nodes": ctl.lab.nodes.iter().map(|n| json!({"name": n.name(), "ip": n.ip()})).collect::<Vec<_>>(),
        "before": before,
        "cycles": cycles,
        "after": after,
        "notes": notes,
        "limitations": [
            "kube-apiserver, kube-controller-manager and kube-scheduler are stand-ins (tests/simnode); etcd, etcdctl and sshd are real",
            "no node agent: the legacy executor (this runbook) is the only one; kube-vip drain/restore is not modelled",
            "/readyz of the stand-in is 200 when its local etcd answers /health over mutual TLS",
        ],
    });
    let path = evidence::write(case, &r);
    say(&format!("e2e {case}: evidence report: {}", path.display()));
    say(&format!(
        "e2e {case}: summary:       {}",
        path.with_extension("md").display()
    ));
    (path, r)
}

/// One line per renewal for the test log: API unavailability per node and
/// etcd writes.
fn print_traffic(case: &str, traffic: &Value) {
    for p in traffic["perRenewal"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let apis: Vec<String> = p["apiUnavailability"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|u| {
                format!(
                    "{} {} ms/{} failed probes",
                    u["node"].as_str().unwrap_or(""),
                    u["unavailableMs"],
                    u["failed"]
                )
            })
            .collect();
        let w = &p["etcdWrites"];
        say(&format!(
            "e2e {case}: renewing {} ({} ms): API unavailable: {}; etcd writes {}/{} committed, {} failed, {} retried, max {} ms",
            p["renewedNode"].as_str().unwrap_or(""),
            p["windowMs"][1].as_u64().unwrap_or(0) - p["windowMs"][0].as_u64().unwrap_or(0),
            apis.join(", "),
            w["committed"],
            w["writes"],
            w["failed"],
            w["retried"],
            w["maxLatencyMs"],
        ));
    }
}

/// Every kube-system control-plane container created during the cycle was
/// created by the kubelet of the node being renewed, inside that node's
/// renewal window: the nodes were restarted one at a time.
/// `wall0_ns`: unix nanoseconds at the traffic clock's zero.
fn assert_one_at_a_time(lab: &Lab, rep: &CycleReport, wall0_ns: i128) {
    let slack_ms = 250i128;
    let windows: Vec<(String, i128, i128)> = rep
        .nodes
        .iter()
        .filter_map(|n| {
            n.window_ms.map(|(a, b)| {
                (
                    n.node.clone(),
                    wall0_ns + a as i128 * 1_000_000,
                    wall0_ns + b as i128 * 1_000_000,
                )
            })
        })
        .collect();
    for w in windows.windows(2) {
        assert!(w[0].2 <= w[1].1, "renewal windows overlap: {windows:?}");
    }
    let (first, last) = (
        windows.first().map(|w| w.1).unwrap_or(0),
        windows.last().map(|w| w.2).unwrap_or(0),
    );
    for node in &lab.nodes {
        for c in node.containers() {
            let name = c["name"].as_str().unwrap_or("");
            if !COMPONENTS.contains(&name) {
                continue;
            }
            let created: i128 = c["createdAt"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if created < first || created > last {
                continue;
            }
            let inside = windows.iter().find(|(_, a, b)| {
                created >= a - slack_ms * 1_000_000 && created <= b + slack_ms * 1_000_000
            });
            assert_eq!(
                inside.map(|w| w.0.as_str()),
                Some(node.name()),
                "{}/{name} was created at {created} outside {}'s renewal window: {windows:?}",
                node.name(),
                node.name()
            );
        }
    }
}

#[test]
fn three_node_scheduled_renewal() {
    let Some(_serial) = setup("three-node") else {
        return;
    };
    let started = (Instant::now(), now_rfc3339());
    let lab = Lab::new(3, Keys::Rsa).expect("three-node lab");
    let ctl = Controller::new(&lab);
    ctl.cluster_health().expect("the cluster comes up healthy");
    let cas_before: Vec<_> = lab.nodes.iter().map(host_cas).collect();
    let leaves_before: Vec<_> = lab.nodes.iter().map(host_leaves).collect();
    let before = evidence::snapshot(&ctl);
    let traffic = Traffic::start(&lab, "scheduled");
    let wall0 = traffic.wall0_ns;
    std::thread::sleep(Duration::from_millis(500));
    let id = format!("renew-k8s-certs-e2e-scheduled-{}", unix_secs());
    let rep = ctl.cycle(&id, false, &[], Some(&traffic));
    std::thread::sleep(Duration::from_millis(300));
    let log = traffic.stop();
    let after = evidence::snapshot(&ctl);
    let (path, r) = report(
        "three-node-scheduled",
        &ctl,
        started,
        &before,
        &[(&rep, &log)],
        &after,
        &[],
    );
    let traffic = &r["cycles"][0]["traffic"];
    print_traffic("three-node", traffic);
    assert_one_at_a_time(&lab, &rep, wall0);

    assert_eq!(
        rep.state,
        "succeeded",
        "{}: {} (evidence {})",
        rep.phase.clone().unwrap_or_default(),
        rep.message,
        path.display()
    );
    // The runbook was already at its content-addressed path (pushed for the
    // "before" evidence): the cycle skipped the copy.
    for p in &rep.pushes {
        assert_eq!(p["copied"], false, "{p}");
    }
    // Every node was due (test-time leaves expire within the threshold) and
    // renewed, the four static pods restarted in order.
    for (i, node) in lab.nodes.iter().enumerate() {
        assert_eq!(
            rep.checks[i]["doc"]["decision"],
            "renew",
            "{node:?}",
            node = node.name()
        );
        let run = rep.node(node.name()).expect("node run");
        assert_eq!(run.outcome, "renewed", "{}: {:?}", node.name(), run.result);
        let doc = run.result.as_ref().unwrap();
        assert_eq!(restarted(doc), COMPONENTS, "{}", node.name());
        assert_eq!(run.attempts.len(), 1);
        let receipt = node.receipt(run.operation_id.as_deref().unwrap()).unwrap();
        assert_eq!(receipt["outcome"], "renewed");
        receipt_lists_every_leaf(node, &receipt, &leaves_before[i]);
        assert!(node.manifests_all_active());
        // CA fingerprints unchanged, identical on every node.
        assert_eq!(host_cas(node), cas_before[i], "{}", node.name());
        assert_eq!(cas_before[i], cas_before[0]);
        assert_eq!(
            before[node.name()]["caSHA256"],
            after[node.name()]["caSHA256"],
            "{}",
            node.name()
        );
        // Every control-plane container ID changed.
        let (b, a) = (
            &before[node.name()]["containers"],
            &after[node.name()]["containers"],
        );
        for c in COMPONENTS {
            assert!(
                b[c].is_string() && a[c].is_string(),
                "{}: {b} {a}",
                node.name()
            );
            assert_ne!(b[c], a[c], "{}: {c} was not restarted", node.name());
        }
        // Leaves renewed for a year (kubeadm's 365 days).
        for c in after[node.name()]["certificates"].as_array().unwrap() {
            assert!(
                c["daysLeft"].as_i64().unwrap() > 300,
                "{}: {c}",
                node.name()
            );
        }
        for c in before[node.name()]["certificates"].as_array().unwrap() {
            assert!(
                c["daysLeft"].as_i64().unwrap() <= pki::LEAF_DAYS as i64,
                "{c}"
            );
        }
    }
    // etcd kept quorum throughout: no write failed, none was lost.
    let whole = &traffic["wholeCycle"]["etcdWrites"];
    assert!(log.read_back.is_ok(), "read-back: {:?}", log.read_back);
    assert!(whole["writes"].as_u64().unwrap() > 50, "{whole}");
    assert_eq!(whole["failed"], 0, "failed etcd writes: {whole}");
    assert_eq!(whole["lost"], 0, "lost etcd writes: {whole}");
}

/// SPEC 12 (v1.3): a scheduled three-node cycle on an IPv6 single-stack
/// network: nodes at `fd00:10::1X`, real etcd listening on `[::1]` and the
/// node's IPv6 address (peers and members' client URLs in brackets), every
/// probe and `--bind-address` on `::1` or the node's address, real sshd
/// reached over IPv6, continuous etcd writes and `/readyz` probes. Every
/// node is renewed one at a time, the CAs unchanged, no etcd write lost.
#[test]
fn ipv6_single_stack_three_node_renewal() {
    let Some(_serial) = setup("ipv6") else {
        return;
    };
    let lab = Lab::ipv6(3, Keys::Ecdsa).expect("three-node IPv6 lab");
    for node in &lab.nodes {
        assert!(node.ip().starts_with("fd00:10::"), "{}", node.ip());
        let etcd = std::fs::read_to_string(node.etc().join("manifests/etcd.yaml")).unwrap();
        assert!(
            etcd.contains("--listen-client-urls=https://[::1]:2379,https://[fd00:10::")
                && !etcd.contains("127.0.0.1"),
            "{etcd}"
        );
    }
    let ctl = Controller::new(&lab);
    ctl.cluster_health()
        .expect("the IPv6 cluster comes up healthy");
    let cas_before: Vec<_> = lab.nodes.iter().map(host_cas).collect();
    let leaves_before: Vec<_> = lab.nodes.iter().map(host_leaves).collect();
    let traffic = Traffic::start(&lab, "ipv6");
    let wall0 = traffic.wall0_ns;
    std::thread::sleep(Duration::from_millis(500));
    let id = format!("renew-k8s-certs-e2e-ipv6-{}", unix_secs());
    let rep = ctl.cycle(&id, false, &[], Some(&traffic));
    std::thread::sleep(Duration::from_millis(300));
    let log = traffic.stop();
    assert_one_at_a_time(&lab, &rep, wall0);
    assert_eq!(
        rep.state,
        "succeeded",
        "{}: {}",
        rep.phase.clone().unwrap_or_default(),
        rep.message
    );
    let mut renewed = 0;
    for (i, node) in lab.nodes.iter().enumerate() {
        let run = rep.node(node.name()).expect("node run");
        assert_eq!(run.outcome, "renewed", "{}: {:?}", node.name(), run.result);
        assert_eq!(
            restarted(run.result.as_ref().unwrap()),
            COMPONENTS,
            "{}",
            node.name()
        );
        assert!(node.manifests_all_active(), "{}", node.name());
        assert_eq!(host_cas(node), cas_before[i], "{}", node.name());
        let receipt = node.receipt(run.operation_id.as_deref().unwrap()).unwrap();
        receipt_lists_every_leaf(node, &receipt, &leaves_before[i]);
        renewed += 1;
    }
    // etcd kept quorum throughout: no write failed, none was lost.
    let traffic = evidence::traffic_report(&ctl, &rep, &log);
    print_traffic("ipv6", &traffic);
    let whole = &traffic["wholeCycle"]["etcdWrites"];
    assert!(log.read_back.is_ok(), "read-back: {:?}", log.read_back);
    assert!(whole["writes"].as_u64().unwrap() > 50, "{whole}");
    assert_eq!(whole["failed"], 0, "failed etcd writes: {whole}");
    assert_eq!(whole["lost"], 0, "lost etcd writes: {whole}");
    say(&format!(
        "ipv6: {renewed} nodes renewed, {} etcd writes, 0 failed, 0 lost",
        whole["writes"]
    ));
}

#[test]
fn single_node_cluster_renewed_with_an_api_outage() {
    let Some(_serial) = setup("single-node") else {
        return;
    };
    let started = (Instant::now(), now_rfc3339());
    let lab = Lab::new(1, Keys::Ecdsa).expect("single-node lab");
    let ctl = Controller::new(&lab);
    ctl.cluster_health().expect("the node comes up healthy");
    let before = evidence::snapshot(&ctl);
    let (rep, log) = cycle_with_traffic(&ctl, "single", false, &[]);
    let after = evidence::snapshot(&ctl);
    let (path, r) = report(
        "single-node",
        &ctl,
        started,
        &before,
        &[(&rep, &log)],
        &after,
        &["a single control-plane node: its only etcd and kube-apiserver restart, so the API outage is inherent and accepted (guide)".into()],
    );
    let traffic = &r["cycles"][0]["traffic"];
    print_traffic("single-node", traffic);
    assert_eq!(
        rep.state,
        "succeeded",
        "{} (evidence {})",
        rep.message,
        path.display()
    );
    let run = rep.node("cp-1").unwrap();
    assert_eq!(run.outcome, "renewed");
    assert_eq!(restarted(run.result.as_ref().unwrap()), COMPONENTS);
    let api = &traffic["perRenewal"][0]["apiUnavailability"][0];
    assert!(
        api["failed"].as_u64().unwrap() > 0 && api["unavailableMs"].as_u64().unwrap() > 0,
        "the restart of the only etcd and kube-apiserver must show as an API outage: {api}"
    );
    api_unavailability_agrees(run.result.as_ref().unwrap(), api);
    assert_eq!(before["cp-1"]["caSHA256"], after["cp-1"]["caSHA256"]);
    for c in COMPONENTS {
        assert_ne!(
            before["cp-1"]["containers"][c],
            after["cp-1"]["containers"][c]
        );
    }
}

/// SPEC 7 (v1.2): the runbook's own measure of the API's unavailability
/// (`apiUnavailableMs`, the longest run of failed in-process `/readyz`
/// probes, one every 200 ms, during one restart) against the lab's (probes
/// from outside, one every 100 ms, `traffic::unavailability`'s windows):
/// their longest windows agree. Both probers start each probe on time
/// whatever the one before is waiting for, so each end of a window is known
/// to within its prober's interval (200 ms in the runbook, 100 ms in the
/// lab): 300 ms. A probe's start is not the instant the server judges its
/// readiness, though: that comes a TLS handshake later, on both sides, and
/// on a loaded 2-core machine a handshake takes up to about 100 ms per end.
/// So the two lengths must differ by less than 500 ms (measured here on
/// 2026-12-03: 0 to 201 ms over eight runs).
fn api_unavailability_agrees(result: &Value, lab: &Value) {
    let runbook: Vec<u64> = result["restarts"]
        .as_array()
        .expect("restarts")
        .iter()
        .map(|r| r["apiUnavailableMs"].as_u64().expect("apiUnavailableMs"))
        .collect();
    let lab_longest = lab["windows"]
        .as_array()
        .expect("windows")
        .iter()
        .map(|w| w[1].as_u64().unwrap() - w[0].as_u64().unwrap())
        .max()
        .unwrap_or(0);
    let ours = runbook.iter().copied().max().unwrap_or(0);
    say(&format!(
        "e2e single-node: API unavailable per restart (runbook, in-process): {runbook:?} ms; longest window seen by the lab: {lab_longest} ms ({} ms apart)",
        ours.abs_diff(lab_longest)
    ));
    assert!(
        ours > 0,
        "the runbook saw no unavailability of its only kube-apiserver: {runbook:?}"
    );
    assert!(
        ours.abs_diff(lab_longest) < 500,
        "the runbook's longest apiUnavailableMs {ours} and the lab's longest window {lab_longest} differ by 500 ms or more ({runbook:?}; lab {lab})"
    );
}

#[test]
fn two_node_cluster_is_refused() {
    let Some(_serial) = setup("two-node") else {
        return;
    };
    let started = (Instant::now(), now_rfc3339());
    let lab = Lab::new(2, Keys::Ecdsa).expect("two-node lab");
    let ctl = Controller::new(&lab);
    ctl.cluster_health().expect("the cluster comes up healthy");
    let before = evidence::snapshot(&ctl);
    let ids_before: Vec<_> = lab.nodes.iter().map(|n| n.running_ids()).collect();
    // Acceptance refuses: nothing pushed, checked or dispatched.
    let (rep, log) = cycle_with_traffic(&ctl, "two-node", false, &[]);
    assert_eq!(rep.state, "failed");
    assert_eq!(rep.phase.as_deref(), Some("two-control-plane-voters"));
    assert!(rep.pushes.is_empty() && rep.checks.is_empty() && rep.nodes.is_empty());
    // Defence in depth: dispatched anyway, the runbook refuses on its own
    // (its health gate counts two etcd voters), before renewing anything.
    let node = &lab.nodes[0];
    ctl.push(node);
    let op = format!("renew-k8s-certs-e2e-two-node-direct-{}:cp-1", unix_secs());
    let direct = ctl.runbook(node, &["--operation-id", &op, "--force"]);
    let doc = direct.doc.clone().expect("a JSON document");
    let after = evidence::snapshot(&ctl);
    let (path, _) = report(
        "two-node-refused",
        &ctl,
        started,
        &before,
        &[(&rep, &log)],
        &after,
        &[format!(
            "direct dispatch to cp-1 (bypassing acceptance): exit {:?}, outcome {}, phase {}, message {}",
            direct.exit_code, doc["outcome"], doc["phase"], doc["message"]
        )],
    );
    assert_eq!(
        direct.exit_code,
        Some(1),
        "{doc} (evidence {})",
        path.display()
    );
    assert_eq!(doc["outcome"], "failed");
    assert_eq!(doc["phase"], "two-control-plane-voters");
    assert!(restarted(&doc).is_empty());
    for (i, n) in lab.nodes.iter().enumerate() {
        assert_eq!(
            n.running_ids(),
            ids_before[i],
            "{} restarted something",
            n.name()
        );
        assert!(n.manifests_all_active());
        assert!(
            controller::read_to_string(&n.sim().join("kubeadm.log")).is_empty(),
            "kubeadm ran on {}",
            n.name()
        );
    }
    assert_eq!(node.receipt(&op).unwrap()["outcome"], "failed");
}

#[test]
fn ssh_connection_dies_mid_renewal_and_the_retry_replays() {
    let Some(_serial) = setup("ssh-dies") else {
        return;
    };
    let started = (Instant::now(), now_rfc3339());
    // Only cp-2 is due: the cycle checks all three, renews cp-2.
    let lab = Lab::with_due(Keys::Ecdsa, &[false, true, false]).expect("three-node lab");
    let ctl = Controller::new(&lab);
    ctl.cluster_health().expect("the cluster comes up healthy");
    let before = evidence::snapshot(&ctl);
    let killed_at: Mutex<Option<Value>> = Mutex::new(None);
    // On cp-2's first attempt: once the runbook is restarting pods, kill the
    // local ssh client (the connection dies; the runbook loses stdout and
    // stderr).
    let hook: Hook = Box::new(|ctx| {
        if ctx.attempt != 1 {
            return;
        }
        let restarting = wait_until(Duration::from_secs(120), || {
            ctx.done.load(std::sync::atomic::Ordering::SeqCst)
                || (phase_file(ctx.node)["state"] == "restart_pending"
                    && phase_file(ctx.node)["operationID"] == ctx.op)
        });
        if !restarting || ctx.done.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(ctx.ssh_pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        *killed_at.lock().unwrap() = Some(phase_file(ctx.node));
    });
    let (rep, log) = cycle_with_traffic(&ctl, "ssh-dies", false, &[("cp-2", hook)]);
    let after = evidence::snapshot(&ctl);
    let killed = killed_at.lock().unwrap().clone();
    let (path, r) = report(
        "ssh-connection-dies",
        &ctl,
        started,
        &before,
        &[(&rep, &log)],
        &after,
        &[format!(
            "cp-2: the ssh client of attempt 1 was SIGKILLed when the phase file read {}",
            killed.clone().unwrap_or(Value::Null)
        )],
    );
    print_traffic("ssh-dies", &r["cycles"][0]["traffic"]);
    assert!(
        killed.is_some(),
        "the ssh client was never killed (evidence {})",
        path.display()
    );
    assert_eq!(
        rep.state,
        "succeeded",
        "{} (evidence {})",
        rep.message,
        path.display()
    );
    let run = rep.node("cp-2").unwrap();
    let op = run.operation_id.clone().unwrap();
    assert_eq!(run.attempts.len(), 2, "{:#?}", run.attempts);
    let (first, retry) = (&run.attempts[0], &run.attempts[1]);
    assert!(
        first.lost && first.result.ssh_signal == Some(9),
        "{first:#?}"
    );
    // Right after the loss, the runbook still held the lock for this
    // operation: the retry had to wait on it.
    let status = first.status_after_loss.as_ref().expect("status after loss");
    assert_eq!(status["lock"]["held"], true, "{}", status["lock"]);
    assert!(
        status["lock"].to_string().contains(&op),
        "lock holder: {}",
        status["lock"]
    );
    let doc = retry.result.doc.as_ref().unwrap();
    assert_eq!(retry.result.exit_code, Some(0), "{doc}");
    assert_eq!(doc["replayed"], true, "{doc}");
    assert_eq!(doc["outcome"], "renewed");
    // The run that lost its connection finished on the node.
    let node = &lab.nodes[1];
    let receipt = node.receipt(&op).expect("receipt");
    assert_eq!(receipt["outcome"], "renewed");
    assert_eq!(phase_file(node)["state"], "done");
    assert!(node.manifests_all_active());
    for c in COMPONENTS {
        assert_ne!(
            before["cp-2"]["containers"][c],
            after["cp-2"]["containers"][c]
        );
    }
    for n in ["cp-1", "cp-3"] {
        assert_eq!(rep.node(n).unwrap().outcome, "unchanged");
        assert_eq!(before[n]["containers"], after[n]["containers"], "{n}");
    }
}

#[test]
fn sigkill_mid_restart_is_fenced_then_resumed_by_the_next_cycle() {
    let Some(_serial) = setup("sigkill") else {
        return;
    };
    let started = (Instant::now(), now_rfc3339());
    // cp-1 is not due; cp-2 and cp-3 are.
    let lab = Lab::with_due(Keys::Ecdsa, &[false, true, true]).expect("three-node lab");
    let mut ctl = Controller::new(&lab);
    // The activity's retries are exhausted with this attempt (a budget of
    // one): the cycle goes straight to the cleanup.
    ctl.policy.max_attempts = 1;
    ctl.cluster_health().expect("the cluster comes up healthy");
    let before = evidence::snapshot(&ctl);
    let killed: Mutex<Option<(u32, Value)>> = Mutex::new(None);
    let hook: Hook = Box::new(|ctx| {
        let staged = ctx
            .node
            .etc()
            .join("nvke-cert-renewal-staging/kube-apiserver.yaml");
        if !wait_until(Duration::from_secs(120), || {
            ctx.done.load(std::sync::atomic::Ordering::SeqCst) || staged.exists()
        }) || ctx.done.load(std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let owner: Value = std::fs::read(ctx.node.state().join("owner"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        let pid = owner["pid"].as_u64().unwrap_or(0) as u32;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if pid == 0 || !String::from_utf8_lossy(&cmdline).contains(ctx.op) {
            return;
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        *killed.lock().unwrap() = Some((pid, phase_file(ctx.node)));
    });
    let (rep1, log1) = cycle_with_traffic(&ctl, "sigkill", false, &[("cp-2", hook)]);
    let cp2 = &lab.nodes[1];
    let killed = killed.lock().unwrap().clone();
    let after_fence = cp2.running_ids();
    let phase_after_fence = phase_file(cp2);
    let manifests_after_fence = cp2.manifests_all_active();
    let op1 = rep1
        .node("cp-2")
        .and_then(|r| r.operation_id.clone())
        .unwrap_or_default();
    let abandoned_receipt = cp2.receipt(&op1);

    // A delayed attempt of the fenced operation: refused, nothing done.
    ctl.cluster_health()
        .expect("healthy again after the cleanup");
    let ids_before_delayed = cp2.running_ids();
    let delayed = ctl.runbook(cp2, &["--operation-id", &op1]);
    let ids_after_delayed = cp2.running_ids();

    // The next cycle: a fresh operation resumes the abandoned work.
    ctl.policy.max_attempts = 3;
    let (rep2, log2) = cycle_with_traffic(&ctl, "sigkill-next", false, &[]);
    let after = evidence::snapshot(&ctl);
    let (path, r) = report(
        "sigkill-fenced-resumed",
        &ctl,
        started,
        &before,
        &[(&rep1, &log1), (&rep2, &log2)],
        &after,
        &[
            format!(
                "cycle 1, cp-2: runbook pid {:?} SIGKILLed with kube-apiserver staged; phase file then: {}",
                killed.as_ref().map(|k| k.0),
                killed.as_ref().map(|k| k.1.clone()).unwrap_or(Value::Null)
            ),
            format!(
                "delayed attempt with {op1}: exit {:?}, {}",
                delayed.exit_code,
                delayed.doc.clone().unwrap_or(Value::Null)
            ),
        ],
    );
    let ev = path.display().to_string();
    print_traffic("sigkill cycle 1", &r["cycles"][0]["traffic"]);
    print_traffic("sigkill cycle 2", &r["cycles"][1]["traffic"]);
    assert!(
        killed.is_some(),
        "the runbook was never killed (evidence {ev})"
    );

    // Cycle 1: cp-1 unchanged, cp-2 lost, fenced, the cycle failed before
    // cp-3.
    assert_eq!(rep1.state, "failed", "{ev}");
    assert_eq!(rep1.failed_node.as_deref(), Some("cp-2"));
    assert_eq!(rep1.phase.as_deref(), Some("restart:kube-apiserver"));
    assert_eq!(rep1.node("cp-1").unwrap().outcome, "unchanged");
    assert!(rep1.node("cp-3").is_none(), "cp-3 must not be dispatched");
    let run = rep1.node("cp-2").unwrap();
    assert!(run.attempts[0].lost, "{:#?}", run.attempts);
    let fence = run
        .fencing
        .last()
        .and_then(|f| f.doc.clone())
        .expect("fencing doc");
    assert_eq!(fence["termination"], "confirmed", "{fence}");
    assert_eq!(fence["outcome"], "abandoned", "{fence}");
    assert!(
        fence["restored"].to_string().contains("kube-apiserver"),
        "{fence}"
    );
    assert_eq!(abandoned_receipt.unwrap()["outcome"], "abandoned");
    assert!(
        manifests_after_fence,
        "the fencing check put the manifest back"
    );
    assert_eq!(phase_after_fence["state"], "restart_pending");
    assert_eq!(phase_after_fence["operationID"], op1.as_str());
    assert!(!after_fence.is_empty());
    assert_eq!(delayed.exit_code, Some(5), "{:?}", delayed.doc);
    let d = delayed.doc.unwrap();
    assert_eq!(
        (d["replayed"].clone(), d["outcome"].clone()),
        (json!(true), json!("abandoned"))
    );
    assert_eq!(
        ids_before_delayed, ids_after_delayed,
        "the delayed attempt changed the node"
    );

    // Cycle 2: cp-1 unchanged, cp-2 resumed from kube-apiserver, cp-3 renewed.
    assert_eq!(rep2.state, "succeeded", "{} ({ev})", rep2.message);
    assert_eq!(rep2.node("cp-1").unwrap().outcome, "unchanged");
    let run = rep2.node("cp-2").unwrap();
    assert_eq!(run.outcome, "renewed");
    let doc = run.result.as_ref().unwrap();
    assert!(doc["resumedFrom"].to_string().contains(&op1), "{doc}");
    assert_eq!(
        restarted(doc),
        [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler"
        ]
    );
    assert_eq!(rep2.node("cp-3").unwrap().outcome, "renewed");
    for node in &lab.nodes {
        assert!(node.manifests_all_active());
        assert_eq!(
            before[node.name()]["caSHA256"],
            after[node.name()]["caSHA256"]
        );
        for c in COMPONENTS {
            let (b, a) = (
                &before[node.name()]["containers"][c],
                &after[node.name()]["containers"][c],
            );
            match node.name() {
                "cp-1" => assert_eq!(b, a, "cp-1 was not due: {c}"),
                _ => assert_ne!(b, a, "{}: {c}", node.name()),
            }
        }
    }
    let whole = &r["cycles"][1]["traffic"]["wholeCycle"]["etcdWrites"];
    assert_eq!(whole["failed"], 0, "{whole}");
}

/// The Go Executor (`embedded/go/executor`) over the real `sshtransport.Transport`
/// against one lab node: `embedded/go/lab_e2e_test.go`, run inside the lab's
/// network namespace (tests/e2e/README.md, "Cases").
#[test]
fn go_executor_over_real_ssh() {
    let Some(_serial) = setup("go-executor") else {
        return;
    };
    let go = match golab::find_go() {
        Ok(go) => go,
        Err(why) if std::env::var("NVKE_E2E_REQUIRED").as_deref() == Ok("1") => {
            panic!("e2e go-executor: NVKE_E2E_REQUIRED=1 but {why}")
        }
        Err(why) => {
            say(&format!(
                "e2e go-executor: SKIPPED: {why} (set NVKE_E2E_REQUIRED=1 to make this a failure)"
            ));
            return;
        }
    };
    let started = Instant::now();
    let test_bin = golab::build(&go);
    // One node (a single-member etcd), ECDSA keys: the fastest renewals.
    let lab = Lab::new(1, Keys::Ecdsa).expect("single-node lab");
    let ctl = Controller::new(&lab);
    ctl.cluster_health().expect("the node comes up healthy");
    let node = &lab.nodes[0];
    let config = golab::write_config(&lab, node, &ctl.runbook);
    let run = golab::run(&lab, &test_bin, &config);
    let log = evidence::dir().join(format!("go-executor-{}.log", unix_secs()));
    let _ = std::fs::create_dir_all(evidence::dir());
    let _ = std::fs::write(&log, &run.output);
    say(&format!(
        "e2e go-executor: Go test output in {} ({} s in all)",
        log.display(),
        started.elapsed().as_secs()
    ));
    assert!(
        run.success,
        "the Go lab test failed (output in {})",
        log.display()
    );
    for sub in [
        "1-check-renew-replay",
        "2-cancel-mid-restart",
        "3-sigkill-mid-restart",
        "4-deadline-passed",
        "5-fence-meets-held-lock",
    ] {
        assert!(
            run.output.contains(&format!("--- PASS: TestLab/{sub} ")),
            "subtest {sub} did not pass (output in {})",
            log.display()
        );
    }
    assert!(!run.output.contains("--- SKIP"), "the Go test skipped");
    assert!(node.manifests_all_active());
    assert_eq!(node.running_ids().len(), COMPONENTS.len());
}
