//! The local health gate (SPEC step 7) and the waits of the restart loop.
//! Every wait polls at a short interval to a deadline and checks the cancel
//! flag; structural refusals (two voters, a learner, not a voter) end at once.
//!
//! One [`Health`] value, its methods grouped by concern, one file each:
//!
//! - here: the shared vocabulary (the back-off, the gate's answers, the
//!   sleep that wakes on cancellation, short container IDs);
//! - `listing`: one look at kube-system (`crictl ps`, then `crictl pods`
//!   only for a sandbox not seen before: [`Sandboxes`]) and a recovery's
//!   current container;
//! - `gate`: one gate attempt (the component probes side by side, the
//!   listing, etcd's quorum) and the wait that polls it to its deadline;
//! - `stay`: whether the containers this run's restarts started still run;
//! - `stop`: the wait for the old container to stop (a pidfd, then
//!   listings);
//! - `start`: the wait for a new container to run (the kubelet's links,
//!   then listings);
//! - `poll`: one poll of those two waits, judged alike (the runtime
//!   unreachable, cancellation, the deadline, the last poll's failure).

mod gate;
mod listing;
mod poll;
mod start;
mod stay;
mod stop;

pub use listing::Sandboxes;

use crate::node::fsx::Root;
use crate::rules::component::Component;
use crate::rules::outcome::Phase;
use crate::tools::runtime::Runtime;
use crate::tools::signals::Cancel;
use std::time::{Duration, Instant};
use time::OffsetDateTime;

/// Waits poll with back-off (SPEC 4 "Waits", v1.1): dense right after a
/// move, where detection latency matters, then cheap.
pub const POLL_FIRST: Duration = Duration::from_millis(10);
/// The longest pause between two polls of one wait.
pub const POLL_MAX: Duration = Duration::from_millis(500);

/// The longest an event-driven wait goes without a listing (a missed or
/// absent event costs at most this much latency).
const EVENT_SAFETY: Duration = Duration::from_secs(5);

/// The pauses of one wait: 10 ms, growing by half each time, to 500 ms.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    /// Polls made so far (tool calls of the wait, for its log line).
    pub polls: u32,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            next: POLL_FIRST,
            polls: 0,
        }
    }
}

impl Backoff {
    /// The pause before the next poll.
    pub fn pause(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 3 / 2).min(POLL_MAX);
        d
    }
}

#[derive(Debug, Clone)]
pub enum GateError {
    /// Will not pass by waiting: fail at once with this phase.
    Structural {
        phase: Phase,
        message: String,
    },
    TimedOut {
        message: String,
    },
    Cancelled,
}

/// What a passing gate saw.
#[derive(Debug, Clone)]
pub struct GateOk {
    pub etcd_voters: usize,
    pub etcd_healthy_voters: usize,
    pub containers: Vec<(Component, String)>,
}

pub struct Health<'a> {
    pub rt: &'a dyn Runtime,
    pub root: &'a Root,
    pub cancel: &'a Cancel,
    pub now: OffsetDateTime,
    pub sandboxes: &'a Sandboxes,
    /// The components this run restarted, each with the container its
    /// restart started: each must still run it (SPEC 4 step 7, v1.2).
    pub stay: &'a [(Component, String)],
}

/// Sleep `step` (or to the deadline), waking early on cancellation.
pub fn sleep_until(deadline: Instant, step: Duration, cancel: &Cancel) {
    let end = (Instant::now() + step).min(deadline);
    while Instant::now() < end {
        if cancel.is_cancelled() {
            return;
        }
        std::thread::sleep(
            Duration::from_millis(5).min(end.saturating_duration_since(Instant::now())),
        );
    }
}

/// A container ID shortened for messages: the first 13 characters of a container ID (as crictl shows them). Cut by
/// characters, never by bytes: the ID comes from outside and a byte slice
/// through a multi-byte character panics.
pub fn short(id: &str) -> &str {
    match id.char_indices().nth(13) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests run real child processes and read their temp node
mod tests {
    //! The back-off schedule and the single-listing gate against the test
    //! double of the runtime ([`crate::tools::runtime::double`]), which counts its
    //! calls.
    use super::gate::Attempt;
    use super::*;
    use crate::rules::cri::{self, Container, Listing};
    use crate::rules::pki;
    use crate::tools::etcd::{etcdctl_flags, etcdctl_margin};
    use crate::tools::runtime::double::{self, container, sandbox, Double};
    use crate::tools::runtime::RtError;
    use crate::tools::targets::{apiserver_identity, apiserver_port, etcd_identity};

    #[test]
    fn backoff_is_dense_first_then_capped() {
        let mut b = Backoff::default();
        let pauses: Vec<u128> = (0..14).map(|_| b.pause().as_millis()).collect();
        assert_eq!(&pauses[..4], &[10, 15, 22, 33]);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), 500, "{pauses:?}");
        // The first 300 ms are polled densely: at least 6 polls.
        let mut b = Backoff::default();
        let (mut t, mut n) = (0u128, 0);
        while t < 300 {
            t += b.pause().as_millis();
            n += 1;
        }
        assert!(n >= 6, "{n} polls in the first 300 ms");
        // A wait of 60 s costs about 7 + 60 / 0.5 polls, not 6,000.
        let mut b = Backoff::default();
        let (mut t, mut n) = (0u128, 0);
        while t < 60_000 {
            t += b.pause().as_millis();
            n += 1;
        }
        assert!(n < 130, "{n} polls in 60 s");
    }

    #[test]
    fn short_ids_are_cut_by_characters_not_bytes() {
        assert_eq!(short("0123456789abcdef"), "0123456789abc");
        assert_eq!(short("abc"), "abc");
        // A byte slice at 13 would split the two-byte 'é' and panic.
        assert_eq!(short("0123456789abéé"), "0123456789abé");
        assert_eq!(short("ééééééééééééééé").chars().count(), 13);
    }

    #[test]
    fn etcdctl_timeouts_never_exceed_the_time_left() {
        let v6: std::net::SocketAddr = "[::1]:2379".parse().unwrap();
        let f = etcdctl_flags(v6, Duration::from_millis(2500));
        assert!(
            f.contains(&"--endpoints=https://[::1]:2379".to_string()),
            "{f:?}"
        );
        assert!(f.contains(&"--dial-timeout=2500ms".to_string()), "{f:?}");
        assert!(f.contains(&"--command-timeout=2500ms".to_string()), "{f:?}");
        let f = etcdctl_flags(v6, Duration::from_secs(300));
        assert!(f.contains(&"--dial-timeout=10000ms".to_string()), "{f:?}");
        assert!(
            f.contains(&"--command-timeout=30000ms".to_string()),
            "{f:?}"
        );
        let f = etcdctl_flags(v6, Duration::ZERO);
        assert!(f.contains(&"--command-timeout=1ms".to_string()), "{f:?}");
    }

    /// Four static pods and an unrelated kube-system pod with an `etcd`
    /// container, newer than the static etcd: a name-only match would pick
    /// it.
    fn counting() -> Double {
        let rt = Double::new();
        for c in Component::ALL {
            rt.push(container(
                c.name(),
                &format!("{c}-cp-1"),
                &format!("{c}-static"),
                &format!("sb-{c}"),
                true,
                "1",
            ));
            rt.add_sandbox(sandbox(&format!("sb-{c}"), "file"));
        }
        rt.insert_newest(container(
            "etcd",
            "etcd-backup-29123",
            "etcd-backup",
            "sb-backup",
            true,
            "2",
        ));
        rt.add_sandbox(sandbox("sb-backup", "api"));
        rt
    }

    #[test]
    fn one_gate_attempt_lists_once_and_judges_only_static_pods() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let cancel = Cancel::new();
        let sandboxes = Sandboxes::default();
        let h = Health {
            rt: &rt,
            root: &root,
            cancel: &cancel,
            now: time::macros::datetime!(2026-11-30 00:00:00 UTC),
            sandboxes: &sandboxes,
            stay: &[],
        };
        let ok = h.wait_gate(Duration::from_secs(5)).unwrap();
        assert_eq!(rt.calls.ps(), 1, "one container listing");
        assert_eq!(rt.calls.pods(), 1, "one sandbox listing");
        assert_eq!(
            rt.calls.etcdctl(),
            2,
            "member list and endpoint health --cluster"
        );
        // The next attempt: the sandboxes are known, only containers are listed.
        h.wait_gate(Duration::from_secs(5)).unwrap();
        assert_eq!(rt.calls.ps(), 2);
        assert_eq!(rt.calls.pods(), 1, "sandboxes not listed again");
        assert_eq!(rt.calls.etcdctl(), 4);
        // A sandbox not seen before (a restarted static pod): listed again.
        sandboxes.replace(Vec::new());
        h.wait_gate(Duration::from_secs(5)).unwrap();
        assert_eq!(rt.calls.pods(), 2, "a new sandbox is looked up");
        assert!(
            rt.exec_into().iter().all(|id| id == "etcd-static"),
            "etcdctl ran only in the static pod's etcd container"
        );
        assert_eq!(
            ok.containers[0],
            (Component::Etcd, "etcd-static".to_string())
        );
        let listing = Listing {
            containers: rt.ps(Duration::ZERO).unwrap(),
            sandboxes: rt.pods(Duration::ZERO).unwrap(),
        };
        // Two containers named etcd are listed; one is the static pod's.
        let named_etcd = listing
            .containers
            .iter()
            .filter(|c| c.labels.get(cri::LABEL_CONTAINER).map(String::as_str) == Some("etcd"))
            .count();
        assert_eq!(named_etcd, 2);
        assert_eq!(listing.component("etcd").unwrap().len(), 1);
        assert_eq!(rt.calls.renew(), 0, "the gate never renews");
    }

    /// One component, kube-scheduler: its old container `old` runs (in
    /// `sb-old`); `new` (in `sb-new`) is what a restart brings.
    fn waits() -> Double {
        let rt = Double::new();
        rt.push(scheduler("old", "sb-old", true));
        rt.add_sandbox(sandbox("sb-old", "file"));
        rt.add_sandbox(sandbox("sb-new", "file"));
        rt
    }

    fn scheduler(id: &str, sb: &str, running: bool) -> Container {
        container(
            "kube-scheduler",
            "kube-scheduler-cp-1",
            id,
            sb,
            running,
            "1",
        )
    }

    /// SPEC 4 step 7 (v1.2), staying up: a component this run restarted
    /// must still run the container its restart started. The kubelet
    /// restarted it in place (a crash): the gate fails at once, in that
    /// component's restart phase, naming the containers and their exits.
    #[test]
    fn a_restarted_component_that_crashed_since_fails_its_restart_at_once() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let stay = vec![(
            Component::KubeScheduler,
            "kube-scheduler-static".to_string(),
        )];
        let mut h = waits_health(&rt, &root, &cancel, &sandboxes);
        h.stay = &stay;
        assert!(h.wait_gate(Duration::from_secs(5)).is_ok(), "it still runs");
        // It crashed; the kubelet started another in the same sandbox.
        rt.set_running("kube-scheduler-static", false);
        rt.insert_newest(scheduler("sched-2", "sb-kube-scheduler", true));
        let t0 = Instant::now();
        match h.wait_gate(Duration::from_secs(30)) {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Restart(Component::KubeScheduler));
                assert!(
                    message.contains("kube-scheduler did not stay up after its restart"),
                    "{message}"
                );
                assert!(message.contains("kube-schedule"), "{message}");
                assert!(message.contains("sched-2 running"), "{message}");
                assert!(message.contains("exited"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "at once, not after the timeout"
        );
    }

    /// The waits only list and inspect.
    fn assert_waits_only_list(rt: &Double) {
        let c = &rt.calls;
        assert_eq!(
            (c.etcdctl(), c.probe(), c.renew()),
            (0, 0, 0),
            "the waits run no etcdctl, probe nothing, renew nothing"
        );
    }

    fn waits_health<'a>(
        rt: &'a Double,
        root: &'a Root,
        cancel: &'a Cancel,
        sandboxes: &'a Sandboxes,
    ) -> Health<'a> {
        Health {
            rt,
            root,
            cancel,
            now: time::macros::datetime!(2026-11-30 00:00:00 UTC),
            sandboxes,
            stay: &[],
        }
    }

    /// The stop wait watches the old container's process through a pidfd:
    /// one inspect, and one listing once it has exited, however long the
    /// process takes (here 1.5 s, which back-off would poll 6 times).
    #[test]
    fn the_stop_wait_sleeps_on_the_pidfd() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let rt = waits();
        rt.set_pid("old", child.id());
        let cancel = Cancel::new();
        let sandboxes = Sandboxes::default();
        std::thread::scope(|s| {
            s.spawn(|| {
                // The runtime says exited by the time the process is gone
                // (so a loaded machine cannot add listings to the count).
                std::thread::sleep(Duration::from_millis(1500));
                rt.set_running("old", false);
                child.kill().unwrap();
                child.wait().unwrap();
            });
            waits_health(&rt, &root, &cancel, &sandboxes)
                .wait_stopped(Component::KubeScheduler, "old", Duration::from_secs(20))
                .unwrap();
        });
        assert_eq!(rt.calls.inspect(), 1);
        let ps = rt.calls.ps();
        assert_eq!(ps, 1, "{ps} listings");
        assert_waits_only_list(&rt);
    }

    /// The start wait, with the kubelet seen to link its containers, sleeps
    /// until the new container's link appears: one or two listings after
    /// the link (none before it), plus one sandbox listing for the new
    /// sandbox. Untrusted, the same wait polls with back-off, from at once.
    #[test]
    fn the_start_wait_sleeps_until_the_kubelet_links_the_new_container() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let logs = t.path().join("links");
        std::fs::create_dir(&logs).unwrap();
        let cancel = Cancel::new();
        let run = |trusted: bool| -> (u32, u32) {
            let rt = waits();
            let sandboxes = Sandboxes::default();
            let watch = crate::tools::pidwatch::NewContainers::watch(&logs, trusted).unwrap();
            let link = logs.join(format!(
                "kube-scheduler-cp-1_kube-system_kube-scheduler{}",
                crate::tools::pidwatch::NewContainers::link_suffix(if trusted {
                    "n1"
                } else {
                    "n2"
                })
            ));
            let id = std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(1500));
                    rt.insert_newest(scheduler("new", "sb-new", true));
                    std::os::unix::fs::symlink("/x", &link).unwrap();
                });
                waits_health(&rt, &root, &cancel, &sandboxes)
                    .wait_new_running(
                        Component::KubeScheduler,
                        "old",
                        Instant::now() + Duration::from_secs(20),
                        Duration::from_secs(20),
                        Some(&watch),
                    )
                    .unwrap()
            });
            assert_eq!(id, "new");
            assert_waits_only_list(&rt);
            (rt.calls.ps(), rt.calls.pods())
        };
        let (ps, pods) = run(true);
        assert!((1..=2).contains(&ps), "trusted watch: {ps} listings");
        assert_eq!(pods, 1, "one sandbox listing, for the new sandbox");
        let (ps, _) = run(false);
        assert!(ps >= 6, "untrusted watch: back-off polls ({ps} listings)");
    }

    fn health<'a>(
        rt: &'a Double,
        root: &'a Root,
        cancel: &'a Cancel,
        sandboxes: &'a Sandboxes,
    ) -> Health<'a> {
        waits_health(rt, root, cancel, sandboxes)
    }

    /// The gate over the rsa fixture node against `rt`, with `timeout`.
    fn gate(rt: &Double, timeout: Duration) -> (Result<GateOk, GateError>, Duration) {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let cancel = Cancel::new();
        let sandboxes = Sandboxes::default();
        let t0 = Instant::now();
        let r = health(rt, &root, &cancel, &sandboxes).wait_gate(timeout);
        (r, t0.elapsed())
    }

    /// SPEC 4 step 7: etcdctl runs in the etcd container with the TLS flags
    /// of the guide, naming the paths as the container sees them whatever
    /// --root is, and the client port the manifest gives.
    #[test]
    fn etcdctl_gets_the_container_paths_and_the_manifests_client_port() {
        let t = double::node_tree("rsa");
        let etcd = t.path().join("etc/kubernetes/manifests/etcd.yaml");
        let m = std::fs::read_to_string(&etcd).unwrap();
        assert!(m.contains("https://127.0.0.1:2379"));
        std::fs::write(&etcd, m.replace("127.0.0.1:2379", "127.0.0.1:12379")).unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        health(&rt, &root, &cancel, &sandboxes)
            .wait_gate(Duration::from_secs(5))
            .unwrap();
        let calls = rt.etcdctl_args();
        assert_eq!(calls.len(), 2, "{calls:?}");
        for args in &calls {
            for flag in [
                "--endpoints=https://127.0.0.1:12379",
                "--cacert=/etc/kubernetes/pki/etcd/ca.crt",
                "--cert=/etc/kubernetes/pki/etcd/server.crt",
                "--key=/etc/kubernetes/pki/etcd/server.key",
            ] {
                assert!(args.iter().any(|a| a == flag), "{flag} not in {args:?}");
            }
            let root = t.path().display().to_string();
            assert!(!args.iter().any(|a| a.contains(&root)), "{args:?}");
        }
        for cmd in [
            &["member", "list", "-w", "json"][..],
            &["endpoint", "health", "--cluster", "-w", "json"][..],
        ] {
            assert!(
                calls
                    .iter()
                    .any(|a| a.ends_with(&cmd.iter().map(|s| s.to_string()).collect::<Vec<_>>())),
                "{cmd:?} not run: {calls:?}"
            );
        }
    }

    /// SPEC 9: a container runtime that cannot be reached fails the gate at
    /// once; waiting does not fix it.
    #[test]
    fn an_unreachable_runtime_fails_the_gate_at_once() {
        let rt = counting();
        rt.fail_listings(Some(RtError::Unreachable("no socket".into())));
        let (r, took) = gate(&rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert_eq!(message, "no socket");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.ps(), 1);
        assert!(took < Duration::from_secs(2), "{took:?}");
    }

    /// A listing that fails on a reachable runtime is retried until the
    /// timeout, which then says why (a poll never swallows its error).
    #[test]
    fn a_failing_listing_is_retried_and_named_when_the_gate_times_out() {
        let rt = counting();
        rt.fail_listings(Some(RtError::Failed("crictl ps failed: boom".into())));
        let (r, _) = gate(&rt, Duration::from_millis(300));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(message.contains("crictl ps failed: boom"), "{message}")
            }
            other => panic!("{other:?}"),
        }
        assert!(rt.calls.ps() > 1, "{} listings", rt.calls.ps());
    }

    /// SPEC 4 step 7 (v1.1): containers of more than one static pod for a
    /// component are refused at once, naming them; neither is exec'd into.
    #[test]
    fn two_static_pods_for_a_component_are_refused_naming_both() {
        let rt = counting();
        rt.insert_newest(container(
            "etcd",
            "etcd-cp-2",
            "etcd-stray",
            "sb-stray",
            true,
            "3",
        ));
        rt.add_sandbox(sandbox("sb-stray", "file"));
        let (r, _) = gate(&rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(
                    message.contains("etcd-cp-1") && message.contains("etcd-cp-2"),
                    "{message}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.etcdctl(), 0);
        assert_eq!(rt.calls.ps(), 1);
    }

    /// The gate's answer is `two-control-plane-voters` on its first attempt.
    fn refused_at_once_as_two_voters(rt: &Double) {
        let (r, _) = gate(rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, .. }) => {
                assert_eq!(phase, Phase::TwoControlPlaneVoters)
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.ps(), 1, "refused on the first attempt");
    }

    /// SPEC 4 step 7: two voters is refused at once, with its own phase.
    #[test]
    fn two_etcd_voters_are_refused_at_once_with_their_phase() {
        let rt = counting();
        rt.set_etcd(
            r#"{"header":{"member_id":1},"members":[{"ID":1,"name":"cp-1","clientURLs":["https://10.0.0.11:2379"]},{"ID":2,"name":"cp-2","clientURLs":["https://10.0.0.12:2379"]}]}"#,
            r#"[{"endpoint":"https://10.0.0.11:2379","health":true},{"endpoint":"https://10.0.0.12:2379","health":true}]"#,
        );
        refused_at_once_as_two_voters(&rt);
    }

    /// Two voters are refused at once even when this member's own /health
    /// says unhealthy: the member list already tells what waiting will not
    /// change (the model test's case `EtcdHealth(2, 2, 0)`, which waited
    /// for the whole timeout).
    #[test]
    fn two_etcd_voters_are_refused_at_once_while_etcd_is_unhealthy() {
        let rt = counting();
        let list = gateway_members(2, false);
        rt.set_answer(crate::tools::etcd::MEMBER_LIST, 2379, Ok((200, &list)));
        rt.set_answer("/health", 2379, Ok((503, r#"{"health":"false"}"#)));
        refused_at_once_as_two_voters(&rt);
        assert_eq!(rt.calls.etcdctl(), 0);
    }

    /// SPEC 4 step 7: this member a learner is refused at once; etcd 3.4
    /// says so only by refusing a learner the member list.
    #[test]
    fn the_local_member_a_learner_is_refused_at_once() {
        let rt = counting();
        rt.fail_member_list("Error: etcdserver: rpc not supported for learner");
        let (r, _) = gate(&rt, Duration::from_secs(5));
        match r {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(message.contains("learner, not a voter"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.ps(), 1, "refused on the first attempt");
    }

    /// etcd's JSON gateway's member list for `voters` voters (member 1 is
    /// this one, on 10.0.0.1N), `learner` one more, as etcd 3.4 writes it.
    fn gateway_members(voters: u64, learner: bool) -> String {
        let member = |i: u64, learner: bool| {
            format!(
                r#"{{"ID":"{}","name":"cp-{i}","peerURLs":["https://10.0.0.1{i}:2380"],"clientURLs":["https://10.0.0.1{i}:2379"]{}}}"#,
                10_276_657_743_932_975_430u64 + i,
                if learner { r#","isLearner":true"# } else { "" }
            )
        };
        let mut m: Vec<String> = (1..=voters).map(|i| member(i, false)).collect();
        if learner {
            m.push(member(voters + 1, true));
        }
        format!(
            r#"{{"header":{{"cluster_id":"14841639068965178418","member_id":"{}","raft_term":"2"}},"members":[{}]}}"#,
            10_276_657_743_932_975_431u64,
            m.join(",")
        )
    }

    fn with_gateway(voters: u64, learner: bool) -> Double {
        let rt = counting();
        let list = gateway_members(voters, learner);
        rt.set_answer(crate::tools::etcd::MEMBER_LIST, 2379, Ok((200, &list)));
        rt
    }

    /// SPEC 4 step 7 (v1.2): etcd asked directly: its member list from the
    /// gateway and every other voter's /health on its client URL; no
    /// etcdctl, no crictl exec.
    #[test]
    fn etcd_is_asked_directly_without_etcdctl() {
        let rt = with_gateway(3, false);
        let (r, _) = gate(&rt, Duration::from_secs(5));
        let ok = r.unwrap();
        assert_eq!((ok.etcd_voters, ok.etcd_healthy_voters), (3, 3));
        assert_eq!(rt.calls.etcdctl(), 0, "no crictl exec");
    }

    /// A voter down: the gate waits, naming it; back, it passes.
    #[test]
    fn a_voter_down_keeps_the_gate_waiting_naming_it() {
        let rt = with_gateway(3, false);
        rt.set_host_answer(
            "10.0.0.13",
            "/health",
            2379,
            Err("connect 10.0.0.13:2379: Connection refused"),
        );
        let (r, took) = gate(&rt, Duration::from_millis(600));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("only 2 of 3 etcd voters are healthy"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_secs(3), "{took:?}");
        rt.set_host_answer(
            "10.0.0.13",
            "/health",
            2379,
            Ok((200, r#"{"health":"true","reason":""}"#)),
        );
        let (r, _) = gate(&rt, Duration::from_secs(5));
        assert_eq!(r.unwrap().etcd_healthy_voters, 3);
    }

    /// An unhealthy answer (503, `health: false`) is not a healthy voter.
    #[test]
    fn an_unhealthy_voter_is_not_counted() {
        let rt = with_gateway(5, false);
        for h in ["10.0.0.14", "10.0.0.15"] {
            rt.set_host_answer(
                h,
                "/health",
                2379,
                Ok((503, r#"{"health":"false","reason":"RAFT NO LEADER"}"#)),
            );
        }
        let (r, _) = gate(&rt, Duration::from_millis(300));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("only 3 of 5 etcd voters are healthy"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    /// Two voters, a learner in the list, this member a learner (the
    /// gateway's 503): refused at once, each with its phase.
    #[test]
    fn the_direct_answers_refuse_at_once_as_etcdctls_did() {
        let rt = with_gateway(2, false);
        match gate(&rt, Duration::from_secs(5)).0 {
            Err(GateError::Structural { phase, .. }) => {
                assert_eq!(phase, Phase::TwoControlPlaneVoters)
            }
            other => panic!("{other:?}"),
        }
        let rt = with_gateway(3, true);
        match gate(&rt, Duration::from_secs(5)).0 {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(message.contains("1 learner"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let rt = counting();
        rt.set_answer(
            crate::tools::etcd::MEMBER_LIST,
            2379,
            Ok((503, r#"{"error":"etcdserver: rpc not supported for learner","message":"etcdserver: rpc not supported for learner","code":14}"#)),
        );
        match gate(&rt, Duration::from_secs(5)).0 {
            Err(GateError::Structural { phase, message }) => {
                assert_eq!(phase, Phase::Health);
                assert!(message.contains("learner, not a voter"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(rt.calls.etcdctl(), 0);
    }

    /// The gateway off (404): etcdctl through crictl exec, as v1.1.
    #[test]
    fn a_gateway_that_answers_404_falls_back_to_etcdctl() {
        let rt = counting();
        let (r, _) = gate(&rt, Duration::from_secs(5));
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(rt.calls.etcdctl(), 2, "member list and endpoint health");
    }

    /// etcdctl's own timeouts end before the call around it is killed,
    /// also when `--command-timeout` is what kills it, not the gate's time.
    #[test]
    fn etcdctl_timeouts_end_before_the_call_limit() {
        let rt = counting();
        rt.limit_calls(Duration::from_secs(4));
        let (r, _) = gate(&rt, Duration::from_secs(60));
        assert!(r.is_ok(), "{r:?}");
        let args = rt.etcdctl_args();
        assert!(!args.is_empty());
        for a in args {
            assert!(
                a.contains(&"--command-timeout=3200ms".to_string())
                    && a.contains(&"--dial-timeout=3200ms".to_string()),
                "{a:?}"
            );
        }
    }

    /// etcdctl's own timeout ends before the crictl call's, by a margin
    /// that leaves crictl's exec room on a loaded node.
    #[test]
    fn etcdctl_times_out_before_the_exec_around_it() {
        assert_eq!(
            etcdctl_margin(Duration::from_millis(500)),
            Duration::from_millis(200)
        );
        assert_eq!(
            etcdctl_margin(Duration::from_secs(3)),
            Duration::from_millis(600)
        );
        assert_eq!(
            etcdctl_margin(Duration::from_secs(300)),
            Duration::from_secs(1)
        );
    }

    /// SPEC 4 step 7: all four containers must run; one that does not keeps
    /// the gate polling, and the timeout names it.
    #[test]
    fn a_component_without_a_running_container_keeps_the_gate_waiting() {
        let rt = counting();
        rt.set_running("kube-scheduler-static", false);
        let (r, _) = gate(&rt, Duration::from_millis(300));
        match r {
            Err(GateError::TimedOut { message }) => assert!(
                message.contains("kube-scheduler not running: exited"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(rt.calls.ps() > 1);
        assert_eq!(rt.calls.etcdctl(), 0, "etcd is judged once all four run");
    }

    /// SPEC 4 step 7: kube-apiserver must answer /readyz with 200; the gate
    /// waits for it, and overshoots its timeout by at most 2 s.
    #[test]
    fn readyz_other_than_200_keeps_the_gate_waiting_within_its_timeout() {
        let rt = counting();
        rt.set_readyz(500);
        let (r, took) = gate(&rt, Duration::from_millis(500));
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("kube-apiserver unhealthy: HTTP 500"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(rt.calls.probe() > 1);
        assert!(took < Duration::from_millis(2500), "{took:?}");
    }

    /// A cancelled gate makes no call at all.
    #[test]
    fn a_cancelled_gate_makes_no_call() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let rt = counting();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        cancel.cancel();
        let r = health(&rt, &root, &cancel, &sandboxes).wait_gate(Duration::from_secs(5));
        assert!(matches!(r, Err(GateError::Cancelled)), "{r:?}");
        assert_eq!(rt.calls.ps() + rt.calls.probe() + rt.calls.etcdctl(), 0);
    }

    /// SPEC 4 step 9: a container that is gone counts as stopped.
    #[test]
    fn a_container_that_is_gone_counts_as_stopped() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = Double::new();
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let t0 = Instant::now();
        health(&rt, &root, &cancel, &sandboxes)
            .wait_stopped(Component::KubeScheduler, "old", Duration::from_secs(20))
            .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert_eq!(rt.calls.ps(), 1);
    }

    /// A stop that never comes ends at the timeout, naming the container,
    /// after polls that back off (SPEC 4 "Waits": O(log t) calls).
    #[test]
    fn a_stop_that_never_comes_times_out_naming_the_container() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = Double::new();
        rt.push(scheduler("0123456789abcdef-old", "sb-old", true));
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let r = health(&rt, &root, &cancel, &sandboxes).wait_stopped(
            Component::KubeScheduler,
            "0123456789abcdef-old",
            Duration::from_secs(2),
        );
        match r {
            Err(GateError::TimedOut { message }) => assert!(
                message.contains("kube-scheduler container 0123456789abc did not stop"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
        // 2 s at 10 ms growing by half to 500 ms: about a dozen polls, not 200.
        let ps = rt.calls.ps();
        assert!((5..=20).contains(&ps), "{ps} listings in 2 s");
    }

    /// An unreachable runtime ends a restart's wait at once, with that
    /// restart's phase.
    #[test]
    fn an_unreachable_runtime_ends_the_stop_wait_with_the_restart_phase() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = waits();
        rt.fail_listings(Some(RtError::Unreachable("no socket".into())));
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let r = health(&rt, &root, &cancel, &sandboxes).wait_stopped(
            Component::KubeScheduler,
            "old",
            Duration::from_secs(20),
        );
        match r {
            Err(GateError::Structural { phase, .. }) => {
                assert_eq!(phase, Phase::Restart(Component::KubeScheduler))
            }
            other => panic!("{other:?}"),
        }
    }

    /// SPEC 4 step 9 and "Which container": the new container is another
    /// ID of the static pod; the old one still running, or a container of
    /// the same name in another kube-system pod, is never taken for it.
    #[test]
    fn the_start_wait_takes_neither_the_old_container_nor_another_pods() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let rt = waits();
        rt.insert_newest(container(
            "kube-scheduler",
            "kube-scheduler-debug",
            "not-static",
            "sb-api",
            true,
            "2",
        ));
        rt.add_sandbox(sandbox("sb-api", "api"));
        let (cancel, sandboxes) = (Cancel::new(), Sandboxes::default());
        let r = health(&rt, &root, &cancel, &sandboxes).wait_new_running(
            Component::KubeScheduler,
            "old",
            Instant::now() + Duration::from_millis(300),
            Duration::from_millis(300),
            None,
        );
        match r {
            Err(GateError::TimedOut { message }) => {
                assert!(
                    message.contains("no new kube-scheduler container"),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
        // The static pod's new container is taken as soon as it runs.
        rt.insert_newest(scheduler("new", "sb-new", true));
        let id = health(&rt, &root, &cancel, &sandboxes)
            .wait_new_running(
                Component::KubeScheduler,
                "old",
                Instant::now() + Duration::from_secs(5),
                Duration::from_secs(5),
                None,
            )
            .unwrap();
        assert_eq!(id, "new");
    }

    /// Sandboxes are looked up again only for a component's container in a
    /// sandbox not seen before; other containers never cost a listing.
    #[test]
    fn known_sandboxes_cover_only_the_components_containers() {
        let known = Sandboxes::default();
        known.replace(vec![sandbox("sb-old", "file")]);
        let old = scheduler("old", "sb-old", true);
        let new = scheduler("new", "sb-new", true);
        let vip = container("kube-vip", "kube-vip-cp-1", "vip", "sb-vip", true, "1");
        assert!(known.covers(&[old.clone(), vip]));
        assert!(!known.covers(&[old, new]));
    }

    /// SPEC 4 step 7: kube-apiserver is probed on the --secure-port of its
    /// manifest, trusting pki/ca.crt and presenting admin.conf's client
    /// certificate.
    #[test]
    fn the_probe_identity_and_port_come_from_the_node() {
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let pki = t.path().join("etc/kubernetes/pki");
        let id = apiserver_identity(&root).unwrap();
        assert_eq!(id.ca_pem, std::fs::read(pki.join("ca.crt")).unwrap());
        let client = pki::parse_pem_certificate(&id.client_cert_pem).unwrap();
        assert!(
            client.subject.contains("CN=kubernetes-admin"),
            "{}",
            client.subject
        );
        assert!(!id.client_key_pem.is_empty());
        assert_eq!(apiserver_port(&root).unwrap(), 6443);
        let m = t
            .path()
            .join("etc/kubernetes/manifests/kube-apiserver.yaml");
        let yaml = std::fs::read_to_string(&m).unwrap();
        std::fs::write(&m, yaml.replace("--secure-port=6443", "--secure-port=7443")).unwrap();
        assert_eq!(apiserver_port(&root).unwrap(), 7443);
        let etcd = etcd_identity(&root).unwrap();
        let client = pki::parse_pem_certificate(&etcd.client_cert_pem).unwrap();
        assert!(
            client.subject.contains("kube-etcd-healthcheck-client"),
            "{}",
            client.subject
        );
    }

    /// Every wait's sleep wakes on cancellation.
    #[test]
    fn a_sleep_wakes_on_cancellation() {
        let cancel = Cancel::new();
        let t0 = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                cancel.cancel();
            });
            sleep_until(
                Instant::now() + Duration::from_secs(10),
                Duration::from_secs(10),
                &cancel,
            );
        });
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }

    /// SPEC 10: one judgement. On the same situations (a component's
    /// container running, exited, gone or restarting; each health endpoint
    /// answering 200, 500 or not at all; the runtime unreachable), one gate
    /// attempt passes exactly when the operator view's observation finds
    /// nothing the gate waits on.
    #[test]
    fn the_view_judges_every_situation_as_the_gate_does() {
        #[derive(Debug, Clone, Copy)]
        enum Fault {
            Exited(Component),
            Gone(Component),
            Restarting(Component),
            Answers(&'static str, u16, u16),
            Silent(&'static str, u16),
            Unreachable,
            /// etcd's members say its own member is unhealthy.
            Quorum,
        }
        let ports = [
            ("/health", 2379),
            ("/readyz", 6443),
            ("/healthz", 10257),
            ("/healthz", 10259),
        ];
        let mut faults: Vec<Fault> = Vec::new();
        for c in Component::ALL {
            faults.extend([Fault::Exited(c), Fault::Gone(c), Fault::Restarting(c)]);
        }
        for (path, port) in ports {
            faults.extend([
                Fault::Answers(path, port, 500),
                Fault::Answers(path, port, 200),
                Fault::Silent(path, port),
            ]);
        }
        faults.push(Fault::Unreachable);
        faults.push(Fault::Quorum);
        // No fault, each fault alone, and each pair.
        let mut situations: Vec<Vec<Fault>> = vec![Vec::new()];
        for (i, a) in faults.iter().enumerate() {
            situations.push(vec![*a]);
            for b in &faults[i + 1..] {
                situations.push(vec![*a, *b]);
            }
        }
        let t = double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let now_nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
            .to_string();
        let mut judged = 0;
        for faults in &situations {
            let rt = Double::new();
            for c in Component::ALL {
                rt.push(container(
                    c.name(),
                    &format!("{c}-cp-1"),
                    &format!("{c}-static"),
                    &format!("sb-{c}"),
                    true,
                    &now_nanos,
                ));
                rt.add_sandbox(sandbox(&format!("sb-{c}"), "file"));
            }
            for f in faults {
                match *f {
                    Fault::Exited(c) => rt.set_running(&format!("{c}-static"), false),
                    Fault::Gone(c) => rt.remove(&format!("{c}-static")),
                    Fault::Restarting(c) => {
                        rt.set_attempt(&format!("{c}-static"), 2);
                        // The one before it exited in the same sandbox.
                        rt.push(container(
                            c.name(),
                            &format!("{c}-cp-1"),
                            &format!("{c}-crashed"),
                            &format!("sb-{c}"),
                            false,
                            "1",
                        ));
                    }
                    Fault::Answers(path, port, code) => {
                        rt.set_answer(path, port, Ok((code, "[-]x failed")))
                    }
                    Fault::Silent(path, port) => rt.set_answer(path, port, Err("timed out")),
                    Fault::Unreachable => {
                        rt.fail_listings(Some(RtError::Unreachable("the runtime is down".into())))
                    }
                    Fault::Quorum => rt.set_etcd(
                        double::MEMBER_LIST,
                        r#"[{"endpoint":"https://10.0.0.11:2379","health":false,"error":"context deadline exceeded"}]"#,
                    ),
                }
            }
            let cancel = Cancel::new();
            let sandboxes = Sandboxes::default();
            let h = waits_health(&rt, &root, &cancel, &sandboxes);
            let gate_passes = matches!(
                h.attempt(Instant::now() + Duration::from_secs(2)),
                Attempt::Pass(_)
            );
            let o = crate::tools::live::observe(&rt, &root, h.now, Duration::from_secs(2));
            let view_passes = o.judged().gate_refusals(o.wall).is_empty();
            assert_eq!(
                gate_passes,
                view_passes,
                "{faults:?}: the gate {} and the view {}: {:?}",
                if gate_passes { "passes" } else { "waits" },
                if view_passes {
                    "would pass it"
                } else {
                    "would not"
                },
                o.judged().gate_refusals(o.wall)
            );
            judged += 1;
        }
        assert_eq!(judged, situations.len());
        assert!(judged > 300, "{judged}");
        // Past the harness's capture, into the suite's output (as the
        // integration tests' `say` does).
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "live view: {judged} situations judged as the gate judges"
        );
    }
}
