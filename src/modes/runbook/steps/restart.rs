//! Step 9: one component's restart; what it asks before and after, the
//! table's [`super::Way`] says (a recovery's: `recovery.rs`).

use super::Step;
use crate::contract::Restart;
use crate::modes::runbook::Run;
use crate::node::oplog::StepLog;
use crate::node::staging::{Dirs, Restore};
use crate::rules::component::Component;
use crate::rules::failure::{restart_failed, Fail, Progress};
use crate::tools::health;
use std::time::Instant;

impl Run<'_> {
    /// StepLog 9 for one component; `next` is recorded once it is healthy.
    pub(in crate::modes::runbook) fn restart(
        &mut self,
        c: Component,
        next: Progress,
    ) -> Result<(), Fail> {
        let _step = StepLog::new(format!("restart:{c}"));
        let t_start = Instant::now();
        let way = self.table().way();
        let old = (way.old)(self, c)?;
        self.env.check_cancel(Some(c))?;
        // The local kube-apiserver's /readyz, probed beside the restart
        // from the staging of the manifest to the new container healthy
        // (SPEC 7, v1.2: apiUnavailableMs).
        let (rt, root, now, cancel) = (self.env.rt, self.env.root, self.env.now(), self.env.cancel);
        let (moved, api_unavailable_ms) = std::thread::scope(|s| {
            let api = crate::tools::apiwatch::Watch::start(s, rt, root, now, cancel);
            let moved = self.restart_moves(c, &old);
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
        self.record(next)?;
        self.report.restarts.push(Restart {
            component: c,
            old_container_id: old,
            new_container_id: new,
            stop_ms,
            healthy_ms,
            total_ms: t_start.elapsed().as_millis() as u64,
            api_unavailable_ms,
        });
        Ok(())
    }

    /// StepLog 9's moves for one component whose container `old` runs: stage
    /// its manifest, wait for `old` to stop, put the manifest back, wait
    /// for a new container to run and the whole gate to pass. The new
    /// container's ID, and the milliseconds to stop and to healthy.
    pub(in crate::modes::runbook) fn restart_moves(
        &mut self,
        c: Component,
        old: &str,
    ) -> Result<(String, u64, u64), Fail> {
        let dirs = Dirs::open(self.env.root, true).map_err(|e| restart_failed(c, e.to_string()))?;
        // The kubelet's link of the old container, looked for while it runs:
        // whether the start wait may sleep until the kubelet links the new one.
        let linked = crate::tools::pidwatch::NewContainers::linked(self.env.root, old);
        // Out from the moment the move is tried: after any error the
        // failure path looks where the manifest is and puts it back.
        self.last_gate = None;
        self.op
            .stage(&dirs, c)
            .map_err(|e| restart_failed(c, e.to_string()))?;
        crate::crash_point!("restart-after-stage");
        tracing::info!(
            component = c.name(),
            old = health::short(old),
            "manifest staged; waiting for the container to stop"
        );
        let t0 = Instant::now();
        self.health()
            .wait_stopped(c, old, self.env.g.stop_timeout)
            .map_err(|e| self.gate_fail(e, Some(c)))?;
        let stop_ms = t0.elapsed().as_millis() as u64;
        crate::crash_point!("restart-after-stop");
        // Watch for the kubelet's new container before the manifest goes
        // back, so that its creation cannot slip by (a wake-up hint only).
        let created = crate::tools::pidwatch::NewContainers::watch(
            &self
                .env
                .root
                .host_path()
                .join(crate::node::paths::CONTAINER_LOGS_DIR),
            linked,
        );
        if let Restore::Conflict(msg) = self
            .op
            .unstage(&dirs)
            .map_err(|e| restart_failed(c, format!("putting the manifest back failed: {e}")))?
        {
            return Err(restart_failed(c, msg));
        }
        crate::crash_point!("restart-after-unstage");
        let t1 = Instant::now();
        let deadline = t1 + self.env.g.health_timeout;
        let new = self
            .health()
            .wait_new_running(
                c,
                old,
                deadline,
                self.env.g.health_timeout,
                created.as_ref(),
            )
            .map_err(|e| self.gate_fail(e, Some(c)))?;
        // From now on every gate checks it still runs this container.
        self.stay.push((c, new.clone()));
        self.last_restart = Some(Instant::now());
        (self.table().way().after_restart)(self, c, deadline)?;
        let healthy_ms = t1.elapsed().as_millis() as u64;
        Ok((new, stop_ms, healthy_ms))
    }

    /// Step 9 for `c`, unless a signal came; its successor is recorded
    /// once `c` is healthy.
    pub(in crate::modes::runbook) fn restart_step(&mut self, c: Component) -> Result<(), Fail> {
        self.env.check_cancel(Some(c))?;
        let next = Step::Restart(c)
            .records()
            .expect("a restart records the next one");
        self.restart(c, next)
    }
}
