//! Read-only inspection of the runbook's state directory: the lock, its
//! owner, the phase file (judged as a renewal would judge it), receipts,
//! and the node agent's state file. Creates nothing.

use crate::agent::{self, AgentIntent};
use crate::component::Component;
use crate::fsx::{Dir, FsError, Root, Trust, SMALL_FILE_MAX};
use crate::lock::{self, OwnerInfo, Probe};
use crate::opid::OperationId;
use crate::paths::{AGENT_STATE_FILE, COMPLETED_DIR, PHASE_FILE, STATE_DIR};
use crate::phase::{self, PhaseFile};
use crate::receipt::{self, Receipt};
use serde::Serialize;
use serde_json::{json, Value};

/// How many recent receipts the operator view lists.
pub const RECENT_RECEIPTS: usize = 20;

/// The state directory, if it exists and is acceptable.
pub fn open_state(root: &Root) -> Result<Option<Dir>, FsError> {
    root.open_dir(STATE_DIR, Trust::Strict)
}

/// The `completed/` directory, if it exists and is acceptable.
pub fn open_completed(state: &Dir) -> Result<Option<Dir>, FsError> {
    state.open_subdir(COMPLETED_DIR, Trust::Strict)
}

/// A receipt looked up by ID.
#[derive(Debug, Clone)]
pub enum ReceiptLookup {
    Absent,
    Found(Receipt),
    Malformed(String),
}

impl ReceiptLookup {
    pub fn to_json(&self) -> Value {
        match self {
            ReceiptLookup::Absent => Value::Null,
            ReceiptLookup::Found(r) => receipt_json(r),
            ReceiptLookup::Malformed(e) => json!({ "malformed": true, "error": e }),
        }
    }
}

pub fn receipt_json(r: &Receipt) -> Value {
    serde_json::from_slice(&receipt::render_receipt(r)).unwrap_or(Value::Null)
}

/// Look up `completed/<ID>.json` (never creating anything).
pub fn lookup_receipt(completed: Option<&Dir>, id: &OperationId) -> ReceiptLookup {
    let Some(dir) = completed else {
        return ReceiptLookup::Absent;
    };
    match dir.read_file(&id.receipt_file(), SMALL_FILE_MAX, Trust::Strict) {
        Ok(None) => ReceiptLookup::Absent,
        Ok(Some(bytes)) => match receipt::parse_receipt(&bytes, id) {
            Ok(r) => ReceiptLookup::Found(r),
            Err(e) => {
                ReceiptLookup::Malformed(format!("{}: {e}", dir.entry_path(&id.receipt_file())))
            }
        },
        Err(e) => ReceiptLookup::Malformed(e.to_string()),
    }
}

/// What the phase file says, judged as a renewal would judge it.
#[derive(Debug, Clone)]
pub enum RunbookIntent {
    /// No phase file.
    Absent,
    /// `done`, in either format.
    Done,
    /// Unfinished V2 whose operation has a success receipt: the crash fell
    /// between its receipt and its last phase write; treated as done.
    DoneByReceipt,
    /// Unfinished work a renewal would resume.
    Pending,
    /// Unreadable or malformed (phase file or the receipt it depends on).
    Malformed(String),
}

impl RunbookIntent {
    pub fn as_str(&self) -> &'static str {
        match self {
            RunbookIntent::Absent => "absent",
            RunbookIntent::Done => "done",
            RunbookIntent::DoneByReceipt => "done-by-receipt",
            RunbookIntent::Pending => "pending",
            RunbookIntent::Malformed(_) => "malformed",
        }
    }
    pub fn is_pending(&self) -> bool {
        matches!(self, RunbookIntent::Pending)
    }
}

/// Pure: judge a parsed phase file, given the receipt of the operation it
/// names: the resume rule (`resume::resume`) asked by an observer.
pub fn judge(phase: Option<&PhaseFile>, receipt_of_phase_op: &ReceiptLookup) -> RunbookIntent {
    use crate::resume::{resume, Asker, Resume};
    let Some(p) = phase else {
        return RunbookIntent::Absent;
    };
    match resume(Some(p), Asker::Observer, |_| receipt_of_phase_op.clone()) {
        Resume::Fresh => RunbookIntent::Done,
        Resume::DoneByReceipt { .. } => RunbookIntent::DoneByReceipt,
        Resume::ReceiptMalformed(e) => RunbookIntent::Malformed(format!(
            "the receipt of its operation {} is unusable: {e}",
            match p {
                PhaseFile::V2(p2) => p2.operation_id.as_str(),
                PhaseFile::Legacy(_) => "?",
            }
        )),
        _ => RunbookIntent::Pending,
    }
}

/// The phase file as read.
#[derive(Debug, Clone)]
pub struct PhaseReport {
    pub file: Option<PhaseFile>,
    pub receipt_of_phase_op: ReceiptLookup,
    pub intent: RunbookIntent,
}

impl PhaseReport {
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "path": crate::paths::state(PHASE_FILE),
            "status": match (&self.file, &self.intent) {
                (_, RunbookIntent::Malformed(_)) => "malformed",
                (None, _) => "absent",
                (Some(_), _) => "present",
            },
            "intent": self.intent.as_str(),
            "pending": self.intent.is_pending(),
            "format": Value::Null,
            "state": Value::Null,
            "nextComponent": Value::Null,
            "operationID": Value::Null,
        });
        if let Some(p) = &self.file {
            v["format"] = json!(p.format_name());
            v["state"] = json!(p.state().as_str());
            v["nextComponent"] = json!(p.next_component().map(Component::name));
            match p {
                PhaseFile::V2(p2) => {
                    v["operationID"] = json!(p2.operation_id.as_str());
                    v["startedAt"] = json!(p2.started_at);
                    v["updatedAt"] = json!(p2.updated_at);
                    v["force"] = json!(p2.force);
                    v["thresholdDays"] = json!(p2.threshold_days);
                    v["caSHA256"] = json!(p2.ca_sha256);
                    v["receipt"] = self.receipt_of_phase_op.to_json();
                }
                PhaseFile::Legacy(l) => {
                    v["started"] = json!(l.started);
                    v["pid"] = json!(l.pid);
                    v["caSHA256"] = json!({ "ca.crt": l.ca_sha256 });
                }
            }
        }
        if let RunbookIntent::Malformed(e) = &self.intent {
            v["error"] = json!(e);
        }
        v
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        match (&self.file, &self.intent) {
            (_, RunbookIntent::Malformed(e)) => format!("malformed: {e}"),
            (None, _) => "absent".to_string(),
            (Some(p), intent) => {
                let who = match p {
                    PhaseFile::V2(p2) => format!("V2 operation {}", p2.operation_id),
                    PhaseFile::Legacy(l) => {
                        let started = i64::try_from(l.started)
                            .ok()
                            .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
                            .map(crate::clock::rfc3339)
                            .unwrap_or_else(|| format!("unix {}", l.started));
                        format!("legacy five-line (pid {}, started {started})", l.pid)
                    }
                };
                let next = p
                    .next_component()
                    .map(|c| format!(" next={c}"))
                    .unwrap_or_default();
                let tail = match intent {
                    RunbookIntent::DoneByReceipt => {
                        " (its success receipt exists: treated as done)"
                    }
                    RunbookIntent::Pending => " (unfinished: the next renewal resumes it)",
                    _ => "",
                };
                format!("{} {}{next}{tail}", who, p.state().as_str())
            }
        }
    }
}

/// Read and judge the phase file (state dir may be absent).
pub fn read_phase(state: Option<&Dir>) -> PhaseReport {
    let bytes = match state.map(|s| s.read_file(PHASE_FILE, SMALL_FILE_MAX, Trust::Strict)) {
        None | Some(Ok(None)) => {
            return PhaseReport {
                file: None,
                receipt_of_phase_op: ReceiptLookup::Absent,
                intent: RunbookIntent::Absent,
            }
        }
        Some(Ok(Some(b))) => b,
        Some(Err(e)) => {
            return PhaseReport {
                file: None,
                receipt_of_phase_op: ReceiptLookup::Absent,
                intent: RunbookIntent::Malformed(e.to_string()),
            }
        }
    };
    let file = match phase::parse_phase_file(&bytes) {
        Ok(f) => f,
        Err(e) => {
            return PhaseReport {
                file: None,
                receipt_of_phase_op: ReceiptLookup::Absent,
                intent: RunbookIntent::Malformed(format!(
                    "{}: {e}",
                    crate::paths::state(PHASE_FILE)
                )),
            }
        }
    };
    let receipt_of_phase_op = match (&file, state) {
        (PhaseFile::V2(p), Some(s)) if file.is_unfinished() => match open_completed(s) {
            Ok(c) => lookup_receipt(c.as_ref(), &p.operation_id),
            Err(e) => ReceiptLookup::Malformed(e.to_string()),
        },
        _ => ReceiptLookup::Absent,
    };
    let intent = judge(Some(&file), &receipt_of_phase_op);
    PhaseReport {
        file: Some(file),
        receipt_of_phase_op,
        intent,
    }
}

/// The lock as probed, and who holds (or last held) it.
#[derive(Debug, Clone)]
pub struct LockReport {
    pub probe: Result<Probe, String>,
    pub owner: OwnerInfo,
}

impl LockReport {
    pub fn is_held(&self) -> bool {
        matches!(self.probe, Ok(Probe::Held))
    }
    pub fn to_json(&self) -> Value {
        let owner = match &self.owner {
            OwnerInfo::Absent => Value::Null,
            OwnerInfo::Known(o) => serde_json::to_value(o).unwrap_or(Value::Null),
            OwnerInfo::Unparsed(s) => json!({ "raw": s }),
            OwnerInfo::Error(e) => json!({ "error": e }),
        };
        let (state, error) = match &self.probe {
            Ok(p) => (p.as_str(), None),
            Err(e) => ("error", Some(e.clone())),
        };
        let mut v = json!({
            "path": crate::paths::state(crate::paths::LOCK_FILE),
            "state": state,
            "held": self.is_held(),
            "holder": if self.is_held() { owner.clone() } else { Value::Null },
            "lastOwner": if self.is_held() { Value::Null } else { owner },
        });
        if let Some(e) = error {
            v["error"] = json!(e);
        }
        v
    }
    pub fn describe(&self) -> String {
        match &self.probe {
            Ok(Probe::Held) => format!("held by {}", self.owner.describe()),
            Ok(Probe::Free) => "free".to_string(),
            Ok(Probe::Absent) => "free (no lock file yet)".to_string(),
            Err(e) => format!("unusable: {e}"),
        }
    }
}

pub fn read_lock(state: Option<&Dir>) -> LockReport {
    let probe = lock::probe(state).map_err(|e| e.to_string());
    let owner = match state {
        Some(s) => lock::read_owner(s),
        None => OwnerInfo::Absent,
    };
    LockReport { probe, owner }
}

/// The node agent's intent. `named` is the path given with `--agent-state`
/// (relative to the root); a named path that does not exist is unknown.
pub fn read_agent(root: &Root, named: Option<&str>) -> (String, AgentIntent) {
    let rel = named.unwrap_or(AGENT_STATE_FILE);
    let path = crate::paths::node(rel);
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

pub fn agent_json(path: &str, a: &AgentIntent) -> Value {
    let mut v = json!({ "path": path, "state": a.as_str() });
    match a {
        AgentIntent::Idle {
            phase,
            operation_id,
        }
        | AgentIntent::Pending {
            phase,
            operation_id,
        } => {
            v["phase"] = json!(phase);
            v["operationID"] = json!(operation_id);
        }
        AgentIntent::Unknown { reason } => v["reason"] = json!(reason),
        AgentIntent::Absent => {}
    }
    v
}

/// A receipt summary for the operator view.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptSummary {
    #[serde(rename = "operationID")]
    pub operation_id: String,
    pub outcome: Option<String>,
    pub phase: Option<String>,
    pub finished_at: Option<String>,
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The most recent receipts (by modification time, newest first), at most
/// `RECENT_RECEIPTS`, plus how many receipts there are. Lists the directory
/// once with constant memory; parses only the ones shown.
pub fn recent_receipts(completed: Option<&Dir>) -> (usize, Vec<ReceiptSummary>) {
    let Some(dir) = completed else {
        return (0, Vec::new());
    };
    let mut total = 0usize;
    // (mtime_sec, mtime_nsec, name), keep the newest RECENT_RECEIPTS while
    // the directory streams by (100,000 receipts must not mean 100,000
    // names in memory).
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
        if heap.len() == RECENT_RECEIPTS
            && heap
                .peek()
                .is_some_and(|min| (min.0 .0, min.0 .1, min.0 .2.as_str()) >= (key.0, key.1, name))
        {
            return; // older than everything kept: no allocation
        }
        heap.push(std::cmp::Reverse((key.0, key.1, name.to_string())));
        if heap.len() > RECENT_RECEIPTS {
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
                },
                Ok(id) => match lookup_receipt(Some(dir), &id) {
                    ReceiptLookup::Found(r) => ReceiptSummary {
                        operation_id: stem,
                        outcome: Some(r.outcome.as_str().to_string()),
                        phase: Some(r.phase.as_string()),
                        finished_at: Some(r.finished_at.clone()),
                        message: Some(r.message.clone()),
                        error: None,
                    },
                    ReceiptLookup::Malformed(e) => ReceiptSummary {
                        operation_id: stem,
                        outcome: None,
                        phase: None,
                        finished_at: None,
                        message: None,
                        error: Some(e),
                    },
                    ReceiptLookup::Absent => ReceiptSummary {
                        operation_id: stem,
                        outcome: None,
                        phase: None,
                        finished_at: None,
                        message: None,
                        error: Some("vanished while listing".into()),
                    },
                },
            }
        })
        .collect();
    (total, list)
}
