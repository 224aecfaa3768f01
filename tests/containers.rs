//! The containers tier: renewals against a real containerd 1.6 + runc
//! through the real crictl 1.36, the static pods run by the simulated
//! kubelet's CRI backend (tests/simnode/kubelet/cri.rs) with the kubelet's
//! labels and annotations, the real etcd 3.4 inside the etcd container and
//! the stand-ins inside theirs (tests/support/containers.rs). The
//! multi-member cases (three voters renewed; two voters, a learner, the
//! node's member a learner, a member down refused) add real etcd members on
//! the host, joined with the node's (tests/support/etcd_cluster.rs).
//!
//! Needs root, containerd, runc, ctr and crictl (built from
//! ../shared/vendor by tests/containers/build-crictl.sh, or
//! `$NVKE_REAL_CRICTL`); without them every test prints `SKIPPED: ...` and
//! passes, unless `NVKE_CONTAINERS_REQUIRED=1`. The tests take turns (one
//! containerd at a time).
#![cfg(feature = "sim")]
// Tests and the simulated node write fixtures directly; the house rule (clippy.toml) binds src/.
#![allow(clippy::disallowed_methods)]
// Skips and measurements are printed through the harness; the print lints bind src/.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

// The host etcd members of the multi-member cases, and the e2e PKI they
// get their leaves from (only `node_tree` of it is used here).
#[path = "support/etcd_cluster.rs"]
mod etcd_cluster;
#[allow(dead_code)]
#[path = "e2e/pki.rs"]
mod pki;

use etcd_cluster::{Members, NodeEtcd};
use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};
use support::containers::{require, serial, Containerd};
use support::kubeadm_manifests::ControlPlane;
use support::node::*;
use support::say;

/// Renewals that ended `renewed` on containerd in this process.
static RENEWALS: AtomicU32 = AtomicU32::new(0);

/// A simulated node whose kubelet runs its static pods on a private
/// containerd. Drop order: the node (its kubelet), then containerd.
struct Tier {
    node: Node,
    ctrd: Containerd,
    /// The node's etcd on loopback (its manifest).
    etcd: NodeEtcd,
    _turn: MutexGuard<'static, ()>,
}

impl Tier {
    fn new(knobs: Value) -> Option<Tier> {
        Tier::with_etcd(knobs, |_, _| {})
    }

    /// [`Tier::new`], with `edit` given the node's etcd manifest (its
    /// loopback ports in place) before the kubelet starts.
    fn with_etcd(knobs: Value, edit: impl FnOnce(&Node, &NodeEtcd)) -> Option<Tier> {
        Tier::shaped(knobs, |_| {}, edit)
    }

    /// [`Tier::with_etcd`] on a node described by `shape` (over
    /// [`Node::description`], etcd's metrics port free) before its
    /// manifests are generated.
    fn shaped(
        knobs: Value,
        shape: impl FnOnce(&mut ControlPlane),
        edit: impl FnOnce(&Node, &NodeEtcd),
    ) -> Option<Tier> {
        let tools = require()?;
        let turn = serial();
        let ctrd = Containerd::start(&tools);
        let ep = ctrd.endpoint();
        let mut all = json!({
            "runtimeEndpoint": ep,
            "runtime": { "crictl": tools.crictl, "endpoint": ep },
        });
        support::node::merge(&mut all, &knobs);
        // etcd's metrics URL (and so its probes, as kubeadm writes them
        // from `listen-metrics-urls`) on a free port too: real etcd binds
        // it, on the host's network.
        let mut node = Node::prepare_with("ecdsa", all, |cp| {
            cp.etcd_metrics_port = free_port();
            shape(cp);
        });
        let etcd = NodeEtcd {
            client: node.etcd_client_port(),
            peer: node.kubeadm.etcd_peer_port,
        };
        edit(&node, &etcd);
        // The runbook's crictl is the real one.
        let link = node.sim.join("bin/crictl");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&tools.crictl, &link).unwrap();
        node.start_kubelet();
        let tier = Tier {
            node,
            ctrd,
            etcd,
            _turn: turn,
        };
        tier.wait("all four components running", 180, |t| {
            COMPONENTS.iter().all(|c| !t.node.running_ids(c).is_empty())
        });
        Some(tier)
    }

    /// From now on the runbook's crictl (still the real one) also writes
    /// each call's arguments to a log, read by [`Tier::crictl_calls`].
    fn log_crictl(&self) {
        let link = self.node.sim.join("bin/crictl");
        let real = std::fs::read_link(&link).unwrap();
        let log = self.node.sim.join("runbook-crictl.log");
        std::fs::remove_file(&link).unwrap();
        support::tree::write_executable(
            &link,
            &format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                real.display()
            ),
        );
    }

    /// The runbook's crictl calls since [`Tier::log_crictl`], one per line.
    fn crictl_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.node.sim.join("runbook-crictl.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Counts a renewal that ended `renewed` on this runtime.
    fn renewed(&self) {
        RENEWALS.fetch_add(1, Ordering::SeqCst);
    }

    fn endpoint(&self) -> String {
        self.ctrd.endpoint()
    }

    /// The runbook with the real crictl and this runtime endpoint.
    fn args<'a>(&'a self, ep: &'a str, args: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["--runtime-endpoint", ep];
        v.extend_from_slice(args);
        v
    }

    fn run(&self, args: &[&str]) -> (i32, Value, String) {
        let ep = self.endpoint();
        self.node.run(&self.args(&ep, args))
    }

    /// Polls `f` with back-off until it holds; panics after `secs` with the
    /// kubelet and containerd logs.
    fn wait(&self, what: &str, secs: u64, f: impl Fn(&Tier) -> bool) {
        if support::poll(secs, || f(self).then_some(())).is_some() {
            return;
        }
        panic!(
            "{what}: not within {secs} s\nkubelet log:\n{}\ncontainerd log:\n{}",
            support::tail(
                &std::fs::read_to_string(self.node.sim.join("kubelet.log")).unwrap_or_default(),
                6000
            ),
            self.ctrd.log()
        );
    }

    /// The running container ID of each component.
    fn ids(&self) -> Vec<String> {
        COMPONENTS
            .iter()
            .map(|c| {
                let ids = self.node.running_ids(c);
                assert_eq!(ids.len(), 1, "{c}: {ids:?}");
                ids[0].clone()
            })
            .collect()
    }
}

/// The tier's summary line, printed as each test's node goes: the tests
/// take turns, so the last one printed counts every renewal of the run.
impl Drop for Tier {
    fn drop(&mut self) {
        say(&format!(
            "containers: {} renewals on containerd",
            RENEWALS.load(Ordering::SeqCst)
        ));
    }
}

fn report_restarts(case: &str, v: &Value) {
    for r in v["restarts"].as_array().into_iter().flatten() {
        say(&format!(
            "containers: {case}: {} stop {} ms, healthy {} ms, total {} ms",
            r["component"].as_str().unwrap_or("?"),
            r["stopMs"],
            r["healthyMs"],
            r["totalMs"]
        ));
    }
}

#[test]
fn single_node_renewed_on_containerd() {
    let Some(t) = Tier::new(json!({})) else {
        return;
    };
    let before = t.ids();
    let vip_before = t.node.running_ids("kube-vip");
    // The sandboxes are the kubelet's: labels, annotations, host network.
    let pods = t.node.pods();
    let etcd_pod = pods
        .iter()
        .find(|p| p["labels"]["io.kubernetes.pod.name"] == "etcd-cp-1")
        .expect("etcd sandbox");
    assert_eq!(
        etcd_pod["annotations"]["kubernetes.io/config.source"],
        "file"
    );
    assert_eq!(etcd_pod["state"], "SANDBOX_READY");
    let id = etcd_pod["id"].as_str().unwrap();
    let out = t.ctrd.crictl(&["inspectp", "-o", "json", id]);
    let inspect: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        inspect["status"]["linux"]["namespaces"]["options"]["network"], "NODE",
        "{inspect:#}"
    );

    let t0 = Instant::now();
    let (code, v, stderr) = t.run(&["--operation-id", "op-ctr", "--force"]);
    let took = t0.elapsed();
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(restarted(&v), COMPONENTS);
    let after = t.ids();
    for (i, c) in COMPONENTS.iter().enumerate() {
        let r = &v["restarts"][i];
        assert_eq!(r["oldContainerID"], before[i].as_str(), "{c}");
        assert_eq!(r["newContainerID"], after[i].as_str(), "{c}");
        assert_ne!(before[i], after[i], "{c}");
        // The old one is still listed, exited, until garbage collection.
        let old: Vec<Value> = t
            .node
            .containers(c)
            .into_iter()
            .filter(|x| x["id"] == before[i].as_str())
            .collect();
        assert_eq!(old.len(), 1, "{c}");
        assert_eq!(old[0]["state"], "CONTAINER_EXITED", "{c}");
    }
    assert_eq!(t.node.running_ids("kube-vip"), vip_before);
    t.node.assert_all_active();
    report_restarts("single node", &v);
    say(&format!(
        "containers: single node renewed in {} ms (runbook wall clock)",
        took.as_millis()
    ));
}

#[test]
fn sigterm_mid_restart_cancels_and_puts_the_manifest_back() {
    let Some(t) = Tier::new(json!({})) else {
        return;
    };
    let ep = t.endpoint();
    let child = t
        .node
        .command(&t.args(&ep, &["--operation-id", "op-term", "--force"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // SIGTERM once kube-apiserver is staged (after etcd's restart).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut nap = Duration::from_millis(5);
    while !t.node.staged("kube-apiserver").exists() {
        assert!(Instant::now() < deadline, "kube-apiserver never staged");
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        (out.status.code(), v["outcome"].as_str()),
        (Some(1), Some("cancelled")),
        "{v:#}"
    );
    t.node.assert_all_active();
    assert_eq!(t.node.receipt("op-term").unwrap()["outcome"], "cancelled");
    // The kubelet brings kube-apiserver back: a running container again.
    t.wait("kube-apiserver running again", 120, |t| {
        t.node.running_ids("kube-apiserver").len() == 1
    });
}

#[test]
fn an_unrelated_kube_system_pod_with_an_etcd_container_is_never_judged() {
    let Some(t) = Tier::new(json!({
        "apiPods": [{"name": "etcd-backup-29123", "namespace": "kube-system", "containers": ["etcd"]}]
    })) else {
        return;
    };
    t.wait("the backup pod's etcd container running", 120, |t| {
        t.node.running_ids("etcd").len() == 2
    });
    let backup: Vec<String> = t
        .node
        .containers("etcd")
        .into_iter()
        .filter(|c| c["labels"]["io.kubernetes.pod.name"] == "etcd-backup-29123")
        .filter_map(|c| c["id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(backup.len(), 1);
    let (code, v, stderr) = t.run(&["--operation-id", "op-api", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    let etcd = &v["restarts"][0];
    assert_eq!(etcd["component"], "etcd");
    assert_ne!(etcd["oldContainerID"], backup[0].as_str(), "{v:#}");
    assert_ne!(etcd["newContainerID"], backup[0].as_str(), "{v:#}");
    // The backup pod's container was never touched.
    assert!(t.node.running_ids("etcd").contains(&backup[0]));
    report_restarts("with an API pod's etcd", &v);
}

/// Waits (bounded, polled) until `c`'s manifest is staged by the runbook
/// running as `child`.
fn wait_staged(t: &Tier, c: &str, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut nap = Duration::from_millis(5);
    while !t.node.staged(c).exists() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the runbook ended ({st}) before {c} was staged");
        }
        assert!(Instant::now() < deadline, "{c} never staged");
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    }
}

#[test]
fn sigkill_mid_restart_then_fence_then_the_next_operation_resumes() {
    let Some(t) = Tier::new(json!({})) else {
        return;
    };
    // The runbook finds the endpoint as the kubelet's (config.yaml): the
    // fencing check and the next operation are the controller's plain calls.
    let ep = t.endpoint();
    t.node.write_kubelet_config(Some(&ep));
    let mut child = t
        .node
        .command(&["--operation-id", "op-kill", "--force"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_staged(&t, "kube-apiserver", &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let phase: Value = serde_json::from_str(&t.node.phase()).unwrap();
    assert_eq!(
        (phase["state"].as_str(), phase["nextComponent"].as_str()),
        (Some("restart_pending"), Some("kube-apiserver")),
        "{phase:#}"
    );
    // The staged manifest is the kubelet's cue: the real container stops.
    t.wait("kube-apiserver stopped after the kill", 60, |t| {
        t.node.running_ids("kube-apiserver").is_empty()
    });
    // The controller's fencing check puts the manifest back.
    t.node.fence("op-kill");
    assert_eq!(t.node.receipt("op-kill").unwrap()["outcome"], "abandoned");
    t.node.assert_all_active();
    t.wait("kube-apiserver running again after the fence", 120, |t| {
        t.node.running_ids("kube-apiserver").len() == 1
    });
    // A delayed attempt of op-kill is fenced.
    let (code, _, _) = t.node.run(&["--operation-id", "op-kill"]);
    assert_eq!(code, 5);
    // The next operation finishes op-kill's restarts from kube-apiserver.
    let before = t.ids();
    let (code, v, stderr) = t.node.run(&["--operation-id", "op-resume"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(v["runtimeEndpoint"]["source"], "kubelet-config", "{v:#}");
    assert_eq!(v["runtimeEndpoint"]["endpoint"], ep.as_str(), "{v:#}");
    assert_eq!(restarted(&v), &COMPONENTS[1..]);
    let after = t.ids();
    assert_eq!(after[0], before[0], "etcd was not restarted again");
    for i in 1..4 {
        assert_ne!(after[i], before[i], "{}", COMPONENTS[i]);
    }
    t.node.assert_all_active();
    report_restarts("resumed after SIGKILL", &v);
}

/// SPEC 9: nothing names the endpoint (no `--runtime-endpoint`, no kubelet
/// configuration, no `/etc/crictl.yaml` on this machine): the real crictl
/// tries its defaults, none answers, and the gate refuses at once, naming
/// crictl's configuration; nothing is staged. Then the kubelet's
/// endpoint (kubeadm-flags.env) renews.
#[test]
fn no_runtime_endpoint_configured_is_refused_at_once() {
    // crictl's defaults (cmd/crictl/main_unix.go) and its config file.
    let found: Vec<&str> = [
        "/etc/crictl.yaml",
        "/run/containerd/containerd.sock",
        "/run/crio/crio.sock",
        "/var/run/cri-dockerd.sock",
    ]
    .into_iter()
    .filter(|p| std::path::Path::new(p).exists())
    .collect();
    if !found.is_empty() {
        support::say(&format!(
            "SKIPPED: containers tier: this machine configures crictl ({}): not 'nothing configured'",
            found.join(", ")
        ));
        return;
    }
    let Some(t) = Tier::new(json!({})) else {
        return;
    };
    let t0 = Instant::now();
    let (code, v, stderr) = t.node.run(&[
        "--operation-id",
        "op-noep",
        "--force",
        "--health-timeout",
        "60",
    ]);
    let took = t0.elapsed();
    assert_eq!(
        (code, v["phase"].as_str()),
        (1, Some("health")),
        "{v:#}\n{stderr}"
    );
    let msg = v["message"].as_str().unwrap_or_default();
    // At once: a structural refusal, not the gate's timeout.
    assert!(!msg.contains("did not pass within"), "{msg}");
    assert!(
        msg.contains("cannot be reached") && msg.contains("crictl"),
        "{msg}"
    );
    assert_eq!(v["runtimeEndpoint"]["source"], "crictl", "{v:#}");
    t.node.assert_all_active();
    say(&format!(
        "containers: no endpoint configured: refused in {} ms",
        took.as_millis()
    ));

    // The kubelet's flag (kubeadm-flags.env): the endpoint it uses.
    let ep = t.endpoint();
    t.node.write_kubeadm_flags(&ep);
    let (code, v, stderr) = t.node.run(&["--operation-id", "op-flags", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(v["runtimeEndpoint"]["source"], "kubeadm-flags", "{v:#}");
    assert_eq!(restarted(&v), COMPONENTS);
    report_restarts("kubelet's endpoint (kubeadm-flags.env)", &v);
}

/// SPEC 9: an endpoint the real crictl 1.36 cannot use at all fails the
/// gate at once (phase `health`), naming the endpoint and where it came
/// from, never polled for `--health-timeout`: `tcp://` (crictl: "only
/// support unix socket endpoint"), `npipe://` ("protocol \"npipe\" not
/// supported"), a regular file where the socket should be (its dial is
/// refused), each given as `--runtime-endpoint` and in kubeadm-flags.env.
/// No runtime needs to run for this: the node's tree and the real crictl.
#[test]
fn an_endpoint_crictl_cannot_use_is_refused_at_once_naming_its_source() {
    let Some(tools) = require() else {
        return;
    };
    let node = Node::prepare("ecdsa", json!({}));
    let link = node.sim.join("bin/crictl");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&tools.crictl, &link).unwrap();
    let file = node.sim.join("not-a-socket");
    std::fs::write(&file, b"").unwrap();
    let file_ep = format!("unix://{}", file.display());
    for (ep, crictl_says) in [
        ("tcp://127.0.0.1:10010", "only support unix socket endpoint"),
        (
            "npipe:////./pipe/containerd-containerd",
            "protocol \"npipe\" not supported",
        ),
        (file_ep.as_str(), "connect: connection refused"),
    ] {
        for (how, source) in [
            ("flag", "--runtime-endpoint"),
            ("flags-file", "kubeadm-flags.env"),
        ] {
            let id = format!("op-ep-{how}-{}", ep.len());
            let mut args = vec![
                "--operation-id",
                id.as_str(),
                "--force",
                "--health-timeout",
                "60",
            ];
            if how == "flag" {
                args.extend(["--runtime-endpoint", ep]);
            } else {
                node.write_kubeadm_flags(ep);
            }
            let t0 = Instant::now();
            let (code, v, stderr) = node.run(&args);
            let took = t0.elapsed();
            assert_eq!(
                (code, v["phase"].as_str()),
                (1, Some("health")),
                "{ep}: {v:#}\n{stderr}"
            );
            let msg = v["message"].as_str().unwrap_or_default();
            assert!(!msg.contains("did not pass within"), "{ep}: at once: {msg}");
            assert!(
                msg.contains(ep) && msg.contains(source),
                "{ep}: names it and {source}: {msg}"
            );
            assert!(msg.contains(crictl_says), "{ep}: {msg}");
            assert!(
                !msg.contains("crictl.yaml"),
                "{ep}: not crictl's config warning: {msg}"
            );
            assert!(took < Duration::from_secs(30), "{ep}: {took:?}");
            node.assert_all_active();
            say(&format!(
                "containers: endpoint {ep} ({how}): refused in {} ms",
                took.as_millis()
            ));
        }
    }
}

// ---------------------------------------------------------------------------
// More than one etcd member: the node's (in its container) and real etcd
// members on the host (tests/support/etcd_cluster.rs says why on the host).

/// The node's etcd manifest names `initial` as its initial cluster and
/// `state` as its initial cluster state (and pre-votes, as etcd 3.5 does).
fn node_cluster(node: &Node, etcd: &NodeEtcd, initial: &str, state: &str) {
    let p = node.manifest("etcd");
    let s = std::fs::read_to_string(&p).unwrap();
    let from = format!("- --initial-cluster={}\n", etcd.initial());
    assert!(s.contains(&from), "{s}");
    let to = format!(
        "- --initial-cluster={initial}\n    - --initial-cluster-state={state}\n    - --pre-vote=true\n"
    );
    std::fs::write(&p, s.replace(&from, &to)).unwrap();
}

/// The cluster as a member answers: (member ID, name, learner) of each
/// member, and the ID of the member that answered.
type Membership = (Vec<(u64, String, bool)>, u64);

fn membership(m: &Members, ep: &str) -> Option<Membership> {
    let v = m.member_list(ep)?;
    let me = v["header"]["member_id"].as_u64()?;
    let list = v["members"]
        .as_array()?
        .iter()
        .map(|x| {
            (
                x["ID"].as_u64().unwrap_or_default(),
                x["name"].as_str().unwrap_or_default().to_string(),
                x["isLearner"] == true,
            )
        })
        .collect();
    Some((list, me))
}

/// Every member started (named) and a voter, `n` of them, each healthy.
fn all_healthy_voters(m: &Members, ep: &str, n: usize) -> bool {
    let Some((list, _)) = membership(m, ep) else {
        return false;
    };
    let health = m.cluster_health(ep);
    list.len() == n
        && list
            .iter()
            .all(|(_, name, learner)| !name.is_empty() && !learner)
        && health.len() == n
        && health.iter().all(|(_, ok)| *ok)
}

/// The node and `extra` host members bootstrapped as one cluster of
/// voters, every member healthy.
fn cluster(extra: usize) -> Option<(Tier, Members)> {
    let mut made = None;
    let t = Tier::with_etcd(json!({}), |node, etcd| {
        let m = Members::new(&node.root, extra);
        let initial: Vec<String> = std::iter::once(etcd.initial())
            .chain(m.list.iter().map(|x| x.initial()))
            .collect();
        let initial = initial.join(",");
        node_cluster(node, etcd, &initial, "new");
        made = Some((m, initial));
    })?;
    let (mut m, initial) = made.unwrap();
    for x in &mut m.list {
        x.start(&initial, "new");
    }
    let ep = t.etcd.client_url();
    m.wait(&format!("{} healthy etcd voters", extra + 1), 120, |m| {
        all_healthy_voters(m, &ep, extra + 1)
    });
    Some((t, m))
}

/// What a refusal must leave as it was.
/// A forced renewal under `op` with `--health-timeout secs` that must be
/// refused in `phase` with nothing changed ([`Before::assert_refused`]):
/// its message, its stderr and how long it took.
fn refused(t: &Tier, op: &str, secs: &str, phase: &str) -> (String, String, Duration) {
    let b = Before::take(t);
    let t1 = Instant::now();
    let (code, v, stderr) = t.run(&["--operation-id", op, "--force", "--health-timeout", secs]);
    let took = t1.elapsed();
    b.assert_refused(t, op, code, &v, phase);
    let msg = v["message"].as_str().unwrap_or_default().to_string();
    (msg, stderr, took)
}

struct Before {
    etc: support::tree::Snapshot,
    ids: Vec<String>,
}

impl Before {
    fn take(t: &Tier) -> Before {
        Before {
            etc: support::tree::snapshot(&t.node.root.join("etc/kubernetes"), false),
            ids: t.ids(),
        }
    }

    /// Refused (exit 1, outcome `failed`, `phase`), and nothing on the
    /// node changed: /etc/kubernetes as it was (manifests, PKI,
    /// kubeconfigs), all four manifests active, the same containers
    /// running, kubeadm never called, no phase recorded, no backup, and
    /// the one receipt `failed` with every manifest `active`.
    fn assert_refused(&self, t: &Tier, op: &str, code: i32, v: &Value, phase: &str) {
        assert_eq!(
            (code, v["outcome"].as_str(), v["phase"].as_str()),
            (1, Some("failed"), Some(phase)),
            "{v:#}"
        );
        let changed = support::tree::diff(
            &self.etc,
            &support::tree::snapshot(&t.node.root.join("etc/kubernetes"), false),
        );
        assert!(changed.is_empty(), "/etc/kubernetes changed: {changed:#?}");
        t.node.assert_all_active();
        assert_eq!(t.ids(), self.ids, "containers restarted");
        assert_eq!(t.node.kubeadm_calls(), "", "kubeadm was called");
        assert_eq!(t.node.phase(), "", "a phase was recorded");
        let backups = t.node.state().join("backup");
        assert!(
            std::fs::read_dir(&backups).map_or(true, |mut d| d.next().is_none()),
            "a backup was made"
        );
        let r = t.node.receipt(op).expect("its receipt");
        assert_eq!(
            (r["outcome"].as_str(), r["phase"].as_str()),
            (Some("failed"), Some(phase)),
            "{r:#}"
        );
        for c in COMPONENTS {
            assert_eq!(r["manifests"][c], "active", "{c}: {r:#}");
        }
    }
}

#[test]
fn three_etcd_voters_renewed_and_the_cluster_keeps_quorum() {
    let t0 = Instant::now();
    let Some((t, m)) = cluster(2) else {
        return;
    };
    let setup = t0.elapsed();
    let ep = t.etcd.client_url();
    let (members_before, me) = membership(&m, &ep).unwrap();
    let before = t.ids();
    t.log_crictl();
    // Writes through the two other members all along the renewal: they
    // fail if the cluster loses quorum while the node's member restarts.
    let others: Vec<String> = m.list.iter().map(|x| x.client_url()).collect();
    let others = others.join(",");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let t1 = Instant::now();
    let ((code, v, stderr), (ok, failed)) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let (mut ok, mut failed) = (0u32, Vec::new());
            while !stop.load(Ordering::SeqCst) {
                let key = format!("nvke/quorum/{ok}-{}", failed.len());
                let out = m.etcdctl(&others, &["put", &key, "x"]);
                if out.status.success() {
                    ok += 1;
                } else {
                    failed.push(String::from_utf8_lossy(&out.stderr).trim().to_string());
                }
                std::thread::sleep(Duration::from_millis(200)); // pacing only
            }
            (ok, failed)
        });
        // The writer stops however the run ends (a panic in it too), so
        // the scope never waits on it forever.
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let r = {
            let _stop = Stop(&stop);
            t.run(&["--operation-id", "op-3v", "--force"])
        };
        (r, writer.join().unwrap())
    });
    let took = t1.elapsed();
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(v["etcd"]["voters"], 3, "{v:#}");
    assert_eq!(restarted(&v), COMPONENTS);
    // SPEC 4 step 7 (v1.2): real etcd asked directly: no crictl exec.
    let calls = t.crictl_calls();
    assert!(!calls.is_empty());
    assert!(!calls.iter().any(|c| c.contains("exec")), "{calls:#?}");
    let after = t.ids();
    for (i, c) in COMPONENTS.iter().enumerate() {
        assert_ne!(before[i], after[i], "{c}");
    }
    t.node.assert_all_active();
    // The cluster kept quorum: every write through the others went in.
    assert!(
        failed.is_empty(),
        "{} writes failed: {failed:#?}",
        failed.len()
    );
    assert!(ok > 0, "no write ran during the renewal");
    // The node's member is back: the same member (it rejoined with its
    // data), a voter, healthy, and all three voters healthy.
    m.wait("three healthy voters after the renewal", 60, |m| {
        all_healthy_voters(m, &ep, 3)
    });
    let (members_after, me_after) = membership(&m, &ep).unwrap();
    assert_eq!(me_after, me, "the node's member was replaced");
    assert_eq!(members_after, members_before);
    // And it serves linearizable reads of what was written meanwhile.
    let out = m.etcdctl(
        &ep,
        &[
            "get",
            "--prefix",
            "--keys-only",
            "-w",
            "json",
            "nvke/quorum/",
        ],
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(got["count"], ok, "{}", String::from_utf8_lossy(&out.stderr));
    report_restarts("three voters", &v);
    say(&format!(
        "containers: three voters: renewed in {} ms (runbook wall clock), {ok} writes through the others, none failed; setup {} ms",
        took.as_millis(),
        setup.as_millis()
    ));
}

/// SPEC 11 for real: a three-member etcd cluster (the node's member in its
/// container, two on the host) whose server and peer certificates have all
/// expired (re-signed by the node's etcd CA with notAfter in the past) and
/// whose members restarted: no handshake passes, so no quorum. A plain
/// renewal refuses at once; `--recover-expired` renews and restarts the
/// node's four components, its etcd member serving the renewed
/// certificates, and reports the missing quorum; renewing the two host
/// members' certificates, as the same recovery on their nodes would, brings
/// quorum back; then `--check` decides and a renewal's whole gate passes.
#[test]
fn recover_expired_brings_an_expired_etcd_cluster_back() {
    let Some((t, mut m)) = cluster(2) else {
        return;
    };
    let t0 = Instant::now();
    let ep = t.etcd.client_url();
    let etcd_pki = t.node.root.join("etc/kubernetes/pki/etcd");
    let (ca_crt, ca_key) = (etcd_pki.join("ca.crt"), etcd_pki.join("ca.key"));
    // Expired before the tests' clock (--now 2026-11-30) and the real one.
    let (old_start, old_end) = ("20250601000000Z", "20251201000000Z");
    let mut dirs = vec![etcd_pki.clone()];
    dirs.extend(m.list.iter().map(|x| x.pki().to_path_buf()));
    for d in &dirs {
        for leaf in ["server", "peer"] {
            support::tree::resign(
                &ca_crt,
                &ca_key,
                &d.join(format!("{leaf}.crt")),
                &d.join(format!("{leaf}.key")),
                old_start,
                old_end,
            );
        }
    }
    // Every connection a new handshake: the host members restart (the
    // node's member then cannot reach them, nor they it).
    let initial: Vec<String> = std::iter::once(t.etcd.initial())
        .chain(m.list.iter().map(|x| x.initial()))
        .collect();
    let initial = initial.join(",");
    for x in &mut m.list {
        x.kill();
        x.start(&initial, "existing");
    }
    let b = Before::take(&t);
    let (code, v, e) = t.run(&["--operation-id", "op-plain", "--force"]);
    b.assert_refused(&t, "op-plain", code, &v, "expiry");
    let msg = v["message"].as_str().unwrap();
    assert!(msg.contains("--recover-expired"), "{msg}\n{e}");
    let before = t.ids();
    let t1 = Instant::now();
    let (code, v, stderr) = t.run(&[
        "--operation-id",
        "op-recover",
        "--recover-expired",
        "--health-timeout",
        "60",
    ]);
    let took = t1.elapsed();
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(v["recovery"], true, "{v:#}");
    assert_eq!(restarted(&v), COMPONENTS);
    let after = t.ids();
    for (i, c) in COMPONENTS.iter().enumerate() {
        assert_ne!(before[i], after[i], "{c}");
    }
    let health = v["healthAtEnd"].as_str().unwrap().to_string();
    assert!(
        health.starts_with("not healthy yet: "),
        "the other members still hold expired certificates: {health}"
    );
    let receipt = t.node.receipt("op-recover").unwrap();
    assert_eq!(receipt["recovery"], true, "{receipt:#}");
    report_restarts("recovery", &v);
    // The two host members renewed, as their own recovery would, and
    // restarted: the cluster has quorum again, the node's member among it.
    let now = time::OffsetDateTime::now_utc();
    let stamp = |t: time::OffsetDateTime| {
        format!(
            "{:04}{:02}{:02}{:02}{:02}{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    };
    let (start, end) = (
        stamp(now - time::Duration::days(400)),
        stamp(now + time::Duration::days(365)),
    );
    for x in &mut m.list {
        for leaf in ["server", "peer"] {
            support::tree::resign(
                &ca_crt,
                &ca_key,
                &x.pki().join(format!("{leaf}.crt")),
                &x.pki().join(format!("{leaf}.key")),
                &start,
                &end,
            );
        }
        x.kill();
        x.start(&initial, "existing");
    }
    m.wait("three healthy voters after the recovery", 120, |m| {
        all_healthy_voters(m, &ep, 3)
    });
    // --check decides, and a renewal's whole gate passes (quorum included).
    let (code, c, _) = t.run(&["--check"]);
    assert_eq!(code, 0, "{c:#}");
    let (code, v, stderr) = t.run(&["--operation-id", "op-after", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(v["etcd"]["voters"], 3, "{v:#}");
    say(&format!(
        "containers: recovery: refused at once, recovered in {} ms (runbook wall clock; health at the end: {health}), quorum back {} ms after the start",
        took.as_millis(),
        t0.elapsed().as_millis()
    ));
    say("recovery: 3 expired nodes brought back on containerd (this node by --recover-expired, the two host members renewed as their recovery would)");
}

/// SPEC 4 step 7 (v1.2): real etcd with its JSON gateway off
/// (`--enable-grpc-gateway=false`) answers 404: the runbook falls back to
/// etcdctl through `crictl exec`, says so, and renews.
#[test]
fn the_gateway_off_falls_back_to_etcdctl_in_the_container() {
    let Some(t) = Tier::with_etcd(json!({}), |node, _| {
        let p = node.manifest("etcd");
        let s = std::fs::read_to_string(&p).unwrap();
        let s = s.replacen(
            "    - --cert-file=",
            "    - --enable-grpc-gateway=false\n    - --cert-file=",
            1,
        );
        assert!(s.contains("--enable-grpc-gateway=false"));
        std::fs::write(&p, s).unwrap();
    }) else {
        return;
    };
    t.log_crictl();
    let (code, v, stderr) = t.run(&["--operation-id", "op-gw-off", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(restarted(&v), COMPONENTS);
    let calls = t.crictl_calls();
    assert!(
        calls
            .iter()
            .any(|c| c.contains(" exec ") && c.contains("etcdctl") && c.contains("member list")),
        "{calls:#?}"
    );
    assert_eq!(
        stderr.matches("etcd's JSON gateway answered 404").count(),
        1,
        "{stderr}"
    );
    report_restarts("gateway off (etcdctl)", &v);
}

#[test]
fn two_etcd_voters_are_refused_at_once_and_nothing_changes() {
    let t0 = Instant::now();
    let Some((t, m)) = cluster(1) else {
        return;
    };
    let setup = t0.elapsed();
    let ep = t.etcd.client_url();
    let members = membership(&m, &ep).unwrap();
    let (msg, stderr, took) = refused(&t, "op-2v", "120", "two-control-plane-voters");
    assert!(
        msg.contains("etcd has exactly two voters: losing one loses quorum; never renewed"),
        "{msg}\n{stderr}"
    );
    // Structural: at once, not the gate's timeout after 120 s.
    assert!(!msg.contains("did not pass within"), "{msg}");
    // The cluster as it was: the same two voters, both healthy.
    assert_eq!(membership(&m, &ep).unwrap(), members);
    assert!(all_healthy_voters(&m, &ep, 2));
    say(&format!(
        "containers: two voters: refused in {} ms; setup {} ms",
        took.as_millis(),
        setup.as_millis()
    ));
}

#[test]
fn an_etcd_learner_is_refused_at_once_and_nothing_changes() {
    let t0 = Instant::now();
    let mut made = None;
    let Some(t) = Tier::with_etcd(json!({}), |node, _| {
        made = Some(Members::new(&node.root, 1));
    }) else {
        return;
    };
    let mut m = made.unwrap();
    let ep = t.etcd.client_url();
    m.wait("the node's etcd healthy, alone", 120, |m| {
        all_healthy_voters(m, &ep, 1)
    });
    // kubeadm's learner join: `member add --learner`, then the member
    // starts with the cluster as it is.
    let peer = m.list[0].peer_url();
    let out = m.etcdctl(
        &ep,
        &[
            "member",
            "add",
            "cp-2",
            "--learner",
            &format!("--peer-urls={peer}"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let initial = format!("{},{}", t.etcd.initial(), m.list[0].initial());
    m.list[0].start(&initial, "existing");
    m.wait("cp-2 started as a learner", 120, |m| {
        membership(m, &ep).is_some_and(|(list, me)| {
            list.len() == 2
                && list
                    .iter()
                    .any(|(id, name, learner)| *id != me && name == "cp-2" && *learner)
                && list.iter().any(|(id, _, learner)| *id == me && !learner)
        })
    });
    let setup = t0.elapsed();
    let members = membership(&m, &ep).unwrap();
    let (msg, stderr, took) = refused(&t, "op-learner", "120", "health");
    assert!(
        msg.contains("etcd has 1 learner(s); refusing until membership is settled"),
        "{msg}\n{stderr}"
    );
    assert!(!msg.contains("did not pass within"), "at once: {msg}");
    assert_eq!(membership(&m, &ep).unwrap(), members);
    say(&format!(
        "containers: a learner: refused in {} ms; setup {} ms",
        took.as_millis(),
        setup.as_millis()
    ));
}

#[test]
fn an_unhealthy_etcd_member_is_refused_then_renewed_once_it_is_back() {
    let t0 = Instant::now();
    let Some((t, mut m)) = cluster(2) else {
        return;
    };
    let setup = t0.elapsed();
    let ep = t.etcd.client_url();
    // cp-3 goes down: still a voter, its endpoint refuses connections.
    m.list[1].kill();
    let down = m.list[1].client_url();
    m.wait("cp-3 seen down", 60, |m| {
        let h = m.cluster_health(&ep);
        h.len() == 3 && h.iter().all(|(e, ok)| *ok == (*e != down))
    });
    // Real etcdctl spends its whole --command-timeout on the dead endpoint
    // in every `endpoint health --cluster` (it answers only then): 30 s,
    // the runbook's cap. A 45 s health timeout leaves the first attempt
    // 15 s past etcdctl's answer (no race with crictl's exec on a loaded
    // machine), and the reason it gives is kept even when the last
    // attempt is cut short at the deadline.
    let (msg, stderr, took) = refused(&t, "op-down", "45", "health");
    assert!(
        msg.starts_with("local health gate did not pass within 45s")
            && msg.contains(
                "only 2 of 3 etcd voters are healthy; restarting this one needs 3 healthy"
            ),
        "{msg}\n{stderr}"
    );
    say(&format!(
        "containers: a member down: refused in {} ms (health timeout 45 s); setup {} ms",
        took.as_millis(),
        setup.as_millis()
    ));
    // cp-3 back (its data kept): the same gate passes and the node renews.
    let initial: Vec<String> = std::iter::once(t.etcd.initial())
        .chain(m.list.iter().map(|x| x.initial()))
        .collect();
    m.list[1].start(&initial.join(","), "new");
    m.wait("three healthy voters again", 120, |m| {
        all_healthy_voters(m, &ep, 3)
    });
    let t2 = Instant::now();
    let (code, v, stderr) = t.run(&["--operation-id", "op-back", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(restarted(&v), COMPONENTS);
    m.wait("three healthy voters after the renewal", 60, |m| {
        all_healthy_voters(m, &ep, 3)
    });
    say(&format!(
        "containers: the member back: renewed in {} ms (runbook wall clock)",
        t2.elapsed().as_millis()
    ));
}

/// SPEC 4 step 7: "this member is a voter". The node's member joined as a
/// learner (kubeadm's learner join, not yet promoted) of cp-2's cluster.
/// Real etcd 3.4 does not serve `member list` (nor the member list under
/// `endpoint health --cluster`) from a learner ("rpc not supported for
/// learner"), and the runbook asks its local endpoint: it never reads the
/// list that would say "learner"; it knows itself a learner by that
/// refusal, and refuses at once (phase `health`), nothing changed.
#[test]
fn the_nodes_own_member_as_a_learner_is_refused_and_nothing_changes() {
    let t0 = Instant::now();
    let mut made = None;
    let Some(t) = Tier::with_etcd(json!({}), |node, etcd| {
        let mut m = Members::new(&node.root, 1);
        let initial = m.list[0].initial();
        m.list[0].start(&initial, "new");
        let ep2 = m.list[0].client_url();
        m.wait("cp-2 healthy, alone", 120, |m| {
            all_healthy_voters(m, &ep2, 1)
        });
        let out = m.etcdctl(
            &ep2,
            &[
                "member",
                "add",
                "cp-1",
                "--learner",
                &format!("--peer-urls={}", etcd.peer_url()),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        node_cluster(
            node,
            etcd,
            &format!("{initial},{}", etcd.initial()),
            "existing",
        );
        made = Some(m);
    }) else {
        return;
    };
    let m = made.unwrap();
    let ep2 = m.list[0].client_url();
    m.wait("cp-1 (the node's) started as a learner", 120, |m| {
        membership(m, &ep2).is_some_and(|(list, _)| {
            list.len() == 2
                && list
                    .iter()
                    .any(|(_, name, learner)| name == "cp-1" && *learner)
        })
    });
    let setup = t0.elapsed();
    let members = membership(&m, &ep2).unwrap();
    let (msg, stderr, took) = refused(&t, "op-me-learner", "10", "health");
    // A structural refusal on the first attempt (SPEC 4 step 7: at once),
    // not the gate's timeout: etcd 3.4 tells a learner only by refusing it
    // the member list ("rpc not supported for learner").
    assert!(msg.contains("learner, not a voter"), "{msg}\n{stderr}");
    assert!(!msg.contains("did not pass within"), "{msg}");
    assert_eq!(membership(&m, &ep2).unwrap(), members);
    say(&format!(
        "containers: the node's member a learner: refused in {} ms (health timeout 10 s): {msg}; setup {} ms",
        took.as_millis(),
        setup.as_millis()
    ));
}

/// The operator view on containerd (SPEC 6, 10), until it says what
/// `done` wants (bounded).
fn view_until(t: &Tier, what: &str, done: impl Fn(i32, &Value) -> bool) -> (i32, Value) {
    let mut last = (0, Value::Null);
    let found = support::poll(60, || {
        let (code, v, _) = t.run(&["--status-only"]);
        let ok = done(code, &v);
        last = (code, v);
        ok.then_some(())
    });
    assert!(found.is_some(), "{what}: {:#}", last.1["live"]);
    last
}

fn live_pod<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["live"]["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no live pod {name}: {:#}", v["live"]))
}

/// SPEC 6, 10: kube-apiserver's container stopped by hand (`crictl
/// stop`), its manifest in place: the operator view says it is not
/// running, with its exit code, and exits 4 (ACTION NEEDED).
#[test]
fn a_container_stopped_by_hand_is_action_needed() {
    let Some(mut t) = Tier::new(json!({})) else {
        return;
    };
    let (code, v) = view_until(&t, "clean on containerd", |c, _| c == 0);
    assert_eq!(code, 0);
    for c in COMPONENTS {
        assert_eq!(live_pod(&v, c)["state"], "healthy", "{c}");
    }
    // The kubelet would start it again: not this one.
    t.node.set_knobs(json!({"neverStart": ["kube-apiserver"]}));
    let id = t.node.running_ids("kube-apiserver").remove(0);
    let out = t.ctrd.crictl(&["stop", "--timeout", "5", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, v) = view_until(&t, "kube-apiserver not running", |_, v| {
        live_pod(v, "kube-apiserver")["state"] == "not_running"
    });
    assert_eq!(code, 4, "{:#}", v["live"]);
    let api = live_pod(&v, "kube-apiserver");
    assert_eq!(api["container"]["id"], id.as_str());
    assert!(api["container"]["exitCode"].is_number(), "{api:#}");
    assert!(v["message"]
        .as_str()
        .unwrap()
        .contains("kube-apiserver not running: exited "));
    say(&format!(
        "containers: crictl stop of kube-apiserver: the view says {:?}, exit {code}",
        api["summary"].as_str().unwrap_or("")
    ));
}

/// SPEC 10 "Restart needed", against real etcd (Debian's) on containerd: its
/// serving certificate renewed (the simulated kubeadm, `certs renew
/// etcd-server`) without a restart. Real etcd serves the new file at once
/// (it reads its files at every new TLS connection: port 2379 serves
/// `current`), and the view still says etcd needs a restart: its container
/// is older than its files. Exit 1.
#[test]
fn real_etcd_serves_a_renewed_file_at_once_and_still_needs_a_restart() {
    let Some(t) = Tier::new(json!({})) else {
        return;
    };
    view_until(&t, "clean on containerd", |c, _| c == 0);
    let before = std::fs::read(t.node.root.join("etc/kubernetes/pki/etcd/server.crt")).unwrap();
    let out = std::process::Command::new(t.node.sim.join("bin/kubeadm"))
        .args(["certs", "renew", "etcd-server", "--rootfs"])
        .arg(&t.node.root)
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read(t.node.root.join("etc/kubernetes/pki/etcd/server.crt")).unwrap();
    assert_ne!(before, after, "kubeadm renewed etcd's serving certificate");
    let (code, v) = view_until(&t, "etcd restart needed", |_, v| {
        live_pod(v, "etcd")["state"] == "restart_needed"
    });
    assert_eq!(code, 1, "{:#}", v["live"]);
    let etcd = live_pod(&v, "etcd");
    let client = etcd["served"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["file"] == "/etc/kubernetes/pki/etcd/server.crt")
        .unwrap();
    assert_eq!(
        client["served"], "current",
        "real etcd serves the new file: {etcd:#}"
    );
    assert!(etcd["findings"][0]["message"]
        .as_str()
        .unwrap()
        .starts_with("restart needed: /etc/kubernetes/pki/etcd/server.crt renewed "));
    say(
        "containers: real etcd serves its renewed server.crt at once; the view says restart needed",
    );
}

/// An address of this host for the IPv6 case, on `lo` while it lives (a
/// documentation-range ULA no network routes).
struct HostAddress(&'static str);

impl HostAddress {
    fn add(cidr: &'static str) -> HostAddress {
        let out = std::process::Command::new("ip")
            .args(["-6", "addr", "add", cidr, "dev", "lo"])
            .output()
            .expect("ip (iproute2)");
        assert!(
            out.status.success() || String::from_utf8_lossy(&out.stderr).contains("exists"),
            "ip -6 addr add {cidr}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        HostAddress(cidr)
    }
}

impl Drop for HostAddress {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["-6", "addr", "del", self.0, "dev", "lo"])
            .output();
    }
}

/// SPEC 12 (v1.3), IPv6: kubeadm on an IPv6 single-stack node advertising
/// `fd00:10::11` (a generator description): the node's real etcd listens
/// on `[::1]` and the node's IPv6 address (no IPv4 client URL at all),
/// advertises the latter and has its peer URL there; kube-apiserver's
/// `--etcd-servers` is `[::1]`, it binds `::` and is probed on the
/// advertise address. The view is clean with etcd healthy and its
/// `server.crt` served current, and a renewal restarts all four, real etcd
/// asked on `[::1]` throughout.
#[test]
fn a_real_etcd_on_ipv6_is_renewed() {
    let _addr = HostAddress::add("fd00:10::11/128");
    let Some(t) = Tier::shaped(
        json!({}),
        |cp| {
            cp.advertise = "fd00:10::11".parse().unwrap();
            cp.api_bind = Some("::".parse().unwrap());
        },
        |node, etcd| {
            let s = std::fs::read_to_string(node.manifest("etcd")).unwrap();
            let c = etcd.client;
            assert!(
                s.contains(&format!(
                    "--listen-client-urls=https://[::1]:{c},https://[fd00:10::11]:{c}\n"
                )),
                "{s}"
            );
            assert!(!s.contains("https://127.0.0.1:"), "{s}");
            // etcd's serving certificates name the node's address, as
            // kubeadm issues them for a node advertising it (its peers and
            // the view ask there).
            let pki = node.root.join("etc/kubernetes/pki/etcd");
            for leaf in ["server", "peer"] {
                support::tree::resign_with_sans(
                    &pki.join("ca.crt"),
                    &pki.join("ca.key"),
                    &pki.join(format!("{leaf}.crt")),
                    &pki.join(format!("{leaf}.key")),
                    ("20261101000000Z", "20270301000000Z"),
                    Some("DNS:localhost,DNS:cp-1,IP:127.0.0.1,IP:::1,IP:fd00:10::11"),
                );
            }
        },
    ) else {
        return;
    };
    let (code, v) = view_until(&t, "clean on containerd, etcd on [::1]", |c, _| c == 0);
    assert_eq!(code, 0);
    let etcd = live_pod(&v, "etcd");
    assert_eq!(etcd["health"], "healthy", "{etcd:#}");
    assert_eq!(etcd["served"][0]["served"], "current", "{etcd:#}");
    let (code, v, stderr) = t.run(&["--operation-id", "op-ctr-ipv6", "--force"]);
    assert_eq!(
        (code, v["outcome"].as_str()),
        (0, Some("renewed")),
        "{v:#}\n{stderr}"
    );
    t.renewed();
    assert_eq!(restarted(&v), COMPONENTS);
    t.node.assert_all_active();
    say("containers: ipv6: real etcd on [::1] and fd00:10::11 renewed");
}
