//! etcd asked directly (SPEC 4 step 7, v1.2): the runbook is etcd's client
//! itself, over TLS to the client URL of the manifest with
//! `pki/etcd/healthcheck-client` and `pki/etcd/ca.crt` (under the root):
//! the member list from etcd's JSON gateway (`POST
//! /v3/cluster/member/list`) and `/health` of every voter, side by side,
//! judged by the quorum rules of [`cri::judge_etcd`]. No `crictl exec`.
//! A gateway that answers 404 (`--enable-grpc-gateway=false`) falls back to
//! v1.1's etcdctl through `crictl exec` ([`via_etcdctl`]), and says so.

use crate::node::fsx::Root;
use crate::rules::cri::{self, EndpointHealth, EtcdVerdict, MemberList};
use crate::rules::live::{self, Health};
use crate::rules::outcome::Phase;
use crate::tools::runtime::Runtime;
use crate::tools::targets;
use crate::tools::tlsprobe::{Question, TlsIdentity, Trust};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// etcd's JSON gateway path for the member list (etcd 3.4 and later).
pub const MEMBER_LIST: &str = "/v3/cluster/member/list";

/// What the direct question gave.
pub enum Direct {
    Asked(Quorum),
    /// The gateway is off (404): ask etcdctl in the etcd container instead.
    GatewayOff,
}

/// The log line that says the fallback was taken (SPEC 4 step 7).
pub const FALLBACK: &str =
    "etcd's JSON gateway answered 404 (--enable-grpc-gateway=false): asking etcdctl through crictl exec, as v1.1 did";

fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// The runbook as etcd's client: the node's etcd CA, the healthcheck
/// client's certificate, the clock to judge servers at, one deadline.
#[derive(Clone, Copy)]
struct Client<'a> {
    rt: &'a dyn Runtime,
    id: &'a TlsIdentity,
    now: OffsetDateTime,
    deadline: Instant,
}

impl Client<'_> {
    /// One GET (or a POST of `body`) to etcd at `addr`, verified for `name`.
    fn call(
        &self,
        addr: SocketAddr,
        name: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<(u16, Vec<u8>), EtcdError> {
        let a = self.rt.ask(&Question {
            host: addr.ip(),
            port: addr.port(),
            trust: Trust::Pinned { id: self.id, name },
            now: self.now,
            path: Some(path),
            body,
            budget: left(self.deadline),
        });
        match a.reply {
            Ok((Some(status), body)) => Ok((status, body)),
            Ok((None, _)) => Err(EtcdError::NoAnswer(addr)),
            Err(e) => Err(EtcdError::Probe(e.clone())),
        }
    }

    /// etcd's `/health` at `addr`: healthy, or why not.
    fn health(&self, addr: Result<(SocketAddr, String), EtcdError>) -> (bool, Option<String>) {
        let (addr, name) = match addr {
            Ok(a) => a,
            Err(e) => return (false, Some(e.to_string())),
        };
        match self.call(addr, &name, "/health", None) {
            Ok((status, body)) => match live::etcd_health(status, &body) {
                Health::Healthy => (true, None),
                Health::Unhealthy(why) => (false, Some(why)),
            },
            Err(e) => (false, Some(e.to_string())),
        }
    }
}

/// Ask this member's etcd for the member list and every voter for its
/// health, within `deadline`.
pub fn direct(rt: &dyn Runtime, root: &Root, now: OffsetDateTime, deadline: Instant) -> Direct {
    let asked = |q| Direct::Asked(q);
    let local = match targets::etcd_client(root) {
        Ok(a) => a,
        Err(e) => return asked(Quorum::Unasked(e.to_string())),
    };
    let id = match targets::etcd_identity(root) {
        Ok(i) => i,
        Err(e) => return asked(Quorum::Unasked(e.to_string())),
    };
    let client = Client {
        rt,
        id: &id,
        now,
        deadline,
    };
    let list = client.call(local, &local.ip().to_string(), MEMBER_LIST, Some(b"{}"));
    let members = match list {
        Ok((200, body)) => match cri::parse_gateway_member_list(&body) {
            Ok(m) => m,
            Err(e) => return asked(Quorum::Unasked(e.to_string())),
        },
        Ok((404, _)) => return Direct::GatewayOff,
        Ok((status, body)) => {
            if let Some(why) = cri::local_learner(&String::from_utf8_lossy(&body)) {
                return asked(Quorum::Structural(Phase::Health, why));
            }
            return asked(Quorum::NotYet(format!(
                "etcd's member list ({local}{MEMBER_LIST}): {}",
                live::answer_words(status, &body)
            )));
        }
        Err(e) => return asked(Quorum::Unasked(format!("etcd's member list: {e}"))),
    };
    let (local_health, cluster) = voters_health(&client, local, &members);
    asked(judged(&local_health, &cluster, &members))
}

/// The quorum rules over what was asked.
pub fn judged(local: &[EndpointHealth], cluster: &[EndpointHealth], m: &MemberList) -> Quorum {
    match cri::judge_etcd(local, cluster, m) {
        EtcdVerdict::Ok {
            voters,
            healthy_voters,
        } => Quorum::Ok {
            voters,
            healthy_voters,
        },
        EtcdVerdict::NotYet(m) => Quorum::NotYet(m),
        EtcdVerdict::Structural {
            two_voters: true,
            reason,
        } => Quorum::Structural(Phase::TwoControlPlaneVoters, reason),
        EtcdVerdict::Structural { reason, .. } => Quorum::Structural(Phase::Health, reason),
    }
}

/// `/health` of this member (on the manifest's local client URL) and of
/// every other voter (on each of its client URLs), side by side: the
/// entries the quorum rule reads, as etcdctl's `endpoint health --cluster`
/// gives them (one per client URL; this member's keyed by its own URLs).
fn voters_health(
    client: &Client<'_>,
    local: SocketAddr,
    members: &MemberList,
) -> (Vec<EndpointHealth>, Vec<EndpointHealth>) {
    let me = members.header.member_id;
    // Another member's certificate is another machine's: judged at the real
    // clock (the runbook's --now fixes this node's files' dates in tests,
    // never another machine's; on a node the two are the same).
    let remote = Client {
        now: OffsetDateTime::now_utc(),
        ..*client
    };
    let remote = &remote;
    std::thread::scope(|s| {
        let mine = s.spawn(move || client.health(Ok((local, local.ip().to_string()))));
        let others: Vec<_> = members
            .members
            .iter()
            .filter(|m| m.id != me && !m.is_learner)
            .flat_map(|m| m.client_urls.iter())
            .map(|u| {
                let u = u.clone();
                s.spawn(move || {
                    let (health, error) = remote.health(client_url(&u));
                    EndpointHealth {
                        endpoint: u,
                        health,
                        error,
                    }
                })
            })
            .collect();
        let (health, error) = mine
            .join()
            .unwrap_or_else(|_| (false, Some("the probe panicked".into())));
        let local_entry = |endpoint: String| EndpointHealth {
            endpoint,
            health,
            error: error.clone(),
        };
        let local_health = vec![local_entry(format!("https://{local}"))];
        let mut cluster: Vec<EndpointHealth> = members
            .members
            .iter()
            .filter(|m| m.id == me)
            .flat_map(|m| m.client_urls.iter())
            .map(|u| local_entry(u.clone()))
            .collect();
        cluster.extend(others.into_iter().map(|h| {
            h.join().unwrap_or_else(|_| EndpointHealth {
                endpoint: String::new(),
                health: false,
                error: Some("the probe panicked".into()),
            })
        }));
        (local_health, cluster)
    })
}

/// Why etcd was not asked, or gave no answer that can be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EtcdError {
    #[error("{0} gave no HTTP answer")]
    NoAnswer(SocketAddr),
    #[error(transparent)]
    Probe(crate::tools::tlsprobe::ProbeError),
    /// A member's client URL that is not asked.
    #[error("{url}: {why}")]
    Url { url: String, why: UrlRefusal },
    #[error(transparent)]
    Runtime(#[from] crate::tools::runtime::RtError),
    /// etcdctl printed nothing: how it ended, and its stderr's tail.
    #[error("etcdctl {cmd} failed ({exit}): {stderr}")]
    Etcdctl {
        cmd: String,
        exit: String,
        stderr: String,
    },
    #[error(transparent)]
    Output(#[from] crate::rules::cri::CriError),
    #[error("etcdctl probe panicked")]
    Panicked,
}

/// Why a member's client URL is not asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlRefusal {
    #[error("not asked (only https:// client URLs: kubeadm's etcd serves TLS)")]
    NotHttps,
    #[error("no port")]
    NoPort,
    #[error("bad port")]
    BadPort,
    #[error("no host")]
    NoHost,
    #[error("not asked (a host name: the runbook resolves none; kubeadm advertises an IP)")]
    HostName,
}

/// Where a member's client URL points, and the name to verify its server
/// for: `https://IP:PORT` (`[v6]` too) or `localhost`. A host name is not
/// resolved: the static binary links no resolver (kubeadm advertises
/// etcd's client URLs by IP); such a member is not asked, and says why.
pub fn client_url(url: &str) -> Result<(SocketAddr, String), EtcdError> {
    let bad = |why: UrlRefusal| EtcdError::Url {
        url: url.to_string(),
        why,
    };
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| bad(UrlRefusal::NotHttps))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (h, p),
        _ => return Err(bad(UrlRefusal::NoPort)),
    };
    let port: u16 = port.parse().map_err(|_| bad(UrlRefusal::BadPort))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok((SocketAddr::new(ip, port), host.to_string()));
    }
    match host {
        "" => Err(bad(UrlRefusal::NoHost)),
        "localhost" => Ok((
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            host.to_string(),
        )),
        _ => Err(bad(UrlRefusal::HostName)),
    }
}

/// What the direct question settles: its answer, or (the gateway off)
/// v1.1's etcdctl in the etcd container `etcd_id`, said once in the log.
pub fn settle(
    d: Direct,
    rt: &dyn Runtime,
    root: &Root,
    etcd_id: Option<&str>,
    deadline: Instant,
) -> Quorum {
    match d {
        Direct::Asked(q) => q,
        Direct::GatewayOff => {
            say_fallback();
            match etcd_id {
                _ if left(deadline).is_zero() => Quorum::Unasked(
                    "etcd's JSON gateway is off and no time is left for etcdctl".into(),
                ),
                Some(id) => etcdctl_quorum(rt, root, id, deadline),
                None => Quorum::Unasked(
                    "etcd's JSON gateway is off (404) and no etcd container runs to ask etcdctl in"
                        .into(),
                ),
            }
        }
    }
}

/// Whether the fallback was already said in this process (once per run).
static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Say once that the gateway is off and etcdctl is asked instead.
pub fn say_fallback() {
    if !SAID.swap(true, std::sync::atomic::Ordering::SeqCst) {
        tracing::warn!("{FALLBACK}");
    }
}

/// etcdctl's own timeouts for one call (the guide's 10 s and 30 s), never
/// more than the time left.
fn etcd_timeouts(left: Duration) -> (Duration, Duration) {
    let left = left.max(Duration::from_millis(1));
    (
        Duration::from_secs(10).min(left),
        Duration::from_secs(30).min(left),
    )
}

/// How much sooner etcdctl's own timeout ends than the `crictl exec` call
/// around it, so that its answer (a dead member's `health: false`) comes
/// back before the call is killed: crictl, containerd and runc's exec take
/// hundreds of milliseconds on a loaded node (200 ms was seen to lose the
/// answer, tests/containers.rs). A fifth of what is left, 200 ms to 1 s.
pub(crate) fn etcdctl_margin(left: Duration) -> Duration {
    (left / 5).clamp(Duration::from_millis(200), Duration::from_secs(1))
}

/// A Go duration for etcdctl (`1500ms`).
fn go_duration(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

/// etcdctl flags of the guide's validation section: paths as the etcd
/// container sees them, whatever --root is; its timeouts bounded by `left`.
pub fn etcdctl_flags(local: SocketAddr, left: Duration) -> Vec<String> {
    let (dial, command) = etcd_timeouts(left);
    vec![
        // SocketAddr writes an IPv6 address in brackets, as a URL needs.
        format!("--endpoints=https://{local}"),
        "--cacert=/etc/kubernetes/pki/etcd/ca.crt".into(),
        "--cert=/etc/kubernetes/pki/etcd/server.crt".into(),
        "--key=/etc/kubernetes/pki/etcd/server.key".into(),
        format!("--dial-timeout={}", go_duration(dial)),
        format!("--command-timeout={}", go_duration(command)),
    ]
}

/// What etcd's members say of the cluster (SPEC 4 step 7): the quorum
/// rule over the member list and each voter's health, as the renewal's
/// gate and the live view both ask it (`tools::etcd`).
pub enum Quorum {
    Ok {
        voters: usize,
        healthy_voters: usize,
    },
    /// Not now (a member down or unhealthy, an answer that is not a
    /// success): the gate waits.
    NotYet(String),
    /// etcd's members could not be asked: what to ask could not be read,
    /// no answer in time (refused, timed out, etcdctl said nothing), an
    /// answer that cannot be read. The gate waits alike; the operator view
    /// and check say `not checked` (SPEC 10: what cannot be asked is never
    /// judged, healthy or not).
    Unasked(String),
    /// Will not pass by waiting: the gate fails at once with this phase.
    Structural(Phase, String),
}

impl Quorum {
    /// As the view sees it: healthy, or what is wrong.
    pub fn seen(&self) -> live::QuorumSeen {
        match self {
            Quorum::Ok { .. } => live::QuorumSeen::Healthy,
            Quorum::NotYet(m) | Quorum::Structural(_, m) => live::QuorumSeen::Problem(m.clone()),
            Quorum::Unasked(m) => live::QuorumSeen::NotChecked(live::Unseen::Probe(m.clone())),
        }
    }
}

/// v1.1's way, when etcd's JSON gateway is off: etcdctl's `member list`
/// and `endpoint health --cluster`, in etcd's container `etcd_id`, within
/// `deadline`.
pub fn etcdctl_quorum(rt: &dyn Runtime, root: &Root, etcd_id: &str, deadline: Instant) -> Quorum {
    {
        let local = match targets::etcd_client(root) {
            Ok(a) => a,
            Err(e) => return Quorum::Unasked(e.to_string()),
        };
        // A local learner, told by the member list's failure: refused at once.
        let learner = std::sync::OnceLock::new();
        let run = |cmd: &[&str]| -> Result<Vec<u8>, EtcdError> {
            let left = rt.call_limit(deadline.saturating_duration_since(Instant::now()));
            let mut args = etcdctl_flags(local, left.saturating_sub(etcdctl_margin(left)));
            args.extend(cmd.iter().map(|s| s.to_string()));
            let out = rt.etcdctl(etcd_id, &args, left)?;
            if out.stdout.is_empty() {
                if cmd[0] == "member" {
                    if let Some(why) = cri::local_learner(&String::from_utf8_lossy(&out.stderr)) {
                        let _ = learner.set(why);
                    }
                }
                return Err(EtcdError::Etcdctl {
                    cmd: cmd.join(" "),
                    exit: crate::tools::proc::describe_exit(out.code),
                    stderr: out.stderr_tail(),
                });
            }
            Ok(out.stdout)
        };
        // The two etcdctl calls are independent: run them side by side. The
        // local member's health is its own entry in the cluster's answer
        // (the member list's header names the member that answered it).
        let (members, cluster) = std::thread::scope(|s| {
            let m = s.spawn(|| {
                run(&["member", "list", "-w", "json"]).and_then(|b| Ok(cri::parse_member_list(&b)?))
            });
            let c = run(&["endpoint", "health", "--cluster", "-w", "json"])
                .and_then(|b| Ok(cri::parse_endpoint_health(&b)?));
            (m.join().unwrap_or(Err(EtcdError::Panicked)), c)
        });
        if let Some(why) = learner.into_inner() {
            return Quorum::Structural(Phase::Health, why);
        }
        let members = match members {
            Ok(m) => m,
            Err(e) => return Quorum::Unasked(e.to_string()),
        };
        let cluster = match cluster {
            Ok(v) => v,
            Err(e) => return Quorum::Unasked(e.to_string()),
        };
        let local = cri::local_health(&cluster, &members);
        judged(&local, &cluster, &members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC 10: etcd's members that cannot be asked are `not checked` in
    /// the live view, never a quorum problem (nor healthy); an answer that
    /// is not a success is one. The gate waits on both alike.
    #[test]
    fn members_that_cannot_be_asked_are_not_checked() {
        use crate::tools::runtime::double::{node_tree, Double};
        let t = node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let ask = |rt: &Double| {
            let deadline = Instant::now() + Duration::from_secs(5);
            match direct(rt, &root, OffsetDateTime::now_utc(), deadline) {
                Direct::Asked(q) => q,
                Direct::GatewayOff => panic!("the gateway answered 404"),
            }
        };
        let rt = Double::new();
        rt.set_answer(
            MEMBER_LIST,
            2379,
            Err("connect 127.0.0.1:2379: Connection refused"),
        );
        let q = ask(&rt);
        assert!(matches!(&q, Quorum::Unasked(m) if m.contains("Connection refused")));
        match q.seen() {
            live::QuorumSeen::NotChecked(why) => {
                assert_eq!(
                    why.to_string(),
                    "etcd's member list: connect 127.0.0.1:2379: Connection refused"
                )
            }
            other => panic!("{other:?}"),
        }
        // An answer that cannot be read is no answer either.
        rt.set_answer(MEMBER_LIST, 2379, Ok((200, "{not json")));
        assert!(matches!(ask(&rt).seen(), live::QuorumSeen::NotChecked(_)));
        // An answer that is not a success is judged: a problem.
        rt.set_answer(MEMBER_LIST, 2379, Ok((503, "etcdserver: no leader")));
        assert!(matches!(ask(&rt), Quorum::NotYet(_)));
        assert!(matches!(ask(&rt).seen(), live::QuorumSeen::Problem(_)));
    }

    #[test]
    fn client_urls_are_https_with_a_port() {
        let (a, name) = client_url("https://10.0.0.12:2379").unwrap();
        assert_eq!(a.to_string(), "10.0.0.12:2379");
        assert_eq!(name, "10.0.0.12");
        let (a, name) = client_url("https://[fd00::12]:2379/").unwrap();
        assert_eq!(a.to_string(), "[fd00::12]:2379");
        assert_eq!(name, "fd00::12");
        let (a, name) = client_url("https://localhost:2379").unwrap();
        assert_eq!(a.port(), 2379);
        assert!(a.ip().is_loopback());
        assert_eq!(name, "localhost");
        for bad in [
            "http://10.0.0.12:2379",
            "https://10.0.0.12",
            "https://:2379",
            "https://10.0.0.12:port",
            "https://[fd00::12]",
            "https://etcd-2.example:2379",
        ] {
            assert!(client_url(bad).is_err(), "{bad}");
        }
    }
}
