//! A renewal at work (SPEC 6, v1.2): which of the operator view's reasons
//! are its progress (the lock it holds, its phase file, the component it
//! restarts: staged, down, not answering) and which are problems. The
//! reasons it recognises are worded here, once, for the view to use. Pure.

use crate::rules::component::Component;

/// The reason the renewal lock gives while `holder` holds it.
pub fn lock_held(holder: &str) -> String {
    format!("the renewal lock is held by {holder}")
}

/// The reason a staging directory gives while it is not empty (`who`:
/// `runbook` or `node agent`).
pub fn staging_not_empty(who: &str, path: &str) -> String {
    format!("the {who} staging directory {path} is not empty")
}

/// What the renewal at work holds, as the reasons name it.
#[derive(Debug, Clone, Copy)]
pub struct AtWork<'a> {
    /// Who holds the renewal lock (as `lock_held` words it), if anyone.
    pub holder: Option<&'a str>,
    /// Its phase file, as the reasons describe it.
    pub phase: &'a str,
    /// The runbook staging directory: its path and its entries.
    pub staging: &'a str,
    pub staged: &'a [String],
    /// The component it restarts (its pod is down by design).
    pub restarting: Option<Component>,
}

/// The reasons apart: (progress, problems), each in the order given. The
/// staging directory is progress only while it holds nothing but the
/// restarting component's manifest.
pub fn progress_apart(reasons: &[String], w: &AtWork<'_>) -> (Vec<String>, Vec<String>) {
    let lock = w.holder.map(lock_held);
    let staging = staging_not_empty("runbook", w.staging);
    let only_restarting = w
        .staged
        .iter()
        .all(|e| w.restarting.is_some_and(|c| *e == c.manifest_file()));
    reasons.iter().cloned().partition(|r| {
        Some(r) == lock.as_ref()
            || r == w.phase
            || (only_restarting && *r == staging)
            || w.restarting
                .is_some_and(|c| r.starts_with(&format!("{c} ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PHASE: &str = "restart_pending (next: kube-apiserver), operation op-1";

    fn at_work<'a>(staged: &'a [String], restarting: Option<Component>) -> AtWork<'a> {
        AtWork {
            holder: Some("pid 7 (renew op-1)"),
            phase: PHASE,
            staging: "/etc/kubernetes/nvke-staging",
            staged,
            restarting,
        }
    }

    fn reasons() -> Vec<String> {
        vec![
            lock_held("pid 7 (renew op-1)"),
            PHASE.to_string(),
            "kube-apiserver manifest is staged in the runbook's staging directory and not active"
                .to_string(),
            staging_not_empty("runbook", "/etc/kubernetes/nvke-staging"),
            "etcd is not running".to_string(),
        ]
    }

    #[test]
    fn the_restart_at_work_is_progress_and_other_pods_are_problems() {
        let staged = ["kube-apiserver.yaml".to_string()];
        let r = reasons();
        let (progress, problems) =
            progress_apart(&r, &at_work(&staged, Some(Component::KubeApiserver)));
        assert_eq!(progress, r[..4].to_vec());
        assert_eq!(problems, vec!["etcd is not running".to_string()]);
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
        assert_eq!(problems, vec![r[2].clone(), r[4].clone()]);
        let staged = ["etcd.yaml".to_string()];
        let (progress, _) = progress_apart(&r, &at_work(&staged, None));
        assert_eq!(progress, r[..2].to_vec());
    }

    #[test]
    fn the_reasons_are_worded_once() {
        assert_eq!(lock_held("pid 7"), "the renewal lock is held by pid 7");
        assert_eq!(
            staging_not_empty("node agent", "/x"),
            "the node agent staging directory /x is not empty"
        );
    }
}
