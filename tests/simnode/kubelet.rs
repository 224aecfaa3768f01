//! `nvke-simnode kubelet --sim DIR`: a kubelet that runs the static pods of
//! `<root>/etc/kubernetes/manifests` as simulated containers.
//!
//! Every 10 ms it re-reads sim.json and the manifests directory (non-hidden
//! regular files, symlinks followed, subdirectories skipped), and reconciles:
//!
//! - a pod whose manifest appears gets, `startLatencyMs` later, one new
//!   container per spec container (new 64-hex ID);
//! - when its manifest goes away, `stopLatencyMs` later the container is
//!   stopped and kept as CONTAINER_EXITED;
//! - the static pod UID is the first 32 hex digits of sha256(manifest bytes),
//!   so an identical manifest that comes back has the same UID (and a new
//!   container); a changed manifest is a new pod;
//! - two manifests naming the same pod: the first file (by name) wins;
//! - containers named `kube-apiserver` and `etcd` run a stand-in process and
//!   count as running only once it accepts TCP connections; a process that
//!   dies on its own is a crash: EXITED, restarted with a back-off. With
//!   sim.json `realEtcd`, the etcd container runs that real etcd binary with
//!   the manifest's arguments instead (e2e).
//!
//! It exits on SIGTERM/SIGINT (stopping its processes), when its parent
//! process goes away, or when the simulation directory is removed.

use crate::sim::{self, Sim, SimConfig};
use crate::state::{
    Container, ContainersFile, Mount, Sandbox, CREATED, EXITED, RUNNING, SANDBOX_NOTREADY,
    SANDBOX_READY,
};
use anyhow::{Context, Result};
use nix::sys::signal::{self, SigHandler, Signal};
use nix::unistd::Pid;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod cri;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: nix::libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

const POLL: Duration = Duration::from_millis(10);
/// A stand-in process that has not started listening after this is killed
/// and counts as a crash.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// kubelet's `minimumGracePeriodInSeconds`: a stop never SIGKILLs sooner.
const MIN_GRACE_SECS: u64 = 2;
const MAX_MANIFEST: u64 = 1 << 20;

// ------------------------------------------------------------ manifests

#[derive(Debug, Deserialize)]
struct PodManifest {
    kind: Option<String>,
    metadata: Meta,
    spec: PodSpec,
}

#[derive(Debug, Deserialize)]
struct Meta {
    name: String,
    namespace: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    containers: Vec<ContainerSpec>,
    #[serde(default)]
    volumes: Vec<Volume>,
    termination_grace_period_seconds: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerSpec {
    name: String,
    image: Option<String>,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    volume_mounts: Vec<VolumeMount>,
    termination_message_path: Option<String>,
    termination_message_policy: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VolumeMount {
    name: String,
    mount_path: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Volume {
    name: String,
    host_path: Option<HostPath>,
}

#[derive(Debug, Deserialize)]
struct HostPath {
    path: String,
}

/// Where the kubelet got a pod from: its `kubernetes.io/config.source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A static pod: a manifest file in `manifests/`.
    File,
    /// A pod bound to this node by the API server (sim.json `apiPods`).
    Api,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::File => "file",
            Source::Api => "api",
        }
    }
}

/// A pod: a static pod as loaded from one manifest file, or an API pod.
#[derive(Debug, Clone)]
struct Pod {
    uid: String,
    name: String,
    namespace: String,
    /// The manifest file (static pods); empty for API pods.
    manifest: String,
    source: Source,
    /// The pod's own `metadata.labels` / `metadata.annotations`.
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    /// `spec.terminationGracePeriodSeconds` (API default 30).
    grace_secs: i64,
    containers: Vec<PodContainer>,
}

#[derive(Debug, Clone)]
struct PodContainer {
    name: String,
    image: String,
    argv: Vec<String>,
    mounts: Vec<Mount>,
    termination_message_path: String,
    termination_message_policy: String,
}

impl PodContainer {
    fn new(name: &str) -> PodContainer {
        PodContainer {
            name: name.to_string(),
            image: format!("registry.k8s.io/{name}:v1.31.0"),
            argv: Vec::new(),
            mounts: Vec::new(),
            termination_message_path: "/dev/termination-log".to_string(),
            termination_message_policy: "File".to_string(),
        }
    }

    /// `io.kubernetes.container.hash`: the kubelet's FNV-32a hash of the
    /// container spec, in hex without leading zeros
    /// (`strconv.FormatUint(HashContainer(c), 16)`); here over the fields
    /// we model.
    fn hash(&self) -> String {
        let mut h: u32 = 0x811c_9dc5;
        let mut eat = |s: &str| {
            for b in s.bytes().chain(std::iter::once(0)) {
                h ^= u32::from(b);
                h = h.wrapping_mul(0x0100_0193);
            }
        };
        eat(&self.name);
        eat(&self.image);
        for a in &self.argv {
            eat(a);
        }
        format!("{h:x}")
    }
}

/// An API pod's UID: a UUID made from its namespace and name, so that the
/// same sim.json entry keeps its UID.
fn api_pod_uid(namespace: &str, name: &str) -> String {
    let d = Sha256::digest(format!("api-pod\0{namespace}\0{name}").as_bytes());
    let h = sim::hex(&d[..16]);
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn api_pod(p: &sim::ApiPod) -> Pod {
    let namespace = p.namespace.clone().unwrap_or_else(|| "default".to_string());
    Pod {
        uid: p
            .uid
            .clone()
            .unwrap_or_else(|| api_pod_uid(&namespace, &p.name)),
        name: p.name.clone(),
        namespace,
        manifest: String::new(),
        source: Source::Api,
        labels: p.labels.clone(),
        annotations: p.annotations.clone(),
        grace_secs: 30,
        containers: p.containers.iter().map(|c| PodContainer::new(c)).collect(),
    }
}

fn parse_pod(bytes: &[u8], uid: &str, manifest: &str) -> Result<Pod> {
    let m: PodManifest = serde_yaml::from_slice(bytes).context("not a Pod manifest")?;
    if let Some(kind) = &m.kind {
        anyhow::ensure!(kind == "Pod", "kind is {kind}, not Pod");
    }
    anyhow::ensure!(!m.metadata.name.is_empty(), "metadata.name is empty");
    anyhow::ensure!(!m.spec.containers.is_empty(), "spec.containers is empty");
    let volumes: HashMap<&str, &str> = m
        .spec
        .volumes
        .iter()
        .filter_map(|v| {
            v.host_path
                .as_ref()
                .map(|h| (v.name.as_str(), h.path.as_str()))
        })
        .collect();
    let containers = m
        .spec
        .containers
        .iter()
        .map(|c| PodContainer {
            termination_message_path: c
                .termination_message_path
                .clone()
                .unwrap_or_else(|| "/dev/termination-log".to_string()),
            termination_message_policy: c
                .termination_message_policy
                .clone()
                .unwrap_or_else(|| "File".to_string()),
            name: c.name.clone(),
            image: c
                .image
                .clone()
                .unwrap_or_else(|| format!("registry.k8s.io/{}:v1.31.0", c.name)),
            argv: c.command.iter().chain(c.args.iter()).cloned().collect(),
            mounts: c
                .volume_mounts
                .iter()
                .filter_map(|vm| {
                    volumes.get(vm.name.as_str()).map(|host| Mount {
                        container_path: vm.mount_path.clone(),
                        host_path: host.to_string(),
                    })
                })
                .collect(),
        })
        .collect();
    Ok(Pod {
        uid: uid.to_string(),
        name: m.metadata.name,
        namespace: m
            .metadata
            .namespace
            .unwrap_or_else(|| "default".to_string()),
        manifest: manifest.to_string(),
        source: Source::File,
        labels: m.metadata.labels.unwrap_or_default(),
        annotations: m.metadata.annotations.unwrap_or_default(),
        grace_secs: m.spec.termination_grace_period_seconds.unwrap_or(30),
        containers,
    })
}

/// The value of `--flag=V` or `--flag V` in a command line (`command[0]`
/// is the program), read as the components' flag libraries do (pflag for
/// kube-apiserver, Go's flag for etcd): the last occurrence wins, and
/// nothing after a `--` terminator is a flag.
fn flag_value<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    let prefix = format!("{flag}=");
    let mut found = None;
    let program = usize::from(argv.first().is_some_and(|a| !a.starts_with('-')));
    let mut it = argv.iter().skip(program);
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if let Some(v) = a.strip_prefix(&prefix) {
            found = Some(v);
        } else if a == flag {
            found = it.next().map(String::as_str);
        }
    }
    found
}

/// kube-apiserver's `--secure-port`, default 6443.
fn apiserver_port(argv: &[String]) -> u16 {
    flag_value(argv, "--secure-port")
        .and_then(|v| v.parse().ok())
        .unwrap_or(6443)
}

/// kube-controller-manager's or kube-scheduler's `--secure-port`.
pub fn secure_port(argv: &[String], default: u16) -> u16 {
    flag_value(argv, "--secure-port")
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// etcd's URL flags the kubelet passes to the stand-in etcd as its
/// manifest gives them (the stand-in listens on every listen URL and lists
/// itself at the advertised ones, as etcd does).
const ETCD_URL_FLAGS: [&str; 4] = [
    "--listen-client-urls",
    "--advertise-client-urls",
    "--initial-advertise-peer-urls",
    "--listen-peer-urls",
];

/// The port of etcd's client URL the stand-in listens on ([`etcd_client_listen`]).
fn etcd_client_port(argv: &[String]) -> u16 {
    etcd_client_listen(argv).port()
}

/// Where the stand-in etcd listens for clients: the loopback URL of its
/// `--listen-client-urls`, `127.0.0.1` before `[::1]`, else its first URL
/// with an address (real etcd listens on every URL; the stand-in on one),
/// default `127.0.0.1:2379`.
fn etcd_client_listen(argv: &[String]) -> std::net::SocketAddr {
    let urls = flag_value(argv, "--listen-client-urls").unwrap_or_default();
    let find = |host: &str| {
        urls.split(',').find_map(|u| {
            let u = u.trim();
            u.strip_prefix("https://")
                .or_else(|| u.strip_prefix("http://"))
                .and_then(|rest| rest.strip_prefix(host))
                .and_then(|rest| rest.strip_prefix(':'))
                .and_then(|p| p.trim_end_matches('/').parse::<u16>().ok())
        })
    };
    if let Some(p) = find("127.0.0.1") {
        return ([127, 0, 0, 1], p).into();
    }
    if let Some(p) = find("[::1]") {
        return (std::net::Ipv6Addr::LOCALHOST, p).into();
    }
    // No loopback URL (etcd bound to the node's address only): the first
    // URL with an address, as etcd listens on each (one listener is enough
    // for the questions asked here).
    let any = urls.split(',').find_map(|u| {
        let rest = u.trim().split_once("://")?.1.trim_end_matches('/');
        rest.parse::<std::net::SocketAddr>().ok()
    });
    any.unwrap_or_else(|| ([127, 0, 0, 1], 2379).into())
}

// ------------------------------------------------------------ runtime state

#[derive(Debug)]
enum Phase {
    /// Created, its process not started yet (sim.json `createdMs`).
    Created {
        until: Instant,
    },
    /// The stand-in process runs but does not listen yet (RUNNING already).
    Starting {
        since: Instant,
    },
    Running,
    /// SIGTERM sent.
    Stopping {
        kill_at: Instant,
    },
    Exited,
}

struct Live {
    rec: Container,
    child: Option<Child>,
    phase: Phase,
    /// The process to start when the container leaves CREATED: role,
    /// port, extra arguments (None: no process).
    plan: Option<(String, u16, Vec<String>)>,
    /// Where its process listens (its `--bind-address`; an unspecified
    /// one, and none, on loopback of the family), asked to tell STARTING
    /// from listening.
    listen: IpAddr,
    stop_at: Option<Instant>,
    /// Listed in containers.json (a starting process is not, yet).
    visible: bool,
}

type CtrKey = (String, String, String); // namespace, pod name, container name

struct Kubelet {
    sim: Sim,
    exe: PathBuf,
    cfg: SimConfig,
    cfg_error: Option<String>,
    containers: Vec<Live>,
    /// (uid, container name) -> when to create it.
    pending: HashMap<(String, String), Instant>,
    /// uid -> index in `sandbox_recs` of its live (READY) sandbox.
    sandboxes: HashMap<String, usize>,
    /// Every sandbox of this kubelet's life (and the previous ones'),
    /// oldest first.
    sandbox_recs: Vec<Sandbox>,
    /// uid -> `kubernetes.io/config.seen`: when the pod was first seen
    /// (RFC 3339 with nanoseconds), while it is wanted.
    seen: HashMap<String, String>,
    /// (uid, container name) -> consecutive crashes.
    crashes: HashMap<(String, String), u32>,
    /// Pods whose removal stopped their containers: their sandbox is not
    /// used again (the real kubelet stops it with the pod).
    torn_down: HashSet<String>,
    /// parsed manifests by UID; UIDs already reported as unparsable.
    parsed: HashMap<String, Rc<Pod>>,
    bad: HashSet<String>,
    duplicates: HashSet<String>,
    /// Port of etcd's client URL, from the static pod named etcd (else the last etcd container seen).
    etcd_port: Option<u16>,
    /// Where that etcd listens (its loopback client URL's address).
    etcd_host: Option<std::net::IpAddr>,
    dirty: bool,
    /// Containers started in this tick whose legacy log link is still to
    /// be made, once the runtime's state says they run (as the real kubelet
    /// links only after StartContainer returned).
    to_link: Vec<Container>,
    parent: Pid,
    /// Manifest file name -> (stamp, when read, UID).
    file_uids: HashMap<String, (Stamp, Instant, String)>,
    cfg_stamp: Option<(Stamp, Instant)>,
    /// sim.json `runtime`: the pods as run through the real crictl.
    cri: cri::Cri,
    /// The last container garbage collection (sim.json `gcPeriodMs`).
    last_gc: Option<Instant>,
}

/// What tells a changed file from an unchanged one without reading it.
#[derive(Debug, Clone, PartialEq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(md: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
        }
    }
}

/// Files whose stamp did not change are read again after this anyway
/// (timestamps are coarse).
const RECHECK: Duration = Duration::from_millis(500);

pub fn main(args: &[String]) -> Result<()> {
    let mut sim_arg = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sim" => sim_arg = it.next().cloned(),
            s if s.starts_with("--sim=") => sim_arg = Some(s["--sim=".len()..].to_string()),
            other => anyhow::bail!("kubelet: unknown argument {other} (usage: kubelet --sim DIR)"),
        }
    }
    let sim = Sim::from_arg(&sim_arg.context("kubelet: --sim DIR is required")?);
    let cfg = sim.load_config()?;
    let exe = std::env::current_exe().context("cannot find my own executable")?;
    std::fs::create_dir_all(sim.container_log_dir())?;

    let handler = SigHandler::Handler(on_signal);
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        signal::signal(Signal::SIGTERM, handler)?;
        signal::signal(Signal::SIGINT, handler)?;
    }

    let mut k = Kubelet {
        sim,
        exe,
        cfg,
        cfg_error: None,
        containers: Vec::new(),
        pending: HashMap::new(),
        sandboxes: HashMap::new(),
        sandbox_recs: Vec::new(),
        seen: HashMap::new(),
        crashes: HashMap::new(),
        torn_down: HashSet::new(),
        parsed: HashMap::new(),
        bad: HashSet::new(),
        duplicates: HashSet::new(),
        etcd_port: None,
        etcd_host: None,
        dirty: true,
        to_link: Vec::new(),
        last_gc: None,
        parent: nix::unistd::getppid(),
        file_uids: HashMap::new(),
        cfg_stamp: None,
        cri: cri::Cri::default(),
    };
    k.adopt_previous();
    k.log(&format!(
        "kubelet started (pid {}), root {}",
        std::process::id(),
        k.root().display()
    ));
    loop {
        if STOP.load(Ordering::SeqCst) {
            k.log("kubelet: signal received, stopping");
            break;
        }
        if nix::unistd::getppid() != k.parent {
            k.log("kubelet: parent process went away, stopping");
            break;
        }
        if !k.sim.dir.is_dir() {
            // The test's temp dir is gone: nothing left to simulate.
            break;
        }
        k.tick();
        std::thread::sleep(POLL);
    }
    k.shutdown();
    Ok(())
}

impl Kubelet {
    fn root(&self) -> PathBuf {
        self.sim.root(&self.cfg)
    }

    fn log(&self, msg: &str) {
        self.sim
            .append_log("kubelet.log", &format!("{} {msg}", sim::log_stamp()));
    }

    /// Containers from an earlier kubelet run are history: their processes
    /// died with it.
    fn adopt_previous(&mut self) {
        if let Ok(prev) = crate::state::load(&self.sim) {
            for mut sb in prev.sandboxes {
                sb.state = SANDBOX_NOTREADY.to_string();
                self.sandbox_recs.push(sb);
            }
            let now = sim::now_nanos().to_string();
            for mut rec in prev.containers {
                if rec.state != EXITED {
                    rec.state = EXITED.to_string();
                    rec.finished_at = now.clone();
                    rec.exit_code = 255;
                }
                self.containers.push(Live {
                    rec,
                    child: None,
                    phase: Phase::Exited,
                    plan: None,
                    listen: Ipv4Addr::LOCALHOST.into(),
                    stop_at: None,
                    visible: true,
                });
            }
        }
    }

    fn reload_config(&mut self) {
        let st = std::fs::metadata(self.sim.config_path())
            .ok()
            .map(|m| Stamp::of(&m));
        if let (Some(st), Some((prev, at))) = (&st, &self.cfg_stamp) {
            if st == prev && at.elapsed() < RECHECK {
                return;
            }
        }
        self.cfg_stamp = st.map(|s| (s, Instant::now()));
        match self.sim.load_config_once() {
            Ok(cfg) => {
                self.cfg = cfg;
                self.cfg_error = None;
            }
            Err(e) => {
                let msg = format!("{e:#}");
                if self.cfg_error.as_deref() != Some(&msg) {
                    self.log(&format!(
                        "sim.json unusable, keeping the previous settings: {msg}"
                    ));
                    self.cfg_error = Some(msg);
                }
            }
        }
    }

    /// The pods the manifests directory asks for, by UID.
    fn scan(&mut self) -> BTreeMap<String, Rc<Pod>> {
        let dir = self.root().join("etc/kubernetes/manifests");
        let mut names: Vec<String> = match std::fs::read_dir(&dir) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect(),
            Err(_) => Vec::new(),
        };
        names.sort();
        self.file_uids.retain(|n, _| names.contains(n));
        let mut pods = BTreeMap::new();
        let mut seen: HashSet<(String, String)> = HashSet::new();
        let mut named_etcd = false;
        for name in names {
            let path = dir.join(&name);
            let Ok(md) = std::fs::metadata(&path) else {
                continue;
            };
            if !md.is_file() || md.len() > MAX_MANIFEST {
                continue;
            }
            // Unchanged file (same inode, size, mtime, ctime; checked less
            // than a second ago): same UID, no need to read it again.
            let st = Stamp::of(&md);
            let cached = self
                .file_uids
                .get(&name)
                .filter(|(s, at, _)| *s == st && at.elapsed() < RECHECK)
                .map(|(_, _, uid)| uid.clone());
            let (uid, bytes) = match cached {
                Some(uid) => (uid, None),
                None => {
                    let Ok(bytes) = std::fs::read(&path) else {
                        continue;
                    };
                    let uid = sim::hex(&Sha256::digest(&bytes)[..16]);
                    self.file_uids
                        .insert(name.clone(), (st, Instant::now(), uid.clone()));
                    (uid, Some(bytes))
                }
            };
            let pod = match self.parsed.get(&uid) {
                Some(p) if p.manifest == name => p.clone(),
                Some(p) => Rc::new(Pod {
                    manifest: name.clone(),
                    ..Pod::clone(p)
                }),
                None if bytes.is_none() => continue, // known unparsable
                None => match parse_pod(bytes.as_deref().unwrap_or_default(), &uid, &name) {
                    Ok(p) => {
                        let p = Rc::new(p);
                        self.parsed.insert(uid.clone(), p.clone());
                        p
                    }
                    Err(e) => {
                        if self.bad.insert(uid.clone()) {
                            self.log(&format!("could not process manifest file {name}: {e:#}"));
                        }
                        continue;
                    }
                },
            };
            if !seen.insert((pod.namespace.clone(), pod.name.clone())) {
                let key = format!("{name}/{uid}");
                if self.duplicates.insert(key) {
                    self.log(&format!(
                        "manifest {name}: pod {}/{} is already defined by another file, ignored",
                        pod.namespace, pod.name
                    ));
                }
                continue;
            }
            if let Some(c) = pod.containers.iter().find(|c| c.name == "etcd") {
                // The static pod named etcd wins over other pods with an
                // etcd container (etcd-copy.yaml, etcd2.yaml).
                if pod.name == "etcd" || !named_etcd {
                    self.etcd_port = Some(etcd_client_port(&c.argv));
                    self.etcd_host = Some(etcd_client_listen(&c.argv).ip());
                    named_etcd |= pod.name == "etcd";
                }
            }
            pods.insert(uid, pod);
        }
        // Pods from the API server (sim.json `apiPods`).
        for p in &self.cfg.api_pods {
            let pod = api_pod(p);
            if !seen.insert((pod.namespace.clone(), pod.name.clone())) {
                continue;
            }
            pods.insert(pod.uid.clone(), Rc::new(pod));
        }
        let now = sim::rfc3339_nanos(sim::now_nanos());
        self.seen.retain(|uid, _| pods.contains_key(uid));
        for uid in pods.keys() {
            self.seen.entry(uid.clone()).or_insert_with(|| now.clone());
        }
        pods
    }

    fn named_in(list: &[String], pod: &str, container: &str) -> bool {
        list.iter().any(|n| n == pod || n == container)
    }

    fn tick(&mut self) {
        self.reload_config();
        let desired = self.scan();
        if self.cfg.runtime.is_some() {
            self.cri_tick(&desired);
            return;
        }
        let now = Instant::now();
        let stop_latency = Duration::from_millis(self.cfg.stop_latency_ms);
        let start_latency = Duration::from_millis(self.cfg.start_latency_ms);

        // 1. Existing containers: processes, readiness, stops.
        for i in 0..self.containers.len() {
            self.check_container(i, &desired, now, stop_latency);
        }

        // 2. Sandboxes and crash counters of pods that are gone.
        let live_uids: HashSet<String> = self
            .containers
            .iter()
            .filter(|c| !matches!(c.phase, Phase::Exited))
            .map(|c| c.rec.pod_uid.clone())
            .collect();
        let gone: Vec<usize> = self
            .sandboxes
            .iter()
            .filter(|(uid, _)| !desired.contains_key(*uid) && !live_uids.contains(*uid))
            .map(|(_, i)| *i)
            .collect();
        for i in gone {
            self.sandbox_recs[i].state = SANDBOX_NOTREADY.to_string();
            self.dirty = true;
            let sb = &self.sandbox_recs[i];
            self.log(&format!(
                "pod {}/{} ({}): sandbox {} stopped (NOTREADY)",
                sb.namespace, sb.name, sb.uid, sb.id
            ));
        }
        self.sandboxes
            .retain(|uid, _| desired.contains_key(uid) || live_uids.contains(uid));
        self.crashes.retain(|(uid, _), _| desired.contains_key(uid));
        self.pending.retain(|(uid, _), _| desired.contains_key(uid));

        // 2b. The kubelet's garbage collection, every `gcPeriodMs`.
        if self
            .last_gc
            .is_none_or(|t| now.duration_since(t) >= Duration::from_millis(self.cfg.gc_period_ms))
        {
            self.last_gc = Some(now);
            self.garbage_collect(&desired);
        }

        // 3. Desired containers that do not exist: schedule, then create.
        for pod in desired.values() {
            for c in &pod.containers {
                if Self::named_in(&self.cfg.never_start, &pod.name, &c.name) {
                    self.pending.remove(&(pod.uid.clone(), c.name.clone()));
                    continue;
                }
                let key: CtrKey = (pod.namespace.clone(), pod.name.clone(), c.name.clone());
                if self.occupied(&key) {
                    continue;
                }
                let pkey = (pod.uid.clone(), c.name.clone());
                match self.pending.get(&pkey) {
                    None => {
                        let crashes = self.crashes.get(&pkey).copied().unwrap_or(0);
                        let backoff = if crashes == 0 {
                            Duration::ZERO
                        } else {
                            Duration::from_millis((500u64 << (crashes - 1).min(5)).min(10_000))
                        };
                        self.pending.insert(pkey, now + start_latency + backoff);
                    }
                    Some(at) if *at <= now => {
                        self.pending.remove(&pkey);
                        self.create(pod, c);
                    }
                    Some(_) => {}
                }
            }
        }

        if self.dirty {
            self.write_state();
        }
        if !self.to_link.is_empty() {
            let root = self.root();
            for rec in std::mem::take(&mut self.to_link) {
                self.link_container_log(&root, &rec);
            }
        }
    }

    /// kubelet's container GC (kuberuntime_gc.go, policy MinAge 0,
    /// MaxPerPodContainer 1): exited containers of pods that are gone are
    /// removed (with their legacy log links), a wanted pod keeps its newest
    /// exited container per container name; then NOTREADY sandboxes no
    /// container refers to, except a wanted pod's newest.
    fn garbage_collect(&mut self, desired: &BTreeMap<String, Rc<Pod>>) {
        let mut keep_dead: HashSet<String> = HashSet::new();
        let mut newest: HashMap<(String, String), (u128, String)> = HashMap::new();
        for c in &self.containers {
            if matches!(c.phase, Phase::Exited) && desired.contains_key(&c.rec.pod_uid) {
                let at: u128 = c.rec.created_at.parse().unwrap_or(0);
                let k = (c.rec.pod_uid.clone(), c.rec.name.clone());
                if newest.get(&k).is_none_or(|(t, _)| at >= *t) {
                    newest.insert(k, (at, c.rec.id.clone()));
                }
            }
        }
        keep_dead.extend(newest.into_values().map(|(_, id)| id));
        let root = self.root();
        let mut removed = Vec::new();
        self.containers.retain(|c| {
            let gone = matches!(c.phase, Phase::Exited) && !keep_dead.contains(&c.rec.id);
            if gone {
                removed.push(c.rec.clone());
            }
            !gone
        });
        for rec in &removed {
            if root != Path::new("/") {
                let link = root.join("var/log/containers").join(format!(
                    "{}_{}_{}-{}.log",
                    rec.pod_full_name, rec.namespace, rec.name, rec.id
                ));
                let _ = std::fs::remove_file(link);
            }
            self.log(&format!(
                "garbage collection: removed container {} {} of pod {}/{}",
                rec.name, rec.id, rec.namespace, rec.pod_full_name
            ));
            self.dirty = true;
        }
        // Sandboxes: by ID, then the live map rebuilt by ID.
        let live: HashMap<String, String> = self
            .sandboxes
            .iter()
            .map(|(uid, &i)| (self.sandbox_recs[i].id.clone(), uid.clone()))
            .collect();
        let used: HashSet<String> = self
            .containers
            .iter()
            .map(|c| c.rec.pod_sandbox_id.clone())
            .collect();
        let mut newest_sb: HashMap<String, (u128, String)> = HashMap::new();
        for sb in &self.sandbox_recs {
            let at: u128 = sb.created_at.parse().unwrap_or(0);
            if newest_sb.get(&sb.uid).is_none_or(|(t, _)| at >= *t) {
                newest_sb.insert(sb.uid.clone(), (at, sb.id.clone()));
            }
        }
        let before = self.sandbox_recs.len();
        let mut gone_sb = Vec::new();
        self.sandbox_recs.retain(|sb| {
            let keep = live.contains_key(&sb.id)
                || sb.state != SANDBOX_NOTREADY
                || used.contains(&sb.id)
                || (desired.contains_key(&sb.uid)
                    && newest_sb.get(&sb.uid).is_some_and(|(_, id)| *id == sb.id));
            if !keep {
                gone_sb.push(format!("{}/{} {}", sb.namespace, sb.name, sb.id));
            }
            keep
        });
        if self.sandbox_recs.len() != before {
            self.sandboxes = self
                .sandbox_recs
                .iter()
                .enumerate()
                .filter_map(|(i, sb)| live.get(&sb.id).map(|uid| (uid.clone(), i)))
                .collect();
            self.dirty = true;
        }
        for g in gone_sb {
            self.log(&format!("garbage collection: removed sandbox {g}"));
        }
    }

    /// A container (starting, running or stopping) of this pod + container
    /// name exists, whatever its pod UID.
    fn occupied(&self, key: &CtrKey) -> bool {
        self.containers.iter().any(|c| {
            !matches!(c.phase, Phase::Exited)
                && c.rec.namespace == key.0
                && c.rec.pod_name == key.1
                && c.rec.name == key.2
        })
    }

    fn check_container(
        &mut self,
        i: usize,
        desired: &BTreeMap<String, Rc<Pod>>,
        now: Instant,
        stop_latency: Duration,
    ) {
        if matches!(self.containers[i].phase, Phase::Exited) {
            return;
        }
        // The process exited?
        let exited = match self.containers[i].child.as_mut() {
            Some(child) => child.try_wait().ok().flatten(),
            None => None,
        };
        if let Some(status) = exited {
            let stopping = matches!(self.containers[i].phase, Phase::Stopping { .. });
            let code = status.code().unwrap_or_else(|| {
                128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
            });
            // A stop that had to SIGKILL (the grace period passed) reports
            // the kill, as containerd does (137); a stop the process obeyed, 0.
            let killed = std::os::unix::process::ExitStatusExt::signal(&status) == Some(9);
            let code = if stopping && !killed { 0 } else { code };
            self.mark_exited(i, code, if stopping { "stopped" } else { "crashed" });
            if !stopping {
                let c = &self.containers[i].rec;
                *self
                    .crashes
                    .entry((c.pod_uid.clone(), c.name.clone()))
                    .or_insert(0) += 1;
            }
            return;
        }
        // StartContainer of a created container, when due.
        if let Phase::Created { until } = self.containers[i].phase {
            if now >= until && self.containers[i].stop_at.is_none() {
                self.start_created(i);
            }
        }
        // A starting process begins to listen (it is RUNNING already).
        if let Phase::Starting { since } = self.containers[i].phase {
            let port = self.containers[i].rec.port.unwrap_or(0);
            if listening(self.containers[i].listen, port) {
                let l = &mut self.containers[i];
                l.phase = Phase::Running;
                let msg = format!(
                    "container {} {} of pod {}/{} listening (pid {}, port {port})",
                    l.rec.name,
                    l.rec.id,
                    l.rec.namespace,
                    l.rec.pod_full_name,
                    l.rec.pid.unwrap_or(0)
                );
                self.dirty = true;
                self.log(&msg);
            } else if now.duration_since(since) > START_TIMEOUT {
                self.log(&format!(
                    "container {} {} did not listen on port {port} in time, killing it",
                    self.containers[i].rec.name, self.containers[i].rec.id
                ));
                if let Some(child) = self.containers[i].child.as_mut() {
                    let _ = child.kill();
                }
            }
        }
        // Its pod is gone: schedule the stop.
        let (uid, pod_name, name) = {
            let r = &self.containers[i].rec;
            (r.pod_uid.clone(), r.pod_name.clone(), r.name.clone())
        };
        let wanted = desired
            .get(&uid)
            .is_some_and(|p| p.containers.iter().any(|c| c.name == name));
        if !wanted
            && self.containers[i].stop_at.is_none()
            && !Self::named_in(&self.cfg.never_stop, &pod_name, &name)
        {
            self.containers[i].stop_at = Some(now + stop_latency);
            // The real kubelet kills the whole pod, its sandbox too
            // (StopPodSandbox): a pod that comes back gets a new sandbox,
            // however soon.
            self.torn_down.insert(uid.clone());
            self.log(&format!(
                "pod {}/{} ({uid}) removed: stopping container {name} {} in {} ms",
                self.containers[i].rec.namespace,
                self.containers[i].rec.pod_full_name,
                self.containers[i].rec.id,
                stop_latency.as_millis()
            ));
        }
        // Stop when due.
        match self.containers[i].phase {
            Phase::Stopping { kill_at } if now >= kill_at => {
                if let Some(child) = self.containers[i].child.as_mut() {
                    let _ = child.kill();
                }
            }
            Phase::Stopping { .. } | Phase::Exited => {}
            Phase::Created { .. } => {
                if self.containers[i].stop_at.is_some_and(|t| now >= t) {
                    self.containers[i].plan = None;
                    self.mark_exited(i, 0, "stopped before it started");
                }
            }
            Phase::Starting { .. } | Phase::Running => {
                if self.containers[i].stop_at.is_some_and(|t| now >= t) {
                    match self.containers[i].child.as_ref().map(|c| c.id()) {
                        Some(pid) => {
                            let _ = signal::kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
                            // kubelet's KillContainer: the pod's
                            // terminationGracePeriodSeconds, then SIGKILL.
                            let grace = self.containers[i]
                                .rec
                                .annotations
                                .get("io.kubernetes.pod.terminationGracePeriod")
                                .and_then(|g| g.parse::<u64>().ok())
                                .unwrap_or(30)
                                .max(MIN_GRACE_SECS);
                            self.containers[i].phase = Phase::Stopping {
                                kill_at: now + Duration::from_secs(grace),
                            };
                        }
                        None => self.mark_exited(i, 0, "stopped"),
                    }
                }
            }
        }
    }

    fn mark_exited(&mut self, i: usize, code: i32, how: &str) {
        let l = &mut self.containers[i];
        l.phase = Phase::Exited;
        l.child = None;
        l.visible = true;
        l.rec.state = EXITED.to_string();
        l.rec.exit_code = code;
        l.rec.finished_at = sim::now_nanos().to_string();
        if l.rec.started_at == "0" {
            l.rec.started_at = l.rec.finished_at.clone();
        }
        let msg = format!(
            "container {} {} of pod {}/{} {how} (exit code {code})",
            l.rec.name, l.rec.id, l.rec.namespace, l.rec.pod_full_name
        );
        self.dirty = true;
        self.log(&msg);
    }

    /// The ID of the pod's live sandbox, created (READY) with its first
    /// container: labels = the pod's own + `io.kubernetes.pod.{name,
    /// namespace,uid}`, annotations = the pod's own + the kubelet's
    /// `kubernetes.io/config.{hash (static pods), seen, source}`.
    fn sandbox_for(&mut self, pod: &Pod, full: &str) -> String {
        if self.torn_down.remove(&pod.uid) {
            if let Some(i) = self.sandboxes.remove(&pod.uid) {
                self.sandbox_recs[i].state = SANDBOX_NOTREADY.to_string();
                self.dirty = true;
            }
        }
        if let Some(&i) = self.sandboxes.get(&pod.uid) {
            return self.sandbox_recs[i].id.clone();
        }
        let mut labels = pod.labels.clone();
        labels.insert("io.kubernetes.pod.name".into(), full.to_string());
        labels.insert("io.kubernetes.pod.namespace".into(), pod.namespace.clone());
        labels.insert("io.kubernetes.pod.uid".into(), pod.uid.clone());
        let mut annotations = pod.annotations.clone();
        if pod.source == Source::File {
            annotations.insert("kubernetes.io/config.hash".into(), pod.uid.clone());
        }
        let seen = self
            .seen
            .get(&pod.uid)
            .cloned()
            .unwrap_or_else(|| sim::rfc3339_nanos(sim::now_nanos()));
        annotations.insert("kubernetes.io/config.seen".into(), seen);
        annotations.insert(
            "kubernetes.io/config.source".into(),
            pod.source.as_str().into(),
        );
        let attempt = self
            .sandbox_recs
            .iter()
            .filter(|s| s.uid == pod.uid)
            .count() as u32;
        let sb = Sandbox {
            id: sim::random_hex(32),
            name: full.to_string(),
            uid: pod.uid.clone(),
            namespace: pod.namespace.clone(),
            attempt,
            state: SANDBOX_READY.to_string(),
            created_at: sim::now_nanos().to_string(),
            labels,
            annotations,
            runtime_handler: String::new(),
        };
        self.log(&format!(
            "pod {}/{full} ({}) from {}: sandbox {} ready (attempt {attempt})",
            pod.namespace,
            pod.uid,
            if pod.source == Source::File {
                pod.manifest.as_str()
            } else {
                "the API server"
            },
            sb.id
        ));
        let id = sb.id.clone();
        self.sandboxes
            .insert(pod.uid.clone(), self.sandbox_recs.len());
        self.sandbox_recs.push(sb);
        self.dirty = true;
        id
    }

    fn create(&mut self, pod: &Pod, c: &PodContainer) {
        let id = sim::random_hex(32);
        let full = match pod.source {
            Source::File => format!("{}-{}", pod.name, self.cfg.node_name),
            Source::Api => pod.name.clone(),
        };
        let sandbox = self.sandbox_for(pod, &full);
        let attempt = self
            .containers
            .iter()
            .filter(|x| {
                x.rec.namespace == pod.namespace
                    && x.rec.pod_name == pod.name
                    && x.rec.name == c.name
            })
            .count() as u32;
        let labels: BTreeMap<String, String> = [
            ("io.kubernetes.container.name", c.name.clone()),
            ("io.kubernetes.pod.name", full.clone()),
            ("io.kubernetes.pod.namespace", pod.namespace.clone()),
            ("io.kubernetes.pod.uid", pod.uid.clone()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let now = sim::now_nanos().to_string();
        let mut rec = Container {
            id: id.clone(),
            pod_sandbox_id: sandbox,
            pod_name: pod.name.clone(),
            pod_full_name: full,
            namespace: pod.namespace.clone(),
            pod_uid: pod.uid.clone(),
            manifest: pod.manifest.clone(),
            name: c.name.clone(),
            image: c.image.clone(),
            state: RUNNING.to_string(),
            created_at: now.clone(),
            started_at: "0".to_string(),
            finished_at: "0".to_string(),
            exit_code: 0,
            attempt,
            labels,
            annotations: [
                ("io.kubernetes.container.hash", c.hash()),
                ("io.kubernetes.container.restartCount", attempt.to_string()),
                (
                    "io.kubernetes.container.terminationMessagePath",
                    c.termination_message_path.clone(),
                ),
                (
                    "io.kubernetes.container.terminationMessagePolicy",
                    c.termination_message_policy.clone(),
                ),
                (
                    "io.kubernetes.pod.terminationGracePeriod",
                    pod.grace_secs.to_string(),
                ),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            pid: None,
            port: None,
            mounts: c.mounts.clone(),
            log_path: None,
        };
        let from = match pod.source {
            Source::File => pod.manifest.clone(),
            Source::Api => "the API server".to_string(),
        };
        // A container is CONTAINER_CREATED from CreateContainer until
        // StartContainer (sim.json `createdMs`; the real kubelet calls
        // them back to back), then RUNNING as soon as its process is
        // started, before it listens (as containerd reports it).
        // Only static pods' etcd and kube-apiserver run a process; an API
        // pod's containers (an etcd backup job) have none.
        let process_name = match pod.source {
            Source::File => c.name.as_str(),
            Source::Api => "",
        };
        let process: Option<(&str, u16, Vec<String>)> = match process_name {
            // sim.json `realEtcd`: the real etcd with the manifest's arguments.
            "etcd" if self.cfg.real_etcd.is_some() => Some((
                "real-etcd",
                etcd_client_port(&c.argv),
                c.argv.iter().skip(1).cloned().collect(),
            )),
            "kube-apiserver" => {
                let port = apiserver_port(&c.argv);
                let etcd_port = self.etcd_port.unwrap_or_else(|| {
                    flag_value(&c.argv, "--etcd-servers")
                        .and_then(|v| {
                            v.split(',')
                                .find_map(|u| u.strip_prefix("https://127.0.0.1:"))
                        })
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(2379)
                });
                let mut extra = vec!["--etcd-port".into(), etcd_port.to_string()];
                // The serving files the manifest names (kubeadm's: the
                // stand-in's default).
                if let (Some(c), Some(k)) = (
                    flag_value(&c.argv, "--tls-cert-file"),
                    flag_value(&c.argv, "--tls-private-key-file"),
                ) {
                    extra.extend([
                        "--tls-cert-file".into(),
                        c.to_string(),
                        "--tls-private-key-file".into(),
                        k.to_string(),
                    ]);
                }
                if let Some(h) = self.etcd_host {
                    extra.extend(["--etcd-host".into(), h.to_string()]);
                }
                // The manifest's --bind-address (either family), else
                // sim.json `apiserverBindAddress`.
                if let Some(bind) = flag_value(&c.argv, "--bind-address") {
                    extra.extend(["--bind-address".into(), bind.to_string()]);
                } else if let Some(bind) = self.cfg.apiserver_bind_address {
                    extra.extend(["--bind-address".into(), bind.to_string()]);
                }
                extra.extend(["--sim".into(), self.sim.dir.display().to_string()]);
                Some(("apiserver", port, extra))
            }
            "etcd" => {
                let mut extra = vec!["--sim".into(), self.sim.dir.display().to_string()];
                if flag_value(&c.argv, "--enable-grpc-gateway") == Some("false") {
                    extra.push("--no-gateway".into());
                }
                // etcd's own URL flags, as its manifest gives them: it
                // listens on every client and peer URL (either family,
                // any address) and lists itself at the advertised ones.
                for flag in ETCD_URL_FLAGS {
                    if let Some(v) = flag_value(&c.argv, flag) {
                        extra.extend([flag.to_string(), v.to_string()]);
                    }
                }
                let client = etcd_client_listen(&c.argv);
                if flag_value(&c.argv, "--listen-client-urls").is_none() {
                    extra.extend(["--bind-address".into(), client.ip().to_string()]);
                }
                Some(("etcd", client.port(), extra))
            }
            // They serve /healthz on their --secure-port (sim.json `health`
            // `closed`: their process runs and never listens).
            name @ ("kube-controller-manager" | "kube-scheduler")
                if self.cfg.health.get(name).map(String::as_str) != Some("closed") =>
            {
                let default = if name == "kube-scheduler" {
                    10259
                } else {
                    10257
                };
                let mut extra = vec![
                    "--name".into(),
                    name.to_string(),
                    "--sim".into(),
                    self.sim.dir.display().to_string(),
                ];
                // Where the manifest binds it (either family).
                if let Some(bind) = flag_value(&c.argv, "--bind-address") {
                    extra.extend(["--bind-address".into(), bind.to_string()]);
                }
                Some(("healthz", secure_port(&c.argv, default), extra))
            }
            // Every other static pod container has a process too (as on a
            // real node: a stop is SIGTERM to it, its exit is what the
            // runtime reports); it serves nothing, so it is running at once.
            "" => None,
            _ => Some(("pause", 0, Vec::new())),
        };
        let plan = process.map(|(role, port, extra)| (role.to_string(), port, extra));
        rec.state = CREATED.to_string();
        let until = Instant::now() + Duration::from_millis(self.cfg.created_ms);
        self.log(&format!(
            "pod {}/{} ({}) from {}: created container {} {id} (attempt {attempt})",
            rec.namespace, rec.pod_full_name, rec.pod_uid, from, rec.name
        ));
        self.containers.push(Live {
            rec,
            child: None,
            phase: Phase::Created { until },
            plan,
            listen: Ipv4Addr::LOCALHOST.into(),
            stop_at: None,
            visible: true,
        });
        if self.cfg.created_ms == 0 {
            let i = self.containers.len() - 1;
            self.start_created(i);
        }
        self.dirty = true;
    }

    /// StartContainer: the process of a CREATED container (none for an API
    /// pod's), RUNNING at once.
    fn start_created(&mut self, i: usize) {
        let root = self.root();
        let now = sim::now_nanos().to_string();
        let plan = self.containers[i].plan.take();
        let (id, name) = (
            self.containers[i].rec.id.clone(),
            self.containers[i].rec.name.clone(),
        );
        let grace_ignored = Self::named_in(
            &self.cfg.ignore_sigterm,
            &self.containers[i].rec.pod_name,
            &name,
        );
        self.dirty = true;
        match plan {
            None => {
                let l = &mut self.containers[i];
                l.rec.started_at = now;
                l.rec.state = RUNNING.to_string();
                l.phase = Phase::Running;
                self.to_link.push(self.containers[i].rec.clone());
                self.log(&format!("container {name} {id} started"));
            }
            Some((role, port, mut extra)) => {
                let log_path = self.sim.container_log_dir().join(format!("{id}.log"));
                if self.cfg.listen_delay_ms > 0 && role != "pause" && role != "real-etcd" {
                    extra.extend([
                        "--listen-delay-ms".into(),
                        self.cfg.listen_delay_ms.to_string(),
                    ]);
                }
                if grace_ignored && role != "real-etcd" {
                    extra.push("--ignore-sigterm".into());
                }
                if let Some(ms) = self.cfg.crash_after_ms.get(&name) {
                    if role != "real-etcd" {
                        extra.extend(["--exit-after-ms".into(), ms.to_string()]);
                    }
                }
                let spawned = self.spawn(&role, &root, port, &extra, &log_path);
                let l = &mut self.containers[i];
                l.listen = listen_address(&extra);
                l.rec.port = Some(port);
                l.rec.log_path = Some(log_path);
                match spawned {
                    Ok(child) => {
                        let pid = child.id();
                        l.rec.pid = Some(pid);
                        l.rec.started_at = now;
                        l.rec.state = RUNNING.to_string();
                        l.child = Some(child);
                        if role == "pause" {
                            l.rec.port = None;
                            l.phase = Phase::Running;
                        } else {
                            l.phase = Phase::Starting {
                                since: Instant::now(),
                            };
                        }
                        self.to_link.push(self.containers[i].rec.clone());
                        self.log(&format!(
                            "container {name} {id} started: {role} on port {port}, pid {pid}"
                        ));
                    }
                    Err(e) => {
                        let msg = format!("failed to start {role} for {name}: {e:#}");
                        l.rec.exit_code = 128;
                        l.rec.started_at = now.clone();
                        l.rec.finished_at = now;
                        l.rec.state = EXITED.to_string();
                        l.phase = Phase::Exited;
                        let k = (l.rec.pod_uid.clone(), name.clone());
                        *self.crashes.entry(k).or_insert(0) += 1;
                        self.log(&msg);
                    }
                }
            }
        }
    }

    /// As the real kubelet does for every container it starts (right after
    /// StartContainer returned, kuberuntime_container.go): the legacy link
    /// `/var/log/containers/<pod>_<namespace>_<container>-<id>.log` ->
    /// `/var/log/pods/<namespace>_<pod>_<uid>/<container>/<attempt>.log`.
    /// Not under a root of `/` (the e2e lab's nodes share the host's
    /// /var/log).
    fn link_container_log(&self, root: &Path, rec: &Container) {
        if root == Path::new("/") {
            return;
        }
        let dir = root.join("var/log/containers");
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        let name = format!(
            "{}_{}_{}-{}.log",
            rec.pod_full_name, rec.namespace, rec.name, rec.id
        );
        let target = format!(
            "/var/log/pods/{}_{}_{}/{}/{}.log",
            rec.namespace, rec.pod_full_name, rec.pod_uid, rec.name, rec.attempt
        );
        if let Err(e) = std::os::unix::fs::symlink(target, dir.join(&name)) {
            self.log(&format!("cannot link {name}: {e}"));
        }
    }

    fn spawn(
        &self,
        role: &str,
        root: &Path,
        port: u16,
        extra: &[String],
        log_path: &Path,
    ) -> Result<Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .with_context(|| format!("failed to open {}", log_path.display()))?;
        let mut cmd = match (role, &self.cfg.real_etcd) {
            ("real-etcd", Some(etcd)) => {
                // The real etcd: the manifest's arguments as they are (its
                // paths resolve in the node's own mount namespace), a clean
                // environment (no stray ETCD_* variables).
                let mut cmd = Command::new(etcd);
                cmd.args(extra).env_clear().env(
                    "PATH",
                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                );
                cmd
            }
            _ => {
                let mut cmd = Command::new(&self.exe);
                cmd.arg(role)
                    .arg("--root")
                    .arg(root)
                    .arg("--port")
                    .arg(port.to_string())
                    .args(extra)
                    .args(
                        self.cfg
                            .tls_now_unix()
                            .ok()
                            .flatten()
                            .map(|t| vec!["--tls-now".to_string(), t.to_string()])
                            .unwrap_or_default(),
                    );
                cmd
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let me = nix::unistd::getpid();
        // SAFETY: only async-signal-safe calls (prctl, getppid, _exit).
        unsafe {
            cmd.pre_exec(move || {
                let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM);
                if nix::unistd::getppid() != me {
                    nix::libc::_exit(1);
                }
                Ok(())
            });
        }
        cmd.spawn()
            .with_context(|| match (role, &self.cfg.real_etcd) {
                ("real-etcd", Some(etcd)) => format!("failed to run {etcd}"),
                _ => format!("failed to run {} {role}", self.exe.display()),
            })
    }

    fn write_state(&mut self) {
        let file = ContainersFile {
            kubelet_pid: std::process::id(),
            updated_at: sim::now_nanos().to_string(),
            containers: self
                .containers
                .iter()
                .filter(|c| c.visible)
                .map(|c| c.rec.clone())
                .collect(),
            sandboxes: self.sandbox_recs.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).expect("serialize containers");
        bytes.push(b'\n');
        match sim::write_atomic(&self.sim.containers_path(), &bytes, 0o644) {
            Ok(()) => self.dirty = false,
            Err(e) => self.log(&format!("failed to write containers.json: {e:#}")),
        }
    }

    fn shutdown(&mut self) {
        if self.cfg.runtime.is_some() {
            // The real kubelet leaves its pods running when it stops.
            self.log("kubelet stopped (pods left to the runtime)");
            return;
        }
        for l in &self.containers {
            if let Some(child) = &l.child {
                let _ = signal::kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for i in 0..self.containers.len() {
            if matches!(self.containers[i].phase, Phase::Exited) {
                continue;
            }
            if let Some(child) = self.containers[i].child.as_mut() {
                loop {
                    if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                        break;
                    }
                    if Instant::now() >= deadline {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    std::thread::sleep(POLL);
                }
            }
            self.mark_exited(i, 0, "stopped (kubelet shutdown)");
        }
        for sb in &mut self.sandbox_recs {
            sb.state = SANDBOX_NOTREADY.to_string();
        }
        self.sandboxes.clear();
        if self.sim.dir.is_dir() {
            self.write_state();
            self.log("kubelet stopped");
        }
    }
}

fn listening(ip: IpAddr, port: u16) -> bool {
    port != 0
        && TcpStream::connect_timeout(&SocketAddr::from((ip, port)), Duration::from_millis(100))
            .is_ok()
}

/// Where a stand-in started with `extra` listens: real etcd where
/// [`etcd_client_listen`] says; the others at their last `--bind-address`
/// (an unspecified one on its family's loopback), else `127.0.0.1`.
fn listen_address(extra: &[String]) -> IpAddr {
    // Real etcd, run with the manifest's own arguments.
    if flag_value(extra, "--listen-client-urls").is_some() {
        return etcd_client_listen(extra).ip();
    }
    let bind = extra
        .windows(2)
        .rev()
        .filter(|w| w[0] == "--bind-address")
        .find_map(|w| w[1].parse::<IpAddr>().ok());
    match bind {
        Some(IpAddr::V4(a)) if a.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        Some(IpAddr::V6(a)) if a.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        Some(a) => a,
        None => Ipv4Addr::LOCALHOST.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn ports_from_manifest_arguments() {
        assert_eq!(
            apiserver_port(&argv(&["kube-apiserver", "--secure-port=7443"])),
            7443
        );
        assert_eq!(
            apiserver_port(&argv(&["kube-apiserver", "--secure-port", "7444"])),
            7444
        );
        assert_eq!(apiserver_port(&argv(&["kube-apiserver"])), 6443);
        // pflag: the last occurrence wins, in either form.
        assert_eq!(
            apiserver_port(&argv(&[
                "kube-apiserver",
                "--secure-port=7443",
                "--secure-port",
                "7445"
            ])),
            7445
        );
        let etcd = argv(&[
            "etcd",
            "--listen-client-urls=https://127.0.0.1:12379,https://10.0.0.11:2379",
        ]);
        assert_eq!(etcd_client_port(&etcd), 12379);
        assert_eq!(etcd_client_port(&argv(&["etcd"])), 2379);
    }

    #[test]
    fn pod_manifest() {
        let yaml = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\nspec:\n  containers:\n  - name: etcd\n    command: [etcd, --name=cp-1]\n    volumeMounts:\n    - {name: certs, mountPath: /etc/kubernetes/pki/etcd}\n  volumes:\n  - {name: certs, hostPath: {path: /etc/kubernetes/pki/etcd}}\n";
        let p = parse_pod(yaml, "u", "etcd.yaml").unwrap();
        assert_eq!(p.namespace, "default");
        assert_eq!(p.containers[0].argv, argv(&["etcd", "--name=cp-1"]));
        assert_eq!(
            p.containers[0].mounts[0].host_path,
            "/etc/kubernetes/pki/etcd"
        );
        assert!(parse_pod(
            b"kind: Deployment\nmetadata: {name: x}\nspec: {containers: [{name: a}]}\n",
            "u",
            "x"
        )
        .is_err());
    }
}
