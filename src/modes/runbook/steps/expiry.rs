//! Step 6: is any leaf due (a recovery's: `recovery.rs`). Fresh work
//! that is not forced ends here,
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
                let why = renew::nothing_due(&pki, now, self.env.g.threshold_days);
                return Ok(Some(Success::Unchanged(why)));
            }
        }
        self.report.before = Some(pki);
        Ok(None)
    }
}
