//! One renewal (or recovery) as a transaction on the node: the only way a
//! renewal changes the state directory and the manifests' places (issue
//! "The house, third floor"; models: cargo's `Filesystem`/`FileLock`,
//! rustup's `Transaction`).
//!
//! [`Operation::begin`] takes the lock (SPEC 4 step 1, `node::lock::hold`:
//! the owner record, the log file), then looks for this operation's own
//! receipt (step 2): a receipt ends the operation before it begins
//! ([`Stop::Replay`]). An [`Operation`] owns the lock guard, the phase
//! file's writer (step 3 onward: [`PhaseWriter`], which also writes the
//! `superseded` receipt of work it took over with its first phase write)
//! and the staged manifest's guard. Its methods are the renewal's changes:
//! [`Operation::record`] a phase, [`Operation::backup`] and
//! [`Operation::rollback`] the certificates, [`Operation::stage`] and
//! [`Operation::unstage`] a manifest, [`Operation::receipt`] and
//! [`Operation::commit`] the one receipt; [`Operation::put_back`] is the
//! failure path's way back for a staged manifest, [`Operation::finish`]
//! records `done` after a committed success, and [`Operation::last_resort`]
//! is what a panic while finishing still does. The lock is released when
//! the operation is dropped, after everything else it holds.

use crate::contract::OwnerMode;
use crate::node::backup;
use crate::node::fsx::{FsError, Root};
use crate::node::inspect::ReceiptLookup;
use crate::node::lock::{self, LockGuard, Refused};
use crate::node::manifests;
use crate::node::staging::{put_back_if_staged, Dirs, Restore, StagingGuard};
use crate::node::statedir::{self, Did, Ended, PhaseWriter, ReceiptError, RecordError};
use crate::rules::component::Component;
use crate::rules::opid::OperationId;
use crate::rules::outcome::{Outcome, Phase};
use crate::rules::receipt::Receipt;
use crate::rules::resume::Progress;
use std::time::Duration;

/// Who begins an operation, and how: its ID (None: `--legacy-v1`), the
/// owner record's mode, how long to wait for the lock, when it started, and
/// what every phase write records of the request.
pub struct Who<'a> {
    pub id: Option<&'a OperationId>,
    pub mode: OwnerMode,
    /// The mode in the log's words (`renew`, `legacy-v1`).
    pub mode_word: &'a str,
    pub lock_timeout: Duration,
    pub cancelled: &'a dyn Fn() -> bool,
    pub started: time::OffsetDateTime,
    /// `--force` and `--threshold-days`, as the phase file records them.
    pub force_threshold: (bool, u32),
    /// `--recover-expired`: the mode asked (SPEC 11, v1.3).
    pub recovery: bool,
}

/// Why an operation ended before its steps (SPEC 4 steps 1 and 2). The
/// lock, when it was taken, is held until the caller has made its report
/// and drops this.
pub enum Stop {
    /// Step 1: the lock, the state directory or the owner record refused.
    Refused(Refused),
    /// Step 2: this operation's receipt exists: replayed, nothing else done.
    Replay(Box<Receipt>, LockGuard),
    /// Step 2: this operation's receipt cannot be trusted (malformed, or
    /// `completed/` refused): nothing done.
    OwnReceipt(String, LockGuard),
}

/// What the failure path's put-back did ([`Operation::put_back`]).
pub struct Unwound {
    /// Every manifest this operation moved is active again.
    pub all_back: bool,
    /// What the put-back said (None: nothing was out).
    pub said: Option<String>,
    /// Why a manifest could not be put back, if one could not.
    pub not_restored: Option<String>,
}

/// A renewal's transaction under the lock (see the module doc).
pub struct Operation<'r> {
    root: &'r Root,
    id: Option<OperationId>,
    /// The phase file's writer (its fields are the work taken up).
    pub phase: PhaseWriter,
    /// The way back for the manifest a restart moves out.
    staging: StagingGuard,
    /// Declared last: released after everything above.
    _lock: LockGuard,
}

impl<'r> Operation<'r> {
    /// SPEC 4 steps 1 and 2: the lock (bounded), the owner record and the
    /// log file, then this operation's own receipt.
    pub fn begin(root: &'r Root, who: Who<'_>) -> Result<Operation<'r>, Stop> {
        let (state, guard) = lock::hold(
            root,
            who.lock_timeout,
            who.cancelled,
            who.id,
            who.mode,
            who.started,
        )
        .map_err(Stop::Refused)?;
        tracing::info!(
            operation = who.id.map(|i| i.as_str()),
            mode = %who.mode_word,
            "renewal starting (lock held)"
        );
        crate::crash_point!("renew-after-lock");
        if let Some(id) = who.id {
            match statedir::receipt_of(&state, id) {
                Ok(None) => {}
                Ok(Some(ReceiptLookup::Found(r))) => {
                    tracing::info!(
                        outcome = r.outcome.as_str(),
                        "receipt exists: replaying it, doing nothing else"
                    );
                    return Err(Stop::Replay(r, guard));
                }
                Ok(Some(ReceiptLookup::Malformed(m))) => {
                    return Err(Stop::OwnReceipt(
                        format!(
                        "this operation's receipt is malformed; not trusting it, doing nothing: {}",
                        m.error
                    ),
                        guard,
                    ))
                }
                Err(e) => return Err(Stop::OwnReceipt(e.to_string(), guard)),
            }
        }
        Ok(Operation {
            root,
            id: who.id.cloned(),
            phase: PhaseWriter::new(
                state,
                who.id,
                who.force_threshold,
                who.recovery,
                who.started,
            ),
            staging: StagingGuard::default(),
            _lock: guard,
        })
    }

    /// Persist the phase (`PhaseWriter::record`; its first write records
    /// the `superseded` receipt of the work it took over).
    pub fn record(
        &mut self,
        progress: Progress,
        now: impl Fn() -> time::OffsetDateTime,
    ) -> Result<(), RecordError> {
        self.phase.record(self.root, progress, now)
    }

    /// Back up `pki/` and the kubeconfigs before kubeadm rewrites them
    /// (SPEC 4 step 8), under this operation's name (`backup::create`;
    /// an existing backup of this operation is kept). Where it went, and
    /// how many files.
    pub fn backup(&self) -> Result<(String, usize), backup::BackupError> {
        let (kind, name) = self.phase.backup_kind_name();
        let n = backup::create(self.root, &self.phase.state, kind, &name)?;
        Ok((format!("{kind}/{name}"), n))
    }

    /// This operation's backup, open for reading (None: none was taken
    /// under its name, e.g. work resumed from another operation's
    /// `restart_pending`).
    pub fn backed_up(&self) -> Result<Option<backup::Opened>, FsError> {
        let (kind, name) = self.phase.backup_kind_name();
        backup::open(&self.phase.state, kind, &name)
    }

    /// Put this operation's backup back (`backup::restore`: bytes and
    /// times); how many files were rewritten.
    pub fn rollback(&self) -> Result<usize, backup::BackupError> {
        let (kind, name) = self.phase.backup_kind_name();
        backup::restore(self.root, &self.phase.state, kind, &name)
    }

    /// Move `c`'s manifest into staging: out from the moment the move is
    /// tried (the failure path looks where it is).
    pub fn stage(&mut self, dirs: &Dirs, c: Component) -> Result<(), FsError> {
        self.staging.stage(dirs, c)
    }

    /// Put the manifest out back ([`StagingGuard::unstage`]).
    pub fn unstage(&mut self, dirs: &Dirs) -> Result<Restore, FsError> {
        self.staging.unstage(dirs)
    }

    /// The manifest out, if any.
    pub fn staged(&self) -> Option<Component> {
        self.staging.out()
    }

    /// The failure path's way back (lock held): the manifest out, if still
    /// staged, goes back. Whether every manifest this operation moved is
    /// active again, what the put-back said, and why a manifest could not
    /// be put back (both copies kept), if one could not.
    pub fn put_back(&mut self) -> Unwound {
        let mut back = Unwound {
            all_back: true,
            said: None,
            not_restored: None,
        };
        if let Some((restored, note)) = self.staging.restore(self.root) {
            back.all_back &= restored;
            back.said = note;
        }
        if let Some(msg) = self.staging.not_restored() {
            back.all_back = false;
            back.not_restored = Some(msg.to_string());
        }
        back
    }

    /// This operation's receipt (None: `--legacy-v1` writes none), with
    /// where each manifest is now.
    pub fn receipt(&self, ended: Ended<'_>, now: time::OffsetDateTime) -> Option<Receipt> {
        let id = self.id.as_ref()?;
        let places = manifests::placement(self.root).receipt_locations();
        Some(statedir::new_receipt(self.root, id, ended, places, now))
    }

    /// Write the receipt, once: the commit point of the operation.
    pub fn commit(&self, r: &Receipt) -> Result<(), ReceiptError> {
        self.phase.write_receipt(r)
    }

    /// After a committed success: record `done`, then keep the three
    /// newest complete backups (a failed prune is logged only).
    pub fn finish(&mut self, now: impl Fn() -> time::OffsetDateTime) -> Result<(), RecordError> {
        crate::crash_point!("renew-after-receipt-before-done");
        let done = self.record(Progress::Done, now);
        let (kind, name) = self.phase.backup_kind_name();
        if let Err(e) = backup::prune(&self.phase.state, kind, &name) {
            tracing::warn!("pruning old backups failed: {e}");
        }
        done
    }

    /// A panic while finishing: every manifest staged and not active goes
    /// back, then a `failed` (or `failed_not_restored`) receipt when this
    /// operation has none, with as little machinery as possible. Returns
    /// the outcome, the message and whether a receipt was written.
    pub fn last_resort(
        &self,
        why: &str,
        phase: Phase,
        did: Did<'_>,
        now: time::OffsetDateTime,
    ) -> (Outcome, String, bool) {
        let mut notes = Vec::new();
        for c in Component::ALL {
            let (_, note) = put_back_if_staged(self.root, c);
            notes.extend(note);
        }
        let head = format!("internal error (a panic) while finishing the run: {why}");
        let message = crate::rules::receipt::full_message(&head, &notes);
        let outcome = if manifests::placement(self.root).all_active() {
            Outcome::Failed
        } else {
            Outcome::FailedNotRestored
        };
        let mut written = false;
        if let Some(id) = &self.id {
            let completed = self.phase.completed_dir().ok();
            if let Some(None) = completed
                .as_ref()
                .map(|d| statedir::lookup_receipt(Some(d), id))
            {
                let ended = Ended {
                    outcome,
                    phase,
                    message: &message,
                    failed_component: None,
                    did,
                };
                if let Some(r) = self.receipt(ended, now) {
                    written = self.commit(&r).is_ok();
                }
            }
        }
        (outcome, message, written)
    }
}
