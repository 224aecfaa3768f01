//! Step 6: is any leaf due (a recovery's: `recovery.rs`). Fresh work
//! that is not forced ends here,
//! `unchanged`, when none is. Any work, forced or resumed, ends here,
//! failed, when a leaf has expired or is not valid yet (SPEC 11, v1.2):
//! the health gate that follows could never pass. A recovery's unfinished
//! work is refused here in its own words (SPEC 11, v1.3: only
//! `--recover-expired` resumes it while a leaf is expired); with every
//! leaf valid, the renewal's table finishes it, gate and all.

use crate::judge::renew;
use crate::modes::runbook::Run;
use crate::node::node_pki;
use crate::node::oplog::StepLog;
use crate::rules::failure::{fail, Fail, Success};
use crate::rules::outcome::Phase;
use crate::rules::resume::Start;

impl Run<'_> {
    /// The certificates before the run touches them; `Some(unchanged)` when
    /// fresh, unforced work finds no leaf due; a failure when a leaf has
    /// expired or is not valid yet.
    pub(in crate::modes::runbook) fn expiry(&mut self) -> Result<Option<Success>, Fail> {
        let _step = StepLog::new("expiry");
        let pki = node_pki::read(self.env.root);
        let now = self.env.now();
        let leaves = pki.validity();
        let (recover, renew) = self.fresh_commands();
        let next = crate::rules::expiry::Next {
            recover: &recover,
            renew: &renew,
        };
        let refused = match &self.op.phase.resumed_recovery {
            Some(r) => crate::rules::expiry::resumed_recovery_refusal(
                &leaves,
                now,
                (r.operation_id.as_str(), &r.at),
                next,
            ),
            None => crate::rules::expiry::refusal(&leaves, now, next),
        };
        if let Some(why) = refused {
            return Err(fail(Phase::Expiry, why));
        }
        if let Some(r) = &self.op.phase.resumed_recovery {
            tracing::info!(
                recovery = r.operation_id.as_str(),
                "finishing an unfinished recovery as a renewal: no leaf has expired, so the whole health gate comes before every restart"
            );
        }
        if self.start == Start::Fresh && !self.env.req.force() {
            let errors = pki.errors();
            if !errors.is_empty() {
                return Err(fail(Phase::Expiry, errors.join("; ")));
            }
            let due = pki.leaves_due(now, self.env.g.threshold_days);
            if due.is_empty() {
                self.report.before = Some(pki.clone());
                let why = renew::nothing_due(&pki, now, self.env.g.threshold_days);
                return Ok(Some(Success::Unchanged(why)));
            }
        }
        self.report.before = Some(pki);
        Ok(None)
    }
}
