//! Real etcd members beside the containers tier's node (tests/containers.rs
//! only, by `#[path]`: it needs tests/e2e/pki.rs, which the shared support
//! library does not have).
//!
//! The node's own member is the etcd of its etcd container (the kubelet
//! runs it from the manifest); the others are what the other control-plane
//! nodes' members look like from this node: remote endpoints, not
//! containers of this node's runtime. So they are plain `/usr/bin/etcd`
//! processes on the host, on free loopback ports (the node's etcd is on the
//! host network, so it reaches them and they reach it), each with its own
//! data dir and its own leaves (etcd server and peer, serverAuth +
//! clientAuth, `IP:127.0.0.1`) signed by the node's etcd CA
//! (`pki::node_tree` from the same fixture CAs; [`Members::new`] checks
//! the CA is the node's, byte for byte). Peer and client TLS with client
//! certificate authentication on both, as kubeadm's manifest has it.
//!
//! [`Members`] kills every process it started on drop (also while
//! unwinding from a failed assertion), and each dies with the test thread
//! that started it (parent-death signal), then its temp dir goes.

use crate::pki::{self, Keys, NodeId};
use crate::support::containers::{die_with_parent, run_bounded};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub const ETCD: &str = "/usr/bin/etcd";
pub const ETCDCTL: &str = "/usr/bin/etcdctl";

/// The node's etcd: its name and loopback ports (the tier's manifest).
#[derive(Debug, Clone)]
pub struct NodeEtcd {
    pub client: u16,
    pub peer: u16,
}

impl NodeEtcd {
    pub fn client_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.client)
    }
    pub fn peer_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.peer)
    }
    /// `cp-1=<peer URL>`, the node's entry in `--initial-cluster`.
    pub fn initial(&self) -> String {
        format!("cp-1={}", self.peer_url())
    }
}

/// One etcd member on the host.
pub struct Member {
    pub name: String,
    pub client: u16,
    pub peer: u16,
    pki: PathBuf,
    data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Member {
    pub fn client_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.client)
    }
    pub fn peer_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.peer)
    }
    /// `<name>=<peer URL>`, its entry in `--initial-cluster`.
    pub fn initial(&self) -> String {
        format!("{}={}", self.name, self.peer_url())
    }

    /// Starts it: `initial_cluster` names every member it is to know of,
    /// `state` is `new` (bootstrap) or `existing` (added by `member add`).
    pub fn start(&mut self, initial_cluster: &str, state: &str) {
        assert!(self.child.is_none(), "{} already runs", self.name);
        let p = |f: &str| self.pki.join(f).display().to_string();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut cmd = Command::new(ETCD);
        cmd.env_clear()
            .arg(format!("--name={}", self.name))
            .arg(format!("--data-dir={}", self.data.display()))
            .arg(format!("--listen-client-urls={}", self.client_url()))
            .arg(format!("--advertise-client-urls={}", self.client_url()))
            .arg(format!("--listen-peer-urls={}", self.peer_url()))
            .arg(format!("--initial-advertise-peer-urls={}", self.peer_url()))
            .arg(format!("--initial-cluster={initial_cluster}"))
            .arg(format!("--initial-cluster-state={state}"))
            .arg(format!("--cert-file={}", p("server.crt")))
            .arg(format!("--key-file={}", p("server.key")))
            .arg("--client-cert-auth=true")
            .arg(format!("--trusted-ca-file={}", p("ca.crt")))
            .arg(format!("--peer-cert-file={}", p("peer.crt")))
            .arg(format!("--peer-key-file={}", p("peer.key")))
            .arg("--peer-client-cert-auth=true")
            .arg(format!("--peer-trusted-ca-file={}", p("ca.crt")))
            // etcd 3.5 (the manifest's image) pre-votes by default, 3.4 does
            // not (see tests/e2e/pki.rs).
            .arg("--pre-vote=true")
            .arg("--snapshot-count=10000")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        die_with_parent(&mut cmd);
        self.child = Some(cmd.spawn().expect("etcd"));
    }

    /// SIGKILL (a member that is down), and reaped.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its `pki/etcd` (CA, server and peer leaves).
    pub fn pki(&self) -> &Path {
        &self.pki
    }

    pub fn log_tail(&self) -> String {
        let s = std::fs::read_to_string(&self.log).unwrap_or_default();
        crate::support::tail(&s, 3000).to_string()
    }
}

/// The host members of one test, and the node's etcd client identity for
/// the test's own etcdctl calls.
pub struct Members {
    pub list: Vec<Member>,
    /// The node's `pki/etcd` (its CA and healthcheck client).
    node_pki: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Members {
    /// `n` members `cp-2`, `cp-3`, ... (not started), with leaves signed by
    /// the etcd CA of the node at `node_root`.
    pub fn new(node_root: &Path, n: usize) -> Members {
        let tmp = tempfile::Builder::new()
            .prefix("nvke-etcd-members-")
            .tempdir_in("/tmp")
            .unwrap();
        let node_pki = node_root.join("etc/kubernetes/pki/etcd");
        let mut list = Vec::new();
        for i in 2..n + 2 {
            let id = NodeId::new(i, pki::Family::V4);
            let dir = tmp.path().join(&id.name);
            let (etc, work, data) = (dir.join("etc"), dir.join("work"), dir.join("data"));
            for d in [&work, &data] {
                std::fs::create_dir_all(d).unwrap();
            }
            pki::node_tree(
                Keys::Ecdsa,
                &etc,
                &id,
                std::slice::from_ref(&id),
                pki::LEAF_DAYS,
                &work,
            )
            .unwrap();
            let pki = etc.join("pki/etcd");
            assert_eq!(
                std::fs::read(pki.join("ca.crt")).unwrap(),
                std::fs::read(node_pki.join("ca.crt")).unwrap(),
                "{}'s etcd CA is the node's",
                id.name
            );
            list.push(Member {
                name: id.name.clone(),
                client: crate::support::node::free_port(),
                peer: crate::support::node::free_port(),
                pki,
                data,
                log: dir.join("etcd.log"),
                child: None,
            });
        }
        Members {
            list,
            node_pki,
            _tmp: tmp,
        }
    }

    /// The host's etcdctl against `endpoints` (comma-separated URLs), as the
    /// node's healthcheck client; bounded.
    pub fn etcdctl(&self, endpoints: &str, args: &[&str]) -> Output {
        let p = |f: &str| self.node_pki.join(f).display().to_string();
        let mut cmd = Command::new(ETCDCTL);
        cmd.env_clear()
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={endpoints}"))
            .arg(format!("--cacert={}", p("ca.crt")))
            .arg(format!("--cert={}", p("healthcheck-client.crt")))
            .arg(format!("--key={}", p("healthcheck-client.key")))
            .args(["--dial-timeout=5s", "--command-timeout=10s"])
            .args(args);
        run_bounded(cmd, Duration::from_secs(30)).unwrap()
    }

    /// `member list -w json` asked of `endpoint`, if it answers.
    pub fn member_list(&self, endpoint: &str) -> Option<Value> {
        let out = self.etcdctl(endpoint, &["member", "list", "-w", "json"]);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    /// `endpoint health --cluster -w json` asked of `endpoint`: each
    /// member's client URL and whether it is healthy (empty if no answer).
    pub fn cluster_health(&self, endpoint: &str) -> Vec<(String, bool)> {
        let out = self.etcdctl(endpoint, &["endpoint", "health", "--cluster", "-w", "json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        v.as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    e["endpoint"].as_str().unwrap_or_default().to_string(),
                    e["health"] == true,
                )
            })
            .collect()
    }

    /// Polls with back-off until `f` holds; panics after `secs` with the
    /// members' logs.
    pub fn wait(&self, what: &str, secs: u64, f: impl Fn(&Members) -> bool) {
        if crate::support::poll(secs, || f(self).then_some(())).is_some() {
            return;
        }
        let logs: Vec<String> = self
            .list
            .iter()
            .map(|m| format!("{}:\n{}", m.name, m.log_tail()))
            .collect();
        panic!("{what}: not within {secs} s\n{}", logs.join("\n"));
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        for m in &mut self.list {
            m.kill();
        }
    }
}
