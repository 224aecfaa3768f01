//! The fencing check's decision (SPEC 6, "Fencing check"; v1.1): from the
//! operation's receipt, the phase file and what a dead run left staged,
//! confirm, abandon or refuse. Pure: the status mode reads the node, holds
//! the lock and carries the plan out.

use crate::rules::component::Component;
use crate::rules::opid::OperationId;
use crate::rules::outcome::Phase;
use crate::rules::phase::{PhaseFile, PhaseState};
use crate::rules::receipt::Receipt;
use crate::rules::resume::ReceiptLookup;
use crate::rules::values::FenceReason;

/// What a fencing check would do. Every outcome reached with the lock held
/// puts back `restore` first: the manifests a dead run left staged and not
/// active (SPEC 6, v1.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FencePlan {
    /// A receipt exists: termination confirmed.
    Confirm {
        receipt: Box<Receipt>,
        restore: Vec<Component>,
    },
    /// No receipt: record `abandoned`, after putting back these staged manifests.
    Abandon { restore: Vec<Component> },
    /// Never abandon: unconfirmed, with the reason.
    Refuse {
        why: String,
        reason: FenceReason,
        restore: Vec<Component>,
    },
}

impl FencePlan {
    /// The staged manifests this plan puts back.
    pub fn restore(&self) -> &[Component] {
        match self {
            FencePlan::Confirm { restore, .. }
            | FencePlan::Abandon { restore }
            | FencePlan::Refuse { restore, .. } => restore,
        }
    }
}

/// The phase file as the fencing check weighs it: parsed, or why it could
/// not be judged (unreadable, malformed).
#[derive(Debug, Clone, Copy)]
pub struct PhaseSeen<'a> {
    pub file: Option<&'a PhaseFile>,
    /// Why the phase file (or the receipt it depends on) is malformed.
    pub malformed: Option<&'a str>,
}

/// Decide the fencing action: a receipt confirms (a malformed one refuses);
/// else an unreadable phase file or an unfinished legacy one (it carries no
/// operation ID) refuses; else abandon. `restore` is put back in every plan.
pub fn plan(
    receipt: Option<&ReceiptLookup>,
    phase: PhaseSeen<'_>,
    restore: Vec<Component>,
) -> FencePlan {
    match receipt {
        Some(ReceiptLookup::Found(r)) => {
            return FencePlan::Confirm {
                receipt: r.clone(),
                restore,
            }
        }
        Some(ReceiptLookup::Malformed(m)) => {
            return FencePlan::Refuse {
                why: format!("the receipt is malformed: {}", m.error),
                reason: FenceReason::MalformedReceipt,
                restore,
            }
        }
        None => {}
    }
    match (phase.file, phase.malformed) {
        (None, Some(e)) => {
            return FencePlan::Refuse {
                why: format!("the phase file is unreadable or malformed: {e}"),
                reason: FenceReason::MalformedPhase,
                restore,
            }
        }
        (Some(PhaseFile::Legacy(l)), _) if l.state != PhaseState::Done => {
            return FencePlan::Refuse {
                why: "the phase file is legacy five-line and unfinished: it carries no operation ID, so it is never abandoned"
                    .to_string(),
                reason: FenceReason::LegacyUnfinished,
                restore,
            }
        }
        _ => {}
    }
    FencePlan::Abandon { restore }
}

/// Refused before the lock: the state directory or the lock file cannot
/// be used, so a check would be unconfirmed and put nothing back.
pub fn refused_before_lock(why: String) -> FencePlan {
    FencePlan::Refuse {
        why,
        reason: FenceReason::WriteFailed,
        restore: Vec::new(),
    }
}

/// The phase an abandoned receipt records: where the operation stood by its
/// own unfinished phase file (and the component it was restarting), else
/// `cancelled`.
pub fn abandoned_phase(file: Option<&PhaseFile>, id: &OperationId) -> (Phase, Option<Component>) {
    match file {
        Some(PhaseFile::V2(p)) if &p.operation_id == id && p.state != PhaseState::Done => {
            match p.state {
                PhaseState::Renewing => (Phase::RenewCerts, None),
                PhaseState::RestartPending => match p.next_component {
                    Some(c) => (Phase::Restart(c), Some(c)),
                    None => (Phase::Postflight, None),
                },
                PhaseState::Done => (Phase::Done, None),
            }
        }
        _ => (Phase::Cancelled, None),
    }
}

/// What an abandoned receipt says: no receipt (and, when `never_seen`, no
/// record of the operation at all), what was put back, what was left for
/// an operator, and an unfinished phase file left for the next operation.
pub fn abandon_message(
    id: &OperationId,
    never_seen: bool,
    restored: &[Component],
    conflicts: &[String],
    phase_pending: bool,
) -> String {
    let mut message = format!(
        "abandoned by the fencing status check: no receipt for {id}{}; {}",
        if never_seen {
            " and this node has no record of it (no phase file, owner record or log names it)"
        } else {
            ""
        },
        if restored.is_empty() {
            "no staged manifest to put back".to_string()
        } else {
            format!("put back {}", names(restored))
        }
    );
    if !conflicts.is_empty() {
        message.push_str(&format!("; {}", conflicts.join("; ")));
    }
    if phase_pending {
        message.push_str("; the unfinished phase file is left for the next operation to resume");
    }
    message
}

/// `etcd, kube-apiserver`.
pub fn names(cs: &[Component]) -> String {
    cs.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::phase::parse_phase_file;

    fn legacy(state: &str, component: &str) -> PhaseFile {
        parse_phase_file(
            format!(
                "STATE={state}\nCOMPONENT={component}\nSTARTED=1764460800\nCA_SHA256={}\nPID=4242\n",
                "0123456789abcdef".repeat(4)
            )
            .as_bytes(),
        )
        .unwrap()
    }

    const NO_PHASE: PhaseSeen<'static> = PhaseSeen {
        file: None,
        malformed: None,
    };

    #[test]
    fn no_receipt_and_no_phase_file_abandons_and_puts_back() {
        let p = plan(None, NO_PHASE, vec![Component::Etcd]);
        assert_eq!(
            p,
            FencePlan::Abandon {
                restore: vec![Component::Etcd]
            }
        );
        assert_eq!(p.restore(), [Component::Etcd]);
    }

    #[test]
    fn a_malformed_receipt_refuses_whatever_the_phase_file_says() {
        let p = plan(
            Some(&ReceiptLookup::malformed("bad json")),
            NO_PHASE,
            vec![Component::Etcd],
        );
        assert_eq!(
            p,
            FencePlan::Refuse {
                why: "the receipt is malformed: bad json".into(),
                reason: FenceReason::MalformedReceipt,
                restore: vec![Component::Etcd],
            }
        );
    }

    #[test]
    fn a_malformed_phase_file_refuses_unless_it_was_parsed() {
        let bad = PhaseSeen {
            file: None,
            malformed: Some("line 1"),
        };
        assert_eq!(
            plan(None, bad, Vec::new()),
            FencePlan::Refuse {
                why: "the phase file is unreadable or malformed: line 1".into(),
                reason: FenceReason::MalformedPhase,
                restore: Vec::new(),
            }
        );
        // Parsed, but the receipt it depends on is unusable: abandoned
        // (the operation asked has none).
        let done = legacy("done", "none");
        let parsed = PhaseSeen {
            file: Some(&done),
            malformed: Some("its receipt is unusable"),
        };
        assert!(matches!(
            plan(None, parsed, Vec::new()),
            FencePlan::Abandon { .. }
        ));
    }

    #[test]
    fn an_unfinished_legacy_phase_file_is_never_abandoned() {
        let unfinished = legacy("restart_pending", "etcd");
        let seen = PhaseSeen {
            file: Some(&unfinished),
            malformed: None,
        };
        match plan(None, seen, vec![Component::Etcd]) {
            FencePlan::Refuse {
                why,
                reason,
                restore,
            } => {
                assert!(why.contains("legacy five-line and unfinished"), "{why}");
                assert_eq!(
                    (reason, restore),
                    (FenceReason::LegacyUnfinished, vec![Component::Etcd])
                );
            }
            other => panic!("{other:?}"),
        }
        let done = legacy("done", "none");
        let seen = PhaseSeen {
            file: Some(&done),
            malformed: None,
        };
        assert!(matches!(
            plan(None, seen, Vec::new()),
            FencePlan::Abandon { .. }
        ));
    }

    #[test]
    fn refused_before_the_lock_puts_nothing_back() {
        let p = refused_before_lock("lock: refused".into());
        assert_eq!(p.restore(), [] as [Component; 0]);
        assert!(matches!(
            p,
            FencePlan::Refuse {
                reason: FenceReason::WriteFailed,
                ..
            }
        ));
    }

    fn v2(id: &str, state: &str, next: Option<&str>) -> PhaseFile {
        let next = next.map(|n| format!("\"{n}\"")).unwrap_or("null".into());
        let h = "0123456789abcdef".repeat(4);
        parse_phase_file(
            format!(
                r#"{{"format":"nvke-cert-runbook/phase/v2","operationID":"{id}","state":"{state}","nextComponent":{next},"caSHA256":{{"ca.crt":"{h}","etcd/ca.crt":"{h}","front-proxy-ca.crt":"{h}"}},"force":false,"thresholdDays":30,"startedAt":"2026-11-29T23:00:00Z","updatedAt":"2026-11-29T23:10:00Z","resumedFrom":null}}"#
            )
            .as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn an_abandoned_receipt_records_where_its_own_work_stood() {
        let id = OperationId::parse("op-1").unwrap();
        let at = |f: &PhaseFile| abandoned_phase(Some(f), &id);
        assert_eq!(
            at(&v2("op-1", "restart_pending", Some("etcd"))),
            (Phase::Restart(Component::Etcd), Some(Component::Etcd))
        );
        assert_eq!(
            at(&v2("op-1", "restart_pending", None)),
            (Phase::Postflight, None)
        );
        assert_eq!(at(&v2("op-1", "renewing", None)), (Phase::RenewCerts, None));
        // Finished, another operation's, legacy or none: cancelled.
        for f in [
            v2("op-1", "done", None),
            v2("op-2", "renewing", None),
            legacy("restart_pending", "etcd"),
        ] {
            assert_eq!(at(&f), (Phase::Cancelled, None), "{f:?}");
        }
        assert_eq!(abandoned_phase(None, &id), (Phase::Cancelled, None));
    }

    #[test]
    fn the_abandoned_message_says_what_was_put_back_and_left() {
        let id = OperationId::parse("op-1").unwrap();
        assert_eq!(
            abandon_message(&id, false, &[], &[], false),
            "abandoned by the fencing status check: no receipt for op-1; no staged manifest to put back"
        );
        assert_eq!(
            abandon_message(
                &id,
                true,
                &[Component::Etcd, Component::KubeApiserver],
                &["left a".into(), "left b".into()],
                true
            ),
            "abandoned by the fencing status check: no receipt for op-1 and this node has no record of it (no phase file, owner record or log names it); put back etcd, kube-apiserver; left a; left b; the unfinished phase file is left for the next operation to resume"
        );
    }
}
