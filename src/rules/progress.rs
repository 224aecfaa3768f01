//! A renewal at work (SPEC 6, v1.2): which of the operator view's reasons
//! are its progress (the lock it holds, its phase file, the component it
//! restarts: staged, down, not answering) and which are problems. A reason
//! carries what it is about ([`ReasonKind`]) beside its words, so the two
//! are told apart by kind, never by re-making the words; the reasons it
//! recognises are worded here, once. Pure.

use crate::rules::component::Component;
use std::fmt;

/// A staging directory: the runbook's or the node agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stager {
    Runbook,
    NodeAgent,
}

impl Stager {
    /// `runbook`, `node agent`.
    pub fn word(self) -> &'static str {
        match self {
            Stager::Runbook => "runbook",
            Stager::NodeAgent => "node agent",
        }
    }
}

/// What a reason is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasonKind {
    /// The renewal lock is held.
    Lock,
    /// The phase file holds unfinished work.
    Phase,
    /// A staging directory is not empty.
    Staging(Stager),
    /// One of the four components (its manifest, its pod).
    Component(Component),
    /// A component that keeps its old certificate until it restarts (it
    /// started before its files were renewed, or serves an older
    /// certificate than its file's): what a renewal's restart of it ends.
    AwaitsRestart(Component),
    /// Anything else.
    Other,
}

/// One reason the node is not clean: its kind and its words (`Display`
/// prints the words, as they have always been printed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub kind: ReasonKind,
    pub text: String,
}

impl Reason {
    pub fn new(kind: ReasonKind, text: impl Into<String>) -> Reason {
        Reason {
            kind,
            text: text.into(),
        }
    }

    /// A reason about nothing the renewal at work holds.
    pub fn other(text: impl Into<String>) -> Reason {
        Reason::new(ReasonKind::Other, text)
    }

    /// About `c` (its words start with its name).
    pub fn component(c: Component, text: impl Into<String>) -> Reason {
        Reason::new(ReasonKind::Component(c), text)
    }

    /// The phase file's unfinished work, as `describe` words it.
    pub fn phase(describe: impl Into<String>) -> Reason {
        Reason::new(ReasonKind::Phase, describe)
    }

    /// The renewal lock, while `holder` holds it.
    pub fn lock_held(holder: &str) -> Reason {
        Reason::new(
            ReasonKind::Lock,
            format!("the renewal lock is held by {holder}"),
        )
    }

    /// A staging directory (at `path`) that is not empty.
    pub fn staging_not_empty(who: Stager, path: &str) -> Reason {
        Reason::new(
            ReasonKind::Staging(who),
            format!("the {} staging directory {path} is not empty", who.word()),
        )
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The words of each reason, for the documents and the text.
pub fn words(reasons: &[Reason]) -> Vec<String> {
    reasons.iter().map(|r| r.text.clone()).collect()
}

/// What the renewal at work holds, besides its lock and its phase file.
#[derive(Debug, Clone, Copy)]
pub struct AtWork<'a> {
    /// The entries of the runbook staging directory.
    pub staged: &'a [String],
    /// The component it restarts (its pod is down by design).
    pub restarting: Option<Component>,
    /// It has restarted none yet (renewing, or starting): every component
    /// is still to be reached. False with no `restarting`: all four were
    /// restarted (it checks them).
    pub before_restarts: bool,
}

/// The reasons apart: (progress, problems), each in the order given. The
/// lock and the phase file are progress; the runbook staging directory is
/// progress only while it holds nothing but the restarting component's
/// manifest; the restarting component's own reasons are progress; so is
/// the old certificate of a component it has not restarted yet (SPEC 6,
/// v1.3: the components it has not reached are its progress).
pub fn progress_apart(reasons: &[Reason], w: &AtWork<'_>) -> (Vec<Reason>, Vec<Reason>) {
    let only_restarting = w
        .staged
        .iter()
        .all(|e| w.restarting.is_some_and(|c| *e == c.manifest_file()));
    let order = |c: Component| Component::ALL.iter().position(|x| *x == c);
    let not_reached = |c: Component| match w.restarting {
        // Before its first restart it reaches every one; after its last,
        // none.
        None => w.before_restarts,
        Some(r) => order(c) >= order(r),
    };
    reasons.iter().cloned().partition(|r| match r.kind {
        ReasonKind::Lock | ReasonKind::Phase => true,
        ReasonKind::Staging(Stager::Runbook) => only_restarting,
        ReasonKind::Component(c) => w.restarting == Some(c),
        ReasonKind::AwaitsRestart(c) => not_reached(c),
        ReasonKind::Staging(Stager::NodeAgent) | ReasonKind::Other => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PHASE: &str = "restart_pending (next: kube-apiserver), operation op-1";

    fn at_work(staged: &[String], restarting: Option<Component>) -> AtWork<'_> {
        AtWork {
            staged,
            restarting,
            before_restarts: restarting.is_none(),
        }
    }

    fn reasons() -> Vec<Reason> {
        vec![
            Reason::lock_held("pid 7 (renew op-1)"),
            Reason::phase(PHASE),
            Reason::component(
                Component::KubeApiserver,
                "kube-apiserver manifest is staged in the runbook's staging directory and not active",
            ),
            Reason::staging_not_empty(Stager::Runbook, "/etc/kubernetes/nvke-staging"),
            Reason::component(Component::Etcd, "etcd is not running"),
            Reason::staging_not_empty(Stager::NodeAgent, "/etc/kubernetes/agent"),
            Reason::other("receipts directory: refused"),
        ]
    }

    #[test]
    fn an_old_certificate_not_reached_yet_is_progress_one_passed_a_problem() {
        let r = vec![
            Reason::new(
                ReasonKind::AwaitsRestart(Component::Etcd),
                "etcd restart needed",
            ),
            Reason::new(
                ReasonKind::AwaitsRestart(Component::KubeControllerManager),
                "kube-controller-manager restart needed",
            ),
            Reason::new(
                ReasonKind::AwaitsRestart(Component::KubeScheduler),
                "kube-scheduler restart needed",
            ),
        ];
        // Restarting kube-controller-manager: etcd was passed (its restart
        // should have ended it), the two others are not reached yet.
        let (progress, problems) =
            progress_apart(&r, &at_work(&[], Some(Component::KubeControllerManager)));
        assert_eq!(progress, r[1..].to_vec());
        assert_eq!(problems, r[..1].to_vec());
        // Before its first restart (renewing): it reaches every one.
        let (progress, problems) = progress_apart(&r, &at_work(&[], None));
        assert_eq!((progress, problems), (r.clone(), vec![]));
        // After its last (checking the four): none is still to be reached.
        let after = AtWork {
            staged: &[],
            restarting: None,
            before_restarts: false,
        };
        let (progress, problems) = progress_apart(&r, &after);
        assert_eq!((progress, problems), (vec![], r.clone()));
    }

    #[test]
    fn the_restart_at_work_is_progress_and_other_pods_are_problems() {
        let staged = ["kube-apiserver.yaml".to_string()];
        let r = reasons();
        let (progress, problems) =
            progress_apart(&r, &at_work(&staged, Some(Component::KubeApiserver)));
        assert_eq!(progress, r[..4].to_vec());
        assert_eq!(
            words(&problems),
            vec![
                "etcd is not running",
                "the node agent staging directory /etc/kubernetes/agent is not empty",
                "receipts directory: refused",
            ]
        );
    }

    #[test]
    fn a_staging_directory_holding_another_manifest_is_a_problem() {
        let staged = ["kube-apiserver.yaml".to_string(), "etcd.yaml".to_string()];
        let r = reasons();
        let (progress, problems) =
            progress_apart(&r, &at_work(&staged, Some(Component::KubeApiserver)));
        assert_eq!(progress, r[..3].to_vec());
        assert_eq!(problems, r[3..].to_vec());
    }

    #[test]
    fn with_no_restart_only_the_lock_and_the_phase_file_are_progress() {
        let r = reasons();
        let (progress, problems) = progress_apart(&r, &at_work(&[], None));
        // An empty staging directory is trivially the restart's own.
        assert_eq!(progress, vec![r[0].clone(), r[1].clone(), r[3].clone()]);
        assert_eq!(
            problems,
            vec![r[2].clone(), r[4].clone(), r[5].clone(), r[6].clone()]
        );
        let staged = ["etcd.yaml".to_string()];
        let (progress, _) = progress_apart(&r, &at_work(&staged, None));
        assert_eq!(progress, r[..2].to_vec());
    }

    #[test]
    fn the_reasons_are_worded_once() {
        assert_eq!(
            Reason::lock_held("pid 7").to_string(),
            "the renewal lock is held by pid 7"
        );
        assert_eq!(
            Reason::staging_not_empty(Stager::NodeAgent, "/x").to_string(),
            "the node agent staging directory /x is not empty"
        );
        assert_eq!(
            Reason::staging_not_empty(Stager::Runbook, "/y").to_string(),
            "the runbook staging directory /y is not empty"
        );
        assert_eq!(Reason::other("as given").to_string(), "as given");
    }
}
