//! Step 4: the staging preflight.

use crate::modes::runbook::*;

impl Run<'_> {
    /// Topology and step 4 (staging preflight).
    pub(in crate::modes::runbook) fn preflight(&mut self) -> Result<(), Fail> {
        let _step = StepLog::new("staging-preflight");
        // Where the manifests are: no file's contents read, so that a
        // hostile file cannot stop the put-back below (SPEC 10).
        let m = manifests::placement(self.env.root);
        if let Some(e) = &m.manifests_dir_error {
            return Err(fail(Phase::Topology, e.clone()));
        }
        let etcd = &m.manifests[&Component::Etcd];
        if !etcd.active && !etcd.runbook_staged && !etcd.agent_staged && etcd.error.is_none() {
            return Err(fail(
                Phase::Topology,
                "no manifests/etcd.yaml: only stacked etcd is supported; refusing this node",
            ));
        }
        let mut conflicts = Vec::new();
        for (c, v) in &m.manifests {
            if let Some(e) = &v.error {
                conflicts.push(e.clone());
            } else if v.agent_staged {
                conflicts.push(format!(
                    "{c} manifest is in the node agent's staging directory {}",
                    m.agent_staging.path
                ));
            } else if v.active && v.runbook_staged {
                conflicts.push(format!(
                    "{c} manifest is both active and staged in {}: keep exactly one copy",
                    m.runbook_staging.path
                ));
            } else if !v.active && !v.runbook_staged {
                return Err(fail(Phase::Topology, format!("{c} manifest is missing: this is not a complete kubeadm control-plane node")));
            }
        }
        for e in [&m.runbook_staging.error, &m.agent_staging.error]
            .into_iter()
            .flatten()
        {
            conflicts.push(e.clone());
        }
        for name in &m.runbook_staging.unexpected {
            conflicts.push(format!(
                "unexpected entry {}/{name} in the runbook's staging directory",
                m.runbook_staging.path
            ));
        }
        if let Some(e) = crate::node::staging::mount_mismatch(self.env.root) {
            conflicts.push(e);
        }
        if !conflicts.is_empty() {
            return Err(fail(Phase::StagingConflict, conflicts.join("; ")));
        }
        for (c, v) in &m.manifests {
            if v.runbook_staged && !v.active {
                let dirs = Dirs::open(self.env.root, false)
                    .map_err(|e| fail(Phase::StagingConflict, e.to_string()))?;
                match StagingGuard::put_back_left(&dirs, *c)
                    .map_err(|e| fail(Phase::StagingConflict, e.to_string()))?
                {
                    Restore::Conflict(msg) => return Err(fail(Phase::StagingConflict, msg)),
                    _ => tracing::info!(
                        component = c.name(),
                        "restored a manifest an interrupted run left staged"
                    ),
                }
            }
        }
        // Then what `manifests/` holds, within the bounds (SPEC 10,
        // "Bounded reads"): a file over one is refused as hostile, naming
        // it, before anything of the renewal is done.
        let mut hostile = manifests::inspect(self.env.root).hostile;
        hostile.extend(crate::node::kubelet::hostile_config(self.env.root));
        if !hostile.is_empty() {
            return Err(fail(Phase::StagingConflict, hostile.join("; ")));
        }
        Ok(())
    }

    /// Step 4, then the signal flag.
    pub(in crate::modes::runbook) fn preflight_step(&mut self) -> Result<(), Fail> {
        self.preflight()?;
        self.env.check_cancel(None)
    }
}
