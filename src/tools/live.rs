//! The live observation (SPEC 10, v1.2): one `crictl ps -a` and one
//! `crictl pods` listing, `crictl inspect` of a component's exited
//! container, and the health endpoints and serving ports, all side by
//! side, bounded by one budget (`--probe-timeout`) as a whole. Read-only.
//! What it saw is judged in [`crate::rules::live`].

use crate::node::fsx::{Root, Trust as FileTrust, NODE_FILE_MAX};
use crate::node::manifests;
use crate::node::paths::MANIFESTS_DIR;
use crate::rules::component::Component;
use crate::rules::cri::Listing;
use crate::rules::live::{self, Exit, Health, Observed, Port, Seen, Served, Unseen, Written};
use crate::tools::etcd;
use crate::tools::runtime::Runtime;
use crate::tools::targets::{self, read, Serving, TargetError};
use crate::tools::tlsprobe::{Question, Trust};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// The files each component reads at start (node paths under the root):
/// its serving and client certificates, its kubeconfig.
pub fn files_of(c: Component) -> &'static [&'static str] {
    match c {
        Component::Etcd => &[
            "etc/kubernetes/pki/etcd/server.crt",
            "etc/kubernetes/pki/etcd/peer.crt",
        ],
        Component::KubeApiserver => &[
            "etc/kubernetes/pki/apiserver.crt",
            "etc/kubernetes/pki/apiserver-kubelet-client.crt",
            "etc/kubernetes/pki/apiserver-etcd-client.crt",
            "etc/kubernetes/pki/front-proxy-client.crt",
        ],
        Component::KubeControllerManager => &["etc/kubernetes/controller-manager.conf"],
        Component::KubeScheduler => &["etc/kubernetes/scheduler.conf"],
    }
}

/// One observation of the node.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The real clock when it was made (the runtime's times are real).
    pub wall: OffsetDateTime,
    pub budget: Duration,
    pub took: Duration,
    pub pods: Vec<Observed>,
    /// crictl as this run called it, for the steps that show why a
    /// component is down ([`crate::tools::runtime::Runtime::crictl_words`]).
    pub crictl: Option<Vec<String>>,
}

impl Observation {
    pub fn judged(&self) -> live::Judged {
        live::Judged::new(self.pods.clone(), self.wall)
    }
}

fn leaf_der(root: &Root, rel: &str) -> Result<Vec<u8>, TargetError> {
    let pem = read(root, rel)?;
    crate::rules::pki::parse_pem_certificate(&pem)
        .map(|c| c.der)
        .map_err(|pki| TargetError::Certificate {
            path: crate::node::paths::node(rel),
            pki,
        })
}

/// The newest write of `files` (node-relative), by modification time.
pub fn newest(root: &Root, files: &[&str]) -> Option<Seen<Written>> {
    let mut best: Option<Written> = None;
    for f in files {
        match root.modified(f) {
            Ok(Some(at)) => {
                if best.as_ref().is_none_or(|b| at > b.at) {
                    best = Some(Written {
                        file: crate::node::paths::node(f),
                        at,
                    });
                }
            }
            Ok(None) => return Some(Err(Unseen::Missing(crate::node::paths::node(f)))),
            Err(e) => return Some(Err(Unseen::File(e.to_string()))),
        }
    }
    best.map(Ok)
}

/// What one TLS question gave: the health, and the served certificate
/// against its file.
struct Asked {
    health: Seen<Health>,
    served: Option<Seen<Served>>,
    /// The probe's start allowance, when the manifest says it.
    allowance: Option<time::Duration>,
}

/// A probe's failure in words, without the OS error number.
fn words(e: &crate::tools::tlsprobe::ProbeError) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

struct Ask<'a> {
    rt: &'a dyn Runtime,
    root: &'a Root,
    now: OffsetDateTime,
    deadline: Instant,
}

impl Ask<'_> {
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Ask `addr` (verified for `name` with `identity`, or not at all),
    /// GET `path` (or the handshake only), judge the answer with `judge`,
    /// and compare what it presents with `file`.
    fn endpoint(
        &self,
        addr: Result<SocketAddr, TargetError>,
        identity: Option<Result<crate::tools::tlsprobe::TlsIdentity, TargetError>>,
        name: &str,
        path: Option<&str>,
        file: Option<Result<String, TargetError>>,
        judge: fn(u16, &[u8]) -> Health,
    ) -> Asked {
        let fail = |e: TargetError| Asked {
            health: Err(Unseen::Target(e.to_string())),
            served: file.as_ref().map(|_| Err(Unseen::Target(e.to_string()))),
            allowance: None,
        };
        let addr = match addr {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        let id = match identity.transpose() {
            Ok(i) => i,
            Err(e) => return fail(e),
        };
        let trust = match &id {
            Some(id) => Trust::Pinned { id, name },
            None => Trust::Unverified,
        };
        let a = self.rt.ask(&Question {
            host: addr.ip(),
            port: addr.port(),
            trust,
            now: self.now,
            path,
            body: None,
            budget: self.left(),
        });
        let health = match (&a.reply, path) {
            (Ok((Some(status), body)), Some(_)) => Ok(judge(*status, body)),
            (Ok(_), _) => Ok(Health::Healthy),
            (Err(e @ crate::tools::tlsprobe::ProbeError::Refused(_)), _) => Err(Unseen::Refused(
                format!("{}{}", path.unwrap_or(""), sep(&words(e))),
            )),
            (Err(e), _) => Err(Unseen::Probe(format!(
                "{}{}",
                path.unwrap_or(""),
                sep(&words(e))
            ))),
        };
        let served = file.map(|f| {
            let f = f.map_err(|e| Unseen::Target(e.to_string()))?;
            let f = f.as_str();
            let presented = a.presented.as_deref().ok_or_else(|| {
                Unseen::Probe(match &a.reply {
                    Err(e) => words(e),
                    Ok(_) => format!("{addr} presented no certificate"),
                })
            })?;
            let disk = leaf_der(self.root, f).map_err(|e| Unseen::Target(e.to_string()))?;
            let not_after = crate::rules::pki::parse_der_not_after(presented);
            match live::served(presented, &disk, not_after, self.now) {
                // The file's certificate, by a server that did not prove it
                // holds the key (the handshake failed first): not proof.
                Served::Current if !a.proven => Err(Unseen::Probe(format!(
                    "{addr} presented the file's certificate but the handshake failed: {}",
                    a.reply.as_ref().err().map(words).unwrap_or_default()
                ))),
                other => Ok(other),
            }
        });
        Asked {
            health,
            served,
            allowance: None,
        }
    }
}

impl Ask<'_> {
    /// A component's health endpoint (SPEC 10; its probe as the kubelet
    /// asks it, SPEC 12), and for kube-apiserver and etcd what their
    /// serving port presents.
    fn component(&self, c: Component) -> Asked {
        let root = self.root;
        let declared = targets::declared(root, c);
        let allowance = declared
            .as_ref()
            .ok()
            .and_then(|d| d.start_allowance)
            .and_then(|a| time::Duration::try_from(a).ok());
        let probe = move || declared.and_then(|d| targets::health_probe(&d));
        let mut asked = match c {
            Component::KubeApiserver => {
                let p = probe();
                let path = p.as_ref().map(|p| p.path.clone()).unwrap_or_default();
                self.endpoint(
                    p.map(|p| p.target),
                    Some(targets::apiserver_identity(root)),
                    "kubernetes",
                    Some(&path),
                    Some(targets::serving_file(root, Serving::Apiserver)),
                    live::http_health,
                )
            }
            Component::Etcd => {
                // etcd's own client URL (loopback first), where its
                // `/health` answers for the member with the healthcheck
                // client and the served certificate is seen too: the
                // metrics URL kubeadm's probe asks answers the same
                // `/health` in clear (docs/decisions.md).
                let addr = targets::etcd_client(root);
                // Verified for the address asked (kubeadm's server.crt
                // names both loopbacks and the node's addresses).
                let name = targets::ip_name(&addr);
                self.endpoint(
                    addr,
                    Some(targets::etcd_identity(root)),
                    &name,
                    Some("/health"),
                    Some(targets::serving_file(root, Serving::EtcdClient)),
                    live::etcd_health,
                )
            }
            Component::KubeControllerManager | Component::KubeScheduler => {
                let p = probe();
                let path = p.as_ref().map(|p| p.path.clone()).unwrap_or_default();
                self.endpoint(
                    p.map(|p| p.target),
                    None,
                    "",
                    Some(&path),
                    None,
                    live::http_health,
                )
            }
        };
        asked.allowance = allowance;
        asked
    }

    /// What etcd's peer port presents (a handshake, on this host only).
    fn etcd_peer(&self) -> Asked {
        let addr = targets::etcd_peer(self.root);
        let name = targets::ip_name(&addr);
        self.endpoint(
            addr,
            Some(targets::etcd_identity(self.root)),
            &name,
            None,
            Some(targets::serving_file(self.root, Serving::EtcdPeer)),
            live::http_health,
        )
    }
}

/// The renewal's health gate asks each component as the view does: its
/// health endpoint's answer, judged by the same rule, and its probe's start
/// allowance.
pub fn gate_health(
    rt: &dyn Runtime,
    root: &Root,
    now: OffsetDateTime,
    c: Component,
    deadline: Instant,
) -> (Seen<Health>, Option<time::Duration>) {
    let a = Ask {
        rt,
        root,
        now,
        deadline,
    }
    .component(c);
    (a.health, a.allowance)
}

/// kube-apiserver's `/readyz` at `addr`, verified with `id` (pinned CA)
/// and judged as the gate judges it. The restart watch reads the address
/// and the identity once, before the manifest is staged, and asks with
/// them while it is (`tools::apiwatch`).
pub fn apiserver_readyz(
    rt: &dyn Runtime,
    addr: SocketAddr,
    id: &crate::tools::tlsprobe::TlsIdentity,
    now: OffsetDateTime,
    deadline: Instant,
) -> Seen<Health> {
    let a = rt.ask(&Question {
        host: addr.ip(),
        port: addr.port(),
        trust: Trust::Pinned {
            id,
            name: "kubernetes",
        },
        now,
        path: Some("/readyz"),
        body: None,
        budget: deadline.saturating_duration_since(Instant::now()),
    });
    match &a.reply {
        Ok((Some(status), body)) => Ok(live::http_health(*status, body)),
        Ok((None, _)) => Err(Unseen::Probe("/readyz: no HTTP answer".to_string())),
        Err(e) => Err(Unseen::Probe(format!("/readyz{}", sep(&words(e))))),
    }
}

fn sep(s: &str) -> String {
    format!(": {s}")
}

/// The listing, each exited pod's end (`crictl inspect`), and etcd's
/// quorum as the gate asks it (`direct`, asked side by side; the gateway
/// off, etcdctl in its running container), when etcd's container runs.
fn containers(
    rt: &dyn Runtime,
    root: &Root,
    names: &[String],
    direct: impl FnOnce() -> etcd::Direct,
    deadline: Instant,
) -> (Seen<Listing>, Vec<Option<Exit>>, Option<live::QuorumSeen>) {
    let left = || deadline.saturating_duration_since(Instant::now());
    let listing = (|| {
        let runtime = |e: crate::tools::runtime::RtError| Unseen::Runtime(e.to_string());
        let containers = rt.ps(left()).map_err(runtime)?;
        let sandboxes = rt.pods(left()).map_err(runtime)?;
        Ok(Listing {
            containers,
            sandboxes,
        })
    })();
    let exits = names
        .iter()
        .map(|n| {
            let l = listing.as_ref().ok()?;
            let mine = l.component(n).ok()?;
            // Not running: how the newest ended; running after a crash in
            // its sandbox: how the one before ended (SPEC 6, v1.3).
            let ended = live::last_ended(&mine)?;
            // A running one up past STAY_UP is no crash loop: its earlier
            // exit is not asked (it would only spend the budget).
            let settled = crate::rules::cri::running(&mine)
                .and_then(|r| r.created())
                .is_some_and(|t| OffsetDateTime::now_utc() - t >= live::STAY_UP);
            if settled || left().is_zero() {
                return None;
            }
            rt.inspect_exit(&ended.id, left()).ok()
        })
        .collect();
    let etcd = listing
        .as_ref()
        .ok()
        .and_then(|l| l.component(Component::Etcd.name()).ok())
        .and_then(|mine| crate::rules::cri::running(&mine).map(|r| r.id.clone()));
    let direct = direct();
    let quorum = etcd.map(|id| etcd::settle(direct, rt, root, Some(&id), deadline).seen());
    (listing, exits, quorum)
}

/// Look at the live node once, within `budget`.
pub fn observe(
    rt: &dyn Runtime,
    root: &Root,
    now: OffsetDateTime,
    budget: Duration,
) -> Observation {
    let t0 = Instant::now();
    let wall = OffsetDateTime::now_utc();
    let deadline = t0 + budget;
    let ask = Ask {
        rt,
        root,
        now,
        deadline,
    };
    // Other static pods that mount a file kubeadm renews (kube-vip).
    let others: Vec<(String, Vec<String>)> = other_pods(root);
    let mut names: Vec<String> = Component::ALL
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    names.extend(others.iter().map(|(n, _)| n.clone()));

    let ((listing, exits, quorum), answers, peer) = std::thread::scope(|s| {
        let ask = &ask;
        let asked: Vec<_> = Component::ALL
            .iter()
            .map(|c| s.spawn(move || ask.component(*c)))
            .collect();
        let peer = s.spawn(move || ask.etcd_peer());
        let direct = s.spawn(move || etcd::direct(rt, root, now, deadline));
        let direct = move || {
            direct.join().unwrap_or_else(|_| {
                etcd::Direct::Asked(etcd::Quorum::Unasked("the etcd probe panicked".into()))
            })
        };
        let listed = containers(rt, root, &names, direct, deadline);
        let join = |h: std::thread::ScopedJoinHandle<'_, Asked>| {
            h.join().unwrap_or(Asked {
                health: Err(Unseen::Panicked),
                served: Some(Err(Unseen::Panicked)),
                allowance: None,
            })
        };
        let answers: Vec<Asked> = asked.into_iter().map(join).collect();
        (listed, answers, join(peer))
    });

    let mut pods = Vec::new();
    let port = |p: Result<u16, TargetError>, s: Serving, served: Option<Seen<Served>>| Port {
        port: p.unwrap_or(0),
        // The flag's file; one the flag names wrongly is said by `served`.
        file: crate::node::paths::node(
            &targets::serving_file(root, s).unwrap_or_else(|_| s.kubeadm_file().to_string()),
        ),
        served: served.unwrap_or(Err(Unseen::NotAsked)),
    };
    let mut peer = Some(peer);
    let mut quorum = Some(quorum);
    let mut exits = exits.into_iter();
    for (c, a) in Component::ALL.iter().zip(answers) {
        let mut ports = Vec::new();
        let mut q = None;
        match c {
            Component::Etcd => {
                ports.push(port(
                    targets::etcd_client(root).map(|a| a.port()),
                    Serving::EtcdClient,
                    a.served,
                ));
                let p = peer.take().map(|p| p.served).unwrap_or(None);
                let peer_port = targets::etcd_peer_port(root);
                ports.push(port(peer_port, Serving::EtcdPeer, p));
                q = quorum.take().flatten();
            }
            Component::KubeApiserver => ports.push(port(
                targets::apiserver_port(root),
                Serving::Apiserver,
                a.served,
            )),
            _ => {}
        }
        pods.push(Observed {
            name: c.name().to_string(),
            containers: live::from_listing(&listing, c.name(), exits.next().flatten()),
            health: Some(a.health),
            ports,
            newest: newest(root, files_of(*c)),
            quorum: q,
            allowance: a.allowance,
        });
    }
    for (name, mounts) in &others {
        let rels: Vec<&str> = mounts.iter().map(|m| m.trim_start_matches('/')).collect();
        pods.push(Observed {
            name: name.clone(),
            containers: live::from_listing(&listing, name, exits.next().flatten()),
            health: None,
            ports: Vec::new(),
            newest: newest(root, &rels),
            quorum: None,
            allowance: None,
        });
    }
    Observation {
        wall,
        budget,
        took: t0.elapsed(),
        pods,
        crictl: rt.crictl_words(),
    }
}

/// Static pods besides the four that mount a file kubeadm renews.
fn other_pods(root: &Root) -> Vec<(String, Vec<String>)> {
    let Ok(Some(dir)) = root.open_dir(MANIFESTS_DIR, FileTrust::TypeOnly) else {
        return Vec::new();
    };
    let Ok(mut names) = dir.list() else {
        return Vec::new();
    };
    names.sort();
    names
        .iter()
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml") || n.ends_with(".json"))
        .filter(|n| !Component::ALL.iter().any(|c| c.manifest_file() == **n))
        .filter_map(|n| dir.read_file(n, NODE_FILE_MAX, FileTrust::TypeOnly).ok()?)
        .filter_map(|b| manifests::renewed_mounts(&b))
        .filter(|(n, _)| Component::from_name(n).is_none())
        .collect()
}
