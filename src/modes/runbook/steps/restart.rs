//! Step 9: one component's restart; what it asks before and after, the
//! table's [`Way`] says (a recovery's: `recovery.rs`).

use super::{Step, Way};
use crate::contract::Restart;
use crate::modes::runbook::run::{record, Seen, Tools};
use crate::node::operation::Operation;
use crate::node::oplog::StepLog;
use crate::node::staging::{Dirs, Restore};
use crate::rules::component::Component;
use crate::rules::failure::{restart_failed, Fail};
use crate::tools::health;
use std::time::Instant;

/// Step 9 for `c`, unless a signal came: the container it replaces (as
/// `way` asks), the moves, and, once `c` is healthy, its successor
/// recorded. The restart as the result lists it.
pub(in crate::modes::runbook) fn restart(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    seen: &mut Seen,
    way: Way,
    c: Component,
) -> Result<Restart, Fail> {
    t.check_cancel(Some(c))?;
    let next = Step::Restart(c)
        .records()
        .expect("a restart records the next one");
    let _step = StepLog::new(format!("restart:{c}"));
    let t_start = Instant::now();
    let old = (way.old)(t, seen, c)?;
    t.check_cancel(Some(c))?;
    // The local kube-apiserver's /readyz, probed beside the restart from
    // the staging of the manifest to the new container healthy (SPEC 7,
    // v1.2: apiUnavailableMs).
    let (moved, api_unavailable_ms) = std::thread::scope(|s| {
        let api = crate::tools::apiwatch::Watch::start(s, t.rt, t.root, t.now(), t.cancel);
        let moved = moves(op, t, seen, way, c, &old);
        (moved, api.finish())
    });
    let (new, stop_ms, healthy_ms) = moved?;
    tracing::info!(
        component = c.name(),
        old = health::short(&old),
        new = health::short(&new),
        stop_ms,
        healthy_ms,
        api_unavailable_ms,
        "restarted"
    );
    crate::crash_point!("restart-before-record");
    record(op, t, next)?;
    Ok(Restart {
        component: c,
        old_container_id: old,
        new_container_id: new,
        stop_ms,
        healthy_ms,
        total_ms: t_start.elapsed().as_millis() as u64,
        api_unavailable_ms,
    })
}

/// The moves of `c`'s restart, whose container `old` runs: stage its
/// manifest, wait for `old` to stop, put the manifest back, wait for a new
/// container to run and for what `way` asks after it. The new container's
/// ID, and the milliseconds to stop and to healthy.
fn moves(
    op: &mut Operation<'_>,
    t: &Tools<'_>,
    seen: &mut Seen,
    way: Way,
    c: Component,
    old: &str,
) -> Result<(String, u64, u64), Fail> {
    let dirs = Dirs::open(t.root, true).map_err(|e| restart_failed(c, e.to_string()))?;
    // The kubelet's link of the old container, looked for while it runs:
    // whether the start wait may sleep until the kubelet links the new one.
    let linked = crate::tools::pidwatch::NewContainers::linked(t.root, old);
    // Out from the moment the move is tried: after any error the failure
    // path looks where the manifest is and puts it back.
    seen.last_gate = None;
    op.stage(&dirs, c)
        .map_err(|e| restart_failed(c, e.to_string()))?;
    crate::crash_point!("restart-after-stage");
    tracing::info!(
        component = c.name(),
        old = health::short(old),
        "manifest staged; waiting for the container to stop"
    );
    let t0 = Instant::now();
    t.health(seen)
        .wait_stopped(c, old, t.g.stop_timeout)
        .map_err(|e| t.gate_fail(e, Some(c)))?;
    let stop_ms = t0.elapsed().as_millis() as u64;
    crate::crash_point!("restart-after-stop");
    // Watch for the kubelet's new container before the manifest goes back,
    // so that its creation cannot slip by (a wake-up hint only).
    let created = crate::tools::pidwatch::NewContainers::watch(
        &t.root
            .host_path()
            .join(crate::node::paths::CONTAINER_LOGS_DIR),
        linked,
    );
    if let Restore::Conflict(msg) = op
        .unstage(&dirs)
        .map_err(|e| restart_failed(c, format!("putting the manifest back failed: {e}")))?
    {
        return Err(restart_failed(c, msg));
    }
    crate::crash_point!("restart-after-unstage");
    let t1 = Instant::now();
    let deadline = t1 + t.g.health_timeout;
    let new = t
        .health(seen)
        .wait_new_running(c, old, deadline, t.g.health_timeout, created.as_ref())
        .map_err(|e| t.gate_fail(e, Some(c)))?;
    // From now on every gate checks it still runs this container.
    seen.stay.push((c, new.clone()));
    seen.last_restart = Some(Instant::now());
    (way.after_restart)(t, seen, c, deadline)?;
    let healthy_ms = t1.elapsed().as_millis() as u64;
    Ok((new, stop_ms, healthy_ms))
}
