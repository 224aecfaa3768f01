//! The lab: simulated control-plane nodes made of Linux namespaces (no
//! container engine), on a private bridge, with real etcd and real sshd.
//!
//! ```text
//!  netns <lab>  (the controller's side: ssh, etcdctl, probes, etcd writes)
//!    br0 10.0.0.1/24
//!     ├── veth ── netns <cp-1>  eth0 10.0.0.11/24
//!     ├── veth ── netns <cp-2>  eth0 10.0.0.12/24
//!     └── veth ── netns <cp-3>  eth0 10.0.0.13/24
//! ```
//!
//! Each node is also a private mount namespace, held by a `sleep` process
//! (the *holder*), in which per-node directories of the test's temp dir are
//! bind-mounted at the real paths: `/etc/kubernetes`, `/var/lib/nvke`,
//! `/var/lib/etcd`, and `/usr/local` (the simulation directory: sim.json,
//! containers.json, logs, and `bin/crictl`, `bin/kubeadm` on the runbook's
//! fixed PATH), plus a private tmpfs on `/run` (sshd's `/run/sshd`). So the
//! runbook runs with the default `--root /` and finds its tools on its own
//! PATH, as on a real node. The simulated kubelet (real etcd for the etcd
//! container, the TLS kube-apiserver stand-in listening on 0.0.0.0) and a
//! real sshd are started in the node with `nsenter`; whatever they start (ssh
//! sessions, the runbook, crictl, kubeadm, etcdctl) inherits the namespaces.
//!
//! Clean-up (Drop, also while unwinding from a failed assertion): the kubelet
//! and sshd get SIGTERM, then every process still in a node's or the lab's
//! network namespace is SIGKILLed (found through `/proc/*/ns/net`, so
//! orphans such as a runbook whose SSH session died are included), the
//! namespaces are deleted, and the temp dir removed. Every child is started
//! with a parent-death signal, and the next run sweeps what a SIGKILLed test
//! run left behind (namespaces and temp dirs named after a dead pid). The
//! host directories the bind mounts need are created when missing and
//! removed by the last lab out: tests/e2e/mountpoints.rs.

use crate::mountpoints::{self, MountPoints};
use crate::pki::{self, Keys, NodeId};
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const SIMNODE: &str = env!("CARGO_BIN_EXE_nvke-simnode");
pub const ETCD: &str = "/usr/bin/etcd";
pub const ETCDCTL: &str = "/usr/bin/etcdctl";
pub const SSHD: &str = "/usr/sbin/sshd";
pub const COMPONENTS: [&str; 4] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];
const NAME_PREFIX: &str = "nvke-e2e-";

static LABS: AtomicUsize = AtomicUsize::new(0);

/// Sets a parent-death signal on the child (kept across exec).
pub fn pdeathsig(cmd: &mut Command, sig: nix::sys::signal::Signal) -> &mut Command {
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(sig).map_err(std::io::Error::from)?;
            Ok(())
        })
    }
}

/// Runs the child in the network namespace `ns_fd` refers to.
pub fn in_netns(cmd: &mut Command, ns_fd: i32) -> &mut Command {
    // SAFETY: setns is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if nix::libc::setns(ns_fd, nix::libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Moves the calling thread into the network namespace at `path`.
pub fn enter_netns_thread(path: &Path) -> Result<()> {
    let f = File::open(path).with_context(|| format!("open {}", path.display()))?;
    // SAFETY: plain syscall on an fd we own.
    if unsafe { nix::libc::setns(f.as_raw_fd(), nix::libc::CLONE_NEWNET) } != 0 {
        bail!(
            "setns {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn ip(args: &[&str]) -> Result<()> {
    pki::run(Command::new("ip").args(args)).map(|_| ())
}

fn netns_path(name: &str) -> PathBuf {
    Path::new("/run/netns").join(name)
}

fn netns_inode(name: &str) -> Option<u64> {
    std::fs::metadata(netns_path(name)).ok().map(|m| m.ino())
}

/// Pids whose network namespace is the one with inode `ino`.
fn pids_in_netns(ino: u64) -> Vec<i32> {
    let want = format!("net:[{ino}]");
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            if pid == me {
                continue;
            }
            if std::fs::read_link(e.path().join("ns/net"))
                .map(|l| l.to_string_lossy() == want)
                .unwrap_or(false)
            {
                out.push(pid);
            }
        }
    }
    out
}

/// SIGKILLs every process in the network namespace and waits (bounded) for
/// them to be gone.
fn kill_netns(ino: u64) {
    use nix::sys::signal::{kill, Signal};
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = pids_in_netns(ino);
        if pids.is_empty() || Instant::now() > deadline {
            return;
        }
        for p in pids {
            let _ = kill(nix::unistd::Pid::from_raw(p), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pid_alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes what an earlier, killed test process left behind: namespaces and
/// temp dirs named `nvke-e2e-<pid>-...` whose pid is gone.
pub fn sweep_stale() {
    let stale = |name: &str| -> bool {
        name.strip_prefix(NAME_PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
            .is_some_and(|pid| pid != std::process::id() as i32 && !pid_alive(pid))
    };
    if let Ok(rd) = std::fs::read_dir("/run/netns") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if stale(&name) {
                if let Some(ino) = netns_inode(&name) {
                    kill_netns(ino);
                }
                let _ = ip(&["netns", "del", &name]);
                crate::say(&format!("e2e: removed stale network namespace {name}"));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if stale(&name) {
                let _ = std::fs::remove_dir_all(e.path());
                crate::say(&format!(
                    "e2e: removed stale temp dir {}",
                    e.path().display()
                ));
            }
        }
    }
}

/// One simulated control-plane node.
pub struct Node {
    pub id: NodeId,
    /// Network namespace name.
    pub ns: String,
    /// The node's directory in the test's temp dir (host view).
    pub dir: PathBuf,
    pub holder_pid: u32,
    holder: Option<Child>,
    kubelet: Option<Child>,
    sshd: Option<Child>,
    net_ino: u64,
}

impl Node {
    pub fn name(&self) -> &str {
        &self.id.name
    }
    pub fn ip(&self) -> &str {
        &self.id.ip
    }
    /// Host view of the node's `/etc/kubernetes`.
    pub fn etc(&self) -> PathBuf {
        self.dir.join("etc-kubernetes")
    }
    /// Host view of the node's `/var/lib/nvke`.
    pub fn var_lib_nvke(&self) -> PathBuf {
        self.dir.join("var-lib-nvke")
    }
    /// Host view of the runbook's state dir.
    pub fn state(&self) -> PathBuf {
        self.var_lib_nvke().join("k8s-cert-renewal")
    }
    /// Host view of the node's `/usr/local` (the simulation directory).
    pub fn sim(&self) -> PathBuf {
        self.dir.join("usr-local")
    }

    /// containers.json as the kubelet wrote it (test oracle, host view).
    pub fn containers(&self) -> Vec<Value> {
        std::fs::read(self.sim().join("containers.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["containers"].as_array().cloned())
            .unwrap_or_default()
    }

    /// Running control-plane container IDs by component (host view).
    pub fn running_ids(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for c in self.containers() {
            let name = c["name"].as_str().unwrap_or_default();
            if c["state"] == "CONTAINER_RUNNING"
                && c["namespace"] == "kube-system"
                && COMPONENTS.contains(&name)
            {
                out.insert(name.to_string(), c["id"].as_str().unwrap_or("").to_string());
            }
        }
        out
    }

    /// A command run inside the node's mount and network namespaces.
    pub fn nsenter(&self, program: &str) -> Command {
        let mut c = Command::new("nsenter");
        c.arg("-t")
            .arg(self.holder_pid.to_string())
            .args(["-m", "-n", "--", program]);
        c
    }

    pub fn kubelet_log(&self) -> String {
        std::fs::read_to_string(self.sim().join("kubelet.log")).unwrap_or_default()
    }

    pub fn receipt(&self, op: &str) -> Option<Value> {
        std::fs::read(self.state().join("completed").join(format!("{op}.json")))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }

    /// Every manifest active, nothing in the runbook's staging dir.
    pub fn manifests_all_active(&self) -> bool {
        crate::support::node::all_active_in(&self.etc()).is_ok()
    }

    fn start_kubelet(&mut self) -> Result<()> {
        let log = File::create(self.dir.join("kubelet.stderr"))?;
        let mut cmd = self.nsenter("/usr/local/lib/nvke-simnode");
        cmd.args(["kubelet", "--sim", "/usr/local"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        pdeathsig(&mut cmd, nix::sys::signal::Signal::SIGTERM);
        self.kubelet = Some(cmd.spawn().context("start the kubelet")?);
        Ok(())
    }

    fn start_sshd(&mut self) -> Result<()> {
        let log = File::create(self.dir.join("ssh/sshd.log"))?;
        let cfg = self.dir.join("ssh/sshd_config");
        let mut cmd = self.nsenter(SSHD);
        cmd.args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        pdeathsig(&mut cmd, nix::sys::signal::Signal::SIGTERM);
        self.sshd = Some(cmd.spawn().context("start sshd")?);
        Ok(())
    }

    fn stop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        // The kubelet stops its containers (etcd gets SIGTERM); sshd stops
        // listening. Then everything left in the namespace is killed.
        for child in [self.kubelet.as_mut(), self.sshd.as_mut()]
            .into_iter()
            .flatten()
        {
            let _ = kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                Signal::SIGTERM,
            );
        }
        let deadline = Instant::now() + Duration::from_secs(8);
        for child in [self.kubelet.as_mut(), self.sshd.as_mut()]
            .into_iter()
            .flatten()
        {
            while Instant::now() < deadline {
                if !matches!(child.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        kill_netns(self.net_ino);
        for child in [
            self.kubelet.as_mut(),
            self.sshd.as_mut(),
            self.holder.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.kubelet = None;
        self.sshd = None;
        self.holder = None;
    }
}

/// A cluster: the lab namespace, its bridge, and the nodes.
pub struct Lab {
    pub name: String,
    pub lab_ns: String,
    lab_ino: u64,
    pub nodes: Vec<Node>,
    /// The controller's files: ssh client key, known_hosts, its PKI.
    pub ctl_pki: pki::ControllerPki,
    pub ssh_key: PathBuf,
    pub known_hosts: PathBuf,
    pub keys: Keys,
    /// The network's address family (IPv6: single-stack, SPEC 12).
    pub family: pki::Family,
    namespaces: Vec<String>,
    /// The host's mount points, created if missing and removed when the
    /// last lab is gone ([`mountpoints`]): dropped after Drop::drop
    /// stopped every process (and with them the node's mount namespaces).
    _mounts: MountPoints<'static>,
    // Last: removed after Drop::drop stopped every process using it.
    tmp: Option<tempfile::TempDir>,
}

impl Lab {
    pub fn lab_netns_path(&self) -> PathBuf {
        netns_path(&self.lab_ns)
    }

    pub fn tmp_path(&self) -> &Path {
        self.tmp
            .as_ref()
            .map(|t| t.path())
            .unwrap_or(Path::new("/"))
    }

    /// Builds and starts an `n`-node cluster from the `keys` fixture CAs and
    /// waits until every node runs its four control-plane containers. Every
    /// node's leaves are due (inside the 30-day threshold).
    pub fn new(n: usize, keys: Keys) -> Result<Lab> {
        Lab::with_due(keys, &vec![true; n])
    }

    /// As [`Lab::new`], one node per entry of `due`: whether that node's
    /// leaves are due ([`pki::LEAF_DAYS`]) or not ([`pki::NOT_DUE_DAYS`]).
    pub fn with_due(keys: Keys, due: &[bool]) -> Result<Lab> {
        Lab::build(keys, due, pki::Family::V4)
    }

    /// As [`Lab::new`], on an IPv6 single-stack network (SPEC 12, v1.3):
    /// `fd00:10::1X` nodes, etcd and every probe on `::1` and the node's
    /// IPv6 address, URLs with brackets.
    pub fn ipv6(n: usize, keys: Keys) -> Result<Lab> {
        Lab::build(keys, &vec![true; n], pki::Family::V6)
    }

    fn build(keys: Keys, due: &[bool], family: pki::Family) -> Result<Lab> {
        let n = due.len();
        let started = Instant::now();
        sweep_stale();
        let seq = LABS.fetch_add(1, Ordering::SeqCst);
        let name = format!("{NAME_PREFIX}{}-{seq}", std::process::id());
        let tmp = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .tempdir()?;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))?;
        let mounts = mountpoints::HOST.enter()?;
        let ctl_dir = tmp.path().join("controller");
        std::fs::create_dir_all(&ctl_dir)?;
        let ctl_pki = pki::controller_pki(keys, &ctl_dir.join("pki"))?;
        let ssh_key = ctl_dir.join("id_ed25519");
        let client_pub = pki::ssh_key(&ssh_key, "nvke-e2e-controller")?;
        let known_hosts = ctl_dir.join("known_hosts");
        let mut lab = Lab {
            lab_ns: format!("{name}-lab"),
            name,
            lab_ino: 0,
            nodes: Vec::new(),
            ctl_pki,
            ssh_key,
            known_hosts,
            keys,
            family,
            namespaces: Vec::new(),
            _mounts: mounts,
            tmp: Some(tmp),
        };
        lab.network(n)?;
        let ids: Vec<NodeId> = (1..=n).map(|i| NodeId::new(i, family)).collect();
        let mut known = String::new();
        // The nodes' files, side by side (openssl and copies).
        let prepared: Vec<Result<(Node, String)>> = std::thread::scope(|s| {
            let lab = &lab;
            let handles: Vec<_> = ids
                .iter()
                .map(|id| {
                    let (ids, client_pub) = (&ids, &client_pub);
                    let days = if due[id.index - 1] {
                        pki::LEAF_DAYS
                    } else {
                        pki::NOT_DUE_DAYS
                    };
                    s.spawn(move || lab.prepare_node(id, ids, days, client_pub))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("prepare thread"))
                .collect()
        });
        for p in prepared {
            let (node, host_pub) = p?;
            known.push_str(&format!("{} {host_pub}\n", node.id.ip));
            lab.nodes.push(node);
        }
        std::fs::write(&lab.known_hosts, known)?;
        for i in 0..n {
            lab.start_holder(i)?;
        }
        for node in &mut lab.nodes {
            node.start_kubelet()?;
            node.start_sshd()?;
        }
        lab.wait_containers(Duration::from_secs(60))?;
        crate::say(&format!(
            "e2e: lab {} ({n} node(s), {} keys) up in {} ms, files in {}",
            lab.name,
            keys.name(),
            started.elapsed().as_millis(),
            lab.tmp_path().display()
        ));
        Ok(lab)
    }

    fn network(&mut self, n: usize) -> Result<()> {
        let lab = self.lab_ns.clone();
        ip(&["netns", "add", &lab])?;
        self.namespaces.push(lab.clone());
        self.lab_ino = netns_inode(&lab).context("lab netns inode")?;
        ip(&["-n", &lab, "link", "set", "lo", "up"])?;
        ip(&["-n", &lab, "link", "add", "br0", "type", "bridge"])?;
        // `nodad`: an IPv6 address is usable at once (no duplicate
        // address detection on a bridge of our own).
        let nodad: &[&str] = match self.family {
            pki::Family::V4 => &[],
            pki::Family::V6 => &["nodad"],
        };
        let gw = self.family.gateway();
        ip(&[&["-n", &lab, "addr", "add", gw, "dev", "br0"], nodad].concat())?;
        ip(&["-n", &lab, "link", "set", "br0", "up"])?;
        for i in 1..=n {
            let ns = format!("{}-cp{i}", self.name);
            ip(&["netns", "add", &ns])?;
            self.namespaces.push(ns.clone());
            let veth = format!("vcp{i}");
            ip(&[
                "-n", &lab, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            ip(&["-n", &lab, "link", "set", &veth, "master", "br0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            let cidr = NodeId::new(i, self.family).cidr();
            ip(&[&["-n", &ns, "addr", "add", &cidr, "dev", "eth0"], nodad].concat())?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// Writes the node's directories (PKI, manifests, simulation, sshd);
    /// returns the node and its ssh host public key.
    fn prepare_node(
        &self,
        id: &NodeId,
        all: &[NodeId],
        days: u32,
        client_pub: &str,
    ) -> Result<(Node, String)> {
        let dir = self.tmp_path().join(&id.name);
        let work = dir.join("work");
        std::fs::create_dir_all(&work)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        pki::node_tree(self.keys, &dir.join("etc-kubernetes"), id, all, days, &work)?;
        let nvke = dir.join("var-lib-nvke");
        std::fs::create_dir_all(&nvke)?;
        std::fs::set_permissions(&nvke, std::fs::Permissions::from_mode(0o755))?;
        let etcd_data = dir.join("var-lib-etcd");
        std::fs::create_dir_all(&etcd_data)?;
        std::fs::set_permissions(&etcd_data, std::fs::Permissions::from_mode(0o700))?;
        // The simulation directory, mounted at /usr/local.
        let sim = dir.join("usr-local");
        for d in ["bin", "lib"] {
            std::fs::create_dir_all(sim.join(d))?;
        }
        std::fs::set_permissions(&sim, std::fs::Permissions::from_mode(0o755))?;
        // A link when the target dir is on the same filesystem, else a copy:
        // the node's /usr/local hides the host's, so nothing under it may be
        // a path the node cannot resolve.
        let simnode = sim.join("lib/nvke-simnode");
        if std::fs::hard_link(SIMNODE, &simnode).is_err() {
            // Copied in this process while sibling threads spawn openssl and
            // ssh-keygen: a child between fork and exec holds the copy's
            // write descriptor for that instant. Safe only because nothing
            // execs the copy until every thread of the scope has joined
            // (start_kubelet runs after), when such a child has long
            // exec'd: exec'ing it sooner could fail with ETXTBSY.
            std::fs::copy(SIMNODE, &simnode)?;
        }
        for tool in ["crictl", "kubeadm"] {
            std::os::unix::fs::symlink("../lib/nvke-simnode", sim.join("bin").join(tool))?;
        }
        let sim_json = json!({
            "root": "/",
            "nodeName": id.name,
            "stopLatencyMs": 200,
            "startLatencyMs": 200,
            "realEtcd": ETCD,
            "realEtcdctl": ETCDCTL,
            // Every address of the node's family (`::` takes IPv4 too).
            "apiserverBindAddress": match id.family {
                pki::Family::V4 => "0.0.0.0",
                pki::Family::V6 => "::",
            },
            "kubeadm": { "allowHostRoot": true },
        });
        std::fs::write(sim.join("sim.json"), serde_json::to_vec_pretty(&sim_json)?)?;
        // sshd: its own host key, config, pid file and log; key auth only.
        let ssh = dir.join("ssh");
        std::fs::create_dir_all(&ssh)?;
        let host_key = ssh.join("ssh_host_ed25519_key");
        let host_pub = pki::ssh_key(&host_key, &format!("root@{}", id.name))?;
        let auth = ssh.join("authorized_keys");
        std::fs::write(&auth, format!("{client_pub}\n"))?;
        std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600))?;
        let cfg = format!(
            "# nvke e2e node {name}: key auth only, root without password\n\
             ListenAddress {ip}\n\
             Port 22\n\
             HostKey {hk}\n\
             PidFile {pid}\n\
             AuthorizedKeysFile {auth}\n\
             PermitRootLogin prohibit-password\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             UsePAM no\n\
             StrictModes no\n\
             PrintMotd no\n\
             PrintLastLog no\n\
             X11Forwarding no\n\
             AllowTcpForwarding no\n\
             MaxStartups 50:30:100\n\
             LogLevel INFO\n",
            name = id.name,
            ip = id.ip,
            hk = host_key.display(),
            pid = ssh.join("sshd.pid").display(),
            auth = auth.display(),
        );
        std::fs::write(ssh.join("sshd_config"), cfg)?;
        let ns = format!("{}-cp{}", self.name, id.index);
        let net_ino = netns_inode(&ns).context("node netns inode")?;
        let node = Node {
            id: id.clone(),
            ns,
            dir,
            holder_pid: 0,
            holder: None,
            kubelet: None,
            sshd: None,
            net_ino,
        };
        Ok((node, host_pub))
    }

    /// The holder: `ip netns exec` + `unshare --mount`, then the bind mounts,
    /// then `sleep` keeps both namespaces alive.
    fn start_holder(&mut self, i: usize) -> Result<()> {
        let node = &mut self.nodes[i];
        let script = r#"set -e
mount -t tmpfs -o mode=0755 nvke-e2e-run /run
mkdir -m 0755 /run/sshd
mount --bind "$1/etc-kubernetes" /etc/kubernetes
mount --bind "$1/var-lib-nvke" /var/lib/nvke
mount --bind "$1/var-lib-etcd" /var/lib/etcd
mount --bind "$1/usr-local" /usr/local
echo "ready $$"
exec sleep infinity
"#;
        let log = File::create(node.dir.join("holder.stderr"))?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &node.ns])
            .args(["unshare", "--mount", "--propagation", "private", "--"])
            .args(["/bin/sh", "-c", script, "nvke-e2e-holder"])
            .arg(&node.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        pdeathsig(&mut cmd, nix::sys::signal::Signal::SIGKILL);
        let mut child = cmd.spawn().context("start the node holder")?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("holder stdout")?).read_line(&mut line)?;
        let pid: u32 = line
            .strip_prefix("ready ")
            .and_then(|p| p.trim().parse().ok())
            .with_context(|| {
                format!(
                    "node {} did not come up: {line:?} {}",
                    node.id.name,
                    std::fs::read_to_string(node.dir.join("holder.stderr")).unwrap_or_default()
                )
            })?;
        node.holder_pid = pid;
        node.holder = Some(child);
        Ok(())
    }

    fn wait_containers(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let missing: Vec<String> = self
                .nodes
                .iter()
                .flat_map(|n| {
                    let ids = n.running_ids();
                    COMPONENTS
                        .iter()
                        .filter(|c| !ids.contains_key(**c))
                        .map(|c| format!("{}/{c}", n.name()))
                        .collect::<Vec<_>>()
                })
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "containers never ran: {missing:?}\n{}",
                    self.nodes
                        .iter()
                        .map(|n| format!("--- {} kubelet.log\n{}", n.name(), n.kubelet_log()))
                        .collect::<String>()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Keeps the logs of a failed run: kubelet, container (etcd), sshd and
    /// runbook logs, copied beside the evidence reports.
    fn keep_logs(&self) -> Option<PathBuf> {
        let dst = crate::evidence::dir().join(format!("{}-logs", self.name));
        for n in &self.nodes {
            let d = dst.join(n.name());
            let _ = std::fs::create_dir_all(&d);
            for (from, to) in [
                (n.sim().join("kubelet.log"), "kubelet.log"),
                (n.sim().join("crictl.log"), "crictl.log"),
                (n.sim().join("kubeadm.log"), "kubeadm.log"),
                (n.dir.join("ssh/sshd.log"), "sshd.log"),
                (n.dir.join("kubelet.stderr"), "kubelet.stderr"),
                (n.state().join("phase"), "phase"),
            ] {
                let _ = std::fs::copy(from, d.join(to));
            }
            for sub in ["container-logs"] {
                if let Ok(rd) = std::fs::read_dir(n.sim().join(sub)) {
                    for e in rd.flatten() {
                        let _ = std::fs::copy(e.path(), d.join(e.file_name()));
                    }
                }
            }
            for sub in ["log", "completed"] {
                if let Ok(rd) = std::fs::read_dir(n.state().join(sub)) {
                    for e in rd.flatten() {
                        let _ = std::fs::copy(e.path(), d.join(e.file_name()));
                    }
                }
            }
        }
        Some(dst)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("NVKE_E2E_KEEP_LOGS").is_some() {
            if let Some(p) = self.keep_logs() {
                crate::say(&format!(
                    "e2e: logs of {} kept in {}",
                    self.name,
                    p.display()
                ));
            }
        }
        for n in &mut self.nodes {
            n.stop();
        }
        if self.lab_ino != 0 {
            kill_netns(self.lab_ino);
        }
        for ns in self.namespaces.iter().rev() {
            let _ = ip(&["netns", "del", ns]);
        }
        // The mount namespaces went away with their last process; the temp
        // dir (TempDir) is removed now.
        if let Some(t) = self.tmp.take() {
            if let Err(e) = t.close() {
                crate::say(&format!("e2e: could not remove the temp dir: {e}"));
            }
        }
    }
}
