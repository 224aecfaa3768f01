//! The simulated control-plane node shared by the scenario, crash, model
//! and hostile tests (tests/simnode): a copy of a fixture node tree with
//! free ports, a `sim.json`, and the stand-in kubelet; the runbook run
//! against it.

use super::hex::sha256_file;
use super::kubeadm_manifests::ControlPlane;
use super::tree::{chmod, copy_tree};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NOW: &str = "2026-11-30T00:00:00Z";
pub const RUNBOOK: &str = env!("CARGO_BIN_EXE_nvke-cert-runbook");
pub const SIMNODE: &str = env!("CARGO_BIN_EXE_nvke-simnode");
pub const COMPONENTS: [&str; 4] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];
/// The runbook's places under the root (SPEC section 3).
pub const STATE: &str = "var/lib/nvke/k8s-cert-renewal";
pub const MANIFESTS: &str = "etc/kubernetes/manifests";
pub const STAGING: &str = "etc/kubernetes/nvke-cert-renewal-staging";
pub const PKI: &str = "etc/kubernetes/pki";

/// A port nothing listens on now, never handed out before in this test
/// process, and outside the kernel's ephemeral range when the machine
/// leaves room for that ([`port_range`]). Outside it, because a stand-in
/// that a renewal restarts binds its port again, and meanwhile any
/// outgoing connection on the machine (a health probe, an etcd client) may
/// have taken that port as its source port; a flipper round here once
/// found kube-controller-manager's stand-in restarted in place after its
/// renewal, and the operator view rightly said `restarting`. Remembered,
/// because the kernel may give one port to two `bind` calls in a row once
/// the first listener is closed (CI saw etcd and kube-apiserver given one
/// port).
pub fn free_port() -> u16 {
    // (where this process starts in the range, how many it tried)
    static GIVEN: std::sync::Mutex<Option<(u32, u32)>> = std::sync::Mutex::new(None);
    let (lo, hi) = *PORT_RANGE.get_or_init(port_range);
    let span = hi - lo;
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    // Test binaries run one after another, each its own process; a start
    // spread by the process ID keeps two runs on one machine (two `cargo
    // test`s by hand) apart most of the time. The bind check below is what
    // keeps a port in use from being handed out.
    let spread = (u64::from(std::process::id()).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32;
    let (start, tried) = given.get_or_insert((spread % span, 0));
    while *tried < span {
        let port = (lo + (*start + *tried) % span) as u16;
        *tried += 1;
        let bindable = |ip: &str| std::net::TcpListener::bind((ip, port)).is_ok();
        if bindable("127.0.0.1") && bindable("0.0.0.0") {
            return port;
        }
    }
    panic!("no free port left in {lo}..{hi}: all {span} handed out or taken");
}

static PORT_RANGE: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();

/// The listeners' ports, `lo..hi`: from 15000 to the kernel's first
/// ephemeral port (`net.ipv4.ip_local_port_range`, 32768 to 60999 by
/// default), or above its last one if there is more room there. A machine
/// whose ephemeral range leaves fewer than 4,096 ports either side (`1024
/// 65535`, say) gets every port from 1024: bound only when nothing is
/// bound there, as before, but not kept apart from source ports.
fn port_range() -> (u32, u32) {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|n| n.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32768, 60999));
    let below = (15000, range.0.max(15000));
    let above = (range.1.saturating_add(1).min(65536), 65536);
    let room = |(lo, hi): (u32, u32)| hi - lo;
    let best = if room(below) >= room(above) {
        below
    } else {
        above
    };
    if room(best) >= 4096 {
        best
    } else {
        (1024, 65536)
    }
}

/// One simulated control-plane node.
pub struct Node {
    pub root: PathBuf,
    pub sim: PathBuf,
    pub kubelet: Option<Child>,
    pub sim_json: Value,
    /// The node as its manifests were generated (kubeadm's description;
    /// tests/support/kubeadm_manifests.rs).
    pub kubeadm: ControlPlane,
    /// The network namespace its stand-ins and runbook runs join (a node
    /// with an address of its own); None: the test's network. Dropped
    /// after the kubelet is stopped.
    pub netns: Option<super::netns::Named>,
    _tmp: tempfile::TempDir,
}

impl Node {
    pub fn new(variant: &str, knobs: Value) -> Node {
        let mut node = Node::prepare(variant, knobs);
        node.start_kubelet();
        node.wait_all_running();
        node
    }

    /// [`Node::new`], with `component`'s start allowance cut to one
    /// second before its kubelet starts: its startup probe written as
    /// `initialDelaySeconds: 0`, `failureThreshold: 1`, `periodSeconds:
    /// 1` (SPEC 12: a failed probe past it is `unhealthy`, as the kubelet
    /// counts it; kubeadm's own, 250 s, would keep a test waiting).
    pub fn with_short_start(variant: &str, knobs: Value, component: &str) -> Node {
        let mut node = Node::prepare_with(variant, knobs, |cp| {
            cp.short_start.push(component.to_string());
        });
        node.start_kubelet();
        node.wait_all_running();
        node
    }

    /// The node tree, free ports and sim.json of [`Node::new`], without
    /// the kubelet (the containers tier edits the tree and the tools
    /// first).
    pub fn prepare(variant: &str, knobs: Value) -> Node {
        Node::prepare_with(variant, knobs, |_| {})
    }

    /// [`Node::prepare`] with the node described by `shape` over
    /// [`Node::description`]: the four static pod manifests are written by
    /// the kubeadm-shaped generator (tests/support/kubeadm_manifests.rs)
    /// from that description, never edited strings of the fixture's.
    pub fn prepare_with(
        variant: &str,
        knobs: Value,
        shape: impl FnOnce(&mut ControlPlane),
    ) -> Node {
        let tmp = tempfile::Builder::new()
            .prefix("nvke-scn-")
            .tempdir()
            .unwrap();
        let root = tmp.path().join("root");
        let sim = tmp.path().join("sim");
        copy_tree(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/nodes")
                .join(variant),
            &root,
        );
        let mut cp = Node::description();
        shape(&mut cp);
        cp.write(&root.join(MANIFESTS));
        std::fs::create_dir_all(sim.join("bin")).unwrap();
        for tool in ["crictl", "kubeadm"] {
            std::os::unix::fs::symlink(SIMNODE, sim.join("bin").join(tool)).unwrap();
        }
        let mut sim_json =
            json!({ "root": root, "stopLatencyMs": 30, "startLatencyMs": 30, "tlsNow": NOW });
        merge(&mut sim_json, &knobs);
        std::fs::write(
            sim.join("sim.json"),
            serde_json::to_vec_pretty(&sim_json).unwrap(),
        )
        .unwrap();
        Node {
            root,
            sim,
            kubelet: None,
            sim_json,
            kubeadm: cp,
            netns: None,
            _tmp: tmp,
        }
    }

    /// The simulated node as kubeadm would describe it on this host's
    /// network: cp-1 advertising `127.0.0.1` (kubeadm accepts a loopback
    /// advertise address; the fixture's 10.0.0.11 is not an address of
    /// this host, so nothing could listen or be asked there), every port
    /// free ([`free_port`]), the rest kubeadm's defaults. Its etcd client
    /// URLs are then kubeadm's `https://127.0.0.1:P,https://127.0.0.1:P`,
    /// one listener for etcd (which binds each address once).
    pub fn description() -> ControlPlane {
        let mut cp = ControlPlane::fixture();
        cp.advertise = std::net::Ipv4Addr::LOCALHOST.into();
        cp.api_port = free_port();
        cp.etcd_client_port = free_port();
        cp.etcd_peer_port = free_port();
        cp.kcm_port = free_port();
        cp.sched_port = free_port();
        cp
    }

    pub fn start_kubelet(&mut self) {
        let log = std::fs::File::create(self.sim.join("kubelet.stderr")).unwrap();
        let mut cmd = Command::new(SIMNODE);
        if let Some(ns) = &self.netns {
            ns.join(&mut cmd);
        }
        let child = cmd
            .args(["kubelet", "--sim"])
            .arg(&self.sim)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.kubelet = Some(child);
    }

    pub fn set_knobs(&mut self, knobs: Value) {
        merge(&mut self.sim_json, &knobs);
        let tmp = self.sim.join(".sim.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&self.sim_json).unwrap()).unwrap();
        std::fs::rename(tmp, self.sim.join("sim.json")).unwrap();
    }

    pub fn crictl_json(&self, name: &str) -> Vec<Value> {
        let out = Command::new(self.sim.join("bin/crictl"))
            .args(ps_args(name))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(json!({"containers": []}));
        v["containers"].as_array().cloned().unwrap_or_default()
    }

    pub fn running_id(&self, name: &str) -> Option<String> {
        self.crictl_json(name)
            .into_iter()
            .find(|c| c["state"] == "CONTAINER_RUNNING")
            .and_then(|c| c["id"].as_str().map(str::to_string))
    }

    pub fn wait_all_running(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if COMPONENTS.iter().all(|c| self.running_id(c).is_some()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "the simulated node never came up: {}",
            std::fs::read_to_string(self.sim.join("kubelet.log")).unwrap_or_default()
        );
    }

    /// The runbook's arguments for this node (root, tools, JSON output, and
    /// the test defaults for `--now`, the timeouts and `--settle 0` unless
    /// `args` sets them), followed by `args`.
    pub fn runbook_args(&self, args: &[&str]) -> Vec<OsString> {
        let mut v: Vec<OsString> = vec![
            "--root".into(),
            self.root.clone().into(),
            "--crictl".into(),
            self.sim.join("bin/crictl").into(),
            "--kubeadm".into(),
            self.sim.join("bin/kubeadm").into(),
            "--output".into(),
            "json".into(),
        ];
        for (flag, default) in [
            ("--now", NOW),
            ("--health-timeout", "20"),
            ("--stop-timeout", "10"),
            ("--lock-timeout", "5"),
            // Postflight's settle (SPEC 4 step 10) is tested on its own
            // (scenarios); elsewhere it would only slow every renewal.
            ("--settle", "0"),
        ] {
            if !args.contains(&flag) {
                v.push(flag.into());
                v.push(default.into());
            }
        }
        v.extend(args.iter().map(OsString::from));
        v
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(RUNBOOK);
        c.args(self.runbook_args(args))
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        if let Some(ns) = &self.netns {
            ns.join(&mut c);
        }
        c
    }

    /// Run the runbook; returns (exit code, the JSON document, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, Value, String) {
        let out = self.command(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(
            stdout.lines().count(),
            1,
            "exactly one JSON line expected:\n{stdout}\n{stderr}"
        );
        let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        (out.status.code().unwrap_or(-1), v, stderr)
    }

    pub fn state(&self) -> PathBuf {
        self.root.join(STATE)
    }

    pub fn phase(&self) -> String {
        std::fs::read_to_string(self.state().join("phase")).unwrap_or_default()
    }

    pub fn receipt(&self, id: &str) -> Option<Value> {
        std::fs::read(self.state().join("completed").join(format!("{id}.json")))
            .ok()
            .map(|b| serde_json::from_slice(&b).unwrap())
    }

    pub fn write_state(&self, name: &str, content: &str) {
        std::fs::create_dir_all(self.state()).unwrap();
        chmod(&self.state(), 0o700);
        let p = self.state().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
            chmod(parent, 0o700);
        }
        std::fs::write(&p, content).unwrap();
        chmod(&p, 0o600);
    }

    pub fn ca_sha(&self, rel: &str) -> String {
        ca_sha_at(&self.root, rel)
    }

    pub fn v2_phase(&self, id: &str, state: &str, next: Option<&str>) -> String {
        v2_phase_at(&self.root, id, state, next)
    }

    pub fn legacy_phase(&self, state: &str, component: &str) -> String {
        format!(
            "STATE={state}\nCOMPONENT={component}\nSTARTED=1764460800\nCA_SHA256={}\nPID=4242\n",
            self.ca_sha("ca.crt")
        )
    }

    pub fn manifest(&self, c: &str) -> PathBuf {
        self.root.join(MANIFESTS).join(format!("{c}.yaml"))
    }

    pub fn staged(&self, c: &str) -> PathBuf {
        self.root.join(STAGING).join(format!("{c}.yaml"))
    }

    /// Each manifest active, none staged ([`all_active_in`]).
    pub fn assert_all_active(&self) {
        if let Err(e) = all_active_in(&self.root.join("etc/kubernetes")) {
            panic!("{e}");
        }
    }

    /// The controller's fencing check of `id`: it must confirm (exit 0,
    /// `termination: confirmed`). Returns its document.
    pub fn fence(&self, id: &str) -> Value {
        let (code, v, e) = self.run(&["--status-only", "--operation-id", id, "--fence"]);
        assert_eq!(
            (code, v["termination"].as_str()),
            (0, Some("confirmed")),
            "the fencing check of {id}: {v:#}\n{e}"
        );
        v
    }

    pub fn kubeadm_calls(&self) -> String {
        std::fs::read_to_string(self.sim.join("kubeadm.log")).unwrap_or_default()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut k) = self.kubelet.take() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(k.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = k.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = k.kill();
            let _ = k.wait();
        }
    }
}

/// The recovered placement, for a node's `/etc/kubernetes` at `etc`: every
/// manifest a file in `manifests/`, none in the runbook's staging dir (the
/// first that is not).
pub fn all_active_in(etc: &Path) -> Result<(), String> {
    for c in COMPONENTS {
        if !etc.join("manifests").join(format!("{c}.yaml")).is_file() {
            return Err(format!("{c} manifest is not active"));
        }
        let staged = etc
            .join("nvke-cert-renewal-staging")
            .join(format!("{c}.yaml"));
        if staged.exists() {
            return Err(format!("{c} manifest is still staged"));
        }
    }
    Ok(())
}

/// The components a renewal's document says it restarted, in order.
pub fn restarted(v: &Value) -> Vec<String> {
    v["restarts"]
        .as_array()
        .unwrap_or_else(|| panic!("no `restarts` array: {v}"))
        .iter()
        .map(|r| r["component"].as_str().unwrap().to_string())
        .collect()
}

/// sha256 (hex) of a file under the node's `etc/kubernetes/pki`.
pub fn ca_sha_at(root: &Path, rel: &str) -> String {
    sha256_file(&root.join(PKI).join(rel))
}

/// A valid V2 phase file for the node tree at `root` (its CAs' fingerprints).
pub fn v2_phase_at(root: &Path, id: &str, state: &str, next: Option<&str>) -> String {
    serde_json::to_string_pretty(&json!({
        "format": "nvke-cert-runbook/phase/v2",
        "operationID": id,
        "state": state,
        "nextComponent": next,
        "caSHA256": {
            "ca.crt": ca_sha_at(root, "ca.crt"),
            "etcd/ca.crt": ca_sha_at(root, "etcd/ca.crt"),
            "front-proxy-ca.crt": ca_sha_at(root, "front-proxy-ca.crt"),
        },
        "force": false,
        "thresholdDays": 30,
        "startedAt": "2026-11-29T23:00:00Z",
        "updatedAt": "2026-11-29T23:10:00Z",
        "resumedFrom": null,
    }))
    .unwrap()
        + "\n"
}

pub fn merge(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b.clone(),
    }
}

// ------------------------------------------------------------------------
// The node as kubelet and crictl see it (issue 11; tests/simnode/README.md):
// the runtime endpoint, the kubelet's own configuration files, API pods,
// second static pods, and crictl through the configured endpoint.

/// crictl's first default endpoint (sim.json `runtimeEndpoint` default).
pub const CONTAINERD_SOCKET: &str = "unix:///run/containerd/containerd.sock";

impl Node {
    /// sim.json `runtimeEndpoint`: the one CRI socket that answers.
    pub fn runtime_endpoint(&self) -> String {
        self.sim_json["runtimeEndpoint"]
            .as_str()
            .unwrap_or(CONTAINERD_SOCKET)
            .to_string()
    }

    /// Sets sim.json `runtimeEndpoint` (read by every crictl call). The
    /// helpers above (`crictl_json`, `running_id`, `wait_all_running`, so
    /// `Node::new` too) call crictl without an endpoint: they only work
    /// while this is one of crictl's defaults (containerd, CRI-O,
    /// cri-dockerd). Call it after `Node::new`, and use `crictl`,
    /// `containers`, `running_ids`, `pods` below, which pass it with `-r`.
    pub fn set_runtime_endpoint(&mut self, endpoint: &str) {
        self.set_knobs(json!({ "runtimeEndpoint": endpoint }));
    }

    /// Writes `<root>/var/lib/kubelet/config.yaml`, the KubeletConfiguration
    /// kubeadm writes, with `containerRuntimeEndpoint: <endpoint>` (`None`:
    /// `""`, as kubeadm writes it when the endpoint is a kubelet flag in
    /// kubeadm-flags.env).
    pub fn write_kubelet_config(&self, endpoint: Option<&str>) {
        let ep = serde_json::to_string(endpoint.unwrap_or("")).unwrap();
        let yaml = format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1\n\
             authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    cacheTTL: 0s\n    enabled: true\n  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\n\
             authorization:\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 0s\n    cacheUnauthorizedTTL: 0s\n\
             cgroupDriver: systemd\n\
             clusterDNS:\n- 10.96.0.10\n\
             clusterDomain: cluster.local\n\
             containerRuntimeEndpoint: {ep}\n\
             cpuManagerReconcilePeriod: 0s\n\
             evictionPressureTransitionPeriod: 0s\n\
             fileCheckFrequency: 0s\n\
             healthzBindAddress: 127.0.0.1\n\
             healthzPort: 10248\n\
             httpCheckFrequency: 0s\n\
             imageMaximumGCAge: 0s\n\
             imageMinimumGCAge: 0s\n\
             kind: KubeletConfiguration\n\
             logging:\n  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: \"0\"\n    text:\n      infoBufferSize: \"0\"\n  verbosity: 0\n\
             memorySwap: {{}}\n\
             nodeStatusReportFrequency: 0s\n\
             nodeStatusUpdateFrequency: 0s\n\
             rotateCertificates: true\n\
             runtimeRequestTimeout: 0s\n\
             shutdownGracePeriod: 0s\n\
             shutdownGracePeriodCriticalPods: 0s\n\
             staticPodPath: /etc/kubernetes/manifests\n\
             streamingConnectionIdleTimeout: 0s\n\
             syncFrequency: 0s\n\
             volumeStatsAggPeriod: 0s\n"
        );
        self.write_kubelet_file("config.yaml", &yaml);
    }

    /// Writes `<root>/var/lib/kubelet/kubeadm-flags.env` as kubeadm does:
    /// `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=<endpoint>
    /// --pod-infra-container-image=registry.k8s.io/pause:3.10"`.
    pub fn write_kubeadm_flags(&self, endpoint: &str) {
        self.write_kubelet_file(
            "kubeadm-flags.env",
            &format!(
                "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint={endpoint} --pod-infra-container-image=registry.k8s.io/pause:3.10\"\n"
            ),
        );
    }

    fn write_kubelet_file(&self, name: &str, content: &str) {
        for (d, mode) in [
            ("var", 0o755),
            ("var/lib", 0o755),
            ("var/lib/kubelet", 0o700),
        ] {
            let p = self.root.join(d);
            if !p.is_dir() {
                std::fs::create_dir_all(&p).unwrap();
                chmod(&p, mode);
            }
        }
        let p = self.root.join("var/lib/kubelet").join(name);
        std::fs::write(&p, content).unwrap();
        chmod(&p, 0o644);
    }

    /// Writes `<root>/etc/crictl.yaml` (`runtime-endpoint: <endpoint>`,
    /// the simulated crictl's `/etc/crictl.yaml`); `None` removes it.
    pub fn write_crictl_config(&self, endpoint: Option<&str>) {
        let p = self.root.join("etc/crictl.yaml");
        match endpoint {
            Some(ep) => {
                std::fs::write(&p, format!("runtime-endpoint: {ep}\n")).unwrap();
                chmod(&p, 0o644);
            }
            None => {
                let _ = std::fs::remove_file(&p);
            }
        }
    }

    /// Sets sim.json `apiPods` (the whole list), e.g.
    /// `json!([{"name": "etcd-backup-29123", "namespace": "kube-system",
    /// "containers": ["etcd"]}])`: pods the kubelet runs as if the API
    /// server had bound them here (sandbox `kubernetes.io/config.source:
    /// api`, containers without a process). `json!([])` stops them.
    pub fn set_api_pods(&mut self, pods: Value) {
        self.set_knobs(json!({ "apiPods": pods }));
    }

    /// etcd's client port, as the node's description gave it to its
    /// manifest (either family; the runbook's `etcd_client_port` reads the
    /// `127.0.0.1` URL only).
    pub fn etcd_client_port(&self) -> u16 {
        self.kubeadm.etcd_client_port
    }

    /// A second static pod: `manifests/<file>` is a copy of
    /// `<component>.yaml` with `metadata.name: <name>` (its container keeps
    /// the component's name), etcd's client port and kube-apiserver's
    /// secure port moved to free ports so its stand-in runs too. Returns
    /// the manifest's path; remove the file to stop the pod.
    pub fn add_static_copy(&self, component: &str, name: &str, file: &str) -> PathBuf {
        let mut s = std::fs::read_to_string(self.manifest(component)).unwrap();
        let from = format!("\n  name: {component}\n");
        assert!(s.contains(&from), "{component}.yaml has no metadata.name");
        s = s.replacen(&from, &format!("\n  name: {name}\n"), 1);
        let port_after = |s: &str, key: &str| -> Option<String> {
            let i = s.find(key)? + key.len();
            Some(s[i..].chars().take_while(char::is_ascii_digit).collect())
        };
        match component {
            "etcd" => {
                if let Ok(p) = nvke_cert_runbook::node::etcd_client_port(s.as_bytes()) {
                    s = s.replace(
                        &format!("127.0.0.1:{p}"),
                        &format!("127.0.0.1:{}", free_port()),
                    );
                }
            }
            "kube-apiserver" => {
                if let Some(p) = port_after(&s, "--secure-port=") {
                    s = s.replace(
                        &format!("--secure-port={p}"),
                        &format!("--secure-port={}", free_port()),
                    );
                }
            }
            _ => {}
        }
        let dir = self.root.join(MANIFESTS);
        let tmp = dir.join(format!(".{file}.tmp"));
        std::fs::write(&tmp, s).unwrap();
        chmod(&tmp, 0o600);
        let p = dir.join(file);
        std::fs::rename(&tmp, &p).unwrap();
        p
    }

    /// Runs the node's crictl with `-r <runtimeEndpoint>` and `args`, with
    /// a cleared environment.
    pub fn crictl(&self, args: &[&str]) -> std::process::Output {
        Command::new(self.sim.join("bin/crictl"))
            .arg("-r")
            .arg(self.runtime_endpoint())
            .args(args)
            .env_clear()
            .output()
            .unwrap()
    }

    /// `crictl pods -o json` items (all states, newest first).
    pub fn pods(&self) -> Vec<Value> {
        let out = self.crictl(&["pods", "-o", "json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(json!({"items": []}));
        v["items"].as_array().cloned().unwrap_or_default()
    }

    /// `crictl ps -a -o json` with the exact labels
    /// `io.kubernetes.pod.namespace=kube-system` and
    /// `io.kubernetes.container.name=<name>` (every pod's, newest first),
    /// through the configured endpoint.
    pub fn containers(&self, name: &str) -> Vec<Value> {
        let label = format!("io.kubernetes.container.name={name}");
        let out = self.crictl(&[
            "ps",
            "-a",
            "-o",
            "json",
            "--label",
            "io.kubernetes.pod.namespace=kube-system",
            "--label",
            &label,
        ]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(json!({"containers": []}));
        v["containers"].as_array().cloned().unwrap_or_default()
    }

    /// IDs of the running containers named `name` in kube-system (any pod).
    pub fn running_ids(&self, name: &str) -> Vec<String> {
        self.containers(name)
            .into_iter()
            .filter(|c| c["state"] == "CONTAINER_RUNNING")
            .filter_map(|c| c["id"].as_str().map(str::to_string))
            .collect()
    }

    /// The `kubernetes.io/config.source` of a container's sandbox.
    pub fn config_source(&self, container: &Value) -> Option<String> {
        let sb = container["podSandboxId"].as_str()?;
        self.pods()
            .into_iter()
            .find(|p| p["id"] == sb)
            .and_then(|p| {
                p["annotations"]["kubernetes.io/config.source"]
                    .as_str()
                    .map(str::to_string)
            })
    }

    /// Polls `f` every 20 ms until it holds; panics after `secs` with the
    /// kubelet log.
    pub fn wait_for(&self, what: &str, secs: u64, f: impl Fn(&Node) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if f(self) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "{what}: not within {secs} s; kubelet log:\n{}",
            std::fs::read_to_string(self.sim.join("kubelet.log")).unwrap_or_default()
        );
    }
}

/// `crictl ps -a -o json` of one kube-system container name, as the
/// runbook lists kube-system.
pub fn ps_args(name: &str) -> Vec<String> {
    let mut a: Vec<String> = ["ps", "-a", "-o", "json", "--label"]
        .map(String::from)
        .to_vec();
    a.push("io.kubernetes.pod.namespace=kube-system".into());
    a.push("--label".into());
    a.push(format!("io.kubernetes.container.name={name}"));
    a
}
