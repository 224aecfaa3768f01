//! The runbook's state directory (SPEC section 2, `paths::STATE_DIR`) and
//! the files it holds: the lock and its owner, the phase file, receipts
//! (`completed/<ID>.json`), backups and logs.
//!
//! Shape of cargo's `util/flock.rs` `Filesystem`: a thin owner that knows the
//! names and the write discipline of each file and leaves the syscalls to
//! `fsx` (and the flock to `lock`). Borrowing the open directory keeps the
//! callers' `Dir` and the order of their syscalls as they are.

use crate::node::fsx::{Dir, FsError, FsResult, Root, Trust, SMALL_FILE_MAX};
use crate::node::paths::{
    BACKUP_DIR, BACKUP_V1_DIR, COMPLETED_DIR, LOG_DIR, OWNER_FILE, PHASE_FILE, STATE_DIR,
    STATE_DIR_MODE, STATE_FILE_MODE,
};
use crate::rules::component::Component;
use crate::rules::opid::OperationId;
use crate::rules::outcome::{ManifestLocation, Outcome, Phase};
use crate::rules::phase::{self, LegacyPhase, PhaseFile, PhaseState, PhaseV2, ResumedFrom};
use crate::rules::receipt::{self, Receipt};
use crate::rules::resume::ReceiptLookup;
use crate::rules::resume::{resume, Asker, Progress, Resume, Resumed};
use crate::rules::values::{CaSha256, ManifestLocations, PhaseFormat, Timestamp};
use std::collections::BTreeMap;

pub use crate::rules::files::{Did, Ended};

/// The one receipt constructor (SPEC 3): for the renewal (its own, and the
/// `superseded` one of the operation it took over), its last resort after a
/// panic, and the fencing check. The message is bounded, the CAs are
/// fingerprinted as they are now, the version is this binary's (the
/// fields are filled in one place, `rules::files::Receipt::new`).
pub fn new_receipt(
    root: &Root,
    id: &OperationId,
    end: Ended<'_>,
    manifests: BTreeMap<Component, ManifestLocation>,
    finished_at: time::OffsetDateTime,
) -> Receipt {
    Receipt::new(
        id.clone(),
        end,
        ManifestLocations::from(&manifests),
        Timestamp(crate::rules::clock::rfc3339(finished_at)),
        crate::contract::version::RUNBOOK_VERSION.to_string(),
        CaSha256::from(&crate::node::node_pki::ca_fingerprints(
            &crate::node::node_pki::read_cas(root),
        )),
    )
}

/// Why the phase file could not be read or written.
#[derive(Debug)]
pub enum PhaseError {
    /// Reading it failed (or it was refused: a symlink, a FIFO, ...).
    Fs(crate::node::fsx::FsError),
    /// It is not a phase file of either format.
    Malformed(String),
    /// The value would not be written as one (never written).
    Invalid(String),
    /// Replacing it failed.
    Record(crate::node::fsx::FsError),
}

impl std::fmt::Display for PhaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PhaseError::Fs(e) => write!(f, "{e}"),
            PhaseError::Malformed(e) => {
                write!(f, "{}: {e}", crate::node::paths::state(PHASE_FILE))
            }
            PhaseError::Invalid(e) => write!(f, "refusing to write the phase file: {e}"),
            PhaseError::Record(e) => write!(f, "cannot record the phase: {e}"),
        }
    }
}

/// Why a receipt was not written.
#[derive(Debug)]
pub enum ReceiptError {
    /// It would not be read back as written (nothing touched on disk).
    Invalid(InvalidReceipt),
    /// `completed/` could not be opened or made.
    Dir(crate::node::fsx::FsError),
    /// The file could not be made (`FsError::Exists`: the operation has a
    /// receipt already; none is ever replaced).
    Write(crate::node::fsx::FsError),
}

impl std::fmt::Display for ReceiptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReceiptError::Invalid(e) => write!(f, "{e}"),
            ReceiptError::Dir(e) | ReceiptError::Write(e) => write!(f, "{e}"),
        }
    }
}

/// The open state directory.
#[derive(Debug, Clone, Copy)]
pub struct StateDir<'a> {
    dir: &'a Dir,
}

/// A receipt that passed `receipt::validate_receipt`: the only thing
/// `StateDir::write_once` writes, so no writer can skip the check.
#[derive(Debug, Clone, Copy)]
pub struct CheckedReceipt<'a>(&'a Receipt);

/// Why a receipt was refused before anything was written: the key that
/// would not read back, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing to write an invalid receipt: {0}")]
pub struct InvalidReceipt(pub crate::rules::strict::ParseError);

impl<'a> CheckedReceipt<'a> {
    /// Check `r` before anything is touched on disk (a receipt is written
    /// once and never repaired).
    pub fn check(r: &'a Receipt) -> Result<Self, InvalidReceipt> {
        receipt::validate_receipt(r)
            .map(|()| CheckedReceipt(r))
            .map_err(InvalidReceipt)
    }
}

impl<'a> StateDir<'a> {
    pub fn new(dir: &'a Dir) -> Self {
        StateDir { dir }
    }

    /// The state directory, if it exists and is acceptable (the read-only
    /// modes never create it).
    pub fn open(root: &Root) -> FsResult<Option<Dir>> {
        root.open_dir(STATE_DIR, Trust::Strict)
    }

    /// The state directory, created (0700, with its parents) when missing:
    /// a renewal and the fencing check, which take the lock in it.
    pub fn create(root: &Root) -> FsResult<Dir> {
        root.create_dir_all(STATE_DIR, STATE_DIR_MODE, Trust::Strict)
    }

    /// The phase file, either format (`None`: there is none).
    pub fn read_phase(&self) -> Result<Option<PhaseFile>, PhaseError> {
        let Some(bytes) = self
            .dir
            .read_file(PHASE_FILE, SMALL_FILE_MAX, Trust::Strict)
            .map_err(PhaseError::Fs)?
        else {
            return Ok(None);
        };
        phase::parse_phase_file(&bytes)
            .map(Some)
            .map_err(|e| PhaseError::Malformed(e.to_string()))
    }

    /// Check, then replace the phase file atomically (replace discipline),
    /// in the format it is in.
    pub fn write_phase(&self, p: &PhaseFile) -> Result<(), PhaseError> {
        let bytes = match p {
            PhaseFile::V2(v2) => phase::validate_v2(v2).map(|()| phase::render_v2(v2)),
            PhaseFile::Legacy(l) => phase::validate_legacy(l).map(|()| phase::render_legacy(l)),
        }
        .map_err(|e| PhaseError::Invalid(e.to_string()))?;
        self.dir
            .replace(PHASE_FILE, &bytes, STATE_FILE_MODE, Trust::Strict)
            .map_err(PhaseError::Record)
    }

    /// The lock owner file's bytes (`None`: there is none).
    pub fn read_owner(&self) -> FsResult<Option<Vec<u8>>> {
        self.dir
            .read_file(OWNER_FILE, SMALL_FILE_MAX, Trust::Strict)
    }

    /// Replace the lock owner file atomically (replace discipline).
    pub fn replace_owner(&self, bytes: &[u8]) -> FsResult<()> {
        self.dir
            .replace(OWNER_FILE, bytes, STATE_FILE_MODE, Trust::Strict)
    }

    /// The names in `log/` (none when it is missing or refused; never
    /// creating it).
    pub fn log_names(&self) -> Vec<String> {
        match self.dir.open_subdir(LOG_DIR, Trust::Strict) {
            Ok(Some(d)) => d.list().unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// `logs/`, created when missing: each operation's log is appended there.
    pub fn logs_or_create(&self) -> FsResult<Dir> {
        match self.dir.open_subdir(LOG_DIR, Trust::Strict)? {
            Some(d) => Ok(d),
            None => self.dir.mkdir(LOG_DIR, STATE_DIR_MODE),
        }
    }

    /// `completed/`, if it exists and is acceptable (never creating it).
    pub fn completed(&self) -> FsResult<Option<Dir>> {
        self.dir.open_subdir(COMPLETED_DIR, Trust::Strict)
    }

    /// Create `completed/` (0700, `Dir::mkdir`: an existing one is opened
    /// and its mode set again).
    pub fn create_completed(&self) -> FsResult<Dir> {
        self.dir.mkdir(COMPLETED_DIR, STATE_DIR_MODE)
    }

    /// `completed/`, created when missing.
    pub fn completed_or_create(&self) -> FsResult<Dir> {
        match self.completed()? {
            Some(d) => Ok(d),
            None => self.create_completed(),
        }
    }

    /// Check `r`, then write `completed/<ID>.json` once (`completed/`
    /// created when missing), and say so in the log: every receipt, the
    /// renewal's, a takeover's `superseded` and the fencing check's
    /// `abandoned` alike.
    pub fn write_receipt(&self, r: &Receipt) -> Result<(), ReceiptError> {
        let checked = CheckedReceipt::check(r).map_err(ReceiptError::Invalid)?;
        let completed = self.completed_or_create().map_err(ReceiptError::Dir)?;
        Self::write_once(&completed, checked).map_err(ReceiptError::Write)?;
        tracing::info!(
            operation = r.operation_id.as_str(),
            outcome = r.outcome.as_str(),
            "receipt written"
        );
        Ok(())
    }

    /// The `superseded` receipt of `other`, whose unfinished work operation
    /// `me` took over, unless it has one.
    pub fn supersede(
        &self,
        root: &Root,
        other: &OperationId,
        me: &str,
        now: time::OffsetDateTime,
    ) -> Result<(), ReceiptError> {
        let completed = self.completed_or_create().map_err(ReceiptError::Dir)?;
        if lookup_receipt(Some(&completed), other).is_none() {
            let message = format!("superseded: operation {me} took over its unfinished work");
            let ended = Ended {
                outcome: Outcome::Superseded,
                phase: Phase::Cancelled,
                message: &message,
                failed_component: None,
                did: Did::default(),
            };
            let places = crate::node::manifests::placement(root).receipt_locations();
            self.write_receipt(&new_receipt(root, other, ended, places, now))?;
        }
        Ok(())
    }

    /// Write `completed/<ID>.json` once, never replacing it
    /// (`FsError::Exists` when it is there). `completed` is this state
    /// directory's `completed/`, as opened by the caller.
    pub fn write_once(completed: &Dir, r: CheckedReceipt<'_>) -> FsResult<()> {
        let r = r.0;
        completed.create_once(
            &r.operation_id.receipt_file(),
            &receipt::render_receipt(r),
            STATE_FILE_MODE,
        )
    }
}

/// The phase file format a run writes: V2 (always with the run's
/// operation ID), or the five lines of legacy work (a `--legacy-v1` run, or
/// a V2 run that resumed legacy work, keeping its format).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Format {
    V2(OperationId),
    Legacy,
}

/// Why the phase file step could not decide where the work starts.
#[derive(Debug, thiserror::Error)]
pub enum TakeUpError {
    /// The phase file could not be read, or is malformed.
    #[error("{0}")]
    Phase(PhaseError),
    /// `completed/` could not be opened.
    #[error("{0}")]
    Completed(FsError),
    /// `--legacy-v1` over an unfinished V2 operation.
    #[error("--legacy-v1 refuses to run over the unfinished V2 operation {operation_id} ({}); nothing changed", state.as_str())]
    RefuseLegacyOverV2 {
        operation_id: OperationId,
        state: PhaseState,
    },
    /// The receipt the decision depends on is unusable.
    #[error("{0}")]
    ReceiptMalformed(String),
}

impl TakeUpError {
    /// The phase a renewal reports it as.
    pub fn phase(&self) -> Phase {
        match self {
            TakeUpError::Phase(_) | TakeUpError::RefuseLegacyOverV2 { .. } => Phase::PhaseFile,
            TakeUpError::Completed(_) | TakeUpError::ReceiptMalformed(_) => Phase::Receipt,
        }
    }
}

/// Why the phase was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The `superseded` receipt of the operation taken over.
    #[error("{0}")]
    Supersede(ReceiptError),
    /// The phase file itself.
    #[error("{0}")]
    Phase(PhaseError),
}

impl RecordError {
    /// The phase a renewal reports it as.
    pub fn phase(&self) -> Phase {
        match self {
            RecordError::Supersede(_) => Phase::Receipt,
            RecordError::Phase(_) => Phase::PhaseFile,
        }
    }
}

/// A renewal's phase file and what it records: the format kept for resumed
/// work, the CA fingerprints the run holds the node to, and the receipts
/// written along the way (SPEC 2 to 4).
pub struct PhaseWriter {
    /// The open state directory.
    pub state: Dir,
    /// The run's operation ID (None: `--legacy-v1`).
    operation: Option<OperationId>,
    format: Format,
    /// What every phase write records of the request.
    force: bool,
    threshold_days: u32,
    pub resumed_from: Option<ResumedFrom>,
    /// Whose work this run resumed (None: fresh work).
    pub resumed: Option<Resumed>,
    /// Another operation whose unfinished work we took over: it gets a
    /// `superseded` receipt with our first phase write.
    supersede: Option<OperationId>,
    phase_written: bool,
    started_at: String,
    legacy_started: u64,
    /// CA fingerprints the run holds the node to.
    pub ca: BTreeMap<String, String>,
    /// The work is a recovery (SPEC 11): asked with `--recover-expired`,
    /// and only then (v1.3: the mode asked decides, never the phase file; a
    /// plain renewal that finishes a recovery's work records it as its own).
    pub recovery: bool,
    /// The work resumed is a recovery's (its phase file says so): a
    /// recovery finishes it even when no leaf has expired any more; a plain
    /// renewal refuses it while a leaf is expired (SPEC 11, v1.3).
    pub resumed_recovery: Option<ResumedRecovery>,
}

/// A recovery's unfinished work taken up (SPEC 11, v1.3): whose, and where
/// it stopped, in plain words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumedRecovery {
    pub operation_id: OperationId,
    pub at: String,
}

/// The phase file taken up: whose work, in which format, from where.
impl PhaseWriter {
    /// A run's writer, before the phase file is read: `operation` is the
    /// run's ID (None: `--legacy-v1`), `started` when it began.
    pub fn new(
        state: Dir,
        operation: Option<&OperationId>,
        (force, threshold_days): (bool, u32),
        recovery: bool,
        started: time::OffsetDateTime,
    ) -> Self {
        PhaseWriter {
            state,
            operation: operation.cloned(),
            format: operation.map_or(Format::Legacy, |id| Format::V2(id.clone())),
            force,
            threshold_days,
            resumed_from: None,
            resumed: None,
            supersede: None,
            phase_written: false,
            started_at: crate::rules::clock::rfc3339(started),
            legacy_started: started.unix_timestamp().max(0) as u64,
            ca: BTreeMap::new(),
            recovery,
            resumed_recovery: None,
        }
    }

    /// SPEC 4 step 3: read the phase file and decide where to start,
    /// taking up the work it records (`now`: the run's clock).
    pub fn take_up(
        &mut self,
        now: impl Fn() -> time::OffsetDateTime,
    ) -> Result<Progress, TakeUpError> {
        let file = StateDir::new(&self.state)
            .read_phase()
            .map_err(TakeUpError::Phase)?;
        let Some(file) = file else {
            return Ok(Progress::Fresh);
        };
        let asker = match &self.operation {
            Some(id) => Asker::V2(id),
            None => Asker::Legacy,
        };
        let mut completed_error = None;
        let decision = resume(Some(&file), asker, |op| {
            match StateDir::new(&self.state).completed() {
                Ok(completed) => lookup_receipt(completed.as_ref(), op),
                Err(e) => {
                    completed_error = Some(e);
                    None
                }
            }
        });
        if let Some(e) = completed_error {
            return Err(TakeUpError::Completed(e));
        }
        match (decision, file) {
            (Resume::Fresh, _) => Ok(Progress::Fresh),
            (Resume::Legacy { start }, PhaseFile::Legacy(l)) => {
                self.format = Format::Legacy;
                self.legacy_started = l.started;
                self.started_at = time::OffsetDateTime::from_unix_timestamp(l.started as i64)
                    .map(crate::rules::clock::rfc3339)
                    .unwrap_or_else(|_| crate::rules::clock::rfc3339(now()));
                self.ca = BTreeMap::from([("ca.crt".to_string(), l.ca_sha256.clone())]);
                self.resumed_from = Some(ResumedFrom {
                    operation_id: None,
                    format: PhaseFormat::LegacyFiveLine,
                });
                self.resumed = Some(Resumed::Legacy);
                tracing::info!(
                    "resuming unfinished legacy five-line work ({}), keeping its format",
                    l.state.as_str()
                );
                Ok(start)
            }
            (
                Resume::RefuseLegacyOverV2 {
                    operation_id,
                    state,
                },
                _,
            ) => Err(TakeUpError::RefuseLegacyOverV2 {
                operation_id,
                state,
            }),
            (Resume::Own { start }, PhaseFile::V2(p)) => {
                self.took_up(&p, Resumed::Own);
                self.started_at = p.started_at.0.clone();
                self.resumed_from = p.resumed_from.clone();
                tracing::info!(
                    "resuming this operation's own unfinished work ({})",
                    p.state.as_str()
                );
                Ok(start)
            }
            (
                Resume::DoneByReceipt {
                    operation_id,
                    outcome,
                },
                _,
            ) => {
                tracing::info!(
                    "operation {operation_id} left its phase unfinished after its {outcome} receipt: treated as done"
                );
                Ok(Progress::Fresh)
            }
            (Resume::ReceiptMalformed(e), _) => Err(TakeUpError::ReceiptMalformed(e)),
            (
                Resume::TakeOver {
                    from,
                    start,
                    supersede,
                },
                PhaseFile::V2(p),
            ) => {
                self.took_up(&p, Resumed::Other(from.clone()));
                if supersede {
                    self.supersede = Some(from.clone());
                }
                tracing::info!(
                    "taking over the unfinished work of operation {from} ({})",
                    p.state.as_str()
                );
                self.resumed_from = Some(ResumedFrom {
                    operation_id: Some(from),
                    format: PhaseFormat::V2,
                });
                Ok(start)
            }
            (decision, _) => unreachable!("the resume rule answered {decision:?} for this file"),
        }
    }

    /// What a run takes up of V2 work (`resumed`: whose): its CAs, and
    /// whether it is a recovery's. The run goes on in its own mode: which
    /// steps finish the work is the mode asked's (SPEC 11, v1.3).
    fn took_up(&mut self, p: &PhaseV2, resumed: Resumed) {
        self.ca = p.ca_sha256.to_map();
        self.resumed_recovery = p.recovery.then(|| ResumedRecovery {
            operation_id: p.operation_id.clone(),
            at: PhaseFile::V2(p.clone()).plain_step(),
        });
        self.resumed = Some(resumed);
    }
}

/// What the run records as it goes: the phase, its receipts, its backup.
impl PhaseWriter {
    /// Where the run's backup goes: its kind's directory and its name.
    pub fn backup_kind_name(&self) -> (&'static str, String) {
        match &self.operation {
            Some(id) => (BACKUP_DIR, id.as_str().to_string()),
            None => (BACKUP_V1_DIR, self.legacy_started.to_string()),
        }
    }

    /// Persist the phase (replace discipline). The first write of a run that
    /// took over another operation records that one's `superseded` receipt.
    pub fn record(
        &mut self,
        root: &Root,
        progress: Progress,
        now: impl Fn() -> time::OffsetDateTime,
    ) -> Result<(), RecordError> {
        // Fresh work records nothing until kubeadm is about to run.
        let Some((state, next)) = progress.phase_state() else {
            return Ok(());
        };
        if !self.phase_written {
            if let Some(other) = self.supersede.take() {
                let me = match &self.operation {
                    Some(id) => id.as_str(),
                    None => "a legacy run",
                };
                StateDir::new(&self.state)
                    .supersede(root, &other, me, now())
                    .map_err(RecordError::Supersede)?;
            }
        }
        let file = match &self.format {
            Format::V2(id) => PhaseFile::V2(PhaseV2 {
                format: crate::rules::files::PhaseV2Format::V2,
                operation_id: id.clone(),
                state,
                next_component: next,
                ca_sha256: (&self.ca).into(),
                force: self.force,
                threshold_days: self.threshold_days,
                started_at: Timestamp(self.started_at.clone()),
                updated_at: Timestamp(crate::rules::clock::rfc3339(now())),
                resumed_from: self.resumed_from.clone(),
                recovery: self.recovery,
            }),
            Format::Legacy => PhaseFile::Legacy(LegacyPhase {
                state,
                component: next,
                started: self.legacy_started,
                ca_sha256: self.ca.get("ca.crt").cloned().unwrap_or_default(),
                pid: std::process::id(),
            }),
        };
        StateDir::new(&self.state)
            .write_phase(&file)
            .map_err(RecordError::Phase)?;
        self.phase_written = true;
        tracing::info!(
            state = state.as_str(),
            next = next.map(|c| c.name()),
            "phase recorded"
        );
        Ok(())
    }

    /// `completed/`, created when missing.
    pub fn completed_dir(&self) -> FsResult<Dir> {
        StateDir::new(&self.state).completed_or_create()
    }

    /// Check, then write a receipt once (`StateDir::write_receipt`).
    pub fn write_receipt(&self, r: &Receipt) -> Result<(), ReceiptError> {
        StateDir::new(&self.state).write_receipt(r)
    }
}

/// The receipt of `id` in the state directory `state` (never creating
/// anything; None: absent), or why `completed/` could not be opened.
pub fn receipt_of(state: &Dir, id: &OperationId) -> FsResult<Option<ReceiptLookup>> {
    StateDir::new(state)
        .completed()
        .map(|c| lookup_receipt(c.as_ref(), id))
}

/// Write `r` into the state directory `state` ([`StateDir::write_receipt`]).
pub fn write_receipt(state: &Dir, r: &Receipt) -> Result<(), ReceiptError> {
    StateDir::new(state).write_receipt(r)
}

/// Look up `completed/<ID>.json` (never creating anything; None: absent).
pub fn lookup_receipt(completed: Option<&Dir>, id: &OperationId) -> Option<ReceiptLookup> {
    let dir = completed?;
    match dir.read_file(&id.receipt_file(), SMALL_FILE_MAX, Trust::Strict) {
        Ok(None) => None,
        Ok(Some(bytes)) => Some(match receipt::parse_receipt(&bytes, id) {
            Ok(r) => ReceiptLookup::Found(Box::new(r)),
            Err(e) => {
                ReceiptLookup::malformed(format!("{}: {e}", dir.entry_path(&id.receipt_file())))
            }
        }),
        Err(e) => Some(ReceiptLookup::malformed(e.to_string())),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests look at their temp state directory directly
mod tests {
    use super::*;
    use crate::node::fsx::FsError;
    use crate::node::paths::STATE_DIR;

    fn receipt() -> Receipt {
        Receipt::new(
            OperationId::parse("op-1").unwrap(),
            Ended {
                outcome: Outcome::Abandoned,
                phase: Phase::Restart(Component::Etcd),
                message: "abandoned",
                failed_component: Some(Component::Etcd),
                did: Did::default(),
            },
            (&Component::ALL
                .into_iter()
                .map(|c| (c, ManifestLocation::Active))
                .collect::<BTreeMap<_, _>>())
                .into(),
            Timestamp("2026-11-30T00:00:00Z".to_string()),
            "0.1.0".to_string(),
            Default::default(),
        )
    }

    /// The one constructor: the message bounded to 512 bytes, the node's
    /// CAs fingerprinted, this binary's version, no restarts; what it makes
    /// passes the writer's check.
    #[test]
    fn the_one_receipt_constructor_bounds_and_fingerprints() {
        let t = crate::tools::runtime::double::node_tree("rsa");
        let root = Root::open(t.path()).unwrap();
        let long = "x".repeat(2000);
        let r = new_receipt(
            &root,
            &OperationId::parse("op-9").unwrap(),
            Ended {
                outcome: Outcome::Abandoned,
                phase: Phase::Restart(Component::Etcd),
                message: &long,
                failed_component: Some(Component::Etcd),
                did: Did::default(),
            },
            Component::ALL
                .into_iter()
                .map(|c| (c, ManifestLocation::Active))
                .collect(),
            time::OffsetDateTime::from_unix_timestamp(1_790_000_000).unwrap(),
        );
        assert!(r.message.0.len() <= 512, "{}", r.message.0.len());
        let ca = &r.ca_sha256;
        assert!(
            ca.ca.is_some() && ca.etcd_ca.is_some() && ca.front_proxy_ca.is_some(),
            "{ca:?}"
        );
        assert_eq!(r.runbook_version, crate::contract::version::RUNBOOK_VERSION);
        assert!(r.restarts.is_empty());
        assert_eq!(r.finished_at.0, "2026-09-21T14:13:20Z");
        CheckedReceipt::check(&r).unwrap();
    }

    /// SPEC 3: a receipt is checked before anything is written, created
    /// once, and never replaced.
    #[test]
    fn receipts_are_checked_then_written_once() {
        let mut bad = receipt();
        bad.runbook_version.clear();
        let e = CheckedReceipt::check(&bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "refusing to write an invalid receipt: runbookVersion is empty"
        );

        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        let dir = root
            .create_dir_all(STATE_DIR, STATE_DIR_MODE, Trust::Strict)
            .unwrap();
        let state = StateDir::new(&dir);
        assert!(state.completed().unwrap().is_none());
        let completed = state.completed_or_create().unwrap();
        let r = receipt();
        StateDir::write_once(&completed, CheckedReceipt::check(&r).unwrap()).unwrap();
        let again = StateDir::write_once(&completed, CheckedReceipt::check(&r).unwrap());
        assert!(matches!(again, Err(FsError::Exists { .. })), "{again:?}");
        let bytes = completed
            .read_file("op-1.json", crate::node::fsx::SMALL_FILE_MAX, Trust::Strict)
            .unwrap()
            .unwrap();
        assert_eq!(bytes, receipt::render_receipt(&r));
    }

    /// SPEC 2: the files have one home each, 0600 in a 0700 directory; the
    /// read-only modes find none of it until a renewal or a fence creates
    /// it, and a symlink in a file's place is refused, never followed.
    #[test]
    fn the_state_files_have_one_home_each() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let root = Root::open(t.path()).unwrap();
        assert!(StateDir::open(&root).unwrap().is_none());
        assert!(!t.path().join(STATE_DIR).exists(), "open creates nothing");
        let dir = StateDir::create(&root).unwrap();
        let state = StateDir::new(&dir);
        assert!(StateDir::open(&root).unwrap().is_some());
        assert_eq!(state.read_phase().unwrap(), None);
        assert_eq!(state.read_owner().unwrap(), None);
        let legacy = PhaseFile::Legacy(phase::LegacyPhase {
            state: phase::PhaseState::Done,
            component: None,
            started: 1,
            ca_sha256: "a".repeat(64),
            pid: 1,
        });
        state.write_phase(&legacy).unwrap();
        state.replace_owner(b"{\"pid\":1}\n").unwrap();
        assert_eq!(state.read_phase().unwrap().unwrap(), legacy);
        assert_eq!(state.read_owner().unwrap().unwrap(), b"{\"pid\":1}\n");
        let host = t.path().join(STATE_DIR);
        for (name, mode) in [("phase", 0o600), ("owner", 0o600), ("", 0o700)] {
            let m = std::fs::metadata(host.join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(m & 0o777, mode, "{name}");
        }
        state.logs_or_create().unwrap();
        state.logs_or_create().unwrap();
        assert!(host.join(LOG_DIR).is_dir());
        std::fs::remove_file(host.join("phase")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", host.join("phase")).unwrap();
        assert!(
            state.read_phase().is_err(),
            "a symlinked phase file is refused"
        );
    }
}
