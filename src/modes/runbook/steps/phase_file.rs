//! Before anything is read, the deadline; then step 3: the phase file, and
//! where the work starts.

use crate::modes::runbook::{cancelled, Run};
use crate::node::oplog::StepLog;
use crate::rules::failure::{fail, Cause, Fail};

impl Run<'_> {
    /// Right after the own-receipt check: an attempt that arrives after the
    /// controller's deadline fences itself, reading and changing nothing
    /// else (SPEC 4 "Deadline", v1.1); a signal already received is
    /// honoured here too.
    pub(in crate::modes::runbook) fn deadline(&mut self) -> Result<(), Fail> {
        if self.env.cancel.is_cancelled() {
            let why = format!(
                "{} before this attempt began: the phase file was not read, nothing changed",
                self.env.cancel.why()
            );
            return Err(Fail {
                cause: Cause::Cancelled(why),
                ..cancelled(self.env.cancel, None)
            });
        }
        Ok(())
    }

    /// Step 3: read the phase file; `start` is where the work begins.
    pub(in crate::modes::runbook) fn phase_file(&mut self) -> Result<(), Fail> {
        let step = StepLog::new("phase-file");
        let env = self.env;
        self.start = self
            .op
            .phase
            .take_up(|| env.now())
            .map_err(|e| fail(e.phase(), e.to_string()))?;
        drop(step);
        self.env.check_cancel(None)
    }
}
