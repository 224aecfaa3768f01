//! The controller driver: what the product guide's controller does with the
//! embedded runbook (the legacy executor; this lab has no node agent), over
//! real SSH, parsing only the runbook's JSON documents:
//!
//! 1. **Acceptance**: exactly two control-plane nodes: refuse the cycle
//!    (phase `two-control-plane-voters`), dispatch nothing.
//! 2. **Push** the runbook to every node at a content-addressed path,
//!    `/var/lib/nvke/bin/nvke-cert-runbook-<sha256>`, skipping the copy when
//!    `sha256sum` of that path already matches.
//! 3. **Check** every node (`--check --output json`): a `failed` decision
//!    stops the cycle before any dispatch; `unchanged` nodes are skipped.
//! 4. For each node in turn: **cluster health** (etcd `endpoint health
//!    --cluster` and `member list` against all members from outside, with
//!    etcdctl; every node's `/readyz`; every node's four static pods running,
//!    `crictl ps -o json` over SSH), **renewal** with a fresh operation ID,
//!    **cluster health** again. A renewal attempt that ends without a JSON
//!    document (the SSH connection died, the process was killed) is retried
//!    with the *same* operation ID, like a Temporal activity retry, up to
//!    `max_attempts`; a definitive failure, or no result after the last
//!    attempt, stops the cycle and runs the **cleanup**: `--status-only
//!    --operation-id ID --fence --output json`, retried within the cleanup
//!    budget until termination is `confirmed`.

use crate::lab::{in_netns, Lab, Node, COMPONENTS, ETCDCTL};
use crate::tlsclient;
use serde::Serialize;
use serde_json::{json, Value};
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const RUNBOOK: &str = env!("CARGO_BIN_EXE_nvke-cert-runbook");

/// What a fault injector sees of a running renewal attempt.
pub struct AttemptCtx<'x> {
    pub node: &'x Node,
    pub op: &'x str,
    pub attempt: u32,
    /// The local `ssh` client process of this attempt.
    pub ssh_pid: u32,
    /// Set once the attempt's ssh client has exited.
    pub done: &'x AtomicBool,
}

pub type Hook<'h> = Box<dyn Fn(&AttemptCtx) + Sync + 'h>;

/// A `/readyz` answer: status and body, or why there was none.
pub type Readyz = Result<(u16, String), String>;

#[derive(Debug, Clone)]
pub struct Policy {
    /// Renewal attempts per node with the same operation ID (the first one
    /// plus activity retries after a lost result).
    pub max_attempts: u32,
    /// The separate budget to confirm termination after a failure.
    pub cleanup_budget: Duration,
    /// How long the cluster health gate may take to pass.
    pub health_timeout: Duration,
    pub threshold_days: u32,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_attempts: 3,
            cleanup_budget: Duration::from_secs(120),
            health_timeout: Duration::from_secs(90),
            threshold_days: 30,
        }
    }
}

/// One remote command's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Remote {
    pub command: String,
    pub exit_code: Option<i32>,
    /// The local ssh client was killed by this signal.
    pub ssh_signal: Option<i32>,
    /// The one JSON document on stdout, if there was exactly one.
    pub doc: Option<Value>,
    pub stderr_tail: String,
    pub started_ms: u64,
    pub ms: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub attempt: u32,
    pub result: Remote,
    /// No JSON document: the result was lost.
    pub lost: bool,
    /// The operator view (`--status-only --output json`, read-only) taken
    /// right after a lost attempt, before the retry.
    pub status_after_loss: Option<Value>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRun {
    pub node: String,
    pub decision: String,
    #[serde(rename = "operationID")]
    pub operation_id: Option<String>,
    pub attempts: Vec<Attempt>,
    /// The final renewal document (the last attempt's).
    pub result: Option<Value>,
    pub outcome: String,
    pub fencing: Vec<Remote>,
    pub health_before: Option<Value>,
    pub health_after: Option<Value>,
    /// The renewal window on the traffic clock (dispatch to result).
    pub window_ms: Option<(u64, u64)>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CycleReport {
    pub cycle_id: String,
    pub force: bool,
    pub state: String,
    pub phase: Option<String>,
    pub failed_node: Option<String>,
    pub message: String,
    pub pushes: Vec<Value>,
    pub checks: Vec<Value>,
    pub nodes: Vec<NodeRun>,
    pub started_ms: u64,
    pub finished_ms: u64,
}

impl CycleReport {
    pub fn node(&self, name: &str) -> Option<&NodeRun> {
        self.nodes.iter().find(|n| n.node == name)
    }
}

pub struct Controller<'a> {
    pub lab: &'a Lab,
    netns: File,
    pub runbook: PathBuf,
    pub sha256: String,
    pub remote_path: String,
    pub policy: Policy,
    api_cfg: std::sync::Arc<rustls::ClientConfig>,
    t0: Instant,
    /// Nodes this controller has seen holding the current binary.
    pushed: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

/// The runbook's contract: exactly one JSON object on one stdout line.
fn one_doc(stdout: &str) -> Option<Value> {
    let mut lines = stdout.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    serde_json::from_str::<Value>(first)
        .ok()
        .filter(Value::is_object)
}

impl<'a> Controller<'a> {
    /// `NVKE_E2E_RUNBOOK` may name another build of the runbook (a static
    /// release binary, say); default: this build's binary.
    pub fn new(lab: &'a Lab) -> Controller<'a> {
        let runbook = std::env::var_os("NVKE_E2E_RUNBOOK")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(RUNBOOK));
        let bytes = std::fs::read(&runbook).expect("read the runbook binary");
        let sha256 = crate::support::hex::sha256_hex(&bytes);
        let p = &lab.ctl_pki;
        Controller {
            netns: File::open(lab.lab_netns_path()).expect("open the lab netns"),
            remote_path: format!("/var/lib/nvke/bin/nvke-cert-runbook-{sha256}"),
            runbook,
            sha256,
            policy: Policy::default(),
            api_cfg: tlsclient::client_config(&p.ca, &p.api_cert, &p.api_key)
                .expect("controller apiserver identity"),
            lab,
            t0: Instant::now(),
            pushed: Default::default(),
        }
    }

    fn ms(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }

    /// `ssh root@<node> -- <remote>` from the lab namespace, key auth only,
    /// the node's host key pinned.
    pub fn ssh(&self, node: &Node, remote: &str) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-F", "/dev/null", "-T", "-i"])
            .arg(&self.lab.ssh_key)
            .args([
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
            ])
            .arg(format!(
                "UserKnownHostsFile={}",
                self.lab.known_hosts.display()
            ))
            .args([
                "-o",
                "GlobalKnownHostsFile=/dev/null",
                "-o",
                "ConnectTimeout=10",
                "-o",
                "ServerAliveInterval=5",
                "-o",
                "ServerAliveCountMax=3",
                "-o",
                "LogLevel=ERROR",
            ])
            .arg(format!("root@{}", node.ip()))
            .arg("--")
            .arg(remote)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        in_netns(&mut c, self.netns.as_raw_fd());
        // Every ssh client is waited for by the thread that started it.
        crate::lab::pdeathsig(&mut c, nix::sys::signal::Signal::SIGKILL);
        c
    }

    fn finish(&self, command: String, started_ms: u64, out: std::process::Output) -> Remote {
        use std::os::unix::process::ExitStatusExt;
        let stdout = String::from_utf8_lossy(&out.stdout);
        Remote {
            command,
            exit_code: out.status.code(),
            ssh_signal: out.status.signal(),
            doc: one_doc(&stdout),
            stderr_tail: crate::support::tail(&String::from_utf8_lossy(&out.stderr), 2000)
                .to_string(),
            started_ms,
            ms: self.ms() - started_ms,
        }
    }

    /// Runs a remote command to completion.
    pub fn remote(&self, node: &Node, remote: &str) -> Remote {
        let started = self.ms();
        let out = self
            .ssh(node, remote)
            .output()
            .unwrap_or_else(|e| panic!("run ssh: {e}"));
        self.finish(remote.to_string(), started, out)
    }

    /// The runbook on the node, `--output json` added.
    pub fn runbook_cmd(&self, args: &[&str]) -> String {
        let mut s = format!("exec {}", self.remote_path);
        for a in args {
            s.push(' ');
            s.push_str(a);
        }
        s.push_str(" --output json");
        s
    }

    pub fn runbook(&self, node: &Node, args: &[&str]) -> Remote {
        self.remote(node, &self.runbook_cmd(args))
    }

    /// For evidence collection: pushes unless this controller already saw
    /// the binary on the node.
    pub fn ensure_pushed(&self, node: &Node) {
        if !self.pushed.lock().unwrap().contains(node.name()) {
            self.push(node);
        }
    }

    /// Pushes the runbook unless the content-addressed copy is already
    /// there (`sha256sum` on the node). Returns whether it copied.
    pub fn push(&self, node: &Node) -> Value {
        let started = self.ms();
        if self.remote_sha_matches(node) {
            self.pushed.lock().unwrap().insert(node.name().to_string());
            return json!({"node": node.name(), "copied": false, "path": self.remote_path, "ms": self.ms() - started});
        }
        let script = format!(
            "set -e; umask 022; mkdir -p /var/lib/nvke/bin; t=$(mktemp /var/lib/nvke/bin/.push.XXXXXX); \
             cat > \"$t\"; echo '{sha}  '\"$t\" | sha256sum -c --quiet -; chmod 0755 \"$t\"; mv -f \"$t\" {path}",
            sha = self.sha256,
            path = self.remote_path
        );
        let mut cmd = self.ssh(node, &script);
        cmd.stdin(File::open(&self.runbook).expect("open the runbook binary"));
        let out = cmd.output().expect("run ssh");
        assert!(
            out.status.success(),
            "push to {} failed: {}",
            node.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        self.pushed.lock().unwrap().insert(node.name().to_string());
        json!({"node": node.name(), "copied": true, "path": self.remote_path, "ms": self.ms() - started})
    }

    /// `sha256sum` of the content-addressed path on the node equals ours.
    pub fn remote_sha_matches(&self, node: &Node) -> bool {
        let out = self
            .ssh(
                node,
                &format!("sha256sum {} 2>/dev/null || true", self.remote_path),
            )
            .output()
            .expect("run ssh");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .is_some_and(|h| h == self.sha256)
    }

    /// `crictl ps -o json` over SSH: running kube-system container IDs by
    /// component.
    pub fn containers(
        &self,
        node: &Node,
    ) -> Result<std::collections::BTreeMap<String, String>, String> {
        let out = self
            .ssh(
                node,
                "crictl ps -o json --label io.kubernetes.pod.namespace=kube-system",
            )
            .output()
            .map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("crictl ps on {}: {e}", node.name()))?;
        let mut ids = std::collections::BTreeMap::new();
        for c in v["containers"].as_array().cloned().unwrap_or_default() {
            let name = c["metadata"]["name"].as_str().unwrap_or_default();
            if c["state"] == "CONTAINER_RUNNING" && COMPONENTS.contains(&name) {
                ids.insert(name.to_string(), c["id"].as_str().unwrap_or("").to_string());
            }
        }
        Ok(ids)
    }

    /// The guide's validation command on the node: etcdctl inside the local
    /// etcd container, `endpoint health --cluster -w json`.
    pub fn etcd_health_on_node(&self, node: &Node) -> Value {
        let out = self
            .ssh(
                node,
                "crictl exec \"$(crictl ps --label io.kubernetes.container.name=etcd -q)\" etcdctl \
                 --endpoints=https://127.0.0.1:2379 --cacert=/etc/kubernetes/pki/etcd/ca.crt \
                 --cert=/etc/kubernetes/pki/etcd/server.crt --key=/etc/kubernetes/pki/etcd/server.key \
                 --dial-timeout=10s --command-timeout=30s endpoint health --cluster -w json",
            )
            .output()
            .expect("run ssh");
        serde_json::from_slice(&out.stdout).unwrap_or_else(
            |_| json!({"error": String::from_utf8_lossy(&out.stderr).trim().to_string()}),
        )
    }

    /// etcdctl from the lab namespace against every member.
    fn etcdctl(&self, args: &[&str]) -> Result<Value, String> {
        let p = &self.lab.ctl_pki;
        let endpoints = self
            .lab
            .nodes
            .iter()
            .map(|n| format!("https://{}:2379", n.id.url_host()))
            .collect::<Vec<_>>()
            .join(",");
        let mut c = Command::new(ETCDCTL);
        c.arg(format!("--endpoints={endpoints}"))
            .arg(format!("--cacert={}", p.etcd_ca.display()))
            .arg(format!("--cert={}", p.etcd_cert.display()))
            .arg(format!("--key={}", p.etcd_key.display()))
            .args(["--dial-timeout=3s", "--command-timeout=5s"])
            .args(args)
            .args(["-w", "json"])
            .env_clear()
            .env("ETCDCTL_API", "3")
            .stdin(Stdio::null());
        in_netns(&mut c, self.netns.as_raw_fd());
        let out = c.output().map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        // `endpoint health` prints its JSON array even when it exits 1.
        serde_json::from_str(stdout.trim()).map_err(|_| {
            format!(
                "etcdctl {} ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
    }

    /// `/readyz` (optionally `?verbose`) of every node, from a lab-namespace
    /// thread.
    pub fn readyz_all(&self, verbose: bool) -> Vec<(String, Readyz)> {
        let path = self.lab.lab_netns_path();
        let cfg = self.api_cfg.clone();
        let targets: Vec<(String, std::net::IpAddr)> = self
            .lab
            .nodes
            .iter()
            .map(|n| (n.name().to_string(), n.ip().parse().unwrap()))
            .collect();
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::lab::enter_netns_thread(&path).expect("enter the lab netns");
                targets
                    .iter()
                    .map(|(name, ip)| {
                        let r = tlsclient::request(
                            &cfg,
                            *ip,
                            6443,
                            "GET",
                            if verbose {
                                "/readyz?verbose"
                            } else {
                                "/readyz"
                            },
                            None,
                            Duration::from_secs(2),
                        )
                        .map(|r| (r.status, r.text()))
                        .map_err(|e| format!("{e:#}"));
                        (name.clone(), r)
                    })
                    .collect()
            })
            .join()
            .expect("readyz thread")
        })
    }

    /// One evaluation of the cluster health gate (its queries side by side).
    fn health_once(&self) -> Result<Value, String> {
        let n = self.lab.nodes.len();
        let (eps, members, readyz, pods) = std::thread::scope(|s| {
            let eps = s.spawn(|| self.etcdctl(&["endpoint", "health", "--cluster"]));
            let members = s.spawn(|| self.etcdctl(&["member", "list"]));
            let readyz = s.spawn(|| self.readyz_all(false));
            let pods: Vec<_> = self
                .lab
                .nodes
                .iter()
                .map(|node| s.spawn(move || (node.name().to_string(), self.containers(node))))
                .collect();
            (
                eps.join().expect("etcdctl thread"),
                members.join().expect("etcdctl thread"),
                readyz.join().expect("readyz thread"),
                pods.into_iter()
                    .map(|h| h.join().expect("crictl thread"))
                    .collect::<Vec<_>>(),
            )
        });
        let eps = eps?;
        let eps_list = eps.as_array().cloned().unwrap_or_default();
        let healthy = eps_list
            .iter()
            .filter(|e| e["health"].as_bool() == Some(true))
            .count();
        if eps_list.len() != n || healthy != n {
            return Err(format!("etcd: {healthy}/{n} endpoints healthy: {eps}"));
        }
        let members = members?;
        let ms = members["members"].as_array().cloned().unwrap_or_default();
        let learners = ms.iter().filter(|m| m["isLearner"] == true).count();
        let started = ms
            .iter()
            .filter(|m| m["name"].as_str().is_some_and(|s| !s.is_empty()))
            .count();
        if ms.len() != n || learners != 0 || started != n {
            return Err(format!(
                "etcd membership: {} members, {learners} learners, {started} started",
                ms.len()
            ));
        }
        let mut ready = serde_json::Map::new();
        for (name, r) in readyz {
            match r {
                Ok((200, _)) => {
                    ready.insert(name, json!(200));
                }
                Ok((code, body)) => return Err(format!("{name} /readyz {code}: {body}")),
                Err(e) => return Err(format!("{name} /readyz: {e}")),
            }
        }
        let mut running = serde_json::Map::new();
        for (name, ids) in pods {
            let ids = ids?;
            if ids.len() != COMPONENTS.len() {
                return Err(format!(
                    "{name}: static pods running: {:?}",
                    ids.keys().collect::<Vec<_>>()
                ));
            }
            running.insert(name, json!(ids));
        }
        Ok(json!({
            "etcdEndpoints": eps,
            "etcdVoters": ms.len(),
            "readyz": ready,
            "staticPods": running,
        }))
    }

    /// The cluster health gate: polls until it passes or the timeout.
    pub fn cluster_health(&self) -> Result<Value, String> {
        let start = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            match self.health_once() {
                Ok(mut v) => {
                    v["tookMs"] = json!(start.elapsed().as_millis() as u64);
                    v["attempts"] = json!(tries);
                    return Ok(v);
                }
                Err(e) if start.elapsed() >= self.policy.health_timeout => {
                    return Err(format!("cluster health did not pass in {tries} tries: {e}"))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    pub fn check(&self, node: &Node, force: bool) -> Remote {
        let threshold = self.policy.threshold_days.to_string();
        let mut args = vec!["--check", "--threshold-days", &threshold];
        if force {
            args.push("--force");
        }
        self.runbook(node, &args)
    }

    /// One renewal attempt, with the fault injector (if any) running beside
    /// it.
    fn attempt(&self, node: &Node, op: &str, force: bool, n: u32, hook: Option<&Hook>) -> Remote {
        let threshold = self.policy.threshold_days.to_string();
        let mut args = vec![
            "--operation-id",
            op,
            "--threshold-days",
            &threshold,
            "--log-format",
            "json",
            "--lock-timeout",
            "90",
            "--health-timeout",
            "120",
            "--stop-timeout",
            "60",
        ];
        if force {
            args.push("--force");
        }
        let cmd = self.runbook_cmd(&args);
        let started = self.ms();
        let child = self.ssh(node, &cmd).spawn().expect("spawn ssh");
        let done = AtomicBool::new(false);
        let ctx = AttemptCtx {
            node,
            op,
            attempt: n,
            ssh_pid: child.id(),
            done: &done,
        };
        let out = std::thread::scope(|s| {
            if let Some(h) = hook {
                s.spawn(|| h(&ctx));
            }
            let out = child.wait_with_output().expect("wait for ssh");
            done.store(true, Ordering::SeqCst);
            out
        });
        self.finish(cmd, started, out)
    }

    /// The cleanup: the fencing status check for `op`, retried within the
    /// cleanup budget until termination is confirmed.
    pub fn fence(&self, node: &Node, op: &str) -> Vec<Remote> {
        let deadline = Instant::now() + self.policy.cleanup_budget;
        let mut out = Vec::new();
        loop {
            let r = self.runbook(
                node,
                &[
                    "--status-only",
                    "--operation-id",
                    op,
                    "--fence",
                    "--lock-timeout",
                    "30",
                ],
            );
            let confirmed = r
                .doc
                .as_ref()
                .is_some_and(|d| d["termination"] == "confirmed");
            out.push(r);
            if confirmed || Instant::now() >= deadline {
                return out;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Renews one node: attempts with the same operation ID while the result
    /// is lost, then the cleanup when it did not succeed.
    pub fn renew_node(&self, node: &Node, op: &str, force: bool, hook: Option<&Hook>) -> NodeRun {
        let mut run = NodeRun {
            node: node.name().to_string(),
            decision: "renew".into(),
            operation_id: Some(op.to_string()),
            attempts: Vec::new(),
            result: None,
            outcome: "lost".into(),
            fencing: Vec::new(),
            health_before: None,
            health_after: None,
            window_ms: None,
        };
        for n in 1..=self.policy.max_attempts.max(1) {
            let r = self.attempt(node, op, force, n, hook);
            let lost = r.doc.is_none();
            let mut a = Attempt {
                attempt: n,
                result: r.clone(),
                lost,
                status_after_loss: None,
            };
            if !lost {
                run.outcome = r.doc.as_ref().unwrap()["outcome"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string();
                run.result = r.doc.clone();
                run.attempts.push(a);
                break;
            }
            // What the node says now (read-only), before retrying.
            a.status_after_loss = self.runbook(node, &["--status-only"]).doc;
            run.attempts.push(a);
        }
        if !matches!(run.outcome.as_str(), "renewed" | "unchanged") {
            run.fencing = self.fence(node, op);
        }
        run
    }

    /// A whole cycle over the lab's nodes. `hooks` are fault injectors by
    /// node name; `traffic` gets the write target and gives the clock.
    pub fn cycle(
        &self,
        cycle_id: &str,
        force: bool,
        hooks: &[(&str, Hook)],
        traffic: Option<&crate::traffic::Traffic>,
    ) -> CycleReport {
        let now_ms = || traffic.map(|t| t.now_ms()).unwrap_or_else(|| self.ms());
        let mut rep = CycleReport {
            cycle_id: cycle_id.to_string(),
            force,
            state: "accepted".into(),
            phase: None,
            failed_node: None,
            message: String::new(),
            pushes: Vec::new(),
            checks: Vec::new(),
            nodes: Vec::new(),
            started_ms: now_ms(),
            finished_ms: 0,
        };
        let fail = |rep: &mut CycleReport, phase: &str, node: Option<&str>, msg: String| {
            rep.state = "failed".into();
            rep.phase = Some(phase.to_string());
            rep.failed_node = node.map(str::to_string);
            rep.message = msg;
            rep.finished_ms = now_ms();
        };
        let nodes = &self.lab.nodes;
        if nodes.len() == 2 {
            fail(
                &mut rep,
                "two-control-plane-voters",
                None,
                "two control-plane nodes: two etcd voters cannot lose one; never renewed".into(),
            );
            return rep;
        }
        // Push and check every node (side by side), before any dispatch.
        let checks: Vec<(Value, Remote)> = std::thread::scope(|s| {
            let handles: Vec<_> = nodes
                .iter()
                .map(|node| s.spawn(move || (self.push(node), self.check(node, force))))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("push/check thread"))
                .collect()
        });
        let mut decisions = Vec::new();
        for (node, (pushed, r)) in nodes.iter().zip(checks) {
            rep.pushes.push(pushed);
            let doc = r.doc.clone().unwrap_or(Value::Null);
            rep.checks
                .push(json!({"node": node.name(), "exitCode": r.exit_code, "doc": doc}));
            let decision = doc["decision"].as_str().unwrap_or("").to_string();
            if !matches!(decision.as_str(), "renew" | "unchanged") {
                fail(
                    &mut rep,
                    "check",
                    Some(node.name()),
                    format!("check on {}: {decision:?}: {}", node.name(), doc["message"]),
                );
                return rep;
            }
            decisions.push((decision, doc));
        }
        for (i, node) in nodes.iter().enumerate() {
            let (decision, doc) = &decisions[i];
            if decision == "unchanged" {
                rep.nodes.push(NodeRun {
                    node: node.name().to_string(),
                    decision: decision.clone(),
                    operation_id: None,
                    attempts: Vec::new(),
                    result: None,
                    outcome: "unchanged".into(),
                    fencing: Vec::new(),
                    health_before: None,
                    health_after: None,
                    window_ms: None,
                });
                continue;
            }
            let executors: Vec<&str> = doc["executors"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let runbook_allowed = executors.contains(&"legacy")
                || (executors.contains(&"typed") && doc["legacyFallback"] == true);
            if !runbook_allowed {
                fail(
                    &mut rep,
                    "executor",
                    Some(node.name()),
                    format!(
                        "{}: executors {executors:?} need the node agent",
                        node.name()
                    ),
                );
                return rep;
            }
            let health_before = match self.cluster_health() {
                Ok(h) => h,
                Err(e) => {
                    fail(&mut rep, "health", Some(node.name()), e);
                    return rep;
                }
            };
            if let Some(t) = traffic {
                t.write_through((i + 1) % nodes.len());
            }
            let op = format!("{cycle_id}:{}", node.name());
            let hook = hooks
                .iter()
                .find(|(n, _)| *n == node.name())
                .map(|(_, h)| h);
            let start = now_ms();
            let mut run = self.renew_node(node, &op, force, hook);
            run.window_ms = Some((start, now_ms()));
            run.health_before = Some(health_before);
            let ok = matches!(run.outcome.as_str(), "renewed" | "unchanged");
            if !ok {
                // The renewal's phase, else (its result lost) the phase the
                // cleanup's receipt recorded for the dead operation.
                let phase = run
                    .result
                    .as_ref()
                    .or_else(|| run.fencing.last().and_then(|f| f.doc.as_ref()))
                    .and_then(|d| d["phase"].as_str())
                    .unwrap_or("lost")
                    .to_string();
                let msg = format!(
                    "{}: renewal {op} ended {:?}; cleanup: {}",
                    node.name(),
                    run.outcome,
                    run.fencing
                        .last()
                        .and_then(|f| f.doc.as_ref())
                        .map(|d| d["termination"].to_string())
                        .unwrap_or_else(|| "none".into())
                );
                rep.nodes.push(run);
                fail(&mut rep, &phase, Some(node.name()), msg);
                return rep;
            }
            match self.cluster_health() {
                Ok(h) => run.health_after = Some(h),
                Err(e) => {
                    rep.nodes.push(run);
                    fail(&mut rep, "postflight", Some(node.name()), e);
                    return rep;
                }
            }
            rep.nodes.push(run);
        }
        rep.state = "succeeded".into();
        rep.finished_ms = now_ms();
        rep
    }
}

/// Reads a small host file (test oracle).
pub fn read_to_string(p: &std::path::Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = File::open(p) {
        let _ = f.read_to_string(&mut s);
    }
    s
}
