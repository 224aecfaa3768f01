//! The container runtime as crictl shows it, and etcd as etcdctl (run with
//! `crictl exec` inside the etcd container) shows it. Parsing and the quorum
//! rules are pure; running the tools is in [`crate::tools::runtime`].

use serde::Deserialize;
use std::collections::BTreeMap;

pub const LABEL_NAMESPACE: &str = "io.kubernetes.pod.namespace";
pub const LABEL_CONTAINER: &str = "io.kubernetes.container.name";
pub const KUBE_SYSTEM: &str = "kube-system";

/// The sandbox annotation kubelet sets to where a pod came from: `file`
/// for a static pod from the manifests directory, `api` for the API
/// server's pods.
pub const ANNOTATION_CONFIG_SOURCE: &str = "kubernetes.io/config.source";
pub const LABEL_POD_NAME: &str = "io.kubernetes.pod.name";

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Container {
    pub id: String,
    /// The pod sandbox the container runs in (`crictl ps -o json`).
    #[serde(default, rename = "podSandboxId")]
    pub pod_sandbox_id: String,
    #[serde(default)]
    pub state: String,
    /// Unix nanoseconds, as crictl prints it (a string).
    #[serde(default, rename = "createdAt")]
    pub created_at: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `metadata.attempt`: how many times the kubelet restarted this
    /// container in its sandbox.
    #[serde(default)]
    pub metadata: ContainerMeta,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ContainerMeta {
    #[serde(default)]
    pub attempt: u32,
}

impl Container {
    pub fn is_running(&self) -> bool {
        self.state == "CONTAINER_RUNNING"
    }
    fn created_nanos(&self) -> u128 {
        self.created_at.parse().unwrap_or(0)
    }
    /// When the runtime created it (none: not given, or not a time).
    pub fn created(&self) -> Option<time::OffsetDateTime> {
        let n: i128 = self.created_at.parse().ok().filter(|n| *n > 0)?;
        time::OffsetDateTime::from_unix_timestamp_nanos(n).ok()
    }
    pub fn attempt(&self) -> u32 {
        self.metadata.attempt
    }
}

#[derive(Debug, Deserialize)]
struct PsOutput {
    #[serde(default)]
    containers: Vec<Container>,
}

/// A pod sandbox as `crictl pods -o json` shows it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Sandbox {
    pub id: String,
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

impl Sandbox {
    /// A static pod's sandbox (SPEC 4 step 7, v1.1: kubelet annotates every
    /// sandbox with its config source; the labels alone do not tell).
    pub fn is_static(&self) -> bool {
        self.annotations
            .get(ANNOTATION_CONFIG_SOURCE)
            .map(String::as_str)
            == Some("file")
    }
}

#[derive(Debug, Deserialize)]
struct PodsOutput {
    #[serde(default)]
    items: Vec<Sandbox>,
}

/// Why crictl's or etcd's output could not be read, or the containers it
/// lists cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CriError {
    /// `detail`: serde_json's words (its error is neither `Clone` nor `Eq`).
    #[error("{what} is not the expected JSON: {detail}")]
    Json { what: &'static str, detail: String },
    #[error("crictl inspect output has no status")]
    NoStatus,
    #[error("etcdctl endpoint health printed no JSON array")]
    NoArray,
    #[error(
        "containers named {component} belong to {} static pods ({}): refusing to judge or restart either; an operator must remove the stray static pod",
        .pods.len(),
        .pods.join(", ")
    )]
    Ambiguous {
        component: String,
        pods: Vec<String>,
    },
}

impl CriError {
    fn json(what: &'static str, e: serde_json::Error) -> CriError {
        CriError::Json {
            what,
            detail: e.to_string(),
        }
    }
}

/// Parse `crictl ps -a -o json --label io.kubernetes.pod.namespace=kube-system`,
/// keeping only kube-system containers (exact label), newest first.
pub fn parse_ps_kube_system(bytes: &[u8]) -> Result<Vec<Container>, CriError> {
    let ps: PsOutput =
        serde_json::from_slice(bytes).map_err(|e| CriError::json("crictl ps output", e))?;
    let mut v: Vec<Container> = ps
        .containers
        .into_iter()
        .filter(|c| c.labels.get(LABEL_NAMESPACE).map(String::as_str) == Some(KUBE_SYSTEM))
        .collect();
    v.sort_by_key(|c| std::cmp::Reverse(c.created_nanos()));
    Ok(v)
}

/// Parse `crictl pods -o json --label io.kubernetes.pod.namespace=kube-system`,
/// keeping only kube-system sandboxes (exact label).
pub fn parse_pods(bytes: &[u8]) -> Result<Vec<Sandbox>, CriError> {
    let pods: PodsOutput =
        serde_json::from_slice(bytes).map_err(|e| CriError::json("crictl pods output", e))?;
    Ok(pods
        .items
        .into_iter()
        .filter(|p| p.labels.get(LABEL_NAMESPACE).map(String::as_str) == Some(KUBE_SYSTEM))
        .collect())
}

/// One look at kube-system: its containers (exited included, newest first)
/// and its pod sandboxes, listed in that order (a container listed has its
/// sandbox listed after it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub containers: Vec<Container>,
    pub sandboxes: Vec<Sandbox>,
}

impl Listing {
    /// The containers of `component`'s static pod, newest first: exact
    /// labels, and a sandbox annotated `kubernetes.io/config.source=file`.
    /// Containers of another kube-system pod with the same container name (an
    /// etcd backup job) are not the component's. Containers of more than one
    /// static pod (by pod name) are ambiguous: an error naming them.
    pub fn component(&self, component: &str) -> Result<Vec<&Container>, CriError> {
        let mine: Vec<&Container> = self
            .containers
            .iter()
            .filter(|c| c.labels.get(LABEL_CONTAINER).map(String::as_str) == Some(component))
            .filter(|c| {
                self.sandboxes
                    .iter()
                    .any(|s| s.id == c.pod_sandbox_id && s.is_static())
            })
            .collect();
        let mut pods: Vec<&str> = mine
            .iter()
            .map(|c| {
                c.labels
                    .get(LABEL_POD_NAME)
                    .map(String::as_str)
                    .unwrap_or("?")
            })
            .collect();
        pods.sort_unstable();
        pods.dedup();
        if pods.len() > 1 {
            return Err(CriError::Ambiguous {
                component: component.to_string(),
                pods: pods.iter().map(|p| p.to_string()).collect(),
            });
        }
        Ok(mine)
    }
}

#[derive(Debug, Deserialize)]
struct InspectOutput {
    #[serde(default)]
    info: Option<InspectInfo>,
}

#[derive(Debug, Deserialize)]
struct InspectInfo {
    #[serde(default)]
    pid: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct InspectStatus {
    #[serde(default, rename = "exitCode")]
    exit_code: Option<i32>,
    #[serde(default, rename = "finishedAt")]
    finished_at: Option<String>,
}

/// How a container ended, as `crictl inspect` tells it (either may be
/// unknown: the runtime was not asked, or did not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exit {
    pub code: Option<i32>,
    pub finished: Option<time::OffsetDateTime>,
}

#[derive(Debug, Deserialize)]
struct InspectExit {
    #[serde(default)]
    status: Option<InspectStatus>,
}

/// How a container ended, from `crictl inspect -o json ID` (`status.exitCode`,
/// `status.finishedAt` as RFC 3339; the zero time is none).
pub fn parse_inspect_exit(bytes: &[u8]) -> Result<Exit, CriError> {
    let v: InspectExit =
        serde_json::from_slice(bytes).map_err(|e| CriError::json("crictl inspect output", e))?;
    let s = v.status.ok_or(CriError::NoStatus)?;
    let finished = s
        .finished_at
        .as_deref()
        .and_then(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        })
        .filter(|t| t.unix_timestamp() > 0);
    Ok(Exit {
        code: s.exit_code,
        finished,
    })
}

/// The host PID of a container's process from `crictl inspect -o json ID`
/// (`info.pid`, as containerd reports it; 0 or absent: none).
pub fn parse_inspect_pid(bytes: &[u8]) -> Result<Option<u32>, CriError> {
    let v: InspectOutput =
        serde_json::from_slice(bytes).map_err(|e| CriError::json("crictl inspect output", e))?;
    Ok(v.info
        .and_then(|i| i.pid)
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 0))
}

/// The running container (newest when several run), if any.
pub fn running<'a, C: std::borrow::Borrow<Container> + 'a>(
    containers: &'a [C],
) -> Option<&'a Container> {
    containers
        .iter()
        .map(|c| c.borrow())
        .find(|c| c.is_running())
}

/// A 64-bit ID as etcdctl prints it (a JSON number) or as etcd's JSON
/// gateway does (grpc-gateway's proto JSON: a decimal string).
fn u64_either<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        N(u64),
        S(String),
    }
    match Either::deserialize(d)? {
        Either::N(n) => Ok(n),
        Either::S(s) => s
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("not a 64-bit ID: {s:?}"))),
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Member {
    #[serde(rename = "ID", deserialize_with = "u64_either")]
    pub id: u64,
    #[serde(default)]
    pub name: String,
    #[serde(default, rename = "clientURLs")]
    pub client_urls: Vec<String>,
    #[serde(default, rename = "isLearner")]
    pub is_learner: bool,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct MemberHeader {
    #[serde(deserialize_with = "u64_either")]
    pub member_id: u64,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct MemberList {
    pub header: MemberHeader,
    #[serde(default)]
    pub members: Vec<Member>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct EndpointHealth {
    pub endpoint: String,
    pub health: bool,
    #[serde(default)]
    pub error: Option<String>,
}

pub fn parse_member_list(bytes: &[u8]) -> Result<MemberList, CriError> {
    serde_json::from_slice(bytes).map_err(|e| CriError::json("etcdctl member list output", e))
}

/// etcd's JSON gateway's answer to `POST /v3/cluster/member/list`
/// (etcd 3.4: proto field names, IDs as strings, `isLearner` left out when
/// false).
pub fn parse_gateway_member_list(bytes: &[u8]) -> Result<MemberList, CriError> {
    serde_json::from_slice(bytes)
        .map_err(|e| CriError::json("etcd's member list (JSON gateway)", e))
}

pub fn parse_endpoint_health(bytes: &[u8]) -> Result<Vec<EndpointHealth>, CriError> {
    // etcdctl prints the JSON array even when it exits 1 (unhealthy).
    let text = String::from_utf8_lossy(bytes);
    let start = text.find('[').ok_or(CriError::NoArray)?;
    // The last `]` after the first `[` (a stray `]` before the array must not
    // make an inverted range: that was a panic, found by proptest).
    let end = text[start..]
        .rfind(']')
        .map(|i| start + i)
        .ok_or(CriError::NoArray)?;
    serde_json::from_str(&text[start..=end])
        .map_err(|e| CriError::json("etcdctl endpoint health output", e))
}

/// Why the etcd part of the health gate does not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EtcdVerdict {
    Ok {
        voters: usize,
        healthy_voters: usize,
    },
    /// Refuse at once: polling will not fix it.
    Structural { two_voters: bool, reason: String },
    /// May pass later: poll again.
    NotYet(String),
}

/// The local member's entries in `endpoint health --cluster`: those whose
/// endpoint is one of the client URLs of the member that answered the
/// member list (its header names it; the list was asked of the local
/// endpoint). None found: one unhealthy entry that says why.
pub fn local_health(cluster: &[EndpointHealth], members: &MemberList) -> Vec<EndpointHealth> {
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    let Some(me) = members
        .members
        .iter()
        .find(|m| m.id == members.header.member_id)
    else {
        return Vec::new();
    };
    let mine: Vec<EndpointHealth> = cluster
        .iter()
        .filter(|e| me.client_urls.iter().any(|u| same(u, &e.endpoint)))
        .cloned()
        .collect();
    if mine.is_empty() {
        return vec![EndpointHealth {
            endpoint: String::new(),
            health: false,
            error: Some(format!(
                "none of this member's client URLs ({}) is in etcdctl's cluster health answer{}",
                me.client_urls.join(", "),
                answered(cluster)
            )),
        }];
    }
    mine
}

/// What the cluster's health answer said, for a message: ` (url: error, ...)`.
fn answered(cluster: &[EndpointHealth]) -> String {
    if cluster.is_empty() {
        return String::new();
    }
    let each: Vec<String> = cluster
        .iter()
        .map(|e| match (&e.error, e.health) {
            (Some(err), _) => format!("{}: {err}", e.endpoint),
            (None, true) => format!("{}: healthy", e.endpoint),
            (None, false) => format!("{}: unhealthy", e.endpoint),
        })
        .collect();
    format!(" ({})", each.join("; "))
}

/// What etcd 3.4 answers a learner asked for the member list (its
/// `ErrGRPCNotSupportedForLearner`): the local member is a learner, and it
/// stays one until somebody promotes it, so the gate refuses at once
/// (SPEC 4 step 7), as it does when the list itself says so.
pub fn local_learner(member_list_stderr: &str) -> Option<String> {
    member_list_stderr
        .contains("rpc not supported for learner")
        .then(|| "this etcd member is a learner, not a voter (it answers \"rpc not supported for learner\")".into())
}

/// Pure: the quorum rules of SPEC step 7.
pub fn judge_etcd(
    local: &[EndpointHealth],
    cluster: &[EndpointHealth],
    members: &MemberList,
) -> EtcdVerdict {
    let me = members
        .members
        .iter()
        .find(|m| m.id == members.header.member_id);
    let Some(me) = me else {
        return EtcdVerdict::Structural {
            two_voters: false,
            reason: format!(
                "this etcd member ({:x}) is not in the member list",
                members.header.member_id
            ),
        };
    };
    if me.is_learner {
        return EtcdVerdict::Structural {
            two_voters: false,
            reason: "this etcd member is a learner, not a voter".into(),
        };
    }
    let learners = members.members.iter().filter(|m| m.is_learner).count();
    if learners > 0 {
        return EtcdVerdict::Structural {
            two_voters: false,
            reason: format!("etcd has {learners} learner(s); refusing until membership is settled"),
        };
    }
    let voters: Vec<&Member> = members.members.iter().filter(|m| !m.is_learner).collect();
    let n = voters.len();
    if n == 2 {
        return EtcdVerdict::Structural {
            two_voters: true,
            reason: "etcd has exactly two voters: losing one loses quorum; never renewed".into(),
        };
    }
    if n == 0 {
        return EtcdVerdict::Structural {
            two_voters: false,
            reason: "etcd reports no voting members".into(),
        };
    }
    if local.is_empty() || !local.iter().all(|e| e.health) {
        let why = local
            .iter()
            .find_map(|e| e.error.clone())
            .unwrap_or_else(|| "no result".into());
        return EtcdVerdict::NotYet(format!("the local etcd endpoint is not healthy: {why}"));
    }
    let healthy_voters = voters
        .iter()
        .filter(|m| {
            cluster.iter().any(|e| {
                e.health
                    && m.client_urls
                        .iter()
                        .any(|u| u.trim_end_matches('/') == e.endpoint.trim_end_matches('/'))
            })
        })
        .count();
    if n == 1 {
        return EtcdVerdict::Ok {
            voters: 1,
            healthy_voters,
        };
    }
    let quorum = n / 2 + 1;
    if healthy_voters < quorum + 1 {
        // Name the voters that are not healthy, and what they answered.
        let down: Vec<EndpointHealth> = cluster
            .iter()
            .filter(|e| !e.health)
            .filter(|e| {
                voters.iter().any(|m| {
                    m.client_urls
                        .iter()
                        .any(|u| u.trim_end_matches('/') == e.endpoint.trim_end_matches('/'))
                })
            })
            .cloned()
            .collect();
        return EtcdVerdict::NotYet(format!(
            "only {healthy_voters} of {n} etcd voters are healthy; restarting this one needs {} healthy{}",
            quorum + 1,
            answered(&down)
        ));
    }
    EtcdVerdict::Ok {
        voters: n,
        healthy_voters,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What etcd 3.4.23's JSON gateway answered on this machine (a voter
    /// and a learner added by `member add --learner`).
    #[test]
    fn the_gateways_member_list_is_read_with_string_ids() {
        let body = br#"{"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952","raft_term":"2"},"members":[{"ID":"3319814642761637952","name":"e1","peerURLs":["http://127.0.0.1:23800"],"clientURLs":["http://127.0.0.1:23790"]},{"ID":"4677202565426473247","name":"e2","peerURLs":["http://127.0.0.1:23801"],"clientURLs":["http://127.0.0.1:23791"],"isLearner":true}]}"#;
        let m = parse_gateway_member_list(body).unwrap();
        assert_eq!(m.header.member_id, 3319814642761637952);
        assert_eq!(m.members.len(), 2);
        assert_eq!(m.members[0].id, 3319814642761637952);
        assert!(!m.members[0].is_learner);
        assert!(m.members[1].is_learner);
        assert_eq!(m.members[1].client_urls, ["http://127.0.0.1:23791"]);
        // Above 2^53: a float parse would change it.
        let big = br#"{"header":{"member_id":"18446744073709551615"},"members":[{"ID":"18446744073709551615"}]}"#;
        assert_eq!(
            parse_gateway_member_list(big).unwrap().header.member_id,
            u64::MAX
        );
        for bad in [
            &br#"{"header":{"member_id":"-1"},"members":[]}"#[..],
            br#"{"header":{"member_id":"0x12"},"members":[]}"#,
            br#"{"header":{"member_id":1.5},"members":[]}"#,
            br#"{"members":[]}"#,
        ] {
            assert!(
                parse_gateway_member_list(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        // etcdctl's numbers still read.
        assert_eq!(
            parse_member_list(br#"{"header":{"member_id":7},"members":[{"ID":7}]}"#)
                .unwrap()
                .members[0]
                .id,
            7
        );
    }

    #[test]
    fn a_local_learner_is_known_by_etcds_answer() {
        // etcdctl 3.4 asked for the member list by a learner (seen on this
        // machine's etcd 3.4.23, tests/containers.rs).
        let err = "{\"level\":\"warn\",\"msg\":\"retrying of unary invoker failed\",\"error\":\"rpc error: code = Unavailable desc = etcdserver: rpc not supported for learner\"}\nError: etcdserver: rpc not supported for learner";
        assert!(local_learner(err).unwrap().contains("learner, not a voter"));
        assert_eq!(local_learner("Error: context deadline exceeded"), None);
    }

    fn members(n: u64, learners: u64, me_learner: bool) -> MemberList {
        let mut m = Vec::new();
        for i in 1..=n + learners {
            m.push(Member {
                id: 10_276_657_743_932_975_430 + i,
                name: format!("cp-{i}"),
                client_urls: vec![format!("https://10.0.0.1{i}:2379")],
                is_learner: i > n || (i == 1 && me_learner),
            });
        }
        MemberList {
            header: MemberHeader {
                member_id: 10_276_657_743_932_975_431,
            },
            members: m,
        }
    }
    fn health(n: u64, unhealthy: u64) -> Vec<EndpointHealth> {
        (1..=n)
            .map(|i| EndpointHealth {
                endpoint: format!("https://10.0.0.1{i}:2379"),
                health: i <= n - unhealthy,
                error: None,
            })
            .collect()
    }
    fn local() -> Vec<EndpointHealth> {
        vec![EndpointHealth {
            endpoint: "https://127.0.0.1:2379".into(),
            health: true,
            error: None,
        }]
    }

    #[test]
    fn member_ids_above_2_pow_53_parse_exactly() {
        let j = br#"{"header":{"cluster_id":14841639068965178418,"member_id":10276657743932975437,"raft_term":2},"members":[{"ID":10276657743932975437,"name":"cp-1","peerURLs":[],"clientURLs":["https://10.0.0.11:2379"]},{"ID":18446744073709551615,"name":"","isLearner":true}]}"#;
        let m = parse_member_list(j).unwrap();
        assert_eq!(m.header.member_id, 10276657743932975437);
        assert_eq!(m.members[1].id, u64::MAX);
        assert!(!m.members[0].is_learner && m.members[1].is_learner);
    }

    #[test]
    fn the_local_members_health_is_its_entry_in_the_cluster_answer() {
        let m = members(3, 0, false);
        // Member 1 answered the list: its URL is https://10.0.0.11:2379.
        let mut cluster = health(3, 0);
        assert_eq!(local_health(&cluster, &m), vec![cluster[0].clone()]);
        cluster[0].health = false;
        cluster[0].error = Some("context deadline exceeded".into());
        let l = local_health(&cluster, &m);
        assert_eq!(l.len(), 1);
        assert!(!l[0].health);
        assert!(matches!(
            judge_etcd(&l, &cluster, &m),
            EtcdVerdict::NotYet(ref why) if why.contains("deadline")
        ));
        // Its URL missing from the answer is not health.
        let l = local_health(&cluster[1..], &m);
        assert!(!l[0].health);
        assert!(l[0].error.as_deref().unwrap().contains("10.0.0.11"));
        // A trailing slash is the same URL.
        let mut slash = health(3, 0);
        slash[0].endpoint.push('/');
        assert!(local_health(&slash, &m)[0].health);
        // The answering member not listed: nothing (judge_etcd refuses).
        let mut stranger = m.clone();
        stranger.header.member_id = 7;
        assert!(local_health(&health(3, 0), &stranger).is_empty());
    }

    #[test]
    fn quorum_rules() {
        assert!(matches!(
            judge_etcd(&local(), &health(1, 0), &members(1, 0, false)),
            EtcdVerdict::Ok { voters: 1, .. }
        ));
        assert!(matches!(
            judge_etcd(&local(), &health(2, 0), &members(2, 0, false)),
            EtcdVerdict::Structural {
                two_voters: true,
                ..
            }
        ));
        assert!(matches!(
            judge_etcd(&local(), &health(3, 0), &members(3, 0, false)),
            EtcdVerdict::Ok {
                voters: 3,
                healthy_voters: 3
            }
        ));
        // 3 voters, one unhealthy: losing this one would leave 1 of 3.
        assert!(matches!(
            judge_etcd(&local(), &health(3, 1), &members(3, 0, false)),
            EtcdVerdict::NotYet(_)
        ));
        // 5 voters, one unhealthy: 4 healthy, quorum 3, 4-1 >= 3.
        assert!(matches!(
            judge_etcd(&local(), &health(5, 1), &members(5, 0, false)),
            EtcdVerdict::Ok { .. }
        ));
        assert!(matches!(
            judge_etcd(&local(), &health(5, 2), &members(5, 0, false)),
            EtcdVerdict::NotYet(_)
        ));
        assert!(matches!(
            judge_etcd(&local(), &health(4, 0), &members(3, 1, false)),
            EtcdVerdict::Structural {
                two_voters: false,
                ..
            }
        ));
        assert!(matches!(
            judge_etcd(&local(), &health(3, 0), &members(3, 0, true)),
            EtcdVerdict::Structural {
                two_voters: false,
                ..
            }
        ));
        let bad_local = vec![EndpointHealth {
            endpoint: "x".into(),
            health: false,
            error: Some("down".into()),
        }];
        assert!(matches!(
            judge_etcd(&bad_local, &health(1, 0), &members(1, 0, false)),
            EtcdVerdict::NotYet(_)
        ));
    }

    #[test]
    fn ps_filters_exact_labels_newest_first() {
        let j = br#"{"containers":[
          {"id":"old","podSandboxId":"sb","state":"CONTAINER_EXITED","createdAt":"100","labels":{"io.kubernetes.pod.namespace":"kube-system","io.kubernetes.container.name":"etcd"}},
          {"id":"new","podSandboxId":"sb","state":"CONTAINER_RUNNING","createdAt":"200","labels":{"io.kubernetes.pod.namespace":"kube-system","io.kubernetes.container.name":"etcd"}},
          {"id":"other","podSandboxId":"sb","state":"CONTAINER_RUNNING","createdAt":"300","labels":{"io.kubernetes.pod.namespace":"kube-system","io.kubernetes.container.name":"etcd-backup"}},
          {"id":"ns","podSandboxId":"sb","state":"CONTAINER_RUNNING","createdAt":"300","labels":{"io.kubernetes.pod.namespace":"default","io.kubernetes.container.name":"etcd"}}]}"#;
        let containers = parse_ps_kube_system(j).unwrap();
        assert_eq!(
            containers.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["other", "new", "old"]
        );
        let pods = br#"{"items":[{"id":"sb","labels":{"io.kubernetes.pod.namespace":"kube-system"},"annotations":{"kubernetes.io/config.source":"file"}}]}"#;
        let listing = Listing {
            containers,
            sandboxes: parse_pods(pods).unwrap(),
        };
        let v = listing.component("etcd").unwrap();
        assert_eq!(
            v.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["new", "old"]
        );
        assert_eq!(running(&v).unwrap().id, "new");
        assert!(parse_ps_kube_system(b"garbage").is_err());
    }

    #[test]
    fn health_json_is_found_despite_trailing_error_text() {
        let out = b"[{\"endpoint\":\"https://10.0.0.11:2379\",\"health\":true,\"took\":\"1ms\"},{\"endpoint\":\"https://10.0.0.12:2379\",\"health\":false,\"error\":\"deadline\"}]\nError: unhealthy cluster\n";
        let v = parse_endpoint_health(out).unwrap();
        assert_eq!(v.len(), 2);
        assert!(!v[1].health);
    }

    #[test]
    fn a_stray_bracket_before_the_array_is_an_error_not_a_panic() {
        // proptest found this: `]` before `[` made an inverted slice range.
        assert!(parse_endpoint_health(b"]\0[").is_err());
        let v = parse_endpoint_health(b"warn] [{\"endpoint\":\"e\",\"health\":true}]").unwrap();
        assert_eq!(v.len(), 1);
    }
}
