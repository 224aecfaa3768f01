//! Step 6: is any leaf due. Fresh work that is not forced ends here,
//! `unchanged`, when none is. Any work, forced or resumed, ends here,
//! failed, when a leaf has expired or is not valid yet (SPEC 11, v1.2):
//! the health gate that follows could never pass.

use crate::modes::runbook::*;

impl Run<'_> {
    /// The certificates before the run touches them; `Some(unchanged)` when
    /// fresh, unforced work finds no leaf due; a failure when a leaf has
    /// expired or is not valid yet.
    pub(in crate::modes::runbook) fn expiry(&mut self) -> Result<Option<Success>, Fail> {
        let _step = StepLog::new("expiry");
        let pki = node_pki::read(self.env.root);
        let now = self.env.now();
        let leaves = pki.validity();
        if self.phase.recovery {
            // A recovery (SPEC 11): for a node whose leaves expired (work
            // it takes over from a renewal too: without an expired leaf,
            // that renewal's gate is what must pass); a recovery's own work
            // resumed is finished whatever the leaves say. It renews
            // whatever is due, so nothing ends it `unchanged`.
            let needs_expired = !self.phase.resumed_recovery;
            if let Some(why) = crate::rules::expiry::recovery_refusal(&leaves, now, needs_expired) {
                return Err(fail(Phase::Expiry, why));
            }
            let expired = crate::rules::expiry::expired_words(&leaves, now);
            tracing::info!(
                expired = expired.join(", "),
                "recovery: no health gate before the renewal; after each restart the new container must serve the renewed certificate"
            );
            self.report.before = Some(pki);
            return Ok(None);
        }
        if let Some(why) = crate::rules::expiry::refusal(&leaves, now) {
            return Err(fail(Phase::Expiry, why));
        }
        if self.start == Start::Fresh && !self.env.req.force() {
            let errors = pki.errors();
            if !errors.is_empty() {
                return Err(fail(Phase::Expiry, errors.join("; ")));
            }
            let due = pki.leaves_due(now, self.env.g.threshold_days);
            if due.is_empty() {
                self.report.before = Some(pki.clone());
                let soonest = pki
                    .soonest_leaf(now)
                    .map(|(n, d)| format!(" (soonest: {n} in {d} days)"))
                    .unwrap_or_default();
                return Ok(Some(Success::Unchanged(format!(
                    "no leaf expires within {} days{soonest}; nothing renewed, nothing restarted",
                    self.env.g.threshold_days
                ))));
            }
        }
        self.report.before = Some(pki);
        Ok(None)
    }
}
