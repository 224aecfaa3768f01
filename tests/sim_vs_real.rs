//! The simulated node against the real stack: for each difference issue 16
//! found between them, the same query run against the simulated crictl /
//! kubelet / etcdctl and against real crictl 1.36 + containerd 1.6 + runc +
//! etcdctl 3.4 (tests/support/containers.rs), comparing what the runbook
//! reads: exit codes, the fields its parsers take (src/rules/cri.rs), the
//! stderr lines that matter (`is_unreachable`), and timing classes (lower
//! bounds only: a wait the real tool makes, the sim must make too).
//!
//! Needs root, containerd, runc, ctr and crictl as the containers tier does;
//! without them every test prints `SKIPPED: ...` and passes, unless
//! `NVKE_CONTAINERS_REQUIRED=1`. The IPv6 etcd comparison needs only
//! `/usr/bin/etcd` (and root for the node's address in a namespace).
#![cfg(feature = "sim")]
#![allow(clippy::disallowed_methods)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod support;

use nvke_cert_runbook::rules::cri::{parse_endpoint_health, parse_ps_kube_system};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::containers::{require, run_bounded, serial, Containerd, ETCD_IMAGE, PAUSE_IMAGE};
use support::node::*;

/// The runbook's own etcdctl flags and its test of an unreachable runtime.
use nvke_cert_runbook::tools::{etcdctl_flags, is_unreachable};

/// A real pod sandbox (host network) with kubelet-like metadata.
struct RealPod<'a> {
    ctrd: &'a Containerd,
    id: String,
    config: std::path::PathBuf,
}

fn write_json(dir: &Path, name: &str, v: &Value) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    p
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout).trim().to_string()
}

impl<'a> RealPod<'a> {
    fn new(ctrd: &'a Containerd, name: &str) -> RealPod<'a> {
        let logs = ctrd.dir.path().join(format!("logs-{name}"));
        std::fs::create_dir_all(&logs).unwrap();
        let config = write_json(
            ctrd.dir.path(),
            &format!("pod-{name}.json"),
            &json!({
                "metadata": {"name": format!("{name}-cp-1"), "namespace": "kube-system",
                             "uid": format!("uid-{name}"), "attempt": 0},
                "labels": {"io.kubernetes.pod.name": format!("{name}-cp-1"),
                           "io.kubernetes.pod.namespace": "kube-system",
                           "io.kubernetes.pod.uid": format!("uid-{name}")},
                "annotations": {"kubernetes.io/config.source": "file"},
                "log_directory": logs,
                "linux": {"security_context": {"namespace_options": {"network": 2, "pid": 1}}}
            }),
        );
        let id = ok(
            &ctrd.crictl(&["runp", config.to_str().unwrap()]),
            "crictl runp",
        );
        RealPod { ctrd, id, config }
    }

    /// `crictl create` as the kubelet calls it: image = the image ID,
    /// userSpecifiedImage = the manifest's name, the kubelet's labels and
    /// annotations. Not started.
    fn create(&self, name: &str, image: &str, command: &[&str], mounts: Value) -> String {
        let inspect = self.ctrd.crictl(&["inspecti", "-o", "json", image]);
        let iv: Value = serde_json::from_str(&ok(&inspect, "crictl inspecti")).unwrap();
        let image_id = iv["status"]["id"].as_str().unwrap().to_string();
        let cfg = write_json(
            self.ctrd.dir.path(),
            &format!("ctr-{name}.json"),
            &json!({
                "metadata": {"name": name, "attempt": 0},
                "image": {"image": image_id, "user_specified_image": image},
                "command": command,
                "labels": {"io.kubernetes.container.name": name,
                           "io.kubernetes.pod.name": format!("{name}-cp-1"),
                           "io.kubernetes.pod.namespace": "kube-system",
                           "io.kubernetes.pod.uid": format!("uid-{name}")},
                "annotations": {"io.kubernetes.container.hash": "1a2b3c4d",
                                "io.kubernetes.container.restartCount": "0",
                                "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
                                "io.kubernetes.container.terminationMessagePolicy": "File",
                                "io.kubernetes.pod.terminationGracePeriod": "30"},
                "mounts": mounts,
                "log_path": format!("{name}/0.log"),
            }),
        );
        ok(
            &self.ctrd.crictl(&[
                "create",
                &self.id,
                cfg.to_str().unwrap(),
                self.config.to_str().unwrap(),
            ]),
            "crictl create",
        )
    }

    fn start(&self, id: &str) {
        ok(&self.ctrd.crictl(&["start", id]), "crictl start");
    }
}

/// `ps -a -o json` for one container name, as the runbook lists kube-system.
fn ps_json(out: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(json!({}));
    v["containers"].as_array().cloned().unwrap_or_default()
}

fn real_ps(ctrd: &Containerd, name: &str) -> Output {
    ctrd.crictl(&ps_args(name).iter().map(String::as_str).collect::<Vec<_>>())
}

fn sim_ps(node: &Node, name: &str) -> Output {
    node.crictl(&ps_args(name).iter().map(String::as_str).collect::<Vec<_>>())
}

/// Polls `f` with back-off for up to `secs`.
fn poll<T>(what: &str, secs: u64, f: impl FnMut() -> Option<T>) -> T {
    support::poll(secs, f).unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

fn state_of(cs: &[Value], id: &str) -> Option<String> {
    cs.iter()
        .find(|c| c["id"] == id)
        .and_then(|c| c["state"].as_str().map(str::to_string))
}

/// Every key path of a JSON value (`a.b.c`; arrays by their elements),
/// for comparing shapes, not values. Map-valued fields (labels,
/// annotations) only by their own key.
fn shape(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                if !["labels", "annotations"].contains(&k.as_str()) {
                    shape(x, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                shape(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn etcd_mounts(pki_etcd: &Path) -> Value {
    json!([{"container_path": "/etc/kubernetes/pki/etcd", "host_path": pki_etcd, "readonly": true}])
}

/// Real etcd 3.4 on free loopback ports, serving `node`'s etcd server
/// certificate with client certificate authentication (kubeadm's flags);
/// `gateway`: `--enable-grpc-gateway`. Returns it and its client port.
fn start_real_etcd(node: &Node, data: &str, gateway: bool) -> (std::process::Child, u16) {
    let f = |name: &str| {
        node.root
            .join(PKI)
            .join("etcd")
            .join(name)
            .display()
            .to_string()
    };
    let (cp, pp) = (free_port(), free_port());
    let peer = format!("http://127.0.0.1:{pp}");
    let client = format!("https://127.0.0.1:{cp}");
    let child = Command::new("/usr/bin/etcd")
        .env_clear()
        .arg(format!("--data-dir={}", node.root.join(data).display()))
        .arg(format!("--listen-client-urls={client}"))
        .arg(format!("--advertise-client-urls={client}"))
        .arg(format!("--listen-peer-urls={peer}"))
        .arg(format!("--initial-advertise-peer-urls={peer}"))
        .arg(format!("--initial-cluster=default={peer}"))
        .arg(format!("--cert-file={}", f("server.crt")))
        .arg(format!("--key-file={}", f("server.key")))
        .arg("--client-cert-auth=true")
        .arg(format!("--trusted-ca-file={}", f("ca.crt")))
        .arg(format!("--enable-grpc-gateway={gateway}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("/usr/bin/etcd");
    (child, cp)
}

/// The simulated etcd for `node` on a free port (`gateway`: its JSON
/// gateway on). Returns it and its port.
fn start_sim_etcd(node: &Node, gateway: bool) -> (std::process::Child, u16) {
    let sp = free_port();
    let mut cmd = Command::new(SIMNODE);
    cmd.args(["etcd", "--root"])
        .arg(&node.root)
        .args(["--port", &sp.to_string()]);
    if !gateway {
        cmd.arg("--no-gateway");
    }
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    (child, sp)
}

/// The runbook's identity as etcd's client on `node` (healthcheck client).
fn etcd_client_identity(node: &Node) -> nvke_cert_runbook::tools::TlsIdentity {
    let f = |name: &str| std::fs::read(node.root.join(PKI).join("etcd").join(name)).unwrap();
    nvke_cert_runbook::tools::TlsIdentity {
        ca_pem: f("ca.crt"),
        client_cert_pem: f("healthcheck-client.crt"),
        client_key_pem: f("healthcheck-client.key"),
    }
}

/// 1 and 3: `crictl exec <etcd> etcdctl <the runbook's flags>` against a
/// member that does not listen: etcdctl waits its whole
/// `--command-timeout`, prints the unhealthy JSON, exits 1; crictl exits 1
/// and says `command terminated with exit code 1`.
#[test]
fn exec_of_etcdctl_against_an_unreachable_member() {
    let Some(tools) = require() else { return };
    let _turn = serial();
    // The runbook's flags at 11 s left: --dial-timeout 10 s, --command-timeout
    // 11 s; an answer at or after 11 s is the command timeout's, not the dial's.
    let timeout = Duration::from_secs(11);
    let closed = free_port();
    let args_for = |port: u16| {
        let mut a = etcdctl_flags(([127, 0, 0, 1], port).into(), timeout);
        a.extend(["endpoint", "health", "-w", "json"].map(String::from));
        a
    };
    // Real: an etcd container (real etcd on a free port) with the
    // fixture's etcd PKI mounted where the runbook's flags name it.
    let ctrd = Containerd::start(&tools);
    let node = Node::new("ecdsa", json!({}));
    let pod = RealPod::new(&ctrd, "etcd");
    let (cp, pp) = (free_port(), free_port());
    let data = format!("/tmp/etcd-{cp}");
    let listen_c = format!("http://127.0.0.1:{cp}");
    let listen_p = format!("http://127.0.0.1:{pp}");
    let cluster = format!("default={listen_p}");
    let id = pod.create(
        "etcd",
        ETCD_IMAGE,
        &[
            "/usr/bin/etcd",
            "--data-dir",
            &data,
            "--listen-client-urls",
            &listen_c,
            "--advertise-client-urls",
            &listen_c,
            "--listen-peer-urls",
            &listen_p,
            "--initial-advertise-peer-urls",
            &listen_p,
            "--initial-cluster",
            &cluster,
        ],
        etcd_mounts(&node.root.join(PKI).join("etcd")),
    );
    pod.start(&id);
    let mut real_cmd: Vec<String> = vec!["exec".into(), id.clone(), "etcdctl".into()];
    real_cmd.extend(args_for(closed));
    let t0 = Instant::now();
    let real = ctrd.crictl(&real_cmd.iter().map(String::as_str).collect::<Vec<_>>());
    let real_took = t0.elapsed();
    // Sim: the node's etcd container, the same flags.
    let sim_id = node.running_id("etcd").unwrap();
    let mut sim_cmd: Vec<String> = vec!["exec".into(), sim_id.clone(), "etcdctl".into()];
    sim_cmd.extend(args_for(closed));
    let t0 = Instant::now();
    let sim = node.crictl(&sim_cmd.iter().map(String::as_str).collect::<Vec<_>>());
    let sim_took = t0.elapsed();
    for (who, out, took, id) in [
        ("real", &real, real_took, &id),
        ("sim", &sim, sim_took, &sim_id),
    ] {
        let (so, se) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{who}: {so}\n{se}");
        let want =
            format!("execing command in container {id}: command terminated with exit code 1");
        assert!(se.contains(&want), "{who} stderr lacks {want:?}: {se}");
        let health = parse_endpoint_health(so.trim().as_bytes())
            .unwrap_or_else(|e| panic!("{who}: the runbook cannot parse {so:?}: {e}"));
        assert_eq!(health.len(), 1, "{who}: {so}");
        assert!(!health[0].health, "{who}: {so}");
        assert_eq!(
            health[0].error.as_deref(),
            Some("context deadline exceeded"),
            "{who}"
        );
        assert!(
            took >= timeout,
            "{who}: answered in {took:?}, before its --command-timeout {timeout:?}"
        );
    }
    // A remote exit other than 1 (etcdctl's ExitBadFeature, 4, for an
    // output format it does not know): crictl still exits 1 and names 4.
    let bad =
        |id: &str| ["exec", id, "etcdctl", "-w", "bogus", "endpoint", "health"].map(String::from);
    let (real_bad, sim_bad) = (bad(&id), bad(&sim_id));
    let real_bad = ctrd.crictl(&real_bad.iter().map(String::as_str).collect::<Vec<_>>());
    let sim_bad = node.crictl(&sim_bad.iter().map(String::as_str).collect::<Vec<_>>());
    for (who, out, id) in [("real", &real_bad, &id), ("sim", &sim_bad, &sim_id)] {
        let se = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{who}: {se}");
        let want =
            format!("execing command in container {id}: command terminated with exit code 4");
        assert!(se.contains(&want), "{who} stderr lacks {want:?}: {se}");
        assert!(
            se.contains("Error: unsupported output format"),
            "{who}: {se}"
        );
    }
    // A member that answers: both exit 0 (no crictl error line).
    let mut up_cmd: Vec<String> = vec!["exec".into(), id.clone(), "etcdctl".into()];
    up_cmd.extend([
        format!("--endpoints={listen_c}"),
        "endpoint".into(),
        "health".into(),
        "-w".into(),
        "json".into(),
    ]);
    let real_up = poll("the real etcd to answer", 60, || {
        let o = ctrd.crictl(&up_cmd.iter().map(String::as_str).collect::<Vec<_>>());
        o.status.success().then_some(o)
    });
    assert!(!node.containers("etcd").is_empty(), "no sim etcd container");
    let port = node.etcd_client_port();
    let mut sim_up: Vec<String> = vec!["exec".into(), sim_id, "etcdctl".into()];
    sim_up.extend(args_for(port));
    let sim_up = node.crictl(&sim_up.iter().map(String::as_str).collect::<Vec<_>>());
    for (who, out) in [("real", &real_up), ("sim", &sim_up)] {
        assert_eq!(out.status.code(), Some(0), "{who}: {}", text(&out.stderr));
        assert!(!text(&out.stderr).contains("command terminated"), "{who}");
        let h = parse_endpoint_health(text(&out.stdout).trim().as_bytes()).unwrap();
        assert!(h[0].health, "{who}");
    }
}

/// The stderr lines of one crictl run that are not timestamps: level and
/// message, with `subst` replaced.
fn log_lines(stderr: &[u8], subst: &[(&str, &str)]) -> Vec<String> {
    text(stderr)
        .lines()
        .map(|l| {
            let mut l = l
                .split_once(" level=")
                .map(|(_, r)| format!("level={r}"))
                .unwrap_or_else(|| l.to_string());
            for (from, to) in subst {
                l = l.replace(from, to);
            }
            l
        })
        .collect()
}

/// 2: crictl's warnings without /etc/crictl.yaml on a successful call, an
/// endpoint given by flag and by environment (tried once, failing at once),
/// and a runtime that accepts but never answers (crictl's 2 s timeout).
#[test]
fn crictl_warnings_endpoints_and_a_hung_runtime() {
    let Some(tools) = require() else { return };
    if Path::new("/etc/crictl.yaml").exists() {
        support::say("SKIPPED: crictl warnings: this host has an /etc/crictl.yaml");
        return;
    }
    let _turn = serial();
    let ctrd = Containerd::start(&tools);
    let node = Node::new("ecdsa", json!({}));
    let real_dir = tools
        .crictl
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let sim_dir = node.sim.join("bin").to_string_lossy().into_owned();
    let scratch = tempfile::tempdir().unwrap();
    let hung_real = scratch.path().join("hung.sock");
    std::fs::create_dir_all(node.root.join("run/nvke-hung")).unwrap();
    let hung_sim_node = node.root.join("run/nvke-hung/hung.sock");
    let _l1 = std::os::unix::net::UnixListener::bind(&hung_real).unwrap();
    let _l2 = std::os::unix::net::UnixListener::bind(&hung_sim_node).unwrap();
    let real_hung = format!("unix://{}", hung_real.display());
    let sim_hung = "unix:///run/nvke-hung/hung.sock".to_string();
    let missing = "unix:///run/nvke-none/none.sock";
    struct Case {
        what: &'static str,
        real: (Vec<String>, Vec<(String, String)>),
        sim: (Vec<String>, Vec<(String, String)>),
        code: i32,
        at_least: Duration,
    }
    let ps = ["ps", "-a", "-o", "json"].map(String::from);
    let with = |r: Option<&str>, rest: &[String]| {
        let mut v = Vec::new();
        if let Some(r) = r {
            v.extend(["-r".to_string(), r.to_string()]);
        }
        v.extend(rest.iter().cloned());
        v
    };
    let env = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
    let cases = [
        Case {
            what: "the runtime by flag",
            real: (with(Some(&ctrd.endpoint()), &ps), vec![]),
            sim: (with(Some(&node.runtime_endpoint()), &ps), vec![]),
            code: 0,
            at_least: Duration::ZERO,
        },
        Case {
            what: "the runtime by CONTAINER_RUNTIME_ENDPOINT",
            real: (
                with(None, &ps),
                env("CONTAINER_RUNTIME_ENDPOINT", &ctrd.endpoint()),
            ),
            sim: (
                with(None, &ps),
                env("CONTAINER_RUNTIME_ENDPOINT", &node.runtime_endpoint()),
            ),
            code: 0,
            at_least: Duration::ZERO,
        },
        Case {
            what: "no socket, by flag",
            real: (with(Some(missing), &ps), vec![]),
            sim: (with(Some(missing), &ps), vec![]),
            code: 1,
            at_least: Duration::ZERO,
        },
        Case {
            what: "no socket, by CONTAINER_RUNTIME_ENDPOINT",
            real: (with(None, &ps), env("CONTAINER_RUNTIME_ENDPOINT", missing)),
            sim: (with(None, &ps), env("CONTAINER_RUNTIME_ENDPOINT", missing)),
            code: 1,
            at_least: Duration::ZERO,
        },
        Case {
            what: "a hung runtime, by flag",
            real: (with(Some(&real_hung), &ps), vec![]),
            sim: (with(Some(&sim_hung), &ps), vec![]),
            code: 1,
            at_least: Duration::from_secs(2),
        },
        Case {
            what: "a hung runtime, by CONTAINER_RUNTIME_ENDPOINT",
            real: (
                with(None, &ps),
                env("CONTAINER_RUNTIME_ENDPOINT", &real_hung),
            ),
            sim: (
                with(None, &ps),
                env("CONTAINER_RUNTIME_ENDPOINT", &sim_hung),
            ),
            code: 1,
            at_least: Duration::from_secs(2),
        },
    ];
    let real_subst: Vec<(&str, &str)> = vec![
        (real_dir.as_str(), "<DIR>"),
        (real_hung.as_str(), "<HUNG>"),
        (hung_real.to_str().unwrap(), "<HUNGPATH>"),
    ];
    let sim_hung_path = "/run/nvke-hung/hung.sock";
    let sim_subst: Vec<(&str, &str)> = vec![
        (sim_dir.as_str(), "<DIR>"),
        (sim_hung.as_str(), "<HUNG>"),
        (sim_hung_path, "<HUNGPATH>"),
    ];
    for c in &cases {
        let run = |bin: &Path, (args, envs): &(Vec<String>, Vec<(String, String)>)| {
            let mut cmd = Command::new(bin);
            cmd.args(args).env_clear();
            for (k, v) in envs {
                cmd.env(k, v);
            }
            let t0 = Instant::now();
            let o = run_bounded(cmd, Duration::from_secs(60)).unwrap();
            (o, t0.elapsed())
        };
        let (real, real_took) = run(&tools.crictl, &c.real);
        let (sim, sim_took) = run(&node.sim.join("bin/crictl"), &c.sim);
        let rl = log_lines(&real.stderr, &real_subst);
        let sl = log_lines(&sim.stderr, &sim_subst);
        println!(
            "{}: real {:?} in {real_took:?}, sim {:?} in {sim_took:?}",
            c.what,
            real.status.code(),
            sim.status.code()
        );
        assert_eq!(real.status.code(), Some(c.code), "{}: real {rl:?}", c.what);
        assert_eq!(sim.status.code(), Some(c.code), "{}: sim {sl:?}", c.what);
        assert_eq!(rl, sl, "{}: the stderr lines differ", c.what);
        // Without /etc/crictl.yaml every call warns, a successful one too:
        // equal and empty would prove nothing.
        assert!(
            rl.iter().any(|l| l.contains("does not exist")),
            "{}: no config warning in {rl:?}",
            c.what
        );
        assert_eq!(
            is_unreachable(&text(&real.stderr)),
            is_unreachable(&text(&sim.stderr)),
            "{}",
            c.what
        );
        // A hung runtime answers nothing in time (DeadlineExceeded): not
        // unreachable, the gate retries it (issue 24); a missing socket is.
        let hung = c.what.starts_with("a hung runtime");
        assert_eq!(
            is_unreachable(&text(&real.stderr)),
            c.code != 0 && !hung,
            "{}",
            c.what
        );
        for (who, took) in [("real", real_took), ("sim", sim_took)] {
            assert!(took >= c.at_least, "{}: {who} gave up in {took:?}", c.what);
        }
        if c.code == 0 {
            parse_ps_kube_system(&real.stdout).unwrap();
            parse_ps_kube_system(&sim.stdout).unwrap();
        }
    }
}

/// 4: a container is RUNNING as soon as its process starts, whether or not
/// it listens; 5: a created, not started container is CONTAINER_CREATED,
/// and `ps -o json` has the same shape (image.image the image ID, imageRef,
/// userSpecifiedImage, annotations).
#[test]
fn created_then_running_before_listening_and_the_json_shape() {
    let Some(tools) = require() else { return };
    let _turn = serial();
    let ctrd = Containerd::start(&tools);
    let port = free_port();
    // Real: the stand-in image's process that never listens.
    let pod = RealPod::new(&ctrd, "kube-scheduler");
    let id = pod.create(
        "kube-scheduler",
        "registry.k8s.io/kube-scheduler:v1.31.4",
        &["/nvke-simnode", "pause"],
        json!([]),
    );
    let real_created = ps_json(&real_ps(&ctrd, "kube-scheduler"));
    pod.start(&id);
    let real_running = ps_json(&real_ps(&ctrd, "kube-scheduler"));
    // Sim: a node whose stand-ins listen only after a minute, and whose
    // new containers stay CREATED for a while.
    let mut node = Node::new("ecdsa", json!({"listenDelayMs": 60_000}));
    let etcd = node
        .running_id("etcd")
        .expect("etcd RUNNING before it listens");
    assert!(node.containers("etcd")[0]["id"].is_string());
    let sim_port = node.etcd_client_port();
    node.set_knobs(json!({"createdMs": 30_000}));
    // A changed manifest is a new pod: its container is created anew.
    let m = node.manifest("kube-scheduler");
    let s = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, format!("{s}\n# changed\n")).unwrap();
    let (sim_created, sim_created_id) = poll("a CREATED kube-scheduler container", 60, || {
        let cs = ps_json(&sim_ps(&node, "kube-scheduler"));
        let id = cs
            .iter()
            .find(|c| c["state"] == "CONTAINER_CREATED")
            .and_then(|c| c["id"].as_str().map(str::to_string))?;
        Some((cs, id))
    });
    for (who, cs, cid) in [
        ("real", &real_created, id.as_str()),
        ("sim", &sim_created, sim_created_id.as_str()),
    ] {
        assert_eq!(
            state_of(cs, cid).as_deref(),
            Some("CONTAINER_CREATED"),
            "{who}"
        );
        let parsed =
            parse_ps_kube_system(&serde_json::to_vec(&json!({"containers": cs})).unwrap()).unwrap();
        assert!(
            parsed.iter().any(|c| c.id == cid && !c.is_running()),
            "{who}: CREATED read as running"
        );
    }
    assert_eq!(
        state_of(&real_running, &id).as_deref(),
        Some("CONTAINER_RUNNING"),
        "real: RUNNING at once after start"
    );
    for (who, p) in [("real", port), ("sim", sim_port)] {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", p)).is_err(),
            "{who}: something listens on {p}"
        );
    }
    let etcd_state = state_of(&ps_json(&sim_ps(&node, "etcd")), &etcd);
    assert_eq!(
        etcd_state.as_deref(),
        Some("CONTAINER_RUNNING"),
        "sim etcd before it listens"
    );
    // The JSON shape and the image fields.
    let real_c = real_created.iter().find(|c| c["id"] == id).unwrap();
    let sim_c = sim_created
        .iter()
        .find(|c| c["id"] == sim_created_id.as_str())
        .unwrap();
    let (mut rs, mut ss) = (Default::default(), Default::default());
    shape(real_c, "", &mut rs);
    shape(sim_c, "", &mut ss);
    assert_eq!(rs, ss, "ps -o json shapes differ");
    for (who, c) in [("real", real_c), ("sim", sim_c)] {
        let image_ref = c["imageRef"].as_str().unwrap_or("");
        assert!(
            image_ref.starts_with("sha256:"),
            "{who}: imageRef {image_ref:?}"
        );
        assert_eq!(
            c["image"]["image"], c["imageRef"],
            "{who}: image.image is the image ID"
        );
        // containerd 1.6 drops userSpecifiedImage (""); newer runtimes keep
        // the manifest's name, as the sim does. The runbook reads neither.
        assert!(c["image"]["userSpecifiedImage"].is_string(), "{who}");
        for k in [
            "io.kubernetes.container.hash",
            "io.kubernetes.pod.terminationGracePeriod",
        ] {
            assert!(c["annotations"][k].is_string(), "{who}: no annotation {k}");
        }
    }
}

/// 4: a stop is SIGTERM, then SIGKILL after the grace period (exit code
/// 137 for a process that ignores SIGTERM); an exited container stays listed
/// until the kubelet's garbage collection removes it, then `ps -a` lists
/// nothing and exits 0.
#[test]
fn stop_after_the_grace_period_then_garbage_collection() {
    let Some(tools) = require() else { return };
    let _turn = serial();
    let grace = Duration::from_secs(3);
    let ctrd = Containerd::start(&tools);
    // Real: the kubelet's KillContainer is StopContainer with the grace
    // period; its garbage collection is RemoveContainer.
    let pod = RealPod::new(&ctrd, "kube-scheduler");
    let id = pod.create(
        "kube-scheduler",
        PAUSE_IMAGE,
        &["/nvke-simnode", "pause", "--ignore-sigterm"],
        json!([]),
    );
    pod.start(&id);
    let t0 = Instant::now();
    ok(
        &ctrd.crictl(&["stop", "--timeout", &grace.as_secs().to_string(), &id]),
        "crictl stop",
    );
    let real_took = t0.elapsed();
    let real_exited = ps_json(&real_ps(&ctrd, "kube-scheduler"));
    let real_inspect: Value = serde_json::from_str(&ok(
        &ctrd.crictl(&["inspect", "-o", "json", &id]),
        "inspect",
    ))
    .unwrap();
    ok(&ctrd.crictl(&["rm", &id]), "crictl rm");
    let real_gone = real_ps(&ctrd, "kube-scheduler");
    let real_table = ctrd.crictl(&[
        "ps",
        "-a",
        "--label",
        "io.kubernetes.container.name=kube-scheduler",
    ]);
    // Sim: the scheduler with a 3 s grace period that ignores SIGTERM,
    // garbage collection every 300 ms.
    let mut node = Node::new(
        "ecdsa",
        json!({"ignoreSigterm": ["kube-scheduler"], "gcPeriodMs": 300}),
    );
    let m = node.manifest("kube-scheduler");
    let s = std::fs::read_to_string(&m).unwrap();
    let s = s.replacen(
        "spec:\n",
        &format!(
            "spec:\n  terminationGracePeriodSeconds: {}\n",
            grace.as_secs()
        ),
        1,
    );
    std::fs::write(&m, &s).unwrap();
    let sim_id = poll("the new scheduler", 30, || {
        ps_json(&sim_ps(&node, "kube-scheduler"))
            .into_iter()
            .find(|c| {
                c["state"] == "CONTAINER_RUNNING"
                    && c["annotations"]["io.kubernetes.pod.terminationGracePeriod"]
                        == grace.as_secs().to_string().as_str()
            })
            .and_then(|c| c["id"].as_str().map(str::to_string))
    });
    // GC off while the exited container is looked at.
    node.set_knobs(json!({"gcPeriodMs": 3_600_000}));
    let away = node.root.join("etc/kubernetes/kube-scheduler.yaml.away");
    std::fs::rename(&m, &away).unwrap();
    let t0 = Instant::now();
    let sim_exited = poll("the scheduler to exit", 60, || {
        let cs = ps_json(&sim_ps(&node, "kube-scheduler"));
        (state_of(&cs, &sim_id).as_deref() == Some("CONTAINER_EXITED")).then_some(cs)
    });
    let sim_took = t0.elapsed();
    let sim_inspect: Value =
        serde_json::from_slice(&node.crictl(&["inspect", "-o", "json", &sim_id]).stdout).unwrap();
    for (who, cs, cid, took, insp) in [
        ("real", &real_exited, id.as_str(), real_took, &real_inspect),
        ("sim", &sim_exited, sim_id.as_str(), sim_took, &sim_inspect),
    ] {
        assert_eq!(
            state_of(cs, cid).as_deref(),
            Some("CONTAINER_EXITED"),
            "{who}: still listed, EXITED"
        );
        assert!(
            took >= grace,
            "{who}: stopped in {took:?}, before the grace period"
        );
        assert_eq!(insp["status"]["exitCode"], 137, "{who}: {}", insp["status"]);
    }
    node.set_knobs(json!({"gcPeriodMs": 300}));
    let sim_gone = poll("garbage collection", 30, || {
        let o = sim_ps(&node, "kube-scheduler");
        ps_json(&o).is_empty().then_some(o)
    });
    let sim_table = node.crictl(&[
        "ps",
        "-a",
        "--label",
        "io.kubernetes.container.name=kube-scheduler",
    ]);
    for (who, o, t) in [
        ("real", &real_gone, &real_table),
        ("sim", &sim_gone, &sim_table),
    ] {
        assert_eq!(o.status.code(), Some(0), "{who}");
        assert!(parse_ps_kube_system(&o.stdout).unwrap().is_empty(), "{who}");
        assert_eq!(t.status.code(), Some(0), "{who}");
    }
    assert_eq!(
        text(&real_table.stdout),
        text(&sim_table.stdout),
        "ps -a with nothing listed"
    );
    std::fs::rename(&away, &m).unwrap();
}

/// SPEC 10: etcd reloads its certificate files on every new TLS connection.
/// Real etcd (Debian's, on the host) and the simulated one, each on its own
/// copy of the fixture's etcd PKI: both answer the runbook's `/health`
/// question (healthcheck-client certificate, verified against etcd's CA)
/// as healthy; then `kubeadm certs renew etcd-server` (the simulated
/// kubeadm, signing with the same CA) replaces `server.crt`, and the next
/// connection to either presents the new file, without a restart.
#[test]
fn etcd_serves_a_renewed_server_certificate_at_once_real_and_simulated() {
    use nvke_cert_runbook::rules::live::{etcd_health, Health};
    use nvke_cert_runbook::tools::{ask, Question, Trust};
    let Some(_tools) = require() else { return };
    let _turn = serial();
    let real = Node::prepare("rsa", json!({}));
    let sim = Node::prepare("rsa", json!({}));
    let etcd_pki = |n: &Node| n.root.join(PKI).join("etcd");
    let (mut real_etcd, cp) = start_real_etcd(&real, "var/lib/etcd-real", true);
    let (mut sim_etcd, sp) = start_sim_etcd(&sim, true);
    let identity = etcd_client_identity;
    let leaf = |n: &Node| {
        let pem = std::fs::read(etcd_pki(n).join("server.crt")).unwrap();
        nvke_cert_runbook::rules::pki::parse_pem_certificate(&pem)
            .unwrap()
            .der
    };
    // One question, as the live observation asks it: (health, presented).
    let question = |n: &Node, port: u16| {
        let id = identity(n);
        let a = ask(&Question {
            host: std::net::Ipv4Addr::LOCALHOST.into(),
            port,
            trust: Trust::Pinned {
                id: &id,
                name: "127.0.0.1",
            },
            now: time::OffsetDateTime::now_utc(),
            path: Some("/health"),
            body: None,
            budget: Duration::from_secs(5),
        });
        let health = a
            .reply
            .ok()
            .and_then(|(status, body)| status.map(|s| etcd_health(s, &body)));
        (health, a.presented)
    };
    let renew = |n: &Node| {
        let out = Command::new(n.sim.join("bin/kubeadm"))
            .args(["certs", "renew", "etcd-server", "--rootfs"])
            .arg(&n.root)
            .env_clear()
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    for (who, node, port) in [("real", &real, cp), ("sim", &sim, sp)] {
        let before = leaf(node);
        let (health, presented) = poll(&format!("{who} etcd healthy"), 60, || {
            let (h, p) = question(node, port);
            (h == Some(Health::Healthy)).then_some((h, p))
        });
        assert_eq!(health, Some(Health::Healthy), "{who}");
        assert_eq!(
            presented.as_deref(),
            Some(&before[..]),
            "{who}: serves its file"
        );
        renew(node);
        let after = leaf(node);
        assert_ne!(before, after, "{who}: kubeadm renewed etcd-server");
        let (health, presented) = question(node, port);
        assert_eq!(health, Some(Health::Healthy), "{who}: still healthy");
        assert_eq!(
            presented.as_deref(),
            Some(&after[..]),
            "{who}: a new connection is served the renewed file, no restart"
        );
    }
    let _ = real_etcd.kill();
    let _ = real_etcd.wait();
    let _ = sim_etcd.kill();
    let _ = sim_etcd.wait();
    println!("sim vs real: real etcd and the simulated one serve a renewed server.crt at once");
}

/// SPEC 4 step 7 (v1.2), etcd asked directly: real etcd 3.4 and the
/// simulated one, each asked as the runbook asks (its own TLS client, the
/// healthcheck-client certificate): `POST /v3/cluster/member/list` answers
/// 200 with the same JSON shape (proto field names, 64-bit IDs as strings),
/// read by the runbook's parser to this member as the only voter; `/health`
/// answers the same bytes; with the gateway off (`--enable-grpc-gateway=false`,
/// the simulation's `--no-gateway`) both answer the member list 404.
#[test]
fn etcds_json_gateway_real_and_simulated() {
    use nvke_cert_runbook::rules::cri::parse_gateway_member_list;
    use nvke_cert_runbook::tools::{ask, Question, Trust};
    let Some(_tools) = require() else { return };
    let _turn = serial();
    let real = Node::prepare("rsa", json!({}));
    let sim = Node::prepare("rsa", json!({}));
    let identity = etcd_client_identity;
    // One question as the runbook asks it: (status, body).
    let question = |n: &Node, port: u16, path: &str, body: Option<&[u8]>| {
        let id = identity(n);
        ask(&Question {
            host: std::net::Ipv4Addr::LOCALHOST.into(),
            port,
            trust: Trust::Pinned {
                id: &id,
                name: "127.0.0.1",
            },
            now: time::OffsetDateTime::now_utc(),
            path: Some(path),
            body,
            budget: Duration::from_secs(5),
        })
        .reply
        .ok()
        .and_then(|(s, b)| s.map(|s| (s, b)))
    };
    let mut shapes = Vec::new();
    let mut healths = Vec::new();
    for gateway in [true, false] {
        let dir = if gateway { "etcd-gw" } else { "etcd-nogw" };
        let (mut r, rp) = start_real_etcd(&real, dir, gateway);
        let (mut s, sp) = start_sim_etcd(&sim, gateway);
        for (who, node, port) in [("real", &real, rp), ("sim", &sim, sp)] {
            let health = poll(&format!("{who} etcd answers /health"), 60, || {
                question(node, port, "/health", None).filter(|(s, _)| *s == 200)
            });
            let list = question(node, port, "/v3/cluster/member/list", Some(b"{}"));
            let (status, body) = list.unwrap_or_else(|| panic!("{who}: no answer"));
            if !gateway {
                assert_eq!(status, 404, "{who}: {}", text(&body));
                continue;
            }
            healths.push((who, health.1));
            assert_eq!(status, 200, "{who}: {}", text(&body));
            let v: Value = serde_json::from_slice(&body).unwrap();
            assert!(v["header"]["member_id"].is_string(), "{who}: {v}");
            assert!(v["members"][0]["ID"].is_string(), "{who}: {v}");
            let m = parse_gateway_member_list(&body).unwrap();
            assert_eq!(m.members.len(), 1, "{who}: {v}");
            assert_eq!(m.members[0].id, m.header.member_id, "{who}: this member");
            assert!(!m.members[0].is_learner, "{who}");
            let mut sh = std::collections::BTreeSet::new();
            shape(&v, "", &mut sh);
            shapes.push((who, sh));
        }
        let _ = r.kill();
        let _ = r.wait();
        let _ = s.kill();
        let _ = s.wait();
    }
    assert_eq!(shapes[0].1, shapes[1].1, "the member list's JSON shape");
    assert_eq!(
        healths[0].1,
        healths[1].1,
        "/health's bytes: {}",
        text(&healths[0].1)
    );
    println!(
        "sim vs real: etcd's JSON gateway member list has the same shape ({} fields), /health the same bytes, 404 with the gateway off",
        shapes[0].1.len()
    );
}

/// A child process killed (and reaped) when dropped, a failed assertion
/// included: no etcd outlives its test.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The TCP sockets process `pid` listens on: its own file descriptors
/// matched with its network namespace's socket tables (`/proc/PID/net/tcp`
/// and `tcp6`), so whatever else listens on the machine does not count.
fn listening(pid: u32) -> std::collections::BTreeSet<std::net::SocketAddr> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    let mut inodes = std::collections::BTreeSet::new();
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            let link = std::fs::read_link(fd.path()).unwrap_or_default();
            let link = link.to_string_lossy();
            if let Some(n) = link
                .strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
            {
                inodes.insert(n.to_string());
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    for table in ["tcp", "tcp6"] {
        let t = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in t.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st ... inode (10th); 0A: LISTEN.
            if f.len() < 10 || f[3] != "0A" || !inodes.contains(f[9]) {
                continue;
            }
            let (ip, port) = f[1].split_once(':').unwrap();
            let port = u16::from_str_radix(port, 16).unwrap();
            // Each 32-bit word as the kernel holds it (host byte order).
            let words: Vec<[u8; 4]> = (0..ip.len() / 8)
                .map(|i| {
                    u32::from_str_radix(&ip[i * 8..i * 8 + 8], 16)
                        .unwrap()
                        .to_ne_bytes()
                })
                .collect();
            let ip: IpAddr = match words.as_slice() {
                [a] => Ipv4Addr::from(*a).into(),
                _ => Ipv6Addr::from(<[u8; 16]>::try_from(words.concat()).unwrap()).into(),
            };
            out.insert(SocketAddr::new(ip, port));
        }
    }
    out
}

/// Runs `f` on a thread of its own in the network namespace of process
/// `pid` (a thread's namespace is its own; the threads it starts share
/// it), or in this one when `pid` is None; a panic in `f` is this one's.
fn in_netns_of<T: Send>(pid: Option<u32>, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(pid) = pid {
                let ns = std::fs::File::open(format!("/proc/{pid}/ns/net")).unwrap();
                nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            }
            f()
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// SPEC 12 (v1.3), etcd as kubeadm runs it on an IPv6 single-stack node:
/// `--listen-client-urls=https://[::1]:P,https://[<node v6>]:P`,
/// `--advertise-client-urls=https://[<node v6>]:P`, its peer URL on the
/// node's address. Real etcd 3.4 and the simulated one, each given exactly
/// those flags on free ports of its own (as root: in a network namespace
/// of this test's own with `fd00:10::11` on its loopback; else `[::1]`
/// only, on the host, the node's address part skipped), are compared on
/// what the runbook depends on:
///
/// - where each listens: every client URL, and its peer URL, nothing
///   else; no IPv4 socket at all (nothing on 127.0.0.1 when not asked);
/// - `/health` over mutual TLS at `https://[::1]:P` (the runbook's
///   question, healthcheck-client certificate, verified for `::1`): the
///   same bytes from both; at the node's address too;
/// - the JSON gateway's member list asked there: this member alone,
///   its clientURLs and peerURLs the advertised ones, bracketed;
/// - the certificate served on `[::1]` (and the node's address): the
///   node's `server.crt`.
#[test]
fn etcd_on_ipv6_real_and_simulated() {
    use nvke_cert_runbook::rules::cri::parse_gateway_member_list;
    use nvke_cert_runbook::rules::live::{etcd_health, Health};
    use nvke_cert_runbook::tools::{ask, Question, Trust};
    use std::net::{IpAddr, Ipv6Addr, SocketAddr};
    // Real etcd only (no container runtime): it runs without root too.
    if !Path::new("/usr/bin/etcd").is_file() {
        let why = "no /usr/bin/etcd (apt-get install etcd-server)";
        if std::env::var("NVKE_CONTAINERS_REQUIRED").as_deref() == Ok("1") {
            panic!("required (NVKE_CONTAINERS_REQUIRED=1): {why}");
        }
        println!("SKIPPED: {why}");
        return;
    }
    let _turn = serial();
    let node_v6: Ipv6Addr = "fd00:10::11".parse().unwrap();
    let ns = support::netns::Named::with_addresses(&["fd00:10::11/128"]);
    if ns.is_none() {
        println!("sim vs real: not root: etcd on [::1] only, the node's IPv6 address skipped");
    }
    let real = Node::prepare("rsa", json!({}));
    let sim = Node::prepare("rsa", json!({}));
    let loopback = IpAddr::V6(Ipv6Addr::LOCALHOST);
    // The node's address where there is one (the namespace), else [::1].
    let node_ip = if ns.is_some() {
        IpAddr::V6(node_v6)
    } else {
        loopback
    };
    // Its flags, as kubeadm writes them, for a client and a peer port.
    struct Urls {
        client: u16,
        peer: u16,
        listen_client: Vec<SocketAddr>,
        advertise_client: String,
        peer_url: String,
    }
    let urls = || {
        let (client, peer) = (free_port(), free_port());
        let mut listen_client = vec![SocketAddr::new(loopback, client)];
        if node_ip != loopback {
            listen_client.push(SocketAddr::new(node_ip, client));
        }
        Urls {
            client,
            peer,
            listen_client,
            advertise_client: format!("https://{}", SocketAddr::new(node_ip, client)),
            peer_url: format!("https://{}", SocketAddr::new(node_ip, peer)),
        }
    };
    let list = |u: &Urls| {
        let l: Vec<String> = u
            .listen_client
            .iter()
            .map(|a| format!("https://{a}"))
            .collect();
        l.join(",")
    };
    // In the namespace, its output in `log` (shown if it stops).
    let in_ns = |cmd: &mut Command, log: &Path| {
        if let Some(ns) = &ns {
            ns.join(cmd);
        }
        let log = std::fs::File::create(log).unwrap();
        cmd.stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
    };
    let etcd_file = |n: &Node, name: &str| {
        n.root
            .join(PKI)
            .join("etcd")
            .join(name)
            .display()
            .to_string()
    };
    let (ru, su) = (urls(), urls());
    // Real etcd 3.4 with kubeadm's flags (TLS on both ports).
    let f = |name: &str| etcd_file(&real, name);
    let mut cmd = Command::new("/usr/bin/etcd");
    cmd.env_clear()
        .arg("--name=cp-1")
        .arg(format!(
            "--data-dir={}",
            real.root.join("var/lib/etcd-v6").display()
        ))
        .arg(format!("--listen-client-urls={}", list(&ru)))
        .arg(format!("--advertise-client-urls={}", ru.advertise_client))
        .arg(format!("--listen-peer-urls={}", ru.peer_url))
        .arg(format!("--initial-advertise-peer-urls={}", ru.peer_url))
        .arg(format!("--initial-cluster=cp-1={}", ru.peer_url))
        .arg(format!("--cert-file={}", f("server.crt")))
        .arg(format!("--key-file={}", f("server.key")))
        .arg("--client-cert-auth=true")
        .arg(format!("--trusted-ca-file={}", f("ca.crt")))
        .arg(format!("--peer-cert-file={}", f("peer.crt")))
        .arg(format!("--peer-key-file={}", f("peer.key")))
        .arg("--peer-client-cert-auth=true")
        .arg(format!("--peer-trusted-ca-file={}", f("ca.crt")));
    let real_log = real.root.join("etcd-v6.log");
    in_ns(&mut cmd, &real_log);
    let real_etcd = Reaped(cmd.spawn().expect("/usr/bin/etcd"));
    // The stand-in, given the same URLs (its peer port on --peer-address).
    let mut cmd = Command::new(SIMNODE);
    cmd.args(["etcd", "--root"])
        .arg(&sim.root)
        .arg(format!("--listen-client-urls={}", list(&su)))
        .arg(format!("--advertise-client-urls={}", su.advertise_client))
        .arg(format!("--initial-advertise-peer-urls={}", su.peer_url))
        .arg(format!(
            "--peer-address={}",
            SocketAddr::new(node_ip, su.peer)
        ));
    let sim_log = sim.root.join("etcd-v6.log");
    in_ns(&mut cmd, &sim_log);
    let sim_etcd = Reaped(cmd.spawn().unwrap());
    let ns_pid = ns.as_ref().map(|_| real_etcd.0.id());
    let mut healths = Vec::new();
    let mut members = Vec::new();
    for (who, node, u, child, log) in [
        ("real", &real, &ru, &real_etcd, &real_log),
        ("sim", &sim, &su, &sim_etcd, &sim_log),
    ] {
        let pid = child.0.id();
        // Exited (a zombie until reaped): say so now, with its output.
        let gone = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat
                .rsplit_once(')')
                .is_none_or(|(_, r)| r.trim_start().starts_with('Z'))
            {
                let out = std::fs::read_to_string(log).unwrap_or_default();
                panic!("{who} etcd exited: {}", support::tail(&out, 2000));
            }
        };
        // Where it listens: its client and peer URLs, all bound before
        // it serves (etcd binds every listener at start).
        let mut want: std::collections::BTreeSet<SocketAddr> =
            u.listen_client.iter().copied().collect();
        want.insert(SocketAddr::new(node_ip, u.peer));
        let ports = [u.client, u.peer];
        let on_ports = || -> std::collections::BTreeSet<SocketAddr> {
            listening(pid)
                .into_iter()
                .filter(|a| ports.contains(&a.port()))
                .collect()
        };
        // Until all its URLs listen, or something listens on its ports
        // where none was asked (no point waiting then).
        let seen = poll(&format!("{who} etcd listening on {want:?}"), 60, || {
            gone();
            let seen = on_ports();
            (seen.is_superset(&want) || !seen.is_subset(&want)).then_some(seen)
        });
        assert_eq!(seen, want, "{who}: where it listens on its ports");
        let v4: Vec<SocketAddr> = listening(pid).into_iter().filter(|a| a.is_ipv4()).collect();
        assert!(v4.is_empty(), "{who}: listens on IPv4 {v4:?}, not asked to");
        // The runbook's questions, asked where the etcds are.
        let id = etcd_client_identity(node);
        let server_crt = std::fs::read(etcd_file(node, "server.crt")).unwrap();
        let server_crt = nvke_cert_runbook::rules::pki::parse_pem_certificate(&server_crt)
            .unwrap()
            .der;
        let question = |host: IpAddr, path: &str, body: Option<&[u8]>| {
            ask(&Question {
                host,
                port: u.client,
                // Verified for ::1 (the fixture's server.crt names no
                // fd00:10::11; the runbook asks on loopback).
                trust: Trust::Pinned {
                    id: &id,
                    name: "::1",
                },
                now: time::OffsetDateTime::now_utc(),
                path: Some(path),
                body,
                budget: Duration::from_secs(5),
            })
        };
        let (health, answer) = in_netns_of(ns_pid, || {
            let health = poll(&format!("{who} etcd answers /health on [::1]"), 60, || {
                let a = question(loopback, "/health", None);
                match &a.reply {
                    Ok((Some(200), body)) => Some((body.clone(), a.presented.clone())),
                    _ => None,
                }
            });
            assert_eq!(
                etcd_health(200, &health.0),
                Health::Healthy,
                "{who}: {}",
                text(&health.0)
            );
            assert_eq!(
                health.1.as_deref(),
                Some(&server_crt[..]),
                "{who}: [::1] serves its server.crt"
            );
            if node_ip != loopback {
                // The 127.0.0.1 the stand-in defaults to: refused (asked
                // in the namespace only, where nothing else listens).
                assert!(
                    std::net::TcpStream::connect(("127.0.0.1", u.client)).is_err(),
                    "{who}: something answers on 127.0.0.1:{}",
                    u.client
                );
                let a = question(node_ip, "/health", None);
                let (status, body) = a.reply.clone().expect("an answer at the node's address");
                assert_eq!(status, Some(200), "{who}: {}", text(&body));
                assert_eq!(body, health.0, "{who}: /health at the node's address");
                assert_eq!(
                    a.presented.as_deref(),
                    Some(&server_crt[..]),
                    "{who}: the node's address serves its server.crt"
                );
            }
            let a = question(loopback, "/v3/cluster/member/list", Some(b"{}"));
            (health, a.reply.expect("the member list"))
        });
        let (status, body) = answer;
        assert_eq!(status, Some(200), "{who}: {}", text(&body));
        let v: Value = serde_json::from_slice(&body).unwrap();
        let m = parse_gateway_member_list(&body).unwrap();
        assert_eq!(m.members.len(), 1, "{who}: {v}");
        assert_eq!(m.members[0].id, m.header.member_id, "{who}: this member");
        assert!(!m.members[0].is_learner, "{who}");
        assert_eq!(
            m.members[0].client_urls,
            std::slice::from_ref(&u.advertise_client),
            "{who}: {v}"
        );
        assert_eq!(
            v["members"][0]["peerURLs"],
            json!([u.peer_url]),
            "{who}: {v}"
        );
        // Side by side with the ports as placeholders.
        let same = text(&body)
            .replace(&format!(":{}\"", u.client), ":CLIENT\"")
            .replace(&format!(":{}\"", u.peer), ":PEER\"");
        let same: Value = serde_json::from_str(&same).unwrap();
        let mut me = same["members"][0].clone();
        me.as_object_mut().unwrap().remove("ID");
        healths.push(health.0);
        members.push(me);
    }
    assert_eq!(
        healths[0],
        healths[1],
        "/health's bytes: {}",
        text(&healths[0])
    );
    assert_eq!(members[0], members[1], "this member in the member list");
    drop((real_etcd, sim_etcd));
    println!(
        "sim vs real: etcd on IPv6 listens on {} and its peer URL only (no IPv4), /health over mTLS and server.crt on [::1], member list {}",
        list(&ru).replace(&ru.client.to_string(), "P"),
        members[0]
    );
}
