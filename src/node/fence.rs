//! The file mechanics of the fencing check (SPEC 6), under the lock the
//! check holds: the owner record written right before the first change,
//! the put-back of what a dead run left staged, and what the node has of
//! an operation. What the check answers is `modes::fence`.

use crate::contract as doc;
use crate::node::fsx::{Dir, FsError, Root};
use crate::node::inspect::{PhaseReport, ReceiptLookup};
use crate::node::lock;
use crate::node::manifests::ManifestsReport;
use crate::node::paths::{self, MANIFESTS_DIR, STAGING_DIR};
use crate::node::staging;
use crate::node::statedir::StateDir;
use crate::rules::component::Component;
use crate::rules::fence::names;
use crate::rules::opid::OperationId;
use crate::rules::phase::PhaseFile;
use crate::rules::receipt::Receipt;

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
pub struct Restoration {
    pub restored: Vec<Component>,
    /// Left for an operator (both copies, a refused directory or manifest).
    pub conflicts: Vec<String>,
    /// A write failed (the owner record or a move): the answer is
    /// unconfirmed whatever the plan was.
    pub failed: Option<String>,
}

impl Restoration {
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
) -> Restoration {
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
    let mut pb = Restoration {
        conflicts,
        ..Restoration::default()
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

/// The manifests in no directory after the put-back, each named (not
/// etcd's on a node with external etcd: it never had one).
pub fn missing_manifests(after: &ManifestsReport) -> Vec<String> {
    after
        .manifests
        .iter()
        .filter(|(c, _)| !(**c == Component::Etcd && after.external_etcd.is_some()))
        .filter(|(_, v)| v.location == doc::ManifestLocation::Missing && v.error.is_none())
        .map(|(c, _)| format!("the {c} manifest is missing: neither active nor staged"))
        .collect()
}

/// How abandoning an operation went ([`abandon`]).
pub enum Abandoned {
    /// A write failed before the receipt (the owner record, or a move):
    /// why, and what the put-back did. Nothing recorded.
    NotRecorded(String, Restoration),
    /// The receipt and its message, and whether it was written.
    Recorded {
        recorded: Recorded,
        receipt: Box<Receipt>,
        message: String,
        pb: Restoration,
        never_seen: bool,
    },
}

/// Abandon `id` (SPEC 6, no receipt): what this node has of the
/// operation is read first (before the owner record is replaced by this
/// check's own: its phase file, the last runbook's owner record, its log);
/// then the owner record, before the first change (a failed one still lets
/// the put-back run: the answer is then unconfirmed); the put-back of
/// `restore` (what the dead run left staged); then the `abandoned` receipt.
pub fn abandon(
    root: &Root,
    state: &Dir,
    id: &OperationId,
    (m, restore, phase): (&ManifestsReport, &[Component], &PhaseReport),
    owner: &mut OwnerRecord<'_>,
    now: time::OffsetDateTime,
) -> Abandoned {
    let never_seen = never_seen(state, id, phase);
    let owner_error = owner.before_first_change().err();
    let pb = put_back(root, m, restore, owner);
    if let (Some(e), None) = (&owner_error, &pb.failed) {
        return Abandoned::NotRecorded(e.to_string(), pb);
    }
    if let Some(f) = &pb.failed {
        return Abandoned::NotRecorded(f.clone(), pb);
    }
    let Restoration {
        restored,
        mut conflicts,
        ..
    } = pb;
    crate::crash_point!("fence-after-restore-before-receipt");
    let (receipt, message) =
        abandoned_receipt(root, id, phase, &restored, &mut conflicts, never_seen, now);
    let pb = Restoration {
        restored,
        conflicts,
        failed: None,
    };
    Abandoned::Recorded {
        recorded: record_abandoned(state, &receipt),
        receipt: Box::new(receipt),
        message,
        pb,
        never_seen,
    }
}

/// The `abandoned` receipt of `id` (SPEC 6) after the put-back restored
/// `restored` and left `conflicts` (to which what is still missing is
/// added), and its message.
fn abandoned_receipt(
    root: &Root,
    id: &OperationId,
    phase: &PhaseReport,
    restored: &[Component],
    conflicts: &mut Vec<String>,
    never_seen: bool,
    now: time::OffsetDateTime,
) -> (Receipt, String) {
    let after = crate::node::manifests::placement(root);
    conflicts.extend(missing_manifests(&after));
    let message = crate::rules::fence::abandon_message(
        id,
        never_seen,
        restored,
        conflicts,
        phase.judgement.is_pending(),
    );
    let (ph, failed_component) = crate::rules::fence::abandoned_phase(phase.file.as_ref(), id);
    let r = crate::node::statedir::new_receipt(
        root,
        id,
        crate::node::statedir::Ended {
            outcome: crate::rules::outcome::Outcome::Abandoned,
            phase: ph,
            message: &message,
            failed_component,
            did: crate::node::statedir::Did::default(),
        },
        after.receipt_locations(),
        now,
    );
    (r, message)
}

/// How writing the `abandoned` receipt went (the one receipt writer,
/// `node::statedir::write_receipt`).
pub enum Recorded {
    Written,
    /// A receipt appeared meanwhile: it confirms instead.
    Existing(Box<Receipt>),
    /// A receipt appeared meanwhile and cannot be read as one.
    Malformed,
    /// Nothing written, and why: the receipt would not read back, or
    /// `completed/` or the file could not be made.
    Failed(crate::node::statedir::ReceiptError),
}

/// Write the `abandoned` receipt `r`, once.
fn record_abandoned(state: &Dir, r: &Receipt) -> Recorded {
    use crate::node::statedir::{receipt_of, write_receipt, ReceiptError};
    match write_receipt(state, r) {
        Ok(()) => {
            tracing::info!(
                operation = r.operation_id.as_str(),
                "recorded an abandoned receipt"
            );
            Recorded::Written
        }
        Err(ReceiptError::Write(FsError::Exists { .. })) => {
            match receipt_of(state, &r.operation_id) {
                Ok(Some(ReceiptLookup::Found(found))) => Recorded::Existing(found),
                _ => Recorded::Malformed,
            }
        }
        Err(e) => Recorded::Failed(e),
    }
}
