//! Read-only inspection of the runbook's state directory: the lock, its
//! owner, the phase file (judged as a renewal would judge it), receipts,
//! and the node agent's state file. Creates nothing.

use crate::contract as doc;
use crate::node::fsx::{Dir, FsError, Root, Trust, SMALL_FILE_MAX};
use crate::node::lock::{self, HeldBy, Holder, OwnerInfo, Probe};
use crate::node::paths::{AGENT_STATE_FILE, PHASE_FILE};
use crate::node::statedir::{lookup_receipt, StateDir};
use crate::rules::agent::{self, AgentIntent};
use crate::rules::opid::OperationId;
use crate::rules::phase::PhaseFile;

/// How many recent receipts the operator view lists.
pub const RECENT_RECEIPTS: usize = 20;

pub use crate::rules::resume::{PhaseJudgement, ReceiptLookup, RunbookIntent};

/// Pure: judge a parsed phase file, given the receipt of the operation it
/// names (None: it has none): the resume rule (`resume::resume`) asked by
/// an observer. Malformed when the receipt it depends on is unusable: the
/// receipt of the operation it names cannot be trusted.
pub fn judge(
    phase: Option<&PhaseFile>,
    receipt_of_phase_op: Option<&ReceiptLookup>,
) -> PhaseJudgement {
    use crate::rules::resume::{resume, Asker, Resume};
    let Some(p) = phase else {
        return PhaseJudgement::Absent;
    };
    match resume(Some(p), Asker::Observer, |_| receipt_of_phase_op.cloned()) {
        Resume::Fresh => PhaseJudgement::Done,
        Resume::DoneByReceipt { .. } => PhaseJudgement::DoneByReceipt,
        Resume::ReceiptMalformed(why) => {
            let operation = match p {
                PhaseFile::V2(p2) => p2.operation_id.as_str(),
                PhaseFile::Legacy(_) => "?",
            };
            PhaseJudgement::Malformed(format!(
                "the receipt of its operation {operation} is unusable: {why}"
            ))
        }
        _ => PhaseJudgement::Pending,
    }
}

/// The phase file as read.
#[derive(Debug, Clone)]
pub struct PhaseReport {
    pub file: Option<PhaseFile>,
    /// None: the operation it names has no receipt (or none was looked up:
    /// no V2 file, or its work is done).
    pub receipt_of_phase_op: Option<ReceiptLookup>,
    /// Judged as a renewal would judge it; malformed: the phase file is
    /// unreadable or malformed (`file` is None), or the receipt it depends
    /// on is.
    pub judgement: PhaseJudgement,
}

impl PhaseReport {
    /// As printed (`intent`).
    pub fn intent(&self) -> RunbookIntent {
        self.judgement.intent()
    }

    /// As the read-only modes print it.
    pub fn view(&self) -> doc::PhaseFileView {
        let mut v = doc::PhaseFileView {
            path: crate::node::paths::state(PHASE_FILE),
            status: match (&self.file, &self.judgement) {
                (_, PhaseJudgement::Malformed(_)) => doc::PhaseFileStatus::Malformed,
                (None, _) => doc::PhaseFileStatus::Absent,
                (Some(_), _) => doc::PhaseFileStatus::Present,
            },
            intent: self.intent(),
            pending: self.judgement.is_pending(),
            format: None,
            state: None,
            next_component: None,
            operation_id: None,
            started_at: None,
            updated_at: None,
            force: None,
            threshold_days: None,
            ca_sha256: None,
            receipt: None,
            started: None,
            pid: None,
            error: self.judgement.malformed().map(str::to_string),
        };
        if let Some(p) = &self.file {
            v.state = Some(p.state());
            v.next_component = p.next_component();
            match p {
                PhaseFile::V2(p2) => {
                    v.format = Some(doc::PhaseFormat::V2);
                    v.operation_id = Some(p2.operation_id.clone());
                    v.started_at = Some(p2.started_at.clone());
                    v.updated_at = Some(p2.updated_at.clone());
                    v.force = Some(p2.force);
                    v.threshold_days = Some(p2.threshold_days);
                    v.ca_sha256 = Some(doc::CaSha256::from(&p2.ca_sha256));
                    v.receipt = Some(self.receipt_of_phase_op.clone());
                }
                PhaseFile::Legacy(l) => {
                    v.format = Some(doc::PhaseFormat::LegacyFiveLine);
                    v.started = Some(l.started);
                    v.pid = Some(l.pid);
                    v.ca_sha256 = Some(doc::CaSha256 {
                        ca: Some(doc::Sha256Hex(l.ca_sha256.clone())),
                        ..Default::default()
                    });
                }
            }
        }
        v
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        match (&self.file, &self.judgement) {
            (_, PhaseJudgement::Malformed(why)) => format!("malformed: {why}"),
            (None, _) => "absent".to_string(),
            (Some(p), judgement) => {
                // Plain words (SPEC 6, v1.2): the state names stay in JSON.
                let who = match p {
                    PhaseFile::V2(_) => p.plain_who(),
                    PhaseFile::Legacy(l) => {
                        let started = i64::try_from(l.started)
                            .ok()
                            .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
                            .map(crate::rules::clock::rfc3339)
                            .unwrap_or_else(|| format!("unix {}", l.started));
                        format!("legacy runbook renewal (pid {}, started {started})", l.pid)
                    }
                };
                let step = p.plain_step();
                // Who resumes it (SPEC 11, v1.3): a recovery's work only a
                // recovery while a leaf is expired.
                let recovery = matches!(p, PhaseFile::V2(v) if v.recovery);
                const RECOVERY_NEXT: &str =
                    "--recover-expired resumes it; a renewal only once no leaf is expired";
                match judgement {
                    PhaseJudgement::DoneByReceipt => {
                        format!("{who}, {step} (its success receipt exists: treated as done)")
                    }
                    PhaseJudgement::Pending => match (&self.receipt_of_phase_op, recovery) {
                        (Some(ReceiptLookup::Found(r)), false) => format!(
                            "{who}, unfinished while {step}; recorded {} by its receipt (the next renewal, under a new ID, resumes it)",
                            r.outcome
                        ),
                        (Some(ReceiptLookup::Found(r)), true) => format!(
                            "{who}, unfinished while {step}; recorded {} by its receipt (under a new ID: {RECOVERY_NEXT})",
                            r.outcome
                        ),
                        (_, false) => {
                            format!("{who}, unfinished while {step} (the next renewal resumes it)")
                        }
                        (_, true) => format!("{who}, unfinished while {step} ({RECOVERY_NEXT})"),
                    },
                    _ => format!("{who}, {step}"),
                }
            }
        }
    }
}

/// Read and judge the phase file (state dir may be absent).
pub fn read_phase(state: Option<&Dir>) -> PhaseReport {
    let unread = |judgement| PhaseReport {
        file: None,
        receipt_of_phase_op: None,
        judgement,
    };
    let file = match state.map(|s| StateDir::new(s).read_phase()) {
        None | Some(Ok(None)) => return unread(PhaseJudgement::Absent),
        Some(Ok(Some(f))) => f,
        Some(Err(e)) => return unread(PhaseJudgement::Malformed(e.to_string())),
    };
    let receipt_of_phase_op = match (&file, state) {
        (PhaseFile::V2(p), Some(s)) if file.is_unfinished() => match StateDir::new(s).completed() {
            Ok(c) => lookup_receipt(c.as_ref(), &p.operation_id),
            Err(e) => Some(ReceiptLookup::malformed(e.to_string())),
        },
        _ => None,
    };
    let judgement = judge(Some(&file), receipt_of_phase_op.as_ref());
    PhaseReport {
        file: Some(file),
        receipt_of_phase_op,
        judgement,
    }
}

/// The lock as probed, and who holds (or last held) it.
#[derive(Debug, Clone)]
pub struct LockReport {
    /// `Arc`: the report is cloned, the file-system error is not `Clone`.
    pub probe: Result<Probe, std::sync::Arc<FsError>>,
    pub owner: OwnerInfo,
    /// While held: the real holder, cross-checked with the owner record.
    pub held: Option<HeldBy>,
}

impl LockReport {
    pub fn is_held(&self) -> bool {
        matches!(self.probe, Ok(Probe::Held(_)))
    }
    /// Who holds the lock, as "held by ..." goes on (None when not held).
    pub fn held_by(&self) -> Option<String> {
        self.held.as_ref().map(HeldBy::describe)
    }
    /// As the read-only modes print it.
    pub fn view(&self) -> doc::LockView {
        let owner = match &self.owner {
            OwnerInfo::Absent => None,
            OwnerInfo::Known(o) => Some(doc::OwnerView::Known(o.clone())),
            OwnerInfo::Unparsed(s) => Some(doc::OwnerView::Raw(doc::OwnerRaw { raw: s.clone() })),
            OwnerInfo::Error(e) => {
                Some(doc::OwnerView::Error(doc::OwnerError { error: e.clone() }))
            }
        };
        let (state, error) = match &self.probe {
            Ok(Probe::Absent) => (doc::LockState::Absent, None),
            Ok(Probe::Free) => (doc::LockState::Free, None),
            Ok(Probe::Held(_)) => (doc::LockState::Held, None),
            Err(e) => (doc::LockState::Error, Some(e.to_string())),
        };
        let holder = self.held.as_ref().map(|h| {
            let (pid, command, command_line, error) = match &h.holder {
                Holder::Process {
                    pid,
                    command,
                    command_line,
                } => (Some(*pid), command.clone(), command_line.clone(), None),
                Holder::NotVisible => (
                    None,
                    None,
                    None,
                    Some("a process outside this pid namespace".to_string()),
                ),
                Holder::Claimed { .. } => (None, None, None, Some(h.holder.unverified())),
                Holder::Unknown(why) => (None, None, None, Some(why.clone())),
            };
            doc::LockHolder {
                pid,
                command,
                command_line,
                owner_record_matches: h.owner_matches,
                error,
            }
        });
        doc::LockView {
            path: crate::node::paths::state(crate::node::paths::LOCK_FILE),
            state,
            held: self.is_held(),
            holder,
            last_owner: owner,
            error,
        }
    }
    pub fn describe(&self) -> String {
        match (&self.probe, self.held.as_ref().map(HeldBy::describe_full)) {
            (Ok(Probe::Held(_)), Some(who)) => format!("held by {who}"),
            (Ok(Probe::Held(_)), None) => "held".to_string(),
            (Ok(Probe::Free), _) => "free".to_string(),
            (Ok(Probe::Absent), _) => "free (no lock file yet)".to_string(),
            (Err(e), _) => format!("unusable: {e}"),
        }
    }
}

pub fn read_lock(state: Option<&Dir>) -> LockReport {
    let probe = lock::probe(state).map_err(std::sync::Arc::new);
    let owner = match state {
        Some(s) => lock::read_owner(s),
        None => OwnerInfo::Absent,
    };
    let held = match &probe {
        Ok(Probe::Held(id)) => Some(HeldBy::new(
            lock::find_holder(*id),
            owner.clone(),
            &lock::boot_id(),
        )),
        _ => None,
    };
    LockReport { probe, owner, held }
}

/// The node agent's intent. `named` is the path given with `--agent-state`
/// (relative to the root); a named path that does not exist is unknown.
pub fn read_agent(root: &Root, named: Option<&str>) -> (String, AgentIntent) {
    let rel = named.unwrap_or(AGENT_STATE_FILE);
    let path = crate::node::paths::node(rel);
    let intent = match root.read_file(rel, SMALL_FILE_MAX, Trust::TypeOnly) {
        Ok(None) if named.is_some() => AgentIntent::Unknown {
            reason: format!("{path} does not exist"),
        },
        Ok(None) => AgentIntent::Absent,
        Ok(Some(bytes)) => match agent::parse_agent_state(&bytes) {
            AgentIntent::Unknown { reason } => AgentIntent::Unknown {
                reason: format!("{path}: {reason}"),
            },
            other => other,
        },
        Err(e) => AgentIntent::Unknown {
            reason: e.to_string(),
        },
    };
    (path, intent)
}

/// The agent's intent as the read-only modes print it.
pub fn agent_view(path: &str, a: &AgentIntent) -> doc::AgentStateView {
    let path = path.to_string();
    // A phase the parser accepted is one of the contract's.
    let unknown_phase = |path: String, phase: &str| doc::AgentStateView::Unknown {
        reason: format!("{path}: unknown phase {phase:?}"),
        path,
    };
    match a {
        AgentIntent::Absent => doc::AgentStateView::Absent { path },
        AgentIntent::Idle {
            phase,
            operation_id,
        } => match doc::by_name(phase) {
            Some(phase) => doc::AgentStateView::Idle {
                path,
                phase,
                operation_id: operation_id.clone(),
            },
            None => unknown_phase(path, phase),
        },
        AgentIntent::Pending {
            phase,
            operation_id,
        } => match doc::by_name(phase) {
            Some(phase) => doc::AgentStateView::Pending {
                path,
                phase,
                operation_id: operation_id.clone(),
            },
            None => unknown_phase(path, phase),
        },
        AgentIntent::Unknown { reason } => doc::AgentStateView::Unknown {
            path,
            reason: reason.clone(),
        },
    }
}

/// A receipt summary for the operator view.
pub use doc::ReceiptSummary;

/// Which receipts a listing keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// The newest N (by modification time).
    Newest(usize),
    /// Every one, newest first.
    All,
    /// Every one that is not a success (or cannot be read), newest first.
    Failed,
}

/// The receipts a listing keeps, newest first, and how many there are in
/// all. `Newest(n)` keeps at most n names in memory while the directory
/// streams by; `All` and `Failed` are what an operator asked for.
pub fn list_receipts(completed: Option<&Dir>, which: Listing) -> (usize, Vec<ReceiptSummary>) {
    let Some(dir) = completed else {
        return (0, Vec::new());
    };
    let cap = match which {
        Listing::Newest(n) => n,
        Listing::All | Listing::Failed => usize::MAX,
    };
    let mut total = 0usize;
    // (mtime_sec, mtime_nsec, name), keep the newest `cap` while the
    // directory streams by (100,000 receipts must not mean 100,000 names in
    // memory).
    let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, i64, String)>> =
        Default::default();
    let listed = dir.for_each_name(|name| {
        if !name.ends_with(".json") || name.starts_with('.') {
            return;
        }
        total += 1;
        let Ok(Some(st)) = dir.stat_entry(name) else {
            return;
        };
        let key = (st.st_mtime, st.st_mtime_nsec);
        if heap.len() == cap
            && heap
                .peek()
                .is_some_and(|min| (min.0 .0, min.0 .1, min.0 .2.as_str()) >= (key.0, key.1, name))
        {
            return; // older than everything kept: no allocation
        }
        heap.push(std::cmp::Reverse((key.0, key.1, name.to_string())));
        if heap.len() > cap {
            heap.pop();
        }
    });
    if listed.is_err() {
        return (0, Vec::new());
    }
    let mut newest: Vec<(i64, i64, String)> = heap.into_iter().map(|r| r.0).collect();
    newest.sort_by(|a, b| b.cmp(a));
    let list = newest
        .into_iter()
        .map(|(_, _, name)| {
            // Exactly one `.json` is the receipt's suffix: the receipt of
            // operation `x.json` is `x.json.json` (SPEC 2).
            let stem = name.strip_suffix(".json").unwrap_or(&name).to_string();
            match OperationId::parse(&stem) {
                Err(e) => ReceiptSummary {
                    operation_id: stem,
                    outcome: None,
                    phase: None,
                    finished_at: None,
                    message: None,
                    error: Some(format!("file name is not an operation ID: {e}")),
                    recovery: false,
                    health_at_end: None,
                    certificates: Vec::new(),
                },
                Ok(id) => match lookup_receipt(Some(dir), &id) {
                    Some(ReceiptLookup::Found(r)) => {
                        let d = r;
                        ReceiptSummary {
                            operation_id: stem,
                            outcome: Some(d.outcome),
                            phase: Some(d.phase),
                            finished_at: Some(d.finished_at),
                            message: Some(d.message),
                            error: None,
                            recovery: d.recovery,
                            health_at_end: d.health_at_end,
                            certificates: d.certificates,
                        }
                    }
                    Some(ReceiptLookup::Malformed(m)) => ReceiptSummary {
                        operation_id: stem,
                        outcome: None,
                        phase: None,
                        finished_at: None,
                        message: None,
                        error: Some(m.error),
                        recovery: false,
                        health_at_end: None,
                        certificates: Vec::new(),
                    },
                    None => ReceiptSummary {
                        operation_id: stem,
                        outcome: None,
                        phase: None,
                        finished_at: None,
                        message: None,
                        error: Some("vanished while listing".into()),
                        recovery: false,
                        health_at_end: None,
                        certificates: Vec::new(),
                    },
                },
            }
        })
        .filter(|r: &ReceiptSummary| {
            which != Listing::Failed || !r.outcome.is_some_and(|o| o.is_success())
        })
        .collect();
    (total, list)
}

/// Every operation ID `completed/` has a receipt for (file names; for
/// the nearest-ID hint).
pub fn receipt_ids(completed: Option<&Dir>) -> Vec<String> {
    let mut ids = Vec::new();
    if let Some(dir) = completed {
        let _ = dir.for_each_name(|name| {
            if let Some(stem) = name.strip_suffix(".json") {
                if !name.starts_with('.') {
                    ids.push(stem.to_string());
                }
            }
        });
    }
    ids
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // test support: writes a temp node's state directory
pub(crate) mod state_files {
    //! The state directory's files as a renewal leaves them (phase file,
    //! receipts), for the tests of the modes that read them.
    use super::*;
    use crate::node::paths::{COMPLETED_DIR, STATE_DIR};
    use crate::rules::component::Component;
    use crate::rules::outcome::{ManifestLocation, Outcome, Phase};
    use crate::rules::phase::{LegacyPhase, PhaseState, PhaseV2, CA_KEYS};
    use crate::rules::receipt::Receipt;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    pub(crate) fn id(s: &str) -> OperationId {
        OperationId::parse(s).unwrap()
    }

    pub(crate) fn v2(op: &str, state: PhaseState, next: Option<Component>) -> PhaseFile {
        PhaseFile::V2(PhaseV2 {
            format: crate::rules::files::PhaseV2Format::V2,
            operation_id: id(op),
            state,
            next_component: next,
            ca_sha256: CA_KEYS
                .iter()
                .map(|k| (k.to_string(), "a".repeat(64)))
                .collect(),
            force: false,
            threshold_days: 30,
            started_at: crate::rules::values::Timestamp("2026-11-30T00:00:00Z".into()),
            updated_at: crate::rules::values::Timestamp("2026-11-30T00:00:00Z".into()),
            resumed_from: None,
            recovery: false,
        })
    }

    pub(crate) fn legacy(state: PhaseState, component: Option<Component>) -> PhaseFile {
        PhaseFile::Legacy(LegacyPhase {
            state,
            component,
            started: 1_764_460_800,
            ca_sha256: "a".repeat(64),
            pid: 4242,
        })
    }

    pub(crate) fn receipt(op: &str, outcome: Outcome) -> Receipt {
        Receipt::new(
            id(op),
            crate::rules::files::Ended {
                outcome,
                phase: if outcome.is_success() {
                    Phase::Done
                } else {
                    Phase::Health
                },
                message: &format!("{outcome}"),
                failed_component: None,
                did: Default::default(),
            },
            (&Component::ALL
                .iter()
                .map(|c| (*c, ManifestLocation::Active))
                .collect::<std::collections::BTreeMap<_, _>>())
                .into(),
            crate::rules::values::Timestamp("2026-11-30T00:10:00Z".into()),
            "0.1.0".into(),
            Default::default(),
        )
    }

    /// `<root>/var/lib/nvke/k8s-cert-renewal` and its `completed/`, 0700.
    pub(crate) fn state_dir(root: &Path) -> PathBuf {
        let state = root.join(STATE_DIR);
        std::fs::create_dir_all(state.join(COMPLETED_DIR)).unwrap();
        for d in [state.clone(), state.join(COMPLETED_DIR)] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        state
    }

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    pub(crate) fn write_phase(root: &Path, p: &PhaseFile) {
        let bytes = match p {
            PhaseFile::V2(p) => crate::rules::phase::render_v2(p),
            PhaseFile::Legacy(l) => crate::rules::phase::render_legacy(l),
        };
        write(&state_dir(root).join(PHASE_FILE), &bytes);
    }

    /// `completed/<file_id>.json` holding `r` (another ID: a malformed one).
    pub(crate) fn write_receipt(root: &Path, file_id: &str, r: &Receipt) -> PathBuf {
        let p = state_dir(root)
            .join(COMPLETED_DIR)
            .join(format!("{file_id}.json"));
        write(&p, &crate::rules::receipt::render_receipt(r));
        p
    }

    pub(crate) fn write_raw(path: &Path, bytes: &[u8]) {
        write(path, bytes)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files in their temp state directory
mod tests {
    //! SPEC 5 and 6: what the read-only modes report of the state
    //! directory: the phase file judged as a renewal would judge it, the
    //! receipts (looked up by file name, the newest twenty), the lock and
    //! its owner, the agent's intent; and none of it creates anything.
    use super::state_files::*;
    use super::*;
    use crate::node::paths::{COMPLETED_DIR, STATE_DIR};
    use crate::rules::component::Component;
    use crate::rules::outcome::Outcome;
    use crate::rules::phase::PhaseState;
    use serde_json::Value;
    use std::path::Path;

    fn root(t: &Path) -> Root {
        Root::open(t).unwrap()
    }

    fn lookup(found: Option<Outcome>) -> Option<ReceiptLookup> {
        found.map(|o| ReceiptLookup::Found(Box::new(receipt("op-1", o))))
    }

    /// The JSON name of an intent.
    fn name(intent: RunbookIntent) -> String {
        serde_json::to_value(intent)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    /// SPEC 4 step 3, asked by an observer.
    #[test]
    fn the_phase_file_is_judged_as_a_renewal_would() {
        let unfinished = v2("op-1", PhaseState::RestartPending, Some(Component::Etcd));
        let judged =
            |p: Option<&PhaseFile>, r: &Option<ReceiptLookup>| name(judge(p, r.as_ref()).intent());
        assert_eq!(judged(None, &lookup(None)), "absent");
        assert_eq!(
            judged(Some(&v2("op-1", PhaseState::Done, None)), &lookup(None)),
            "done"
        );
        assert_eq!(
            judged(Some(&legacy(PhaseState::Done, None)), &lookup(None)),
            "done"
        );
        assert_eq!(judged(Some(&unfinished), &lookup(None)), "pending");
        // Its success receipt exists: the crash fell between the receipt
        // and the last phase write.
        for o in [Outcome::Renewed, Outcome::Unchanged] {
            assert_eq!(
                judged(Some(&unfinished), &lookup(Some(o))),
                "done-by-receipt"
            );
        }
        // A failure leaves its work for the next operation.
        for o in [Outcome::Failed, Outcome::Cancelled, Outcome::Abandoned] {
            assert_eq!(judged(Some(&unfinished), &lookup(Some(o))), "pending");
        }
        assert_eq!(
            judge(Some(&unfinished), Some(&ReceiptLookup::malformed("bad"))),
            PhaseJudgement::Malformed(
                "the receipt of its operation op-1 is unusable: bad".to_string()
            )
        );
        // Legacy work carries no ID: no receipt makes it done.
        let legacy_unfinished = legacy(PhaseState::RestartPending, Some(Component::Etcd));
        assert_eq!(
            judged(Some(&legacy_unfinished), &lookup(Some(Outcome::Renewed))),
            "pending"
        );
    }

    /// The phase file on disk, with the receipt of the operation it names.
    #[test]
    fn the_phase_file_on_disk_is_read_with_its_operations_receipt() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(name(read_phase(None).intent()), "absent");
        write_phase(
            t.path(),
            &v2(
                "op-1",
                PhaseState::RestartPending,
                Some(Component::KubeApiserver),
            ),
        );
        let state = StateDir::open(&root(t.path())).unwrap();
        let p = read_phase(state.as_ref());
        assert_eq!(name(p.intent()), "pending");
        let j = serde_json::to_value(p.view()).unwrap();
        assert_eq!(j["nextComponent"], "kube-apiserver");
        assert_eq!(j["operationID"], "op-1");
        assert_eq!(j["pending"], true);
        write_receipt(t.path(), "op-1", &receipt("op-1", Outcome::Renewed));
        let p = read_phase(state.as_ref());
        assert_eq!(name(p.intent()), "done-by-receipt");
        assert_eq!(
            serde_json::to_value(p.view()).unwrap()["receipt"]["outcome"],
            "renewed"
        );
        write_raw(&t.path().join(STATE_DIR).join(PHASE_FILE), b"STATE=done\n");
        let p = read_phase(state.as_ref());
        assert_eq!(p.intent(), RunbookIntent::Malformed);
        match p.judgement.malformed() {
            Some(e) => assert!(
                e.starts_with("/var/lib/nvke/k8s-cert-renewal/phase: "),
                "{e}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            serde_json::to_value(p.view()).unwrap()["status"],
            "malformed"
        );
    }

    /// SPEC 3: a receipt whose operationID is not its file name is
    /// malformed.
    #[test]
    fn a_receipt_is_found_by_its_file_name_and_must_name_itself() {
        let t = tempfile::tempdir().unwrap();
        write_receipt(t.path(), "op-1", &receipt("op-1", Outcome::Failed));
        write_receipt(t.path(), "op-2", &receipt("op-3", Outcome::Renewed));
        let state = StateDir::open(&root(t.path())).unwrap().unwrap();
        let completed = StateDir::new(&state).completed().unwrap();
        let c = completed.as_ref();
        assert!(matches!(
            lookup_receipt(c, &id("op-1")),
            Some(ReceiptLookup::Found(r)) if r.outcome == Outcome::Failed
        ));
        match lookup_receipt(c, &id("op-2")) {
            Some(ReceiptLookup::Malformed(m)) => assert!(
                m.error
                    .starts_with("/var/lib/nvke/k8s-cert-renewal/completed/op-2.json: "),
                "{}",
                m.error
            ),
            other => panic!("{other:?}"),
        }
        assert!(lookup_receipt(c, &id("op-3")).is_none());
        assert!(lookup_receipt(None, &id("op-1")).is_none());
    }

    /// SPEC 6: at most the 20 most recent receipts, newest first, with how
    /// many there are; a file that is not a receipt's name is shown as such;
    /// dot-files (temp names) are not receipts.
    #[test]
    fn the_recent_receipts_are_the_newest_twenty() {
        let t = tempfile::tempdir().unwrap();
        let base =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_764_460_800);
        let set_mtime = |p: &Path, secs: u64| {
            let f = std::fs::File::options().write(true).open(p).unwrap();
            f.set_modified(base + std::time::Duration::from_secs(secs))
                .unwrap();
        };
        for i in 0..25u64 {
            let name = format!("op-{i:02}");
            let p = write_receipt(t.path(), &name, &receipt(&name, Outcome::Renewed));
            set_mtime(&p, i * 10);
        }
        let completed = t.path().join(STATE_DIR).join(COMPLETED_DIR);
        // The receipt of operation `x.json` is `x.json.json` (SPEC 2).
        let p = write_receipt(t.path(), "x.json", &receipt("x.json", Outcome::Failed));
        set_mtime(&p, 1000);
        write_raw(&completed.join("not an id!.json"), b"{}");
        set_mtime(&completed.join("not an id!.json"), 999);
        write_raw(&completed.join(".op-99.json.tmp.json"), b"");
        write_raw(&completed.join("notes.txt"), b"");
        let state = StateDir::open(&root(t.path())).unwrap().unwrap();
        let (total, list) = list_receipts(
            StateDir::new(&state).completed().unwrap().as_ref(),
            Listing::Newest(RECENT_RECEIPTS),
        );
        assert_eq!(total, 27);
        assert_eq!(list.len(), RECENT_RECEIPTS);
        assert_eq!(list[0].operation_id, "x.json");
        assert_eq!(list[0].outcome, Some(doc::Outcome::Failed));
        assert_eq!(list[1].operation_id, "not an id!");
        assert!(list[1]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("file name is not an operation ID")));
        let rest: Vec<&str> = list[2..].iter().map(|r| r.operation_id.as_str()).collect();
        let expected: Vec<String> = (7..25).rev().map(|i| format!("op-{i:02}")).collect();
        assert_eq!(rest, expected);
    }

    /// SPEC 6: the lock's holder is named only while it holds the lock
    /// (v1.1: the process in /proc/locks, here this one, which the owner
    /// record names); the owner file names the last runbook either way.
    #[test]
    fn the_lock_names_its_holder_only_while_held() {
        let t = tempfile::tempdir().unwrap();
        let none = read_lock(None);
        assert_eq!(none.describe(), "free (no lock file yet)");
        state_dir(t.path());
        let state = StateDir::open(&root(t.path())).unwrap().unwrap();
        let guard = lock::acquire(&state, std::time::Duration::from_secs(1), &|| false).unwrap();
        let me = lock::owner_for(
            Some(&crate::rules::opid::OperationId::parse("op-1").unwrap()),
            crate::contract::OwnerMode::Renew,
            time::macros::datetime!(2026-11-30 00:00:00 UTC),
        );
        guard.write_owner(&state, &me).unwrap();
        let held = read_lock(Some(&state));
        assert!(held.is_held());
        let j = serde_json::to_value(held.view()).unwrap();
        assert_eq!(j["state"], "held");
        assert_eq!(j["holder"]["pid"], std::process::id());
        assert_eq!(j["holder"]["ownerRecordMatches"], true);
        assert_eq!(j["lastOwner"]["operationID"], "op-1");
        let d = held.describe();
        assert!(
            d.starts_with(&format!("held by pid {} (", std::process::id())),
            "{d}"
        );
        assert!(
            d.ends_with(": renew, operation op-1, since 2026-11-30T00:00:00Z)"),
            "{d}"
        );
        drop(guard);
        let free = read_lock(Some(&state));
        let j = serde_json::to_value(free.view()).unwrap();
        assert_eq!(
            (j["state"].as_str(), j["held"].as_bool()),
            (Some("free"), Some(false))
        );
        assert_eq!(j["holder"], Value::Null);
        assert_eq!(j["lastOwner"]["operationID"], "op-1");
    }

    /// SPEC 5: the default agent path without a file is `absent`; a path
    /// named with --agent-state that does not exist, or an unparsable
    /// file, is `unknown`, naming the path.
    #[test]
    fn the_agents_intent_is_absent_only_at_the_default_path() {
        let t = tempfile::tempdir().unwrap();
        let r = root(t.path());
        assert_eq!(read_agent(&r, None).1, AgentIntent::Absent);
        match read_agent(&r, Some("var/lib/agent.json")).1 {
            AgentIntent::Unknown { reason } => {
                assert_eq!(reason, "/var/lib/agent.json does not exist")
            }
            other => panic!("{other:?}"),
        }
        let file = t.path().join(AGENT_STATE_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"not json").unwrap();
        match read_agent(&r, None).1 {
            AgentIntent::Unknown { reason } => assert!(
                reason.starts_with("/var/lib/nvke/node-agent/k8s-cert-renewal-state.json: "),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
        std::fs::write(
            &file,
            br#"{"k8sCertRenewalState": {"phase": "restart_pending", "operationID": "op-9"}}"#,
        )
        .unwrap();
        let (path, a) = read_agent(&r, None);
        assert_eq!(
            a,
            AgentIntent::Pending {
                phase: "restart_pending".into(),
                operation_id: Some("op-9".into())
            }
        );
        assert_eq!(
            serde_json::to_value(agent_view(&path, &a)).unwrap()["operationID"],
            "op-9"
        );
    }

    /// SPEC 3 and 5: the read-only modes never create the state directory.
    #[test]
    fn reading_an_empty_node_creates_nothing() {
        let t = tempfile::tempdir().unwrap();
        let r = root(t.path());
        assert!(StateDir::open(&r).unwrap().is_none());
        let state = StateDir::open(&r).unwrap();
        assert_eq!(name(read_phase(state.as_ref()).intent()), "absent");
        assert_eq!(
            serde_json::to_value(read_lock(state.as_ref()).view()).unwrap()["state"],
            "absent"
        );
        assert_eq!(read_agent(&r, None).1, AgentIntent::Absent);
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    }
}
