//! Step 6: is any leaf due (a recovery's: `recovery.rs`). Fresh work
//! that is not forced ends here,
//! `unchanged`, when none is. Any work, forced or resumed, ends here,
//! failed, when a leaf has expired or is not valid yet (SPEC 11, v1.2):
//! the health gate that follows could never pass. A recovery's unfinished
//! work is refused here in its own words (SPEC 11, v1.3: only
//! `--recover-expired` resumes it while a leaf is expired); with every
//! leaf valid, the renewal's table finishes it, gate and all.

use crate::contract::cli::Request;
use crate::judge::renew;
use crate::modes::runbook::run::{Found, Tools};
use crate::node::node_pki;
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::expiry::{refusal, resumed_recovery_refusal, Next};
use crate::rules::failure::{fail, Fail};
use crate::rules::outcome::Phase;
use crate::rules::resume::Progress;

/// The certificates before the run touches them ([`Found::Before`]), or,
/// when fresh, unforced work finds no leaf due, [`Found::Unchanged`]; a
/// failure when a leaf has expired or is not valid yet.
pub(in crate::modes::runbook) fn expiry(
    op: &Operation<'_>,
    t: &Tools<'_>,
    req: &Request,
    start: Progress,
) -> Result<Found, Fail> {
    let _step = StepLog::new("expiry");
    let pki = node_pki::read(t.root);
    let now = t.now();
    let leaves = pki.validity();
    let (recover, renew) = t.fresh_commands();
    let next = Next {
        recover: &recover,
        renew: &renew,
    };
    let refused = match &op.phase.resumed_recovery {
        Some(r) => resumed_recovery_refusal(&leaves, now, (r.operation_id.as_str(), &r.at), next),
        None => refusal(&leaves, now, next),
    };
    if let Some(why) = refused {
        return Err(fail(Phase::Expiry, why));
    }
    if let Some(r) = &op.phase.resumed_recovery {
        tracing::info!(
            recovery = r.operation_id.as_str(),
            "finishing an unfinished recovery as a renewal: no leaf has expired, so the whole health gate comes before every restart"
        );
    }
    // Before kubeadm runs (fresh work, or `renewing` again): a leaf to
    // renew under a CA that ends within the threshold cannot be moved
    // past it; refused at once (SPEC 4 step 8, v1.3).
    if matches!(start, Progress::Fresh | Progress::Renewing) {
        let walls = pki.ca_walls(now, t.g.threshold_days, req.force());
        if !walls.is_empty() {
            return Err(wall_refusal(op, start, walls));
        }
    }
    if start == Progress::Fresh && !req.force() {
        let errors = pki.errors();
        if !errors.is_empty() {
            return Err(fail(Phase::Expiry, errors.join("; ")));
        }
        let due = pki.leaves_due(now, t.g.threshold_days);
        if due.is_empty() {
            let why = renew::nothing_due(&pki, now, t.g.threshold_days);
            return Ok(Found::Unchanged(pki, why));
        }
    }
    Ok(Found::Before(pki))
}

/// The refusal for CAs that end within the threshold (SPEC 4 step 8,
/// v1.3), in phase `expiry`. Work resumed at `renewing` (a kubeadm ran,
/// then the run died) first puts its backup back, as a failed renewal
/// would: the node is left with the certificates it had.
pub(in crate::modes::runbook) fn wall_refusal(
    op: &Operation<'_>,
    start: Progress,
    walls: Vec<String>,
) -> Fail {
    let why = walls.join("; ");
    // No complete backup: the run died before it, so kubeadm never ran.
    if start != Progress::Renewing || !matches!(op.backed_up(), Ok(Some(_))) {
        return fail(Phase::Expiry, why);
    }
    let tail = match op.rollback() {
        Ok(n) => format!("the backup was put back ({n} files rewritten)"),
        Err(e) => format!("PUTTING THE BACKUP BACK FAILED: {e}"),
    };
    fail(
        Phase::Expiry,
        crate::rules::receipt::with_tail(&why, "; ", &tail),
    )
}
