//! Before anything is read, the deadline; then step 3: the phase file, and
//! where the work starts.

use crate::modes::runbook::run::{cancelled, Tools};
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::rules::failure::{fail, Cause, Fail};
use crate::rules::resume::Progress;

/// Right after the own-receipt check: an attempt that arrives after the
/// controller's deadline fences itself, reading and changing nothing else
/// (SPEC 4 "Deadline", v1.1); a signal already received is honoured here
/// too.
pub(in crate::modes::runbook) fn deadline(t: &Tools<'_>) -> Result<(), Fail> {
    if t.cancel.is_cancelled() {
        let why = format!(
            "{} before this attempt began: the phase file was not read, nothing changed",
            t.cancel.why()
        );
        return Err(Fail {
            cause: Cause::Cancelled(why),
            ..cancelled(t.cancel, None)
        });
    }
    Ok(())
}

/// Step 3: read the phase file and take up the work it records; where the
/// work starts.
pub(in crate::modes::runbook) fn take_up(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
) -> Result<Progress, Fail> {
    let step = StepLog::new("phase-file");
    let start = op
        .phase
        .take_up(|| t.now())
        .map_err(|e| fail(e.phase(), e.to_string()))?;
    drop(step);
    t.check_cancel(None)?;
    Ok(start)
}
