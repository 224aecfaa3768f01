//! The simulation directory: `sim.json` (the knobs), the state files beside
//! it, and small helpers every stand-in shares (atomic writes, logs, random
//! IDs, clocks).

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The node name the kubelet stand-in registers as (static pod names get
/// `-<node>` appended, as the real kubelet does).
pub const DEFAULT_NODE: &str = "cp-1";

/// The marker an e2e node's mount namespace carries (a hidden file in its
/// own `/etc/kubernetes`); `kubeadm.allowHostRoot` needs it.
pub const E2E_NODE_MARKER: &str = "/etc/kubernetes/.nvke-e2e-node";

/// `sim.json`. Every field is optional; unknown fields are an error so that a
/// misspelt knob fails loudly instead of silently doing nothing.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct SimConfig {
    /// The node root (absolute, or relative to the simulation directory).
    /// Default: `<sim dir>/root`.
    pub root: Option<PathBuf>,
    pub stop_latency_ms: u64,
    pub start_latency_ms: u64,
    /// Component (container or static pod) names that never get a running
    /// container.
    pub never_start: Vec<String>,
    /// Component names whose container keeps running after its manifest is
    /// removed.
    pub never_stop: Vec<String>,
    pub node_name: String,
    /// RFC 3339: the TLS stand-ins (etcd, kube-apiserver, etcdctl) check
    /// certificate validity as of this time instead of the real clock, so a
    /// test with a fixed `--now` keeps working after the fixture leaves
    /// expire in real time. Read when a process starts.
    pub tls_now: Option<String>,
    pub etcd: EtcdKnobs,
    pub kubeadm: KubeadmKnobs,
    /// Absolute path of a real etcd binary (e2e): the `etcd` container runs
    /// it with the manifest's arguments instead of the TLS stand-in.
    pub real_etcd: Option<String>,
    /// Absolute path of a real etcdctl (e2e): `crictl exec <etcd> etcdctl`
    /// runs it (ETCDCTL_API=3) instead of the emulation; the TLS file flags
    /// are still mapped through the container's mounts.
    pub real_etcdctl: Option<String>,
    /// The address the kube-apiserver stand-in listens on (default
    /// `127.0.0.1`; e2e: `0.0.0.0`, like the real default `--bind-address`).
    pub apiserver_bind_address: Option<std::net::IpAddr>,
    /// The container runtime's CRI socket: the one endpoint crictl can
    /// connect to (default containerd's, the first of crictl's defaults).
    pub runtime_endpoint: String,
    /// Pods the kubelet gets from the API server (not static): run with
    /// containers that have no process, sandbox `config.source` `api`.
    pub api_pods: Vec<ApiPod>,
    /// The containers tier (tests/containers.rs): the kubelet runs the
    /// static pods through this real crictl and CRI runtime instead of as
    /// simulated containers (kubelet/cri.rs).
    pub runtime: Option<CriRuntime>,
    /// The kubelet's container garbage collection (every minute on a real
    /// kubelet, the first right at its start): exited containers of pods
    /// that are gone are removed, with their sandboxes; a pod still wanted
    /// keeps its newest exited container per container name. Default 60000.
    pub gc_period_ms: u64,
    /// How long a new container stays CONTAINER_CREATED before its process
    /// is started (the real kubelet: CreateContainer then StartContainer,
    /// milliseconds apart). Default 0.
    pub created_ms: u64,
    /// The etcd and kube-apiserver stand-ins start listening this long
    /// after their process started (their container RUNNING meanwhile, as a
    /// real one is while etcd or the apiserver starts up). Default 0.
    pub listen_delay_ms: u64,
    /// Component names whose process ignores SIGTERM: a stop takes the
    /// pod's whole grace period and ends with SIGKILL (exit code 137).
    pub ignore_sigterm: Vec<String>,
    /// How a component's health endpoint answers, by name (`etcd`,
    /// `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`):
    /// `ok` (default), `unhealthy` (etcd 503 `{"health":"false"}`, the
    /// others 500 with a failed check), `slow` (accepts, never answers),
    /// `garbage` (not HTTP), `huge` (200 with a 10 MB body). Re-read on
    /// every request. `closed` (read at start): kube-controller-manager's
    /// or kube-scheduler's process runs but never listens.
    pub health: std::collections::BTreeMap<String, String>,
    /// A component's process exits 1 this many milliseconds after it
    /// starts (a crash loop: the kubelet restarts it in its pod with a
    /// back-off, `metadata.attempt` + 1 each time).
    pub crash_after_ms: std::collections::BTreeMap<String, u64>,
}

/// sim.json `runtime`: `{"crictl": "/abs/crictl", "endpoint": "unix:///.../containerd.sock"}`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CriRuntime {
    pub crictl: PathBuf,
    pub endpoint: String,
    /// How often the kubelet's garbage collection removes exited
    /// containers and stopped sandboxes of pods that are gone (kubelet:
    /// every minute). Default 60000.
    #[serde(default = "default_gc_period_ms")]
    pub gc_period_ms: u64,
}

fn default_gc_period_ms() -> u64 {
    60_000
}

/// The first of real crictl's `defaultRuntimeEndpoints` (cmd/crictl/main_unix.go).
pub const DEFAULT_RUNTIME_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// A pod the kubelet stand-in runs as if the API server had bound it to
/// this node (an etcd backup job, a snapshot agent): sim.json `apiPods`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiPod {
    pub name: String,
    /// Default `default`, as for a Pod without a namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Container names (no process; image `registry.k8s.io/<name>:v1.31.0`).
    pub containers: Vec<String>,
    #[serde(default)]
    pub labels: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: std::collections::BTreeMap<String, String>,
    /// Default: a UUID derived from namespace/name (stable across calls).
    #[serde(default)]
    pub uid: Option<String>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            root: None,
            stop_latency_ms: 200,
            start_latency_ms: 200,
            never_start: Vec::new(),
            never_stop: Vec::new(),
            node_name: DEFAULT_NODE.to_string(),
            tls_now: None,
            etcd: EtcdKnobs::default(),
            kubeadm: KubeadmKnobs::default(),
            real_etcd: None,
            real_etcdctl: None,
            apiserver_bind_address: None,
            runtime_endpoint: DEFAULT_RUNTIME_ENDPOINT.to_string(),
            api_pods: Vec::new(),
            runtime: None,
            gc_period_ms: 60_000,
            created_ms: 0,
            listen_delay_ms: 0,
            ignore_sigterm: Vec::new(),
            health: Default::default(),
            crash_after_ms: Default::default(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct EtcdKnobs {
    pub voters: u32,
    pub learners: u32,
    /// The last `unhealthy` members of the list are unhealthy.
    pub unhealthy: u32,
    /// The last `unreachable` members of the list do not answer at all:
    /// etcdctl waits its whole `--command-timeout` for them.
    pub unreachable: u32,
    pub self_is_learner: bool,
    pub exec_fails: bool,
    /// etcd's JSON gateway is on (default), as `--enable-grpc-gateway`.
    pub gateway: bool,
    /// The gateway answers the member list with these bytes (status 200)
    /// instead of the members above (hostile answers).
    pub gateway_answer: Option<String>,
}

impl Default for EtcdKnobs {
    fn default() -> Self {
        EtcdKnobs {
            voters: 1,
            learners: 0,
            unhealthy: 0,
            unreachable: 0,
            self_is_learner: false,
            exec_fails: false,
            gateway: true,
            gateway_answer: None,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeadmKnobs {
    pub fail_halfway: bool,
    /// kubeadm's names of leaves it does not renew, saying what kubeadm
    /// says of a leaf under a CA whose key it does not have.
    pub skip: Vec<String>,
    /// Per leaf (kubeadm's name), SANs (`DNS:x`, `IP:y`) left out of its
    /// renewed certificate: what a kubeadm falling back to its defaults
    /// does to the names a cluster configured.
    pub drop_sans: std::collections::BTreeMap<String, Vec<String>>,
    /// Per leaf (kubeadm's name), the subject (`/O=../CN=..`) its renewed
    /// certificate gets instead of its own.
    pub change_subject: std::collections::BTreeMap<String, String>,
    /// Renewed leaves are valid from now + this many seconds (a kubeadm
    /// whose clock is ahead), not from their CA's notBefore.
    pub not_before_ahead_secs: u64,
    #[serde(rename = "changeCA")]
    pub change_ca: bool,
    pub key_mismatch: bool,
    pub hang_secs: u64,
    /// e2e only: without `--rootfs`, renew under `/` (the runbook runs with
    /// `--root /` inside a node's mount namespace). Honoured only when
    /// sim.json's `root` is `/` and `/etc/kubernetes/.nvke-e2e-node` exists,
    /// so it can never touch a real host's PKI.
    pub allow_host_root: bool,
}

/// A simulation directory and its files.
#[derive(Debug, Clone)]
pub struct Sim {
    pub dir: PathBuf,
}

impl Sim {
    pub fn new(dir: PathBuf) -> Sim {
        Sim { dir }
    }

    /// `--sim X`: X is the simulation directory, or its `sim.json`.
    pub fn from_arg(arg: &str) -> Sim {
        let p = PathBuf::from(arg);
        if p.is_file() {
            let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
            return Sim::new(if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            });
        }
        Sim::new(p)
    }

    /// For a tool called through a symlink `<sim>/bin/<tool>`: `<sim>` is
    /// `dirname(argv[0])/..`, taken literally (argv[0] is not canonicalized:
    /// the symlink's directory is what matters). A bare name is looked up on
    /// PATH, like a shell would.
    pub fn from_argv0(argv0: &str) -> Result<Sim> {
        let path = if argv0.contains('/') {
            PathBuf::from(argv0)
        } else {
            let path_var = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&path_var)
                .map(|d| d.join(argv0))
                .find(|p| p.exists())
                .with_context(|| format!("cannot locate {argv0} on PATH to find sim.json"))?
        };
        let bin_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let bin_dir = if bin_dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            bin_dir
        };
        Ok(Sim::new(bin_dir.join("..")))
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("sim.json")
    }
    pub fn containers_path(&self) -> PathBuf {
        self.dir.join("containers.json")
    }
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    /// Per-container stdout/stderr of the stand-in processes.
    pub fn container_log_dir(&self) -> PathBuf {
        self.dir.join("container-logs")
    }

    /// Reads sim.json. A file that does not parse is read again for up to
    /// 100 ms, in case a test is rewriting it in place (write it atomically,
    /// temp file + rename, to avoid relying on this).
    pub fn load_config(&self) -> Result<SimConfig> {
        self.read_config(20)
    }

    /// Reads sim.json once (the kubelet polls it anyway).
    pub fn load_config_once(&self) -> Result<SimConfig> {
        self.read_config(0)
    }

    fn read_config(&self, retries: u32) -> Result<SimConfig> {
        let path = self.config_path();
        let mut tries = 0;
        loop {
            let bytes =
                fs::read(&path).with_context(|| format!("failed to read {}", path.display()))?;
            match parse_config(&bytes) {
                Ok(cfg) => return Ok(cfg),
                Err(_) if tries < retries => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => return Err(e).with_context(|| format!("invalid {}", path.display())),
            }
        }
    }

    /// The node root named by the configuration, made absolute.
    pub fn root(&self, cfg: &SimConfig) -> PathBuf {
        match &cfg.root {
            Some(r) if r.is_absolute() => r.clone(),
            Some(r) => self.dir.join(r),
            None => self.dir.join("root"),
        }
    }

    /// Appends one line to a log file in the simulation directory.
    pub fn append_log(&self, name: &str, line: &str) {
        append_line(&self.log_path(name), line);
    }
}

pub fn parse_config(bytes: &[u8]) -> Result<SimConfig> {
    let cfg: SimConfig = serde_json::from_slice(bytes)?;
    cfg.tls_now_unix()?;
    for (knob, path) in [
        ("realEtcd", &cfg.real_etcd),
        ("realEtcdctl", &cfg.real_etcdctl),
    ] {
        if let Some(p) = path {
            if !p.starts_with('/') {
                bail!("{knob} {p:?} is not an absolute path");
            }
        }
    }
    if cfg.etcd.voters == 0 && cfg.etcd.learners == 0 && !cfg.etcd.self_is_learner {
        bail!("etcd: a cluster needs at least one member");
    }
    if cfg.runtime_endpoint.is_empty() {
        bail!("runtimeEndpoint is empty");
    }
    for p in &cfg.api_pods {
        if p.name.is_empty() || p.containers.is_empty() || p.containers.iter().any(String::is_empty)
        {
            bail!(
                "apiPods: {:?} needs a name and at least one named container",
                p.name
            );
        }
    }
    Ok(cfg)
}

impl SimConfig {
    /// `tlsNow` as unix seconds.
    pub fn tls_now_unix(&self) -> Result<Option<i64>> {
        match &self.tls_now {
            None => Ok(None),
            Some(s) => {
                let t =
                    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                        .with_context(|| format!("tlsNow {s:?} is not RFC 3339"))?;
                Ok(Some(t.unix_timestamp()))
            }
        }
    }
}

/// Appends `line` + newline with a single write(2) on an O_APPEND file, so
/// lines from concurrent processes do not interleave.
pub fn append_line(path: &Path, line: &str) {
    let mut buf = line.replace('\n', "\\n");
    buf.push('\n');
    if let Ok(mut f) = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .open(path)
    {
        let _ = f.write_all(buf.as_bytes());
    }
}

/// Writes `bytes` to a dot-named temp file beside `path` with `mode`,
/// fsyncs it and renames it over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    let name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.simnode-{}.tmp", std::process::id()));
    let _ = fs::remove_file(&tmp);
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .with_context(|| format!("failed to create {}", tmp.display()))?;
        f.write_all(bytes)
            .with_context(|| format!("failed to write {}", tmp.display()))?;
        // The umask may have narrowed the mode: set it explicitly.
        f.set_permissions(fs::Permissions::from_mode(mode))
            .with_context(|| format!("failed to chmod {}", tmp.display()))?;
        f.sync_all()
            .with_context(|| format!("failed to fsync {}", tmp.display()))?;
    }
    fs::rename(&tmp, path).with_context(|| {
        let _ = fs::remove_file(&tmp);
        format!("failed to rename {} to {}", tmp.display(), path.display())
    })?;
    Ok(())
}

/// `n` random bytes from /dev/urandom.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    let mut f = fs::File::open("/dev/urandom").expect("open /dev/urandom");
    f.read_exact(&mut buf).expect("read /dev/urandom");
    buf
}

/// `2 * n` random lowercase hex digits.
pub fn random_hex(n_bytes: usize) -> String {
    hex(&random_bytes(n_bytes))
}

pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub fn now_nanos() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// RFC 3339 UTC with nanoseconds (`2026-11-30T00:00:00.123456789Z`), as
/// crictl inspect prints times; 0 is Go's zero time.
pub fn rfc3339_nanos(nanos: i128) -> String {
    if nanos == 0 {
        return "0001-01-01T00:00:00Z".to_string();
    }
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string())
}

/// Timestamp prefix for log lines.
pub fn log_stamp() -> String {
    rfc3339_nanos(now_nanos())
}

/// Maps an absolute node path (`/etc/kubernetes/pki/ca.crt`) under `root`.
pub fn under_root(root: &Path, node_path: &str) -> PathBuf {
    root.join(node_path.trim_start_matches('/'))
}

/// A node path under `root` as a program chrooted there (kubeadm
/// `--rootfs`) opens it: symlinks followed as the kernel would, an
/// absolute target taken from `root` again, `..` never above it; 40 links
/// at most (ELOOP). `/etc/kubernetes/pki -> /etc/kubernetes/ssl` is
/// `root/etc/kubernetes/ssl`, never the host's.
pub fn chrooted(root: &Path, node_path: &str) -> Result<PathBuf> {
    let mut todo: Vec<String> = node_path
        .split('/')
        .rev()
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    let mut at: Vec<String> = Vec::new();
    let mut links = 0;
    while let Some(c) = todo.pop() {
        match c.as_str() {
            "." => continue,
            ".." => {
                at.pop();
                continue;
            }
            _ => {}
        }
        let here = at
            .iter()
            .fold(root.to_path_buf(), |p, c| p.join(c))
            .join(&c);
        match fs::symlink_metadata(&here) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > 40 {
                    bail!("{node_path}: too many levels of symbolic links");
                }
                let target = fs::read_link(&here)?;
                let target = target.to_string_lossy();
                if target.starts_with('/') {
                    at.clear();
                }
                todo.extend(
                    target
                        .split('/')
                        .rev()
                        .filter(|c| !c.is_empty())
                        .map(str::to_string),
                );
            }
            _ => at.push(c),
        }
    }
    Ok(at.iter().fold(root.to_path_buf(), |p, c| p.join(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chrooted_follows_links_inside_the_root_only() {
        let t = tempfile::tempdir().unwrap();
        let k = t.path().join("etc/kubernetes");
        fs::create_dir_all(k.join("ssl/etcd")).unwrap();
        std::os::unix::fs::symlink("/etc/kubernetes/ssl", k.join("pki")).unwrap();
        std::os::unix::fs::symlink("../kubernetes/ssl", k.join("rel")).unwrap();
        std::os::unix::fs::symlink("loop", k.join("loop")).unwrap();
        let at = |p: &str| chrooted(t.path(), p).unwrap();
        assert_eq!(at("/etc/kubernetes/pki/etcd"), k.join("ssl/etcd"));
        assert_eq!(at("/etc/kubernetes/rel/ca.crt"), k.join("ssl/ca.crt"));
        assert_eq!(at("/../../etc/kubernetes/ssl"), k.join("ssl"));
        assert!(chrooted(t.path(), "/etc/kubernetes/loop/x").is_err());
    }

    #[test]
    fn config_defaults_and_typos() {
        let c = parse_config(b"{}").unwrap();
        assert_eq!(c.stop_latency_ms, 200);
        assert_eq!(c.etcd.voters, 1);
        assert!(!c.kubeadm.change_ca);
        let c = parse_config(
            br#"{"kubeadm": {"changeCA": true, "hangSecs": 3}, "neverStop": ["etcd"]}"#,
        )
        .unwrap();
        assert!(c.kubeadm.change_ca);
        assert_eq!(c.kubeadm.hang_secs, 3);
        assert_eq!(c.never_stop, vec!["etcd".to_string()]);
        assert!(parse_config(br#"{"neverstop": []}"#).is_err());
        let c = parse_config(
            br#"{"kubeadm": {"skip": ["apiserver"], "dropSans": {"apiserver": ["DNS:kubernetes.default"]}, "changeSubject": {"admin.conf": "/CN=x"}}}"#,
        )
        .unwrap();
        assert_eq!(c.kubeadm.skip, ["apiserver"]);
        assert_eq!(c.kubeadm.drop_sans["apiserver"], ["DNS:kubernetes.default"]);
        assert_eq!(c.kubeadm.change_subject["admin.conf"], "/CN=x");
        assert!(parse_config(br#"{"kubeadm": {"dropSANs": {}}}"#).is_err());
    }

    #[test]
    fn e2e_knobs_default_off() {
        let c = parse_config(b"{}").unwrap();
        assert!(c.real_etcd.is_none() && c.real_etcdctl.is_none());
        assert!(c.apiserver_bind_address.is_none() && !c.kubeadm.allow_host_root);
        let c = parse_config(
            br#"{"realEtcd": "/usr/bin/etcd", "apiserverBindAddress": "0.0.0.0", "kubeadm": {"allowHostRoot": true}}"#,
        )
        .unwrap();
        assert_eq!(c.real_etcd.as_deref(), Some("/usr/bin/etcd"));
        assert!(c.kubeadm.allow_host_root);
        assert!(parse_config(br#"{"realEtcdctl": "etcdctl"}"#).is_err());
        assert!(parse_config(br#"{"apiserverBindAddress": "nowhere"}"#).is_err());
    }

    #[test]
    fn issue11_knobs() {
        let c = parse_config(b"{}").unwrap();
        assert_eq!(c.runtime_endpoint, DEFAULT_RUNTIME_ENDPOINT);
        assert!(c.api_pods.is_empty() && c.etcd.unreachable == 0);
        let c = parse_config(
            br#"{"runtimeEndpoint": "unix:///run/k3s/containerd/containerd.sock", "etcd": {"voters": 3, "unreachable": 1},
                 "apiPods": [{"name": "etcd-backup-29123", "namespace": "kube-system", "containers": ["etcd"]}]}"#,
        )
        .unwrap();
        assert_eq!(c.api_pods[0].containers, vec!["etcd".to_string()]);
        assert_eq!(c.etcd.unreachable, 1);
        assert!(parse_config(br#"{"apiPods": [{"name": "x", "containers": []}]}"#).is_err());
        assert!(parse_config(
            br#"{"apiPods": [{"name": "x", "containers": ["a"], "image": "y"}]}"#
        )
        .is_err());
        assert!(parse_config(br#"{"runtimeEndpoint": ""}"#).is_err());
    }

    #[test]
    fn sim_dir_from_argv0_is_not_canonicalized() {
        let s = Sim::from_argv0("/x/sim/bin/crictl").unwrap();
        assert_eq!(s.config_path(), PathBuf::from("/x/sim/bin/../sim.json"));
    }
}
