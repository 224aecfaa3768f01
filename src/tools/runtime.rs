//! The node's moving parts as the runbook sees them: containers (crictl),
//! etcd (etcdctl inside its container), TLS probes, and kubeadm. A trait, so
//! the runbook's rules can run against a test double.

use crate::rules::cri::{self, Container, Sandbox, KUBE_SYSTEM, LABEL_NAMESPACE};
use crate::tools::endpoint::RuntimeEndpoint;
use crate::tools::proc::{self, Output};
use crate::tools::signals::Cancel;
use crate::tools::tlsprobe::{self, ProbeError, ProbeResult, TlsIdentity};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A failure of a node tool (crictl, etcdctl through crictl, kubeadm). The
/// text of each is the message printed; the kind decides what a wait does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RtError {
    /// crictl could not reach the runtime at all (no such socket, connection
    /// refused): waiting does not fix that, the gate fails at once.
    #[error("{0}")]
    Unreachable(String),
    /// The tool ran and failed, or answered something that cannot be read.
    #[error("{0}")]
    Failed(String),
    /// The tool is not there.
    #[error(transparent)]
    Missing(#[from] proc::ToolNotFound),
    /// The tool did not run to its end: timed out, cancelled, could not be
    /// started, or printed too much.
    #[error(transparent)]
    Run(#[from] proc::ProcError),
    /// The tool answered something that cannot be read (or judged).
    #[error(transparent)]
    Output(#[from] crate::rules::cri::CriError),
}

/// `Sync`: the health gate queries independent things side by side. Every
/// call takes the time the caller has left (`budget`): no call runs past it.
pub trait Runtime: Sync {
    /// kube-system's containers, exited included, newest first (one
    /// `crictl ps -a` call).
    fn ps(&self, budget: Duration) -> Result<Vec<Container>, RtError>;
    /// kube-system's pod sandboxes (one `crictl pods` call).
    fn pods(&self, budget: Duration) -> Result<Vec<Sandbox>, RtError>;
    /// The host PID of a container's process, when the runtime tells it
    /// (`crictl inspect`): the stop wait then watches it with a pidfd.
    fn container_pid(&self, _id: &str, _budget: Duration) -> Result<Option<u32>, RtError> {
        Ok(None)
    }
    /// `etcdctl <args>` inside the etcd container.
    fn etcdctl(
        &self,
        etcd_container: &str,
        args: &[String],
        budget: Duration,
    ) -> Result<Output, RtError>;
    /// How long a tool call given `budget` may really run (the runtime's
    /// own per-call limit, `--command-timeout`, and the deadline applied):
    /// etcdctl's own timeouts are cut to end before it.
    fn call_limit(&self, budget: Duration) -> Duration {
        budget
    }
    /// A TLS probe of `addr`.
    fn probe(
        &self,
        addr: std::net::SocketAddr,
        name: &str,
        id: &TlsIdentity,
        now: time::OffsetDateTime,
        path: Option<&str>,
        budget: Duration,
    ) -> Result<ProbeResult, ProbeError>;
    /// One question to a local TLS endpoint (SPEC 10), answered with what
    /// it presented and replied.
    fn ask(&self, q: &tlsprobe::Question<'_>) -> tlsprobe::Answer {
        tlsprobe::ask(q)
    }
    /// How a container ended (`crictl inspect`).
    fn inspect_exit(
        &self,
        _id: &str,
        _budget: Duration,
    ) -> Result<crate::rules::live::Exit, RtError> {
        Ok(crate::rules::live::Exit::default())
    }
    /// `kubeadm certs renew all`.
    fn renew_certs(&self) -> Result<Output, RtError>;
    /// Tools that cannot be found: (phase-worthy name, reason). A missing
    /// tool is not something waiting fixes, so the run fails at once.
    fn missing_tools(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// The runtime endpoint crictl is given, and where it came from.
    fn endpoint(&self) -> Option<&RuntimeEndpoint> {
        None
    }
    /// crictl as this run calls it (its absolute path, then
    /// `--runtime-endpoint` when one is given): the first words of a
    /// printed step an operator pastes. None: no crictl was found.
    fn crictl_words(&self) -> Option<Vec<String>> {
        None
    }
}

/// Whether crictl's failure says the runtime cannot be reached at all, so
/// that waiting cannot help (the gate fails at once, SPEC 9), as crictl
/// 1.36 and its CRI client print it:
/// - the dial of the socket failed: none there, nobody listening (a
///   regular file too), no permission;
/// - an endpoint it cannot use: `only support unix socket endpoint`
///   (`tcp://`, k8s.io/cri-client util_unix.go), `protocol "npipe" not
///   supported`;
/// - no endpoint at all (`--runtime-endpoint is not set`, crictl.yaml).
///
/// Not unreachable, so retried: a call cut off on a runtime that answered
/// (`code = Unavailable desc = error reading from server`, a containerd
/// restart) and a slow one (`DeadlineExceeded`, also while validating the
/// connection).
pub fn is_unreachable(stderr: &str) -> bool {
    let dial = [
        "connect: connection refused",
        "connect: no such file or directory",
        "connect: permission denied",
        "connect: not a directory",
    ]
    .iter()
    .any(|m| stderr.contains(m));
    let unusable = stderr.contains("only support unix socket endpoint")
        || stderr.contains("--runtime-endpoint is not set")
        || stderr
            .lines()
            .any(|l| l.contains("protocol ") && l.contains(" not supported"));
    dial || unusable
}

/// The real node: crictl and kubeadm as subprocesses.
pub struct NodeRuntime {
    crictl: Option<PathBuf>,
    crictl_error: Option<proc::ToolNotFound>,
    kubeadm: Option<PathBuf>,
    kubeadm_error: Option<proc::ToolNotFound>,
    /// `--rootfs` for kubeadm when the root is not `/`.
    rootfs: Option<String>,
    kubeadm_config: Option<String>,
    endpoint: RuntimeEndpoint,
    timeout: Duration,
    cancel: Cancel,
}

/// What the command line says about the node's tools (SPEC 1: `--root`,
/// `--crictl`, `--kubeadm`, `--kubeadm-config`, `--runtime-endpoint`,
/// `--command-timeout`).
#[derive(Debug, Clone, Copy)]
pub struct ToolOptions<'a> {
    /// `--root`, and whether it is the host's `/` (kubeadm gets no `--rootfs`).
    pub root: &'a Path,
    pub host_root: bool,
    pub crictl: Option<&'a Path>,
    pub kubeadm: Option<&'a Path>,
    /// Relative to the root.
    pub kubeadm_config: Option<&'a str>,
    pub runtime_endpoint: Option<&'a str>,
    pub command_timeout: Duration,
}

impl<'a> ToolOptions<'a> {
    /// What the command line gives the node's tools.
    pub fn of(g: &'a crate::contract::cli::Global) -> ToolOptions<'a> {
        ToolOptions {
            root: &g.root,
            host_root: crate::contract::cli::is_host_root(&g.root),
            crictl: g.crictl.as_deref(),
            kubeadm: g.kubeadm.as_deref(),
            kubeadm_config: g.kubeadm_config.as_deref(),
            runtime_endpoint: g.runtime_endpoint.as_deref(),
            command_timeout: g.command_timeout,
        }
    }
}

impl NodeRuntime {
    pub fn new(o: &ToolOptions<'_>, root: &crate::node::fsx::Root, cancel: Cancel) -> NodeRuntime {
        let endpoint = crate::tools::endpoint::resolve(root, o.runtime_endpoint);
        let (crictl, crictl_error) = match proc::resolve_tool("crictl", o.crictl) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e)),
        };
        let (kubeadm, kubeadm_error) = match proc::resolve_tool("kubeadm", o.kubeadm) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e)),
        };
        let rootfs = if o.host_root {
            None
        } else {
            Some(o.root.display().to_string())
        };
        // With --rootfs, kubeadm chroots: the config path is a node path.
        let kubeadm_config = o.kubeadm_config.map(|rel| {
            if rootfs.is_some() {
                format!("/{rel}")
            } else {
                o.root.join(rel).display().to_string()
            }
        });
        NodeRuntime {
            crictl,
            crictl_error,
            kubeadm,
            kubeadm_error,
            rootfs,
            kubeadm_config,
            endpoint,
            timeout: o.command_timeout,
            cancel,
        }
    }

    /// Run crictl with the endpoint (before the command, as a global
    /// option), bounded by `budget` and `--command-timeout`.
    fn crictl(&self, args: Vec<String>, budget: Duration) -> Result<Output, RtError> {
        let Some(p) = &self.crictl else {
            return Err(self.missing("crictl", &self.crictl_error));
        };
        let mut v = Vec::with_capacity(args.len() + 2);
        if let Some(e) = &self.endpoint.endpoint {
            v.push("--runtime-endpoint".to_string());
            v.push(e.clone());
        }
        v.extend(args);
        let timeout = self.call_limit(budget).max(Duration::from_millis(1));
        // Every crictl call is part of a gate attempt or a wait, which log
        // themselves (SPEC 8, v1.1).
        Ok(proc::run_in_poll(p, &v, timeout, &self.cancel)?)
    }

    /// The tool is not there: why, as found when resolving it.
    fn missing(&self, name: &str, why: &Option<proc::ToolNotFound>) -> RtError {
        RtError::Missing(why.clone().unwrap_or(proc::ToolNotFound::OnFixedPath {
            name: name.to_string(),
        }))
    }

    /// A crictl listing call (`ps` or `pods`) for kube-system, as JSON.
    fn listing(&self, what: &str, budget: Duration) -> Result<Vec<u8>, RtError> {
        let mut args = vec![what.to_string()];
        if what == "ps" {
            args.push("-a".into());
        }
        args.extend([
            "-o".into(),
            "json".into(),
            "--label".into(),
            format!("{LABEL_NAMESPACE}={KUBE_SYSTEM}"),
        ]);
        let out = self.crictl(args, budget)?;
        if out.success() {
            return Ok(out.stdout);
        }
        let tail = out.stderr_tail();
        let message = format!(
            "crictl {what} failed ({}): {tail}",
            proc::describe_exit(out.code)
        );
        if is_unreachable(&tail) {
            Err(RtError::Unreachable(format!(
                "the container runtime at {} cannot be reached: {message}",
                self.endpoint.describe()
            )))
        } else {
            Err(RtError::Failed(message))
        }
    }

    /// `crictl inspect -o json ID`: its stdout, or why not.
    fn inspect(&self, id: &str, budget: Duration) -> Result<Vec<u8>, RtError> {
        let out = self.crictl(
            vec!["inspect".into(), "-o".into(), "json".into(), id.to_string()],
            budget,
        )?;
        if !out.success() {
            return Err(RtError::Failed(format!(
                "crictl inspect failed ({}): {}",
                proc::describe_exit(out.code),
                out.stderr_tail()
            )));
        }
        Ok(out.stdout)
    }
}

impl Runtime for NodeRuntime {
    fn missing_tools(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(e) = &self.crictl_error {
            v.push(("crictl", e.to_string()));
        }
        if let Some(e) = &self.kubeadm_error {
            v.push(("kubeadm", e.to_string()));
        }
        v
    }

    fn ps(&self, budget: Duration) -> Result<Vec<Container>, RtError> {
        let out = self.listing("ps", budget)?;
        cri::parse_ps_kube_system(&out).map_err(RtError::from)
    }

    fn pods(&self, budget: Duration) -> Result<Vec<Sandbox>, RtError> {
        let out = self.listing("pods", budget)?;
        cri::parse_pods(&out).map_err(RtError::from)
    }

    fn endpoint(&self) -> Option<&RuntimeEndpoint> {
        Some(&self.endpoint)
    }

    fn crictl_words(&self) -> Option<Vec<String>> {
        let mut w = vec![self.crictl.as_ref()?.display().to_string()];
        if let Some(e) = &self.endpoint.endpoint {
            w.extend(["--runtime-endpoint".to_string(), e.clone()]);
        }
        Some(w)
    }

    fn container_pid(&self, id: &str, budget: Duration) -> Result<Option<u32>, RtError> {
        cri::parse_inspect_pid(&self.inspect(id, budget)?).map_err(RtError::from)
    }

    fn inspect_exit(
        &self,
        id: &str,
        budget: Duration,
    ) -> Result<crate::rules::live::Exit, RtError> {
        cri::parse_inspect_exit(&self.inspect(id, budget)?).map_err(RtError::from)
    }

    fn call_limit(&self, budget: Duration) -> Duration {
        // Never past the controller's deadline (SPEC 4, v1.1).
        self.cancel.bound(self.timeout.min(budget))
    }

    fn etcdctl(
        &self,
        etcd_container: &str,
        args: &[String],
        budget: Duration,
    ) -> Result<Output, RtError> {
        let mut v = vec![
            "exec".to_string(),
            etcd_container.to_string(),
            "etcdctl".to_string(),
        ];
        v.extend_from_slice(args);
        self.crictl(v, budget)
    }

    fn probe(
        &self,
        addr: std::net::SocketAddr,
        name: &str,
        id: &TlsIdentity,
        now: time::OffsetDateTime,
        path: Option<&str>,
        budget: Duration,
    ) -> Result<ProbeResult, ProbeError> {
        tlsprobe::probe(addr, name, id, now, path, budget)
    }

    fn renew_certs(&self) -> Result<Output, RtError> {
        let Some(p) = &self.kubeadm else {
            return Err(self.missing("kubeadm", &self.kubeadm_error));
        };
        let mut args: Vec<String> = vec!["certs".into(), "renew".into(), "all".into()];
        if let Some(c) = &self.kubeadm_config {
            args.push("--config".into());
            args.push(c.clone());
        }
        if let Some(r) = &self.rootfs {
            args.push("--rootfs".into());
            args.push(r.clone());
        }
        let timeout = self
            .cancel
            .bound(self.timeout)
            .max(Duration::from_millis(1));
        Ok(proc::run(p, &args, timeout, &self.cancel)?)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // a test double: reads and writes its temp node directly
pub(crate) mod double {
    //! The test double of [`Runtime`], beside the trait (as youki keeps
    //! `syscall/test.rs` beside `syscall/syscall.rs`): a node's kube-system
    //! containers and sandboxes as data, a healthy single-member etcd, TLS
    //! probes that answer 200, and a kubeadm that succeeds or fails as told.
    //! Every call is counted.
    //!
    //! Two ways to drive it:
    //! - scripted: [`Double::new`], then [`Double::push`],
    //!   [`Double::insert_newest`], [`Double::add_sandbox`],
    //!   [`Double::set_running`], [`Double::set_pid`], from the test's own
    //!   threads too (the double is `Sync`); [`Double::fail_listings`],
    //!   [`Double::set_etcd`] and [`Double::set_readyz`] change its answers;
    //! - a kubelet: [`Double::kubelet`] keeps one static pod per component
    //!   whose container runs while its manifest is in `manifests/` under the
    //!   root: moved out, it exits (unless [`Double::never_stopping`]); moved
    //!   back, a new container (and sandbox) of the next generation
    //!   replaces it. Probes then present the certificates on disk.
    use super::*;
    use crate::rules::component::Component;
    use crate::rules::cri::{ANNOTATION_CONFIG_SOURCE, LABEL_CONTAINER, LABEL_POD_NAME};
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Mutex, MutexGuard};

    /// A copy of a fixture node tree (`fixtures/nodes/<name>`) in a fresh
    /// temporary directory, directories 0755 and files 0644 (the fsx layer
    /// refuses group- or other-writable node files).
    pub(crate) fn node_tree(name: &str) -> tempfile::TempDir {
        fn copy(src: &Path, dst: &Path) {
            std::fs::create_dir_all(dst).unwrap();
            std::fs::set_permissions(dst, std::fs::Permissions::from_mode(0o755)).unwrap();
            for e in std::fs::read_dir(src).unwrap() {
                let e = e.unwrap();
                let to = dst.join(e.file_name());
                if e.file_type().unwrap().is_dir() {
                    copy(&e.path(), &to);
                } else {
                    std::fs::copy(e.path(), &to).unwrap();
                    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
                }
            }
        }
        let t = tempfile::tempdir().unwrap();
        copy(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/nodes")
                .join(name),
            t.path(),
        );
        // The fixture's kube-apiserver probes its advertise address,
        // 10.0.0.11, not an address of this host: the double answers the
        // questions on loopback, where a node advertising 127.0.0.1 would
        // be probed.
        let api = t
            .path()
            .join("etc/kubernetes/manifests/kube-apiserver.yaml");
        if let Ok(m) = std::fs::read_to_string(&api) {
            std::fs::write(&api, m.replace("host: 10.0.0.11", "host: 127.0.0.1")).unwrap();
        }
        t
    }

    /// A kube-system container of `name` in pod `pod`.
    pub(crate) fn container(
        name: &str,
        pod: &str,
        id: &str,
        sandbox: &str,
        running: bool,
        created_at: &str,
    ) -> Container {
        Container {
            id: id.into(),
            pod_sandbox_id: sandbox.into(),
            state: if running {
                "CONTAINER_RUNNING"
            } else {
                "CONTAINER_EXITED"
            }
            .into(),
            created_at: created_at.into(),
            labels: BTreeMap::from([
                (LABEL_NAMESPACE.to_string(), KUBE_SYSTEM.to_string()),
                (LABEL_CONTAINER.to_string(), name.to_string()),
                (LABEL_POD_NAME.to_string(), pod.to_string()),
            ]),
            metadata: Default::default(),
        }
    }

    /// A ready kube-system sandbox whose config source is `source` (`file`
    /// for a static pod, `api` for the API server's pods).
    pub(crate) fn sandbox(id: &str, source: &str) -> Sandbox {
        Sandbox {
            id: id.into(),
            state: "SANDBOX_READY".into(),
            labels: BTreeMap::from([(LABEL_NAMESPACE.to_string(), KUBE_SYSTEM.to_string())]),
            annotations: BTreeMap::from([(
                ANNOTATION_CONFIG_SOURCE.to_string(),
                source.to_string(),
            )]),
        }
    }

    /// The answers of one healthy single-member etcd (`member list -w
    /// json`, `endpoint health --cluster -w json`).
    pub(crate) const MEMBER_LIST: &str = r#"{"header":{"member_id":10276657743932975437},"members":[{"ID":10276657743932975437,"name":"cp-1","clientURLs":["https://10.0.0.11:2379"]}]}"#;
    pub(crate) const ENDPOINT_HEALTH: &str =
        r#"[{"endpoint":"https://10.0.0.11:2379","health":true}]"#;

    /// A process that exited with `code`.
    pub(crate) fn output(code: i32, stdout: &[u8], stderr: &[u8]) -> Output {
        Output {
            code: Some(code),
            stdout: stdout.to_vec(),
            stderr: stderr.to_vec(),
        }
    }

    /// Calls made, by kind.
    #[derive(Debug, Default)]
    pub(crate) struct Calls {
        ps: AtomicU32,
        pods: AtomicU32,
        inspect: AtomicU32,
        etcdctl: AtomicU32,
        probe: AtomicU32,
        renew: AtomicU32,
    }

    impl Calls {
        fn count(n: &AtomicU32) {
            n.fetch_add(1, Ordering::SeqCst);
        }
        pub(crate) fn ps(&self) -> u32 {
            self.ps.load(Ordering::SeqCst)
        }
        pub(crate) fn pods(&self) -> u32 {
            self.pods.load(Ordering::SeqCst)
        }
        /// `container_pid` (`crictl inspect`).
        pub(crate) fn inspect(&self) -> u32 {
            self.inspect.load(Ordering::SeqCst)
        }
        pub(crate) fn etcdctl(&self) -> u32 {
            self.etcdctl.load(Ordering::SeqCst)
        }
        pub(crate) fn probe(&self) -> u32 {
            self.probe.load(Ordering::SeqCst)
        }
        /// `kubeadm certs renew all`.
        pub(crate) fn renew(&self) -> u32 {
            self.renew.load(Ordering::SeqCst)
        }
    }

    #[derive(Debug, Default)]
    struct Node {
        /// Newest first, as `crictl ps -a` lists them.
        containers: Vec<Container>,
        sandboxes: Vec<Sandbox>,
        pids: BTreeMap<String, u32>,
        /// The kubelet's generation of each component's static pod.
        generations: BTreeMap<Component, u32>,
        /// Each `etcdctl` call: the container exec'd into and its arguments.
        etcdctl: Vec<(String, Vec<String>)>,
        /// What every listing (`ps`, `pods`) fails with, when set.
        listing_error: Option<RtError>,
        /// `member list` and `endpoint health --cluster` answers, when not
        /// the healthy single member's.
        etcd: Option<(String, String)>,
        /// `member list` fails: exit 1, nothing on stdout, this on stderr.
        member_list_stderr: Option<String>,
        /// A per-call limit below the budget (`--command-timeout`).
        call_limit: Option<Duration>,
        /// The `/readyz` status, when not 200.
        readyz: Option<u16>,
        /// What a health path answers instead of 200 `ok` (`/healthz` on a
        /// port: `/healthz:10259`).
        answers: BTreeMap<String, Scripted>,
    }

    /// A path's scripted answer.
    #[derive(Debug, Clone)]
    enum Scripted {
        /// This status and body.
        Answers(u16, String),
        /// No answer: the exchange fails, in these words.
        Fails(String),
    }

    impl Scripted {
        fn new(answer: Result<(u16, &str), &str>) -> Scripted {
            match answer {
                Ok((status, body)) => Scripted::Answers(status, body.to_string()),
                Err(why) => Scripted::Fails(why.to_string()),
            }
        }
    }

    /// kubeadm's renewal on a fixture node: every leaf file the node has
    /// is replaced by its renewed copy from `fixtures/renewed/<alg>`
    /// (`fixtures/gen-pki.sh`: the trees' CAs, same names, new keys and
    /// serials); a leaf the node lacks stays absent, as kubeadm skips it.
    fn renew_from_fixture(root: &Path) {
        fn walk(src: &Path, dst: &Path) {
            for e in std::fs::read_dir(src).unwrap() {
                let e = e.unwrap();
                let to = dst.join(e.file_name());
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), &to);
                } else if to.exists() {
                    std::fs::write(&to, std::fs::read(e.path()).unwrap()).unwrap();
                }
            }
        }
        let key = std::fs::read(root.join("etc/kubernetes/pki/apiserver.key")).unwrap_or_default();
        let alg = if key.windows(14).any(|w| w == b"EC PRIVATE KEY") {
            "ecdsa"
        } else {
            "rsa"
        };
        let renewed = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/renewed")
            .join(alg);
        walk(&renewed, root);
    }

    #[derive(Debug, Default)]
    pub(crate) struct Double {
        node: Mutex<Node>,
        /// The node's root: set, the double is a kubelet for its manifests
        /// and probes present the certificates on disk.
        root: Option<PathBuf>,
        never_stop: Option<Component>,
        kubeadm_fails: bool,
        /// Node paths kubeadm leaves as they are (a leaf it skipped).
        kubeadm_skips: Vec<&'static str>,
        /// Node paths that appear while kubeadm runs (another actor's).
        kubeadm_creates: Vec<&'static str>,
        pub(crate) calls: Calls,
    }

    impl Double {
        /// An empty node: no containers, no sandboxes.
        pub(crate) fn new() -> Double {
            Double::default()
        }

        /// A kubelet for the manifests under `root`: each component's
        /// static pod `<c>-cp-1` runs container `<c>-0` in sandbox
        /// `sandbox-<c>-0`, and generation n+1 replaces generation n when
        /// its manifest comes back.
        pub(crate) fn kubelet(root: &Path) -> Double {
            let d = Double {
                root: Some(root.to_path_buf()),
                ..Double::default()
            };
            {
                let mut n = d.node();
                for c in Component::ALL {
                    n.generations.insert(c, 0);
                    n.containers.push(Self::generation(c, 0));
                    n.sandboxes.push(sandbox(&format!("sandbox-{c}-0"), "file"));
                }
            }
            d
        }

        /// `c`'s old container never exits (a stop that times out).
        pub(crate) fn never_stopping(mut self, c: Component) -> Double {
            self.never_stop = Some(c);
            self
        }

        /// kubeadm leaves `pki/apiserver.crt` half-written and exits 1.
        pub(crate) fn kubeadm_failing(mut self) -> Double {
            self.kubeadm_fails = true;
            self
        }

        /// kubeadm succeeds but leaves the leaf at `node_rel` as it was.
        pub(crate) fn kubeadm_skipping(mut self, node_rel: &'static str) -> Double {
            self.kubeadm_skips.push(node_rel);
            self
        }

        /// While kubeadm runs, `node_rel` appears (its renewed copy).
        pub(crate) fn kubeadm_creating(mut self, node_rel: &'static str) -> Double {
            self.kubeadm_creates.push(node_rel);
            self
        }

        fn node(&self) -> MutexGuard<'_, Node> {
            self.node.lock().unwrap()
        }

        fn generation(c: Component, g: u32) -> Container {
            container(
                c.name(),
                &format!("{}-cp-1", c.name()),
                &format!("{}-{g}", c.name()),
                &format!("sandbox-{}-{g}", c.name()),
                true,
                // Created now (after the node's files were written), the
                // generation breaking ties.
                &(std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
                    + u128::from(g))
                .to_string(),
            )
        }

        /// Append a container (the oldest so far).
        pub(crate) fn push(&self, c: Container) {
            self.node().containers.push(c);
        }

        /// Add a container newer than every other.
        pub(crate) fn insert_newest(&self, c: Container) {
            self.node().containers.insert(0, c);
        }

        pub(crate) fn add_sandbox(&self, s: Sandbox) {
            self.node().sandboxes.push(s);
        }

        /// Mark container `id` running or exited.
        pub(crate) fn set_running(&self, id: &str, running: bool) {
            for c in self.node().containers.iter_mut().filter(|c| c.id == id) {
                c.state = if running {
                    "CONTAINER_RUNNING"
                } else {
                    "CONTAINER_EXITED"
                }
                .into();
            }
        }

        /// The kubelet restarted container `id` `n` times in its pod.
        pub(crate) fn set_attempt(&self, id: &str, n: u32) {
            for c in self.node().containers.iter_mut().filter(|c| c.id == id) {
                c.metadata.attempt = n;
            }
        }

        /// Container `id` is gone from the listings.
        pub(crate) fn remove(&self, id: &str) {
            self.node().containers.retain(|c| c.id != id);
        }

        /// The host PID `crictl inspect` tells for container `id`.
        pub(crate) fn set_pid(&self, id: &str, pid: u32) {
            self.node().pids.insert(id.to_string(), pid);
        }

        /// The containers `etcdctl` ran in, in call order.
        pub(crate) fn exec_into(&self) -> Vec<String> {
            self.node().etcdctl.iter().map(|c| c.0.clone()).collect()
        }

        /// The arguments of each `etcdctl` call, in call order.
        pub(crate) fn etcdctl_args(&self) -> Vec<Vec<String>> {
            self.node().etcdctl.iter().map(|c| c.1.clone()).collect()
        }

        /// Every listing fails with `e` (None: listings answer again).
        pub(crate) fn fail_listings(&self, e: Option<RtError>) {
            self.node().listing_error = e;
        }

        /// Every call is limited to `d` (as `--command-timeout` does).
        pub(crate) fn limit_calls(&self, d: Duration) {
            self.node().call_limit = Some(d);
        }

        /// `member list` exits 1 with `stderr` (and nothing on stdout).
        pub(crate) fn fail_member_list(&self, stderr: &str) {
            self.node().member_list_stderr = Some(stderr.to_string());
        }

        /// etcd answers `member list -w json` and `endpoint health
        /// --cluster -w json` with these.
        pub(crate) fn set_etcd(&self, member_list: &str, endpoint_health: &str) {
            self.node().etcd = Some((member_list.to_string(), endpoint_health.to_string()));
        }

        /// kube-apiserver answers `/readyz` with `status`.
        pub(crate) fn set_readyz(&self, status: u16) {
            self.node().readyz = Some(status);
        }

        /// `path` on `port` answers this (`Err`: no answer, why).
        pub(crate) fn set_answer(&self, path: &str, port: u16, answer: Result<(u16, &str), &str>) {
            self.node()
                .answers
                .insert(format!("{path}:{port}"), Scripted::new(answer));
        }

        /// `path` on `host:port` answers this (before [`Double::set_answer`]'s).
        pub(crate) fn set_host_answer(
            &self,
            host: &str,
            path: &str,
            port: u16,
            answer: Result<(u16, &str), &str>,
        ) {
            self.node()
                .answers
                .insert(format!("{host} {path}:{port}"), Scripted::new(answer));
        }

        /// The kubelet's step: stop what left `manifests/`, start the next
        /// generation of what came back.
        fn sync(&self, root: &Path, n: &mut Node) {
            for c in Component::ALL {
                let active = root
                    .join("etc/kubernetes/manifests")
                    .join(c.manifest_file())
                    .exists();
                let g = n.generations[&c];
                let id = format!("{}-{g}", c.name());
                let Some(i) = n.containers.iter().position(|x| x.id == id) else {
                    continue;
                };
                let running = n.containers[i].is_running();
                if running && !active && self.never_stop != Some(c) {
                    n.containers[i].state = "CONTAINER_EXITED".into();
                } else if !running && active {
                    let sb = n.containers[i].pod_sandbox_id.clone();
                    n.containers[i] = Self::generation(c, g + 1);
                    if let Some(s) = n.sandboxes.iter_mut().find(|s| s.id == sb) {
                        *s = sandbox(&format!("sandbox-{c}-{}", g + 1), "file");
                    }
                    n.generations.insert(c, g + 1);
                }
            }
        }
    }

    impl Runtime for Double {
        fn call_limit(&self, budget: Duration) -> Duration {
            self.node().call_limit.map_or(budget, |l| l.min(budget))
        }

        fn ps(&self, _budget: Duration) -> Result<Vec<Container>, RtError> {
            Calls::count(&self.calls.ps);
            let mut n = self.node();
            if let Some(e) = &n.listing_error {
                return Err(e.clone());
            }
            if let Some(root) = &self.root {
                self.sync(root, &mut n);
            }
            Ok(n.containers.clone())
        }

        fn pods(&self, _budget: Duration) -> Result<Vec<Sandbox>, RtError> {
            Calls::count(&self.calls.pods);
            let n = self.node();
            if let Some(e) = &n.listing_error {
                return Err(e.clone());
            }
            Ok(n.sandboxes.clone())
        }

        fn container_pid(&self, id: &str, _budget: Duration) -> Result<Option<u32>, RtError> {
            Calls::count(&self.calls.inspect);
            Ok(self.node().pids.get(id).copied())
        }

        fn etcdctl(&self, id: &str, args: &[String], _budget: Duration) -> Result<Output, RtError> {
            Calls::count(&self.calls.etcdctl);
            let mut n = self.node();
            n.etcdctl.push((id.to_string(), args.to_vec()));
            let (members, health) = n
                .etcd
                .clone()
                .unwrap_or((MEMBER_LIST.into(), ENDPOINT_HEALTH.into()));
            let out = if args.iter().any(|a| a == "member") {
                if let Some(e) = &n.member_list_stderr {
                    return Ok(output(1, b"", e.as_bytes()));
                }
                members
            } else {
                health
            };
            Ok(output(0, out.as_bytes(), b""))
        }

        fn probe(
            &self,
            _addr: std::net::SocketAddr,
            name: &str,
            _id: &TlsIdentity,
            _now: time::OffsetDateTime,
            path: Option<&str>,
            _budget: Duration,
        ) -> Result<ProbeResult, ProbeError> {
            Calls::count(&self.calls.probe);
            let peer_cert = match &self.root {
                Some(root) => {
                    let disk = if name == "kubernetes" {
                        "etc/kubernetes/pki/apiserver.crt"
                    } else {
                        "etc/kubernetes/pki/etcd/server.crt"
                    };
                    let pem = std::fs::read(root.join(disk)).unwrap();
                    crate::rules::pki::parse_pem_certificate(&pem).unwrap().der
                }
                None => Vec::new(),
            };
            let readyz = self.node().readyz.unwrap_or(200);
            Ok(ProbeResult {
                status: path.map(|_| readyz),
                peer_cert,
            })
        }

        fn ask(&self, q: &tlsprobe::Question<'_>) -> tlsprobe::Answer {
            Calls::count(&self.calls.probe);
            let disk = match (q.trust, q.path) {
                (
                    tlsprobe::Trust::Pinned {
                        name: "kubernetes", ..
                    },
                    _,
                ) => Some("etc/kubernetes/pki/apiserver.crt"),
                (tlsprobe::Trust::Pinned { .. }, Some(_)) => {
                    Some("etc/kubernetes/pki/etcd/server.crt")
                }
                (tlsprobe::Trust::Pinned { .. }, None) => Some("etc/kubernetes/pki/etcd/peer.crt"),
                (tlsprobe::Trust::Unverified, _) => None,
            };
            let presented = match (&self.root, disk) {
                (Some(root), Some(d)) => std::fs::read(root.join(d))
                    .ok()
                    .and_then(|pem| crate::rules::pki::parse_pem_certificate(&pem).ok())
                    .map(|c| c.der),
                _ => None,
            };
            let n = self.node();
            let key = format!("{}:{}", q.path.unwrap_or(""), q.port);
            // An answer set for this host first (`set_host_answer`).
            let hosted = format!("{} {key}", q.host);
            let set = n.answers.get(&hosted).or_else(|| n.answers.get(&key));
            let reply = match (set, q.path) {
                (Some(Scripted::Fails(why)), _) => Err(ProbeError::Exchange(why.clone())),
                (Some(Scripted::Answers(code, body)), p) => {
                    Ok((p.map(|_| *code), body.clone().into_bytes()))
                }
                (None, None) => Ok((None, Vec::new())),
                (None, Some("/readyz")) => {
                    let code = n.readyz.unwrap_or(200);
                    Ok((
                        Some(code),
                        if code == 200 {
                            b"ok".to_vec()
                        } else {
                            b"[-]etcd failed".to_vec()
                        },
                    ))
                }
                (None, Some("/health")) => {
                    Ok((Some(200), br#"{"health":"true","reason":""}"#.to_vec()))
                }
                // etcd's JSON gateway, unless set: off (these tests script
                // etcdctl, the fallback).
                (None, Some(crate::tools::etcd::MEMBER_LIST)) => {
                    Ok((Some(404), b"404 page not found\n".to_vec()))
                }
                (None, Some(_)) => Ok((Some(200), b"ok".to_vec())),
            };
            tlsprobe::Answer {
                proven: presented.is_some(),
                presented,
                reply,
            }
        }

        fn renew_certs(&self) -> Result<Output, RtError> {
            Calls::count(&self.calls.renew);
            if !self.kubeadm_fails {
                if let Some(root) = &self.root {
                    let kept: Vec<(&str, Vec<u8>)> = self
                        .kubeadm_skips
                        .iter()
                        .map(|rel| (*rel, std::fs::read(root.join(rel)).unwrap()))
                        .collect();
                    renew_from_fixture(root);
                    for rel in &self.kubeadm_creates {
                        let renewed = Path::new(env!("CARGO_MANIFEST_DIR"))
                            .join("fixtures/renewed/rsa")
                            .join(rel);
                        std::fs::copy(renewed, root.join(rel)).unwrap();
                    }
                    for (rel, bytes) in kept {
                        std::fs::write(root.join(rel), bytes).unwrap();
                    }
                }
                return Ok(output(0, b"", b""));
            }
            let root = self.root.as_ref().expect("a failing kubeadm needs a node");
            std::fs::write(
                root.join("etc/kubernetes/pki/apiserver.crt"),
                b"half-written",
            )
            .unwrap();
            Ok(output(1, b"", b"error: boom"))
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests write their fake tools and read what they were given
mod tests {
    //! `is_unreachable` against crictl's own error texts, and the real
    //! runtime's command lines against fake tools (shell scripts that record
    //! their arguments and answer as told).
    //!
    //! The texts are crictl 1.36's, as its source composes them
    //! (`cri-tools-1.36.0`): `cmd/crictl/main.go` (`--runtime-endpoint is
    //! not set`; `logrus.Fatal(err)` prints `level=fatal msg=%q`),
    //! `vendor/k8s.io/cri-client/pkg/remote_runtime.go` (`validate service
    //! connection: validate CRI v1 runtime API for endpoint %q: %w`), grpc
    //! 1.80's `internal/transport/http2_client.go` (`transport: Error while
    //! dialing: %v`), `transport.go` (`connection error: desc = %q`) and
    //! `picker_wrapper.go` (a failed pick is `code = Unavailable`), Go's
    //! `net.OpError` (`dial unix PATH: connect: ERRNO`), and
    //! `cmd/crictl/container.go` (`listing containers: call list containers
    //! RPC: %w`).
    use super::*;
    use crate::contract::cli::Global;

    const SOCK: &str = "/run/containerd/containerd.sock";

    /// crictl's last line when it cannot dial the runtime's socket (`errno`
    /// as Go prints it).
    fn dial_failure(errno: &str) -> String {
        format!(
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint \"unix://{SOCK}\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix {SOCK}: connect: {errno}\"""#
        )
    }

    #[test]
    fn a_socket_that_cannot_be_dialled_is_unreachable() {
        for errno in [
            "no such file or directory",
            "connection refused",
            "permission denied",
        ] {
            assert!(is_unreachable(&dial_failure(errno)), "{errno}");
        }
        // crictl.yaml with `runtime-endpoint: ""` (cmd/crictl/main.go).
        assert!(is_unreachable(
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="--runtime-endpoint is not set""#
        ));
    }

    /// crictl 1.36's texts for an endpoint it cannot use (seen with the
    /// real crictl here, tests/containers.rs): refused at once, not retried.
    #[test]
    fn an_endpoint_crictl_cannot_use_is_unreachable() {
        for msg in [
            r#"time="2026-12-02T18:49:33Z" level=fatal msg="only support unix socket endpoint""#,
            r#"time="2026-12-02T18:49:33Z" level=fatal msg="protocol \"npipe\" not supported""#,
            r#"time="2026-12-02T18:49:33Z" level=fatal msg="protocol \"http\" not supported""#,
        ] {
            let text = format!(
                "time=\"2026-12-02T18:49:33Z\" level=warning msg=\"Config \\\"/etc/crictl.yaml\\\" does not exist, trying next\"\n{msg}\n"
            );
            let out = Output {
                code: Some(1),
                stdout: Vec::new(),
                stderr: text.into_bytes(),
            };
            assert!(is_unreachable(&out.stderr_tail()), "{msg}");
        }
        // A regular file where the socket should be: nobody listens.
        assert!(is_unreachable(&dial_failure("connection refused")));
    }

    /// A runtime that answered and was cut off (a containerd restart), or
    /// is slow to answer the connection check, may answer the next call.
    #[test]
    fn a_cut_or_slow_answer_is_retried_not_unreachable() {
        for text in [
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="listing containers: call list containers RPC: rpc error: code = Unavailable desc = error reading from server: EOF""#,
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint \"unix:///run/containerd/containerd.sock\": rpc error: code = DeadlineExceeded desc = context deadline exceeded""#,
        ] {
            assert!(!is_unreachable(text), "{text}");
        }
    }

    /// The runtime keeps only the last 300 characters of stderr: the
    /// verdict must survive the cut, however long the socket path.
    #[test]
    fn the_verdict_survives_the_stderr_tail() {
        let long = format!("/run/{}/containerd.sock", "k".repeat(400));
        let text = dial_failure("no such file or directory").replace(SOCK, &long);
        let out = Output {
            code: Some(1),
            stdout: Vec::new(),
            stderr: format!("{text}\n").into_bytes(),
        };
        let tail = out.stderr_tail();
        assert!(!tail.contains("validate service connection"), "{tail}");
        assert!(is_unreachable(&tail), "{tail}");
    }

    /// A runtime that answered but failed the call may answer the next one:
    /// the gate waits for it.
    #[test]
    fn a_failed_call_on_a_reachable_runtime_is_not_unreachable() {
        for text in [
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="listing containers: call list containers RPC: rpc error: code = DeadlineExceeded desc = context deadline exceeded""#,
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="listing containers: call list containers RPC: rpc error: code = Unknown desc = failed to list containers: boom""#,
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="incorrectly specified label: a=b=c""#,
            "",
        ] {
            assert!(!is_unreachable(text), "{text}");
        }
    }

    /// A fake tool: records its arguments in `DIR/args`, prints `DIR/stdout`
    /// and `DIR/stderr`, exits with `DIR/code`.
    struct Tool {
        dir: tempfile::TempDir,
    }

    impl Tool {
        fn new(name: &str) -> Tool {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path().display();
            let script = format!(
                "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{d}/args'\ncat '{d}/stdout'\ncat '{d}/stderr' >&2\nexit \"$(cat '{d}/code')\"\n"
            );
            // Written by a child process: a write descriptor of ours could
            // leak into a sibling test's fork and make exec fail (ETXTBSY).
            let path = dir.path().join(name);
            let ok = std::process::Command::new("/bin/sh")
                .args(["-c", r#"printf '%s' "$2" > "$1" && chmod 0755 "$1""#, "sh"])
                .arg(&path)
                .arg(script)
                .status()
                .unwrap();
            assert!(ok.success());
            let t = Tool { dir };
            t.answer(0, "", "");
            t
        }
        fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }
        fn answer(&self, code: i32, stdout: &str, stderr: &str) {
            std::fs::write(self.dir.path().join("code"), code.to_string()).unwrap();
            std::fs::write(self.dir.path().join("stdout"), stdout).unwrap();
            std::fs::write(self.dir.path().join("stderr"), stderr).unwrap();
        }
        fn args(&self) -> Vec<String> {
            std::fs::read_to_string(self.dir.path().join("args"))
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect()
        }
    }

    fn global(root: &Path, crictl: PathBuf, kubeadm: PathBuf, endpoint: Option<&str>) -> Global {
        Global {
            command_timeout: Duration::from_secs(10),
            kubeadm: Some(kubeadm),
            crictl: Some(crictl),
            runtime_endpoint: endpoint.map(str::to_string),
            ..Global::for_tests(root)
        }
    }

    /// A node root with fake crictl and kubeadm.
    fn node(endpoint: Option<&str>) -> (tempfile::TempDir, Tool, Tool, Global) {
        let root = tempfile::tempdir().unwrap();
        let crictl = Tool::new("crictl");
        let kubeadm = Tool::new("kubeadm");
        let g = global(
            root.path(),
            crictl.path("crictl"),
            kubeadm.path("kubeadm"),
            endpoint,
        );
        (root, crictl, kubeadm, g)
    }

    fn runtime(g: &Global) -> NodeRuntime {
        let root = crate::node::fsx::Root::open(&g.root).unwrap();
        NodeRuntime::new(&ToolOptions::of(g), &root, Cancel::new())
    }

    const ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

    /// SPEC 1 and 9: every crictl call gets the endpoint, as a global
    /// option before the command; listings ask for kube-system by its exact
    /// label.
    #[test]
    fn every_crictl_call_gets_the_endpoint_before_the_command() {
        let (_root, crictl, _kubeadm, g) = node(Some(ENDPOINT));
        let rt = runtime(&g);
        crictl.answer(0, r#"{"containers":[]}"#, "");
        assert_eq!(rt.ps(Duration::from_secs(5)), Ok(Vec::new()));
        let label = "io.kubernetes.pod.namespace=kube-system";
        let e = ["--runtime-endpoint", ENDPOINT];
        assert_eq!(
            crictl.args(),
            [&e[..], &["ps", "-a", "-o", "json", "--label", label]].concat()
        );
        crictl.answer(0, r#"{"items":[]}"#, "");
        assert_eq!(rt.pods(Duration::from_secs(5)), Ok(Vec::new()));
        assert_eq!(
            crictl.args(),
            [&e[..], &["pods", "-o", "json", "--label", label]].concat()
        );
        crictl.answer(0, "[]", "");
        let args = vec!["endpoint".to_string(), "health".to_string()];
        rt.etcdctl("etcd-1", &args, Duration::from_secs(5)).unwrap();
        assert_eq!(
            crictl.args(),
            [&e[..], &["exec", "etcd-1", "etcdctl", "endpoint", "health"]].concat()
        );
    }

    /// SPEC 9: no endpoint given or found at the kubelet's: crictl's own
    /// configuration decides, so no `--runtime-endpoint` at all.
    #[test]
    fn without_an_endpoint_crictl_is_given_none() {
        let (_root, crictl, _kubeadm, g) = node(None);
        let rt = runtime(&g);
        crictl.answer(0, r#"{"containers":[]}"#, "");
        rt.ps(Duration::from_secs(5)).unwrap();
        assert_eq!(crictl.args()[0], "ps");
    }

    /// SPEC 4 step 7 and 9: a dial failure fails the gate at once, naming
    /// the endpoint; any other failed listing is one the gate retries.
    #[test]
    fn a_dial_failure_is_unreachable_and_names_the_endpoint() {
        let (_root, crictl, _kubeadm, g) = node(Some(ENDPOINT));
        let rt = runtime(&g);
        crictl.answer(1, "", &dial_failure("no such file or directory"));
        for r in [
            rt.ps(Duration::from_secs(5)).map(|_| ()),
            rt.pods(Duration::from_secs(5)).map(|_| ()),
        ] {
            match r {
                Err(RtError::Unreachable(m)) => assert!(
                    m.contains(&format!("{ENDPOINT} (from --runtime-endpoint)")),
                    "{m}"
                ),
                other => panic!("{other:?}"),
            }
        }
        crictl.answer(
            1,
            "",
            r#"time="2026-11-30T00:00:00Z" level=fatal msg="listing containers: call list containers RPC: rpc error: code = DeadlineExceeded desc = context deadline exceeded""#,
        );
        match rt.ps(Duration::from_secs(5)) {
            Err(RtError::Failed(m)) => assert!(m.contains("DeadlineExceeded"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    /// SPEC 2: under a root other than `/`, kubeadm renews that root's
    /// certificates (`--rootfs`), never the host's; the kubeadm config is
    /// then a node path, as kubeadm sees it after its chroot.
    #[test]
    fn kubeadm_under_another_root_is_given_rootfs() {
        let (root, _crictl, kubeadm, mut g) = node(None);
        g.kubeadm_config = Some("etc/kubernetes/kubeadm.yaml".into());
        runtime(&g).renew_certs().unwrap();
        let root = root.path().display().to_string();
        assert_eq!(
            kubeadm.args(),
            [
                "certs",
                "renew",
                "all",
                "--config",
                "/etc/kubernetes/kubeadm.yaml",
                "--rootfs",
                &root
            ]
        );
    }

    /// A tool that cannot be found is named (the run then fails at once),
    /// and calling it is an error, not a panic.
    #[test]
    fn a_missing_tool_is_named() {
        let (root, _crictl, kubeadm, _g) = node(None);
        let g = global(
            root.path(),
            PathBuf::from("/nonexistent/crictl"),
            kubeadm.path("kubeadm"),
            Some(ENDPOINT),
        );
        let rt = runtime(&g);
        let missing = rt.missing_tools();
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert_eq!(missing[0].0, "crictl");
        assert!(missing[0].1.contains("/nonexistent/crictl"), "{missing:?}");
        // Every call names why, as a typed error: not something waiting fixes.
        let want = RtError::Missing(proc::ToolNotFound::At {
            name: "crictl".into(),
            path: PathBuf::from("/nonexistent/crictl"),
        });
        assert_eq!(rt.ps(Duration::from_secs(1)).unwrap_err(), want);
        let args = ["version".to_string()];
        assert_eq!(
            rt.etcdctl("etcd-1", &args, Duration::from_secs(1))
                .unwrap_err(),
            want
        );
        assert_eq!(want.to_string(), "crictl not found at /nonexistent/crictl");
    }

    /// A tool that outlives its budget is a typed timeout, not a string.
    #[test]
    fn a_tool_past_its_timeout_is_a_typed_run_error() {
        let (_root, crictl, _kubeadm, mut g) = node(Some(ENDPOINT));
        // Its answer is a FIFO nobody writes: the tool hangs reading it.
        let answer = crictl.path("stdout");
        std::fs::remove_file(&answer).unwrap();
        nix::unistd::mkfifo(&answer, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        g.command_timeout = Duration::from_millis(200);
        match runtime(&g).ps(Duration::from_secs(5)) {
            Err(RtError::Run(proc::ProcError::Timeout { .. })) => {}
            other => panic!("{other:?}"),
        }
    }
}
