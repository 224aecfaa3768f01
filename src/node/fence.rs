//! The file mechanics of the fencing check (SPEC 6), under the lock the
//! check holds: the owner record written right before the first change,
//! the put-back of what a dead run left staged, and what the node has of
//! an operation. What the check answers is `modes::fence`.

use crate::contract as doc;
use crate::node::fsx::{Dir, FsError, Root};
use crate::node::inspect::PhaseReport;
use crate::node::lock;
use crate::node::manifests::ManifestsReport;
use crate::node::paths::{self, MANIFESTS_DIR, STAGING_DIR};
use crate::node::staging;
use crate::node::statedir::StateDir;
use crate::rules::component::Component;
use crate::rules::fence::names;
use crate::rules::opid::OperationId;
use crate::rules::phase::PhaseFile;

/// `state/owner`, written once, right before the fencing check's first
/// change (a move or the receipt): a check that changes nothing writes
/// nothing, not even this.
pub struct OwnerRecord<'a> {
    guard: &'a lock::LockGuard,
    state: &'a Dir,
    id: &'a OperationId,
    now: time::OffsetDateTime,
    written: bool,
}

impl<'a> OwnerRecord<'a> {
    /// Nothing written yet.
    pub fn new(
        guard: &'a lock::LockGuard,
        state: &'a Dir,
        id: &'a OperationId,
        now: time::OffsetDateTime,
    ) -> Self {
        OwnerRecord {
            guard,
            state,
            id,
            now,
            written: false,
        }
    }

    /// Write the owner record unless it is written already.
    pub fn before_first_change(&mut self) -> Result<(), OwnerNotRecorded> {
        if !self.written {
            self.guard
                .write_owner(
                    self.state,
                    &lock::owner_for(
                        Some(self.id),
                        crate::contract::OwnerMode::StatusFence,
                        self.now,
                    ),
                )
                .map_err(OwnerNotRecorded)?;
            self.written = true;
        }
        Ok(())
    }
}

/// The owner record could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot record the lock owner: {0}")]
pub struct OwnerNotRecorded(pub FsError);

/// What the put-back did.
#[derive(Default)]
pub struct PutBack {
    pub restored: Vec<Component>,
    /// Left for an operator (both copies, a refused directory or manifest).
    pub conflicts: Vec<String>,
    /// A write failed (the owner record or a move): the answer is
    /// unconfirmed whatever the plan was.
    pub failed: Option<String>,
}

impl PutBack {
    /// The clauses a fence message gains: what was put back, what was left.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        if !self.restored.is_empty() {
            s.push_str(&format!(
                "; put back {}, which a dead run left staged",
                names(&self.restored)
            ));
        }
        if let Some(f) = &self.failed {
            s.push_str(&format!("; {f}"));
        }
        for c in &self.conflicts {
            s.push_str(&format!("; {c}"));
        }
        s
    }
}

/// Put back the manifests a dead run left staged and not active (SPEC 6,
/// v1.1): what that run's exit would have done. Runs once the lock is
/// held, whatever the answer will be: no run is mid-restart, so a stopped
/// pod never waits for an operator. Never resumes, never restarts anything
/// else. What is left alone is named.
pub fn put_back(
    root: &Root,
    m: &ManifestsReport,
    restore: &[Component],
    owner: &mut OwnerRecord,
) -> PutBack {
    // A manifest both active and staged is never moved (SPEC 6 puts back
    // only "staged and not active"), but it is named: an operator must keep
    // exactly one copy.
    let conflicts = m
        .manifests
        .iter()
        .filter(|(c, v)| v.active && v.runbook_staged && v.error.is_none() && !restore.contains(c))
        .map(|(c, _)| {
            format!(
                "{}/{} is staged while {}/{} is active; both left alone, an operator must keep exactly one",
                paths::node(STAGING_DIR),
                c.manifest_file(),
                paths::node(MANIFESTS_DIR),
                c.manifest_file()
            )
        })
        .collect();
    let mut pb = PutBack {
        conflicts,
        ..PutBack::default()
    };
    // What the check refused to look into is named, never followed: a
    // refused staging directory or manifest may hide a staged copy.
    if let Some(e) = &m.runbook_staging.error {
        pb.conflicts.push(format!(
            "the runbook staging directory was refused, nothing put back from it: {e}"
        ));
    }
    pb.conflicts
        .extend(m.manifests.values().filter_map(|v| v.error.clone()));
    if restore.is_empty() {
        return pb;
    }
    if let Err(e) = owner.before_first_change() {
        // The owner record is bookkeeping; the put-back is what the dead
        // run's exit would have done, and the lock is held: do it all the
        // same (SPEC 6, v1.1: in every outcome), and answer unconfirmed.
        tracing::warn!("{e}; putting the staged manifests back all the same");
        pb.failed = Some(e.to_string());
    }
    for &c in restore {
        match staging::put_back(root, c) {
            staging::PutBack::Restored => {
                tracing::info!(
                    component = c.name(),
                    "put back the staged manifest a dead run left"
                );
                pb.restored.push(c);
            }
            staging::PutBack::Conflict(conflict) => pb.conflicts.push(conflict),
            staging::PutBack::Failed(e) => {
                let f = format!("putting back {c} failed: {e}");
                pb.failed = Some(match pb.failed.take() {
                    Some(before) => format!("{before}; {f}"),
                    None => f,
                });
                break;
            }
        }
    }
    pb
}

/// Whether this node has no record of the operation: no phase file, owner
/// record or log names it. Read before the owner record is replaced by
/// this check's own.
pub fn never_seen(state: &Dir, id: &OperationId, phase: &PhaseReport) -> bool {
    let named = |i: Option<&str>| i == Some(id.as_str());
    let by_owner = matches!(lock::read_owner(state), lock::OwnerInfo::Known(o) if named(o.operation_id.as_deref()));
    let by_log = StateDir::new(state)
        .log_names()
        .contains(&format!("{id}.log"));
    let by_phase = matches!(&phase.file, Some(PhaseFile::V2(p)) if &p.operation_id == id);
    !(by_owner || by_log || by_phase)
}

/// The manifests in no directory after the put-back, each named.
pub fn missing_manifests(after: &ManifestsReport) -> Vec<String> {
    after
        .manifests
        .iter()
        .filter(|(_, v)| v.location == doc::ManifestLocation::Missing && v.error.is_none())
        .map(|(c, _)| format!("the {c} manifest is missing: neither active nor staged"))
        .collect()
}
