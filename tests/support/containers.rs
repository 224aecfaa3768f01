//! The containers tier (tests/containers.rs): a private containerd (its own
//! root, state and socket under a temp dir), the real crictl 1.36 built
//! from ../shared/vendor (tests/containers/build-crictl.sh), and images
//! built here from what the machine has (tests/containers/mkimage.py):
//!
//! - `registry.k8s.io/etcd:3.5.15-0`: Debian's `/usr/bin/etcd` and
//!   `/usr/bin/etcdctl` with the libraries `ldd` names;
//! - the stand-in image, under every other name the fixture manifests use
//!   (kube-apiserver, kube-controller-manager, kube-scheduler, kube-vip), the
//!   sandbox image `nvke.local/pause:1` and `registry.k8s.io/etcd:v1.31.0`
//!   (an API pod's `etcd` container): `/nvke-simnode` (stripped) and its
//!   libraries; entrypoint `/nvke-simnode pause`.
//!
//! [`require`] says whether the tier can run here (root, containerd, runc,
//! ctr on PATH or the fixed PATH; crictl at `$NVKE_REAL_CRICTL`, else
//! `<target>/crictl-1.36.0/crictl`, else on the PATH) and prints `SKIPPED: ...` when not, unless
//! `NVKE_CONTAINERS_REQUIRED=1` (CI), which makes a missing tool a failure.
//! [`Containerd`] is killed and cleaned on drop: its pods removed, the
//! daemon and its shims (found by the socket path on their command line)
//! killed by PID, every mount under its temp dir unmounted, the dir removed.

use super::node::SIMNODE;
use super::say;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub const PAUSE_IMAGE: &str = "nvke.local/pause:1";
pub const ETCD_IMAGE: &str = "registry.k8s.io/etcd:3.5.15-0";
/// Names the stand-in image is imported under.
pub const STANDIN_IMAGES: [&str; 6] = [
    PAUSE_IMAGE,
    "registry.k8s.io/kube-apiserver:v1.31.4",
    "registry.k8s.io/kube-controller-manager:v1.31.4",
    "registry.k8s.io/kube-scheduler:v1.31.4",
    "ghcr.io/kube-vip/kube-vip:v0.8.7",
    "registry.k8s.io/etcd:v1.31.0",
];

#[derive(Debug, Clone)]
pub struct Tools {
    pub crictl: PathBuf,
    pub containerd: PathBuf,
    pub ctr: PathBuf,
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The target dir this test binary was built in (`<target>/debug/nvke-simnode`).
pub fn target_dir() -> PathBuf {
    Path::new(SIMNODE)
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo().join("target"))
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .filter(|d| !d.is_empty())
        .chain([
            "/usr/local/sbin",
            "/usr/local/bin",
            "/usr/sbin",
            "/usr/bin",
            "/sbin",
            "/bin",
        ])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    found
}

fn find_tools() -> Result<Tools, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root".into());
    }
    let mut missing = Vec::new();
    let mut get = |n: &str| {
        on_path(n).unwrap_or_else(|| {
            missing.push(n.to_string());
            PathBuf::new()
        })
    };
    let (containerd, ctr, _runc) = (get("containerd"), get("ctr"), get("runc"));
    // The etcd image and the extra members are Debian's etcd and etcdctl.
    let (_etcd, _etcdctl) = (get("etcd"), get("etcdctl"));
    if !missing.is_empty() {
        return Err(format!(
            "{} not on PATH (apt-get install containerd runc etcd-server etcd-client)",
            missing.join(", ")
        ));
    }
    // crictl: $NVKE_REAL_CRICTL, else the one build-crictl.sh keeps in
    // the target dir, else crictl on the fixed PATH. Never built here: a
    // Go build in a test run is a surprise (CI builds it first).
    let crictl = match std::env::var_os("NVKE_REAL_CRICTL") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            let built = target_dir().join("crictl-1.36.0/crictl");
            if built.is_file() {
                built
            } else {
                on_path("crictl").ok_or_else(|| {
                    format!(
                        "no crictl (set NVKE_REAL_CRICTL, or run tests/containers/build-crictl.sh {})",
                        target_dir().display()
                    )
                })?
            }
        }
    };
    if !crictl.is_file() {
        return Err(format!("no crictl at {}", crictl.display()));
    }
    Ok(Tools {
        crictl,
        containerd,
        ctr,
    })
}

/// The tools, or `None` after printing `SKIPPED: containers tier: <why>`;
/// with `NVKE_CONTAINERS_REQUIRED=1` a missing tool fails the test.
pub fn require() -> Option<Tools> {
    static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
    match TOOLS.get_or_init(find_tools) {
        Ok(t) => Some(t.clone()),
        Err(why) => {
            if std::env::var("NVKE_CONTAINERS_REQUIRED").as_deref() == Ok("1") {
                panic!("containers tier required (NVKE_CONTAINERS_REQUIRED=1): {why}");
            }
            say(&format!("SKIPPED: containers tier: {why}"));
            None
        }
    }
}

/// One containerd at a time in this process: the machine has two cores and
/// little disk; the tier's tests take turns.
pub fn serial() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `cmd`, killing it after `limit`.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Result<Output, String> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: {e}"))?;
    // Drain the pipes in threads so a chatty child never blocks.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut b);
        b
    });
    let t2 = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut b);
        b
    });
    let deadline = Instant::now() + limit;
    let mut nap = Duration::from_millis(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what}: still running after {limit:?}, killed"));
            }
            Ok(None) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(200));
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    Ok(Output {
        status,
        stdout: t1.join().unwrap_or_default(),
        stderr: t2.join().unwrap_or_default(),
    })
}

fn ldd_libs(bin: &Path) -> Vec<PathBuf> {
    let out = Command::new("ldd").arg(bin).output().expect("ldd");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

/// The two image archives, built once per test process into
/// `<target>/tmp/nvke-containers-images/`.
pub fn images() -> &'static [PathBuf] {
    static IMAGES: OnceLock<Vec<PathBuf>> = OnceLock::new();
    IMAGES.get_or_init(|| {
        let dir = target_dir().join("tmp/nvke-containers-images");
        std::fs::create_dir_all(&dir).unwrap();
        let standin = dir.join("nvke-simnode");
        let st = Command::new("strip")
            .arg("-o")
            .arg(&standin)
            .arg(SIMNODE)
            .status()
            .expect("strip (binutils)");
        assert!(st.success(), "strip {SIMNODE}");
        let mkimage = repo().join("tests/containers/mkimage.py");
        let mut made = Vec::new();
        for (names, out, entry, bins) in [
            (
                STANDIN_IMAGES.join(","),
                dir.join("standin.tar"),
                Some("/nvke-simnode,pause"),
                vec![(standin.clone(), "/nvke-simnode".to_string())],
            ),
            (
                ETCD_IMAGE.to_string(),
                dir.join("etcd.tar"),
                None,
                vec![
                    (PathBuf::from("/usr/bin/etcd"), "/usr/bin/etcd".to_string()),
                    (
                        PathBuf::from("/usr/bin/etcdctl"),
                        "/usr/bin/etcdctl".to_string(),
                    ),
                ],
            ),
        ] {
            let mut files: Vec<String> = Vec::new();
            for (src, dest) in &bins {
                files.push(format!("{}:{dest}", src.display()));
                for lib in ldd_libs(src) {
                    let spec = format!("{}:{}", lib.display(), lib.display());
                    if !files.contains(&spec) {
                        files.push(spec);
                    }
                }
            }
            files.push("-:/tmp".to_string());
            let mut cmd = Command::new("python3");
            cmd.arg(&mkimage);
            if let Some(e) = entry {
                cmd.args(["--entrypoint", e]);
            }
            let st = cmd.arg(&names).arg(&out).args(&files).status().unwrap();
            assert!(st.success(), "mkimage {names}");
            made.push(out);
        }
        let _ = std::fs::remove_file(&standin);
        made
    })
}

/// The child dies with the test thread that started it (a test process
/// killed by a timeout leaves no containerd, and no etcd member of
/// tests/support/etcd_cluster.rs, behind; containerd's shims are reaped by
/// [`Containerd`]'s drop only).
#[allow(unsafe_code)]
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs before exec.
    unsafe {
        cmd.pre_exec(|| {
            use nix::libc::{prctl, PR_SET_PDEATHSIG, SIGKILL};
            if prctl(PR_SET_PDEATHSIG, SIGKILL as nix::libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A private containerd with the tier's images imported.
pub struct Containerd {
    pub dir: tempfile::TempDir,
    pub sock: PathBuf,
    pub tools: Tools,
    child: Option<Child>,
}

impl Containerd {
    pub fn start(tools: &Tools) -> Containerd {
        let dir = tempfile::Builder::new()
            .prefix("nvke-ctrd-")
            .tempdir_in("/tmp")
            .unwrap();
        let d = dir.path();
        let sock = d.join("containerd.sock");
        for sub in ["cni/bin", "cni/conf"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let cfg = format!(
            r#"version = 2
root = "{d}/root"
state = "{d}/state"
[grpc]
  address = "{d}/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  sandbox_image = "{PAUSE_IMAGE}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{d}/cni/bin"
    conf_dir = "{d}/cni/conf"
"#,
            d = d.display()
        );
        std::fs::write(d.join("config.toml"), cfg).unwrap();
        let log = std::fs::File::create(d.join("containerd.log")).unwrap();
        let mut cmd = Command::new(&tools.containerd);
        cmd.arg("--config")
            .arg(d.join("config.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        die_with_parent(&mut cmd);
        let child = cmd.spawn().expect("containerd");
        let c = Containerd {
            dir,
            sock,
            tools: tools.clone(),
            child: Some(child),
        };
        // Its CRI answers (bounded, polled with back-off).
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut nap = Duration::from_millis(50);
        loop {
            let out = c.crictl(&["version"]);
            if out.status.success() {
                break;
            }
            if Instant::now() >= deadline {
                panic!(
                    "containerd never answered on {}: {}\n{}",
                    c.sock.display(),
                    String::from_utf8_lossy(&out.stderr),
                    c.log()
                );
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_secs(1));
        }
        for img in images() {
            let mut cmd = Command::new(&c.tools.ctr);
            cmd.arg("-a")
                .arg(&c.sock)
                .args(["-n", "k8s.io", "images", "import"])
                .arg(img);
            let out = run_bounded(cmd, Duration::from_secs(120)).unwrap();
            assert!(
                out.status.success(),
                "ctr images import {}: {}",
                img.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        c
    }

    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.sock.display())
    }

    /// The real crictl against this containerd (`-r`, cleared environment).
    pub fn crictl(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.tools.crictl);
        cmd.arg("-r").arg(self.endpoint()).args(args).env_clear();
        run_bounded(cmd, Duration::from_secs(90)).unwrap()
    }

    pub fn log(&self) -> String {
        let s = std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default();
        super::tail(&s, 4000).to_string()
    }

    /// Processes whose command line names this containerd's socket (its
    /// shims), and their children.
    fn shims(&self) -> Vec<i32> {
        let sock = self.sock.to_string_lossy().into_owned();
        let mut pids = Vec::new();
        let Ok(rd) = std::fs::read_dir("/proc") else {
            return pids;
        };
        let procs: Vec<(i32, i32, String)> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|pid| {
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let ppid = stat
                    .rsplit(')')
                    .next()?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()?;
                Some((pid, ppid, String::from_utf8_lossy(&cmd).replace('\0', " ")))
            })
            .collect();
        for (pid, _, cmd) in &procs {
            if cmd.contains("containerd-shim") && cmd.contains(&sock) {
                pids.push(*pid);
            }
        }
        let mut i = 0;
        while i < pids.len() {
            let parent = pids[i];
            for (pid, ppid, _) in &procs {
                if *ppid == parent && !pids.contains(pid) {
                    pids.push(*pid);
                }
            }
            i += 1;
        }
        pids
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        // 1. Its pods, through the CRI (stops and removes the containers).
        if self.child.is_some() {
            let mut cmd = Command::new(&self.tools.crictl);
            cmd.arg("-r")
                .arg(self.endpoint())
                .args(["-t", "20s", "rmp", "-f", "-a"])
                .env_clear();
            let _ = run_bounded(cmd, Duration::from_secs(60));
        }
        // 2. The daemon: SIGTERM, SIGKILL after 5 s.
        if let Some(mut c) = self.child.take() {
            let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        // 3. Its shims and whatever they still run.
        for pid in self.shims().into_iter().rev() {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && !self.shims().is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
        // 4. Every mount under its dir (overlay rootfs, sandbox shm), deepest first.
        let base = self.dir.path().to_string_lossy().into_owned();
        let mut mounts: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split(' ').nth(4).map(|m| m.replace("\\040", " ")))
            .filter(|m| m.starts_with(&base))
            .collect();
        mounts.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in mounts {
            let _ = Command::new("umount").arg("-l").arg(&m).status();
        }
        // 5. The dir itself: TempDir's drop.
    }
}
