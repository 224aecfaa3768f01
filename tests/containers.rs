//! The containers tier: renewals against a real containerd 1.6 + runc
//! through the real crictl 1.36, the static pods run by the simulated
//! kubelet's CRI backend (tests/simnode/kubelet/cri.rs) with the kubelet's
//! labels and annotations, the real etcd 3.4 inside the etcd container and
//! the stand-ins inside theirs (tests/support/containers.rs).
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

use serde_json::{json, Value};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::MutexGuard;
use std::time::{Duration, Instant};
use support::containers::{require, serial, Containerd};
use support::node::*;
use support::say;

/// Renewals that ended `renewed` on containerd in this process.
static RENEWALS: AtomicU32 = AtomicU32::new(0);

/// A simulated node whose kubelet runs its static pods on a private
/// containerd. Drop order: the node (its kubelet), then containerd.
struct Tier {
    node: Node,
    ctrd: Containerd,
    _turn: MutexGuard<'static, ()>,
}

impl Tier {
    fn new(knobs: Value) -> Option<Tier> {
        let tools = require()?;
        let turn = serial();
        let ctrd = Containerd::start(&tools);
        let ep = ctrd.endpoint();
        let mut all = json!({
            "runtimeEndpoint": ep,
            "runtime": { "crictl": tools.crictl, "endpoint": ep },
        });
        support::node::merge(&mut all, &knobs);
        let mut node = Node::prepare("ecdsa", all);
        // etcd on free loopback ports only (host network, no 10.0.0.11 here).
        let (peer, metrics) = (free_port(), free_port());
        let p = node.manifest("etcd");
        let s = std::fs::read_to_string(&p).unwrap();
        let client = s
            .split("--listen-client-urls=https://127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .unwrap()
            .to_string();
        let s = s
            .replace(",https://10.0.0.11:2379", "")
            .replace(
                "https://10.0.0.11:2379",
                &format!("https://127.0.0.1:{client}"),
            )
            .replace("10.0.0.11:2380", &format!("127.0.0.1:{peer}"))
            .replace("127.0.0.1:2381", &format!("127.0.0.1:{metrics}"));
        std::fs::write(&p, s).unwrap();
        // The runbook's crictl is the real one.
        let link = node.sim.join("bin/crictl");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&tools.crictl, &link).unwrap();
        node.start_kubelet();
        let tier = Tier {
            node,
            ctrd,
            _turn: turn,
        };
        tier.wait("all four components running", 180, |t| {
            COMPONENTS.iter().all(|c| !t.node.running_ids(c).is_empty())
        });
        Some(tier)
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
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut nap = Duration::from_millis(50);
        while Instant::now() < deadline {
            if f(self) {
                return;
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(1000));
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
    assert!(took < Duration::from_secs(30), "at once: {took:?}");
    let msg = v["message"].as_str().unwrap_or_default();
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
