//! The controller's fencing check (SPEC 6, `--status-only --operation-id
//! ID --fence`): under the lock, put back what a dead run left staged, then
//! confirm from a receipt, abandon without one (recording an `abandoned`
//! receipt), or answer unconfirmed. The plan is `judge::status::fence_plan`.

use crate::contract as doc;
use crate::contract::cli::Global;
use crate::judge::fence::{render, unconfirmed, unconfirmed_after, FenceOutcome};
use crate::judge::status::fence_plan;
use crate::modes::output::Report;
use crate::node::fence::{put_back, OwnerRecord};
use crate::node::fsx::{Dir, Root};
use crate::node::inspect::{self, PhaseReport, ReceiptLookup};
use crate::node::lock::{self, LockError};
use crate::node::manifests::{self, ManifestsReport};
use crate::node::statedir::{receipt_of, StateDir};
use crate::rules::component::Component;
use crate::rules::fence::FencePlan;
use crate::rules::opid::OperationId;
use crate::rules::outcome::exit;
use crate::rules::receipt::Receipt;
use crate::tools::signals::Cancel;

fn fence_inner(root: &Root, g: &Global, id: &OperationId, cancel: &Cancel) -> FenceOutcome {
    let now = g.clock.now();
    // `--deadline` (SPEC 6, v1.1): a check that begins after it writes
    // nothing; one whose lock wait reaches it stops waiting.
    let cancel = cancel.clone().with_deadline_of(g);
    let deadline = g.deadline.as_ref().map(|(_, t)| t.as_str()).unwrap_or("");
    if cancel.deadline_passed() {
        return unconfirmed(
            exit::FAILED,
            doc::FenceReason::Deadline,
            format!("termination unconfirmed: the controller's deadline {deadline} passed before the fencing check began; nothing was written"),
        );
    }
    let state = match StateDir::create(root) {
        Ok(s) => s,
        Err(e) => {
            return unconfirmed(
                exit::FAILED,
                doc::FenceReason::WriteFailed,
                format!("state directory: {e}"),
            )
        }
    };
    let guard = match lock::acquire(&state, g.lock_timeout, &|| cancel.is_cancelled()) {
        Ok(guard) => guard,
        Err(e) => return lock_refused(e, &cancel, deadline, &state, id),
    };
    // The lock is held from here on: every answer below comes after the
    // put-back of what a dead run left staged.
    let mut owner = OwnerRecord::new(&guard, &state, id, now);
    let at = Fencing {
        root,
        state: &state,
        id,
        now,
    };
    under_lock(&at, &mut owner)
}

/// The lock was not taken: unconfirmed (`judge::fence::lock_refused`),
/// with the receipt the operation has, if any (receipts are immutable: it
/// is read without the lock).
fn lock_refused(
    e: LockError,
    cancel: &Cancel,
    deadline: &str,
    state: &Dir,
    id: &OperationId,
) -> FenceOutcome {
    let found = match receipt_of(state, id) {
        Ok(Some(ReceiptLookup::Found(r))) => Some(*r),
        _ => None,
    };
    crate::judge::fence::lock_refused(e, cancel.deadline_passed(), deadline, found)
}

/// With the lock held: read the receipts, the phase file and where the
/// manifests are, plan, and carry the plan out.
fn under_lock(at: &Fencing<'_>, owner: &mut OwnerRecord<'_>) -> FenceOutcome {
    let Fencing {
        root, state, id, ..
    } = *at;
    let m = manifests::placement(root);
    let lookup = match receipt_of(state, id) {
        Ok(lookup) => lookup,
        Err(e) => {
            let pb = put_back(root, &m, &m.staged_not_active(), owner);
            let message = format!("receipts directory: {e}{}", pb.describe());
            return unconfirmed_after(
                exit::FAILED,
                doc::FenceReason::MalformedReceipt,
                message,
                pb,
            );
        }
    };
    let phase = inspect::read_phase(Some(state));
    match fence_plan(lookup.as_ref(), &phase, &m) {
        FencePlan::Confirm {
            receipt: r,
            restore,
        } => confirm(at, owner, &m, &restore, *r),
        FencePlan::Refuse {
            why,
            reason,
            restore,
        } => {
            // Unconfirmed, and still the staged manifests go back first
            // (SPEC 6, v1.1): the lock is held, so no run is mid-restart.
            // Over a malformed phase file or receipt too: the put-back is a
            // restoration of the node, not a record of the operation. It
            // writes no receipt and no phase file, judges no operation, and
            // does what the dead run's own exit would have done; the
            // answer stays unconfirmed and "nothing written" still holds
            // for the operation's records. The owner record is written only
            // right before the first move, so a check that moves nothing
            // writes nothing at all.
            let pb = put_back(root, &m, &restore, owner);
            let message = format!("termination unconfirmed: {why}{}", pb.describe());
            unconfirmed_after(exit::FAILED, reason, message, pb)
        }
        FencePlan::Abandon { restore } => abandon(at, owner, &m, &restore, &phase),
    }
}

/// `FencePlan::Confirm`: the operation has a receipt. The put-back, then
/// confirmed, unless a write failed (`judge::fence::existing`).
fn confirm(
    at: &Fencing<'_>,
    owner: &mut OwnerRecord<'_>,
    m: &ManifestsReport,
    restore: &[Component],
    r: Receipt,
) -> FenceOutcome {
    let pb = put_back(at.root, m, restore, owner);
    crate::judge::fence::existing(at.id, r, pb)
}

/// `FencePlan::Abandon`: no receipt. The owner record, the put-back of what
/// the dead run left staged, then the `abandoned` receipt (SPEC 6;
/// `node::fence::abandon`), answered by `judge::fence::abandoned`.
fn abandon(
    at: &Fencing<'_>,
    owner: &mut OwnerRecord<'_>,
    m: &ManifestsReport,
    restore: &[Component],
    phase: &PhaseReport,
) -> FenceOutcome {
    let plan = (m, restore, phase);
    let done = crate::node::fence::abandon(at.root, at.state, at.id, plan, owner, at.now);
    crate::judge::fence::abandoned(at.id, done)
}

/// Where and when a fencing check runs, under the lock.
#[derive(Clone, Copy)]
struct Fencing<'a> {
    root: &'a Root,
    state: &'a Dir,
    id: &'a OperationId,
    now: time::OffsetDateTime,
}

/// The fencing check (mutating; under the lock).
///
/// `cancel` carries SIGTERM and SIGINT (the controller's executor sends
/// SIGTERM when its context ends): they end the lock wait, never the check
/// once it holds the lock, which then takes milliseconds.
pub fn fence(root: &Root, g: &Global, id: &OperationId, cancel: &Cancel) -> Report {
    let o = fence_inner(root, g, id, cancel);
    let m = manifests::placement(root);
    let (document, text) = render(id, &o, &m);
    Report {
        code: o.code,
        doc: Box::new(document),
        text,
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests stage manifests and read their temp node directly
mod tests {
    //! SPEC 6: the fencing check (confirm from a receipt, abandon without
    //! one, never abandon unfinished legacy work, unconfirmed over
    //! malformed records or a held lock; in every outcome the manifests a
    //! dead run left staged go back first), on the rsa fixture node.
    use super::*;
    use crate::modes::status::tests::{global, leave_staged};
    use crate::node::inspect::state_files::*;
    use crate::node::inspect::PhaseJudgement;
    use crate::node::paths::{COMPLETED_DIR, MANIFESTS_DIR, STAGING_DIR, STATE_DIR};
    use crate::rules::outcome::{ManifestLocation, Phase};
    use crate::rules::phase::PhaseFile;
    use crate::rules::phase::PhaseState;
    use crate::tools::runtime::double::node_tree;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    fn active(t: &Path, c: Component) -> bool {
        t.join(MANIFESTS_DIR).join(c.manifest_file()).is_file()
    }

    fn receipt_path(t: &Path, op: &str) -> PathBuf {
        t.join(STATE_DIR)
            .join(COMPLETED_DIR)
            .join(format!("{op}.json"))
    }

    fn phase_report(file: Option<PhaseFile>, judgement: PhaseJudgement) -> PhaseReport {
        PhaseReport {
            file,
            receipt_of_phase_op: None,
            judgement,
        }
    }

    fn action(p: &FencePlan) -> &'static str {
        match p {
            FencePlan::Confirm { .. } => "confirm",
            FencePlan::Abandon { .. } => "abandon",
            FencePlan::Refuse { .. } => "refuse",
        }
    }

    /// SPEC 6, "Fencing check", as a decision, with etcd left staged.
    #[test]
    fn the_fencing_plan_follows_the_contract() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::Etcd);
        let m = manifests::inspect(&Root::open(t.path()).unwrap());
        let found = Some(ReceiptLookup::Found(Box::new(receipt(
            "op-1",
            crate::rules::outcome::Outcome::Failed,
        ))));
        let absent = None;
        let malformed = Some(ReceiptLookup::malformed("bad json"));
        let no_phase = phase_report(None, PhaseJudgement::Absent);
        let unfinished_v2 = phase_report(
            Some(v2(
                "op-0",
                PhaseState::RestartPending,
                Some(Component::Etcd),
            )),
            PhaseJudgement::Pending,
        );
        let done_v2 = phase_report(
            Some(v2("op-0", PhaseState::Done, None)),
            PhaseJudgement::Done,
        );
        let unfinished_legacy = phase_report(
            Some(legacy(PhaseState::RestartPending, Some(Component::Etcd))),
            PhaseJudgement::Pending,
        );
        let done_legacy = phase_report(Some(legacy(PhaseState::Done, None)), PhaseJudgement::Done);
        let bad_phase = phase_report(None, PhaseJudgement::Malformed("line 1".into()));
        for (receipt, phase, expected) in [
            (&found, &unfinished_legacy, "confirm"),
            (&found, &bad_phase, "confirm"),
            (&malformed, &no_phase, "refuse"),
            (&absent, &no_phase, "abandon"),
            (&absent, &unfinished_v2, "abandon"),
            (&absent, &done_v2, "abandon"),
            (&absent, &done_legacy, "abandon"),
            (&absent, &unfinished_legacy, "refuse"),
            (&absent, &bad_phase, "refuse"),
        ] {
            let plan = fence_plan(receipt.as_ref(), phase, &m);
            assert_eq!(action(&plan), expected, "{receipt:?} {phase:?}");
            // In every outcome, what the dead run left staged goes back.
            assert_eq!(plan.restore(), [Component::Etcd], "{plan:?}");
        }
        match fence_plan(absent.as_ref(), &unfinished_legacy, &m) {
            FencePlan::Refuse { why, .. } => assert!(why.contains("legacy"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// SPEC 6: only a manifest staged and not active is put back; one both
    /// staged and active is never moved.
    #[test]
    fn a_manifest_both_staged_and_active_is_never_put_back() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::KubeScheduler);
        std::fs::copy(
            t.path()
                .join(STAGING_DIR)
                .join(Component::KubeScheduler.manifest_file()),
            t.path()
                .join(MANIFESTS_DIR)
                .join(Component::KubeScheduler.manifest_file()),
        )
        .unwrap();
        leave_staged(t.path(), Component::Etcd);
        let m = manifests::inspect(&Root::open(t.path()).unwrap());
        assert_eq!(m.staged_not_active(), [Component::Etcd]);
    }

    /// SPEC 6: no receipt and V2 work: record `abandoned` (where the
    /// operation stood), put back what the dead run left staged,
    /// `confirmed`; the unfinished phase file stays for the next operation.
    /// A second check finds that receipt and leaves it as it is.
    #[test]
    fn fencing_without_a_receipt_abandons_and_puts_back() {
        let t = node_tree("rsa");
        let c = Component::KubeApiserver;
        write_phase(t.path(), &v2("op-1", PhaseState::RestartPending, Some(c)));
        leave_staged(t.path(), c);
        let phase_file = t
            .path()
            .join(STATE_DIR)
            .join(crate::node::paths::PHASE_FILE);
        let phase_before = std::fs::read(&phase_file).unwrap();
        let root = Root::open(t.path()).unwrap();
        let g = global(t.path());
        let r = fence(&root, &g, &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "confirmed");
        assert_eq!(r.json()["action"], "abandoned");
        assert_eq!(r.json()["restored"], serde_json::json!(["kube-apiserver"]));
        assert!(active(t.path(), c));
        assert!(!t.path().join(STAGING_DIR).join(c.manifest_file()).exists());
        let receipt = std::fs::read(receipt_path(t.path(), "op-1")).unwrap();
        let parsed = crate::rules::receipt::parse_receipt(&receipt, &id("op-1")).unwrap();
        assert_eq!(parsed.outcome, crate::rules::outcome::Outcome::Abandoned);
        assert_eq!(parsed.phase, Phase::Restart(c));
        assert_eq!(parsed.failed_component, Some(c));
        assert!(parsed
            .manifests
            .iter()
            .all(|(_, l)| l == ManifestLocation::Active));
        assert_eq!(std::fs::read(&phase_file).unwrap(), phase_before);
        let owner = std::fs::read_to_string(t.path().join(STATE_DIR).join("owner")).unwrap();
        assert!(owner.contains("\"mode\":\"status-fence\""), "{owner}");
        let again = fence(&root, &g, &id("op-1"), &Cancel::new());
        assert_eq!(again.code, exit::OK, "{:#}", again.json());
        assert_eq!(again.json()["action"], "existing-receipt");
        assert_eq!(again.json()["outcome"], "abandoned");
        assert_eq!(
            std::fs::read(receipt_path(t.path(), "op-1")).unwrap(),
            receipt
        );
    }

    /// SPEC 10, "Bounded reads" (issue 25): an alias bomb among the strays
    /// of `manifests/` (6,000 aliases: about 10^8 nodes once expanded, which
    /// aborted every mode before) never keeps a pod down: with etcd left
    /// staged by a dead run, the fencing check puts it back and confirms,
    /// reading no file's contents on the way; the operator view then
    /// refuses the bomb, naming it.
    #[test]
    fn a_hostile_stray_never_keeps_a_staged_manifest_from_going_back() {
        let t = node_tree("rsa");
        let c = Component::Etcd;
        write_phase(t.path(), &v2("op-1", PhaseState::RestartPending, Some(c)));
        leave_staged(t.path(), c);
        // The 56 KB file of issue 25: one anchor of 16,000 scalars.
        let mut bomb = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd-copy\n  annotations:\n    a: &a [{}]\n    b: [",
            ["x"; 16_000].join(",")
        );
        bomb.push_str(&["*a"; 6000].join(", "));
        bomb.push_str("]\n");
        write_raw(
            &t.path().join(MANIFESTS_DIR).join("bomb.yaml"),
            bomb.as_bytes(),
        );
        let root = Root::open(t.path()).unwrap();
        let g = global(t.path());
        let r = fence(&root, &g, &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "confirmed");
        assert_eq!(r.json()["restored"], serde_json::json!(["etcd"]));
        assert!(active(t.path(), c));
        assert!(!t.path().join(STAGING_DIR).join(c.manifest_file()).exists());
        // What the read-only modes read: the bomb is refused, named.
        let m = manifests::inspect(&root);
        assert_eq!(
            m.hostile,
            vec!["/etc/kubernetes/manifests/bomb.yaml is hostile YAML (more than 100000 nodes); refusing to read it".to_string()]
        );
        assert!(m
            .problems()
            .iter()
            .any(|p| p.contains("bomb.yaml is hostile YAML")));
        // And the put-back itself never reads it: placement alone.
        assert!(manifests::placement(&root).hostile.is_empty());
    }

    /// SPEC 6: unfinished legacy work carries no operation ID and is never
    /// abandoned: unconfirmed, no receipt; still (v1.1) the staged manifest
    /// goes back.
    #[test]
    fn unfinished_legacy_work_is_never_abandoned_but_its_manifest_goes_back() {
        let t = node_tree("rsa");
        let c = Component::Etcd;
        write_phase(t.path(), &legacy(PhaseState::RestartPending, Some(c)));
        leave_staged(t.path(), c);
        let root = Root::open(t.path()).unwrap();
        let r = fence(&root, &global(t.path()), &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::FAILED, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "unconfirmed");
        assert_eq!(r.json()["restored"], serde_json::json!(["etcd"]));
        assert!(active(t.path(), c));
        assert!(!receipt_path(t.path(), "op-1").exists());
    }

    /// SPEC 6: a malformed receipt is unconfirmed and nothing is written
    /// (the receipt stays as it is, no owner record: a check that changes
    /// nothing writes nothing).
    #[test]
    fn a_malformed_receipt_is_unconfirmed_and_nothing_is_written() {
        let t = node_tree("rsa");
        state_dir(t.path());
        write_raw(&receipt_path(t.path(), "op-1"), b"{\"format\": 1}");
        let root = Root::open(t.path()).unwrap();
        let r = fence(&root, &global(t.path()), &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::FAILED, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "unconfirmed");
        assert_eq!(
            std::fs::read(receipt_path(t.path(), "op-1")).unwrap(),
            b"{\"format\": 1}"
        );
        assert!(!t.path().join(STATE_DIR).join("owner").exists());
        assert!(!t.path().join(STATE_DIR).join("phase").exists());
    }

    /// SPEC 6: the lock stays held: exit 3, unconfirmed, no receipt.
    #[test]
    fn a_lock_that_stays_held_is_unconfirmed_with_exit_3() {
        let t = node_tree("rsa");
        state_dir(t.path());
        let root = Root::open(t.path()).unwrap();
        let state = StateDir::open(&root).unwrap().unwrap();
        let _held = lock::acquire(&state, Duration::from_secs(1), &|| false).unwrap();
        let r = fence(&root, &global(t.path()), &id("op-1"), &Cancel::new());
        assert_eq!(r.code, exit::LOCK_TIMEOUT, "{:#}", r.json());
        assert_eq!(r.json()["termination"], "unconfirmed");
        assert_eq!(r.json()["reason"], "lock-timeout");
        assert!(!receipt_path(t.path(), "op-1").exists());
        // SIGTERM (the executor's context ended) ends the wait at once,
        // long before --lock-timeout: unconfirmed, reason deadline, exit 3.
        let g = Global {
            lock_timeout: Duration::from_secs(60),
            ..global(t.path())
        };
        let sigterm = Cancel::new();
        sigterm.cancel();
        let started = std::time::Instant::now();
        let r = fence(&root, &g, &id("op-1"), &sigterm);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the wait was not ended"
        );
        assert_eq!(r.code, exit::LOCK_TIMEOUT, "{:#}", r.json());
        assert_eq!(r.json()["reason"], "deadline");
        assert!(
            r.json()["message"]
                .as_str()
                .unwrap()
                .contains("a signal (SIGTERM/SIGINT) ended the wait"),
            "{:#}",
            r.json()
        );
        assert!(!receipt_path(t.path(), "op-1").exists());
    }

    /// A signal before the fencing check: the free lock is still taken and
    /// the check runs to its end (a signal never cuts it short once it
    /// holds the lock).
    #[test]
    fn a_signal_never_cuts_a_fencing_check_that_holds_the_lock() {
        let t = node_tree("rsa");
        leave_staged(t.path(), Component::KubeApiserver);
        let root = Root::open(t.path()).unwrap();
        let sigterm = Cancel::new();
        sigterm.cancel();
        let r = fence(&root, &global(t.path()), &id("op-1"), &sigterm);
        assert_eq!(r.code, exit::OK, "{:#}", r.json());
        assert_eq!(r.json()["reason"], "abandoned");
        assert!(active(t.path(), Component::KubeApiserver));
        assert!(receipt_path(t.path(), "op-1").exists());
    }
}
