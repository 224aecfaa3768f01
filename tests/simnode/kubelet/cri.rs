//! The kubelet's CRI backend (sim.json `runtime`; tests/containers.rs): the
//! static pods run through a real crictl against a real CRI runtime
//! (containerd + runc), the calls the real kubelet makes through the CRI:
//!
//! - a pod that appears: `crictl runp` with the kubelet's sandbox metadata
//!   (`<pod>-<node>`, UID, namespace, attempt), labels (the pod's own +
//!   `io.kubernetes.pod.name/namespace/uid`), annotations (the pod's own +
//!   `kubernetes.io/config.source: file`, `config.hash`, `config.seen`),
//!   host network; then per container `crictl create` (labels
//!   `io.kubernetes.container.name` + `io.kubernetes.pod.*`, the kubelet's
//!   container annotations, the manifest's hostPath volumes as mounts under
//!   the node root, log path `<container>/<attempt>.log` in the sandbox's
//!   log directory `<root>/var/log/pods/<ns>_<pod>_<uid>`) and
//!   `crictl start`, and the legacy log link in `<root>/var/log/containers`;
//! - the process: `etcd` runs the manifest's command (the real etcd of the
//!   image), `kube-apiserver` the TLS stand-in (`/nvke-simnode apiserver
//!   --root /`, its PKI through the manifest's mounts),
//!   kube-controller-manager and kube-scheduler `/nvke-simnode healthz`
//!   (`/healthz` on their `--secure-port`), every other container
//!   `/nvke-simnode pause`;
//! - a pod whose manifest is gone: `crictl stop --timeout <grace>` of each
//!   container (SIGTERM, SIGKILL after the pod's grace period), then
//!   `crictl stopp`, in the background; a manifest that returns meanwhile
//!   waits for it, then gets a new sandbox (`attempt` + 1) and containers;
//! - a container that exits while its pod is wanted is restarted in the
//!   same sandbox with a back-off (0.5 s doubling to 10 s);
//! - garbage collection every `gcPeriodMs`: stopped sandboxes of pods that
//!   are gone are removed with their exited containers (`crictl rmp`).
//!
//! The kubelet never writes containers.json in this mode: the runtime is
//! the state.

use super::*;
use crate::sim::CriRuntime;
use serde_json::{json, Value};
use std::sync::Arc;

/// Where the stand-in binary sits inside the images of the tier.
pub(super) const STANDIN: &str = "/nvke-simnode";
const PATH_ENV: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// How often the containers of running pods are checked for exits.
const CHECK_EVERY: Duration = Duration::from_millis(1000);
/// CRI NamespaceMode.
const NS_CONTAINER: u32 = 1;
const NS_NODE: u32 = 2;

struct RunPod {
    pod: Rc<Pod>,
    full: String,
    sandbox: String,
    sandbox_config: PathBuf,
    /// container name -> its current container ID.
    containers: BTreeMap<String, String>,
}

struct Stopping {
    key: (String, String),
    done: Arc<AtomicBool>,
}

#[derive(Default)]
pub(super) struct Cri {
    pods: BTreeMap<String, RunPod>,
    stopping: Vec<Stopping>,
    /// uid -> sandboxes made so far.
    attempts: HashMap<String, u32>,
    /// (namespace, pod, container) -> containers made so far.
    ctr_attempts: HashMap<CtrKey, u32>,
    /// uid -> do not try to start it again before.
    retry_at: HashMap<String, Instant>,
    /// (uid, container) -> (restart at, consecutive exits).
    restart: HashMap<(String, String), (Instant, u32)>,
    last_check: Option<Instant>,
    last_gc: Option<Instant>,
    seq: u64,
}

/// Runs `crictl -r <endpoint> -t <timeout> ARGS` with a cleared
/// environment; its trimmed stdout, or an error with its stderr.
fn crictl(rt: &CriRuntime, timeout: Duration, args: &[&str]) -> Result<String> {
    let out = Command::new(&rt.crictl)
        .arg("-r")
        .arg(&rt.endpoint)
        .arg("-t")
        .arg(format!("{}s", timeout.as_secs().max(1)))
        .args(args)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", rt.crictl.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "crictl {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn map(pairs: impl IntoIterator<Item = (String, String)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    )
}

impl Kubelet {
    fn rt(&self) -> Option<CriRuntime> {
        self.cfg.runtime.clone()
    }

    /// One reconcile step against the real runtime.
    pub(super) fn cri_tick(&mut self, desired: &BTreeMap<String, Rc<Pod>>) {
        let Some(rt) = self.rt() else { return };
        let now = Instant::now();
        self.cri.stopping.retain(|s| !s.done.load(Ordering::SeqCst));

        // Pods that are gone: stop them in the background.
        let gone: Vec<String> = self
            .cri
            .pods
            .keys()
            .filter(|uid| !desired.contains_key(*uid))
            .cloned()
            .collect();
        for uid in gone {
            if let Some(p) = self.cri.pods.remove(&uid) {
                self.cri_stop(&rt, p);
            }
        }
        self.cri
            .restart
            .retain(|(uid, _), _| desired.contains_key(uid));

        // Exits of running containers: restart them with a back-off.
        if !self.cri.pods.is_empty()
            && self
                .cri
                .last_check
                .is_none_or(|t| t.elapsed() >= CHECK_EVERY)
        {
            self.cri.last_check = Some(now);
            self.cri_check_exits(&rt);
        }
        let due: Vec<(String, String)> = self
            .cri
            .restart
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for (uid, cname) in due {
            self.cri_restart(&rt, &uid, &cname);
        }

        // Pods that are wanted and not running: a new sandbox and containers.
        for (uid, pod) in desired {
            if self.cri.pods.contains_key(uid) {
                continue;
            }
            if self.cri.retry_at.get(uid).is_some_and(|t| *t > now) {
                continue;
            }
            let key = (pod.namespace.clone(), pod.name.clone());
            if self.cri.stopping.iter().any(|s| s.key == key) {
                continue; // kubelet: the old pod's stop finishes first
            }
            if self
                .cri
                .pods
                .values()
                .any(|p| (p.pod.namespace.clone(), p.pod.name.clone()) == key)
            {
                continue;
            }
            match self.cri_start(&rt, pod) {
                Ok(p) => {
                    self.cri.retry_at.remove(uid);
                    self.cri.pods.insert(uid.clone(), p);
                }
                Err(e) => {
                    self.log(&format!(
                        "pod {}/{} ({uid}): could not start: {e:#}",
                        pod.namespace, pod.name
                    ));
                    self.cri
                        .retry_at
                        .insert(uid.clone(), now + Duration::from_secs(2));
                }
            }
        }

        if self
            .cri
            .last_gc
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(rt.gc_period_ms))
        {
            self.cri.last_gc = Some(now);
            self.cri_gc(&rt);
        }
    }

    fn cri_file(&mut self, what: &str, v: &Value) -> Result<PathBuf> {
        self.cri.seq += 1;
        let dir = self.sim.dir.join("cri");
        std::fs::create_dir_all(&dir)?;
        let p = dir.join(format!("{:05}-{what}.json", self.cri.seq));
        sim::write_atomic(&p, &serde_json::to_vec_pretty(v)?, 0o644)?;
        Ok(p)
    }

    fn cri_start(&mut self, rt: &CriRuntime, pod: &Rc<Pod>) -> Result<RunPod> {
        let root = self.root();
        let full = match pod.source {
            Source::File => format!("{}-{}", pod.name, self.cfg.node_name),
            Source::Api => pod.name.clone(),
        };
        let attempt = *self.cri.attempts.get(&pod.uid).unwrap_or(&0);
        self.cri.attempts.insert(pod.uid.clone(), attempt + 1);
        let mut labels = pod.labels.clone();
        labels.insert("io.kubernetes.pod.name".into(), full.clone());
        labels.insert("io.kubernetes.pod.namespace".into(), pod.namespace.clone());
        labels.insert("io.kubernetes.pod.uid".into(), pod.uid.clone());
        let mut annotations = pod.annotations.clone();
        annotations.insert(
            "kubernetes.io/config.source".into(),
            pod.source.as_str().into(),
        );
        annotations.insert(
            "kubernetes.io/config.seen".into(),
            self.seen
                .get(&pod.uid)
                .cloned()
                .unwrap_or_else(|| sim::rfc3339_nanos(sim::now_nanos())),
        );
        if pod.source == Source::File {
            annotations.insert("kubernetes.io/config.hash".into(), pod.uid.clone());
        }
        let log_dir = root.join(format!(
            "var/log/pods/{}_{}_{}",
            pod.namespace, full, pod.uid
        ));
        std::fs::create_dir_all(&log_dir)?;
        let sandbox = json!({
            "metadata": {"name": full, "uid": pod.uid, "namespace": pod.namespace, "attempt": attempt},
            "log_directory": log_dir,
            "labels": map(labels),
            "annotations": map(annotations),
            "linux": {"security_context": {"namespace_options": {"network": NS_NODE, "pid": NS_CONTAINER}}},
        });
        let sandbox_config = self.cri_file("pod", &sandbox)?;
        let sb_path = sandbox_config.to_string_lossy().into_owned();
        let sb = crictl(rt, Duration::from_secs(60), &["runp", &sb_path])?;
        self.log(&format!(
            "pod {}/{} ({}) from {}: sandbox {sb} (attempt {attempt})",
            pod.namespace, full, pod.uid, pod.manifest
        ));
        let mut run = RunPod {
            pod: pod.clone(),
            full,
            sandbox: sb,
            sandbox_config,
            containers: BTreeMap::new(),
        };
        for c in &pod.containers {
            if let Err(e) = self.cri_container(rt, &mut run, c) {
                // Leave nothing half made: the sandbox goes with its containers.
                let _ = crictl(rt, Duration::from_secs(60), &["rmp", "-f", &run.sandbox]);
                return Err(e);
            }
        }
        Ok(run)
    }

    /// Creates and starts container `c` in `run`'s sandbox.
    fn cri_container(&mut self, rt: &CriRuntime, run: &mut RunPod, c: &PodContainer) -> Result<()> {
        let pod = run.pod.clone();
        let root = self.root();
        let key: CtrKey = (pod.namespace.clone(), pod.name.clone(), c.name.clone());
        let attempt = *self.cri.ctr_attempts.get(&key).unwrap_or(&0);
        self.cri.ctr_attempts.insert(key, attempt + 1);
        let command: Vec<String> = match (pod.source, c.name.as_str()) {
            (Source::File, "etcd") => c.argv.clone(),
            (Source::File, "kube-apiserver") => {
                let port = apiserver_port(&c.argv);
                let etcd_port = self.etcd_port.unwrap_or(2379);
                let mut v: Vec<String> = [STANDIN, "apiserver", "--root", "/", "--port"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                v.extend([
                    port.to_string(),
                    "--etcd-port".into(),
                    etcd_port.to_string(),
                ]);
                // Where etcd listens, either family, and the serving files
                // the flags name (as the process backend).
                if let Some(h) = self.etcd_host {
                    v.extend(["--etcd-host".into(), h.to_string()]);
                }
                if let (Some(crt), Some(key)) = (
                    super::flag_value(&c.argv, "--tls-cert-file"),
                    super::flag_value(&c.argv, "--tls-private-key-file"),
                ) {
                    v.extend([
                        "--tls-cert-file".into(),
                        crt.to_string(),
                        "--tls-private-key-file".into(),
                        key.to_string(),
                    ]);
                }
                if let Ok(Some(t)) = self.cfg.tls_now_unix() {
                    v.extend(["--tls-now".into(), t.to_string()]);
                }
                // The manifest's --bind-address, else sim.json's.
                if let Some(bind) = super::flag_value(&c.argv, "--bind-address") {
                    v.extend(["--bind-address".into(), bind.to_string()]);
                } else if let Some(bind) = self.cfg.apiserver_bind_address {
                    v.extend(["--bind-address".into(), bind.to_string()]);
                }
                v
            }
            (Source::File, name @ ("kube-controller-manager" | "kube-scheduler")) => {
                let default = if name == "kube-scheduler" {
                    10259
                } else {
                    10257
                };
                let mut v: Vec<String> = [
                    STANDIN,
                    "healthz",
                    "--port",
                    &super::secure_port(&c.argv, default).to_string(),
                    "--name",
                    name,
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                if let Some(bind) = super::flag_value(&c.argv, "--bind-address") {
                    v.extend(["--bind-address".into(), bind.to_string()]);
                }
                v
            }
            _ => vec![STANDIN.to_string(), "pause".to_string()],
        };
        let mut mounts = Vec::new();
        for m in &c.mounts {
            let host = sim::under_root(&root, &m.host_path);
            if !host.exists() {
                std::fs::create_dir_all(&host)?; // DirectoryOrCreate
            }
            mounts.push(json!({"container_path": m.container_path, "host_path": host}));
        }
        let labels = map([
            ("io.kubernetes.container.name".to_string(), c.name.clone()),
            ("io.kubernetes.pod.name".to_string(), run.full.clone()),
            (
                "io.kubernetes.pod.namespace".to_string(),
                pod.namespace.clone(),
            ),
            ("io.kubernetes.pod.uid".to_string(), pod.uid.clone()),
        ]);
        let annotations = map([
            ("io.kubernetes.container.hash".to_string(), c.hash()),
            (
                "io.kubernetes.container.restartCount".to_string(),
                attempt.to_string(),
            ),
            (
                "io.kubernetes.container.terminationMessagePath".to_string(),
                c.termination_message_path.clone(),
            ),
            (
                "io.kubernetes.container.terminationMessagePolicy".to_string(),
                c.termination_message_policy.clone(),
            ),
            (
                "io.kubernetes.pod.terminationGracePeriod".to_string(),
                pod.grace_secs.to_string(),
            ),
        ]);
        let log_path = format!("{}/{attempt}.log", c.name);
        let config = json!({
            "metadata": {"name": c.name, "attempt": attempt},
            "image": {"image": c.image},
            "command": command,
            "envs": [{"key": "PATH", "value": PATH_ENV}],
            "mounts": mounts,
            "log_path": log_path,
            "labels": labels,
            "annotations": annotations,
            "linux": {"security_context": {"namespace_options": {"network": NS_NODE, "pid": NS_CONTAINER}}},
        });
        let cfg_path = self.cri_file(&format!("ctr-{}", c.name), &config)?;
        let cfg_s = cfg_path.to_string_lossy().into_owned();
        let sb_s = run.sandbox_config.to_string_lossy().into_owned();
        let t = Duration::from_secs(60);
        let id = crictl(rt, t, &["create", "--no-pull", &run.sandbox, &cfg_s, &sb_s])?;
        // The legacy link, as the kubelet makes it between create and start.
        if root != Path::new("/") {
            let dir = root.join("var/log/containers");
            std::fs::create_dir_all(&dir)?;
            let name = format!("{}_{}_{}-{id}.log", run.full, pod.namespace, c.name);
            let target = format!(
                "/var/log/pods/{}_{}_{}/{}/{attempt}.log",
                pod.namespace, run.full, pod.uid, c.name
            );
            let _ = std::os::unix::fs::symlink(target, dir.join(name));
        }
        crictl(rt, t, &["start", &id])?;
        self.log(&format!(
            "pod {}/{} ({}) from {}: started container {} {id} (attempt {attempt})",
            pod.namespace, run.full, pod.uid, pod.manifest, c.name
        ));
        run.containers.insert(c.name.clone(), id);
        Ok(())
    }

    /// SIGTERM, SIGKILL after the grace period (`crictl stop --timeout`),
    /// then the sandbox, in a thread of its own.
    fn cri_stop(&mut self, rt: &CriRuntime, p: RunPod) {
        let done = Arc::new(AtomicBool::new(false));
        self.cri.stopping.push(Stopping {
            key: (p.pod.namespace.clone(), p.pod.name.clone()),
            done: done.clone(),
        });
        let grace = p.pod.grace_secs.max(0) as u64;
        let rt = rt.clone();
        let sim = self.sim.clone();
        let what = format!("pod {}/{} ({})", p.pod.namespace, p.full, p.pod.uid);
        self.log(&format!(
            "{what}: manifest gone, stopping (grace {grace} s)"
        ));
        std::thread::spawn(move || {
            let log = |m: &str| sim.append_log("kubelet.log", &format!("{} {m}", sim::log_stamp()));
            let t = Duration::from_secs(grace + 30);
            let g = grace.to_string();
            for (name, id) in &p.containers {
                match crictl(&rt, t, &["stop", "--timeout", &g, id]) {
                    Ok(_) => log(&format!("{what}: container {name} {id} stopped")),
                    Err(e) => log(&format!("{what}: container {name} {id}: {e:#}")),
                }
            }
            match crictl(&rt, t, &["stopp", &p.sandbox]) {
                Ok(_) => log(&format!("{what}: sandbox {} stopped", p.sandbox)),
                Err(e) => log(&format!("{what}: sandbox {}: {e:#}", p.sandbox)),
            }
            done.store(true, Ordering::SeqCst);
        });
    }

    fn cri_check_exits(&mut self, rt: &CriRuntime) {
        let out = match crictl(rt, Duration::from_secs(30), &["ps", "-a", "-o", "json"]) {
            Ok(o) => o,
            Err(e) => {
                self.log(&format!("listing containers: {e:#}"));
                return;
            }
        };
        let v: Value = serde_json::from_str(&out).unwrap_or_default();
        let exited: HashSet<String> = v["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["state"] == "CONTAINER_EXITED")
            .filter_map(|c| c["id"].as_str().map(str::to_string))
            .collect();
        let now = Instant::now();
        for (uid, p) in &self.cri.pods {
            for (name, id) in &p.containers {
                let k = (uid.clone(), name.clone());
                if exited.contains(id) && !self.cri.restart.contains_key(&k) {
                    let n = self.crashes.get(&k).copied().unwrap_or(0) + 1;
                    self.crashes.insert(k.clone(), n);
                    let backoff = Duration::from_millis((500u64 << (n - 1).min(5)).min(10_000));
                    self.sim.append_log(
                        "kubelet.log",
                        &format!(
                            "{} pod {}/{}: container {name} {id} exited, restart in {backoff:?}",
                            sim::log_stamp(),
                            p.pod.namespace,
                            p.full
                        ),
                    );
                    self.cri.restart.insert(k, (now + backoff, n));
                }
            }
        }
    }

    fn cri_restart(&mut self, rt: &CriRuntime, uid: &str, cname: &str) {
        let k = (uid.to_string(), cname.to_string());
        self.cri.restart.remove(&k);
        let Some(mut run) = self.cri.pods.remove(uid) else {
            return;
        };
        if let Some(c) = run.pod.containers.iter().find(|c| c.name == cname).cloned() {
            if let Err(e) = self.cri_container(rt, &mut run, &c) {
                self.log(&format!("restarting {cname}: {e:#}"));
                self.cri
                    .restart
                    .insert(k, (Instant::now() + Duration::from_secs(2), 1));
            }
        }
        self.cri.pods.insert(uid.to_string(), run);
    }

    /// The kubelet's garbage collection: stopped sandboxes of pods that
    /// are not running (with their exited containers).
    fn cri_gc(&mut self, rt: &CriRuntime) {
        let Ok(out) = crictl(rt, Duration::from_secs(30), &["pods", "-o", "json"]) else {
            return;
        };
        let v: Value = serde_json::from_str(&out).unwrap_or_default();
        let live: HashSet<&str> = self.cri.pods.values().map(|p| p.sandbox.as_str()).collect();
        let dead: Vec<String> = v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["state"] == "SANDBOX_NOTREADY")
            .filter_map(|p| p["id"].as_str())
            .filter(|id| !live.contains(id))
            .map(str::to_string)
            .collect();
        for id in dead {
            match crictl(rt, Duration::from_secs(60), &["rmp", &id]) {
                Ok(_) => self.log(&format!("garbage collection: removed sandbox {id}")),
                Err(e) => self.log(&format!("garbage collection: {e:#}")),
            }
        }
    }
}
