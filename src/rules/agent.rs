//! The node agent's persisted renewal intent (SPEC section 5), read through
//! `contract::AgentStateFile`. Pure.
//! File: `{"k8sCertRenewalState": {"phase": "...", "operationID": "..."}}`.

use crate::rules::files::{AgentPhase, AgentStateFile};
use crate::rules::opid::excerpt;
use crate::rules::phase::parse_json_strict;
use crate::rules::strict::ParseError;
use serde::Deserialize;
use serde_json::Value;

/// What the check makes of the agent state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentIntent {
    /// The default path has no file: no typed intent.
    Absent,
    /// A known, finished or idle phase.
    Idle {
        phase: String,
        operation_id: Option<String>,
    },
    /// `renewing` or `restart_pending`.
    Pending {
        phase: String,
        operation_id: Option<String>,
    },
    /// Cannot be read or parsed, unknown phase, or a named path that does not
    /// exist. `reason` says which.
    Unknown { reason: String },
}

impl AgentIntent {
    /// `absent`, `idle`, `pending`, `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            AgentIntent::Absent => "absent",
            AgentIntent::Idle { .. } => "idle",
            AgentIntent::Pending { .. } => "pending",
            AgentIntent::Unknown { .. } => "unknown",
        }
    }
}

/// Parse the bytes of an existing agent state file. Never panics; anything
/// that is not the documented shape with a known phase is `Unknown`.
pub fn parse_agent_state(bytes: &[u8]) -> AgentIntent {
    match parse(bytes) {
        Ok(i) => i,
        Err(e) => AgentIntent::Unknown {
            reason: e.to_string(),
        },
    }
}

/// An agent state file larger than this is unknown. Readers should not read
/// more than this plus one byte.
pub const MAX_AGENT_STATE_BYTES: usize = 1024 * 1024;

/// The top-level key holding the renewal state.
const STATE_KEY: &str = "k8sCertRenewalState";

fn parse(bytes: &[u8]) -> Result<AgentIntent, ParseError> {
    if bytes.len() > MAX_AGENT_STATE_BYTES {
        return Err(ParseError::whole(format!(
            "agent state file is {} bytes (at most {MAX_AGENT_STATE_BYTES})",
            bytes.len()
        )));
    }
    // Duplicate keys anywhere (even in the keys the file type ignores) make
    // it unknown; the shape is checked first so each reason names its key.
    let value = parse_json_strict(bytes).map_err(|e| ParseError::whole(e.to_string()))?;
    let top = value
        .as_object()
        .ok_or_else(|| ParseError::whole("agent state is not a JSON object"))?;
    let state = match top.get(STATE_KEY) {
        None => return Err(ParseError::whole(format!("agent state has no {STATE_KEY}"))),
        Some(Value::Object(o)) => o,
        Some(_) => return Err(ParseError::whole(format!("{STATE_KEY} is not an object"))),
    };
    let phase = match state.get("phase") {
        None => return Err(ParseError::whole(format!("{STATE_KEY} has no phase"))),
        Some(Value::String(p)) => p,
        Some(_) => {
            return Err(ParseError::whole(format!(
                "{STATE_KEY}.phase is not a string"
            )))
        }
    };
    if !matches!(state.get("operationID"), None | Some(Value::String(_))) {
        return Err(ParseError::whole(format!(
            "{STATE_KEY}.operationID is not a string"
        )));
    }
    // The shape is right: only a phase outside the closed list is left.
    let file = AgentStateFile::deserialize(&value).map_err(|_| {
        ParseError::whole(format!(
            "{STATE_KEY}.phase {} is not a known phase",
            excerpt(phase)
        ))
    })?;
    let s = file.k8s_cert_renewal_state;
    let (phase, operation_id) = (phase.clone(), s.operation_id);
    Ok(match s.phase {
        AgentPhase::Renewing | AgentPhase::RestartPending => AgentIntent::Pending {
            phase,
            operation_id,
        },
        AgentPhase::Idle | AgentPhase::Done | AgentPhase::Completed | AgentPhase::Failed => {
            AgentIntent::Idle {
                phase,
                operation_id,
            }
        }
    })
}

/// The agent's phase in plain words (SPEC 6, v1.2; JSON keeps the name).
pub fn phase_words(phase: &str) -> &str {
    match phase {
        "renewing" => "renewing the certificates",
        "restart_pending" => "restarting the control-plane pods",
        other => other,
    }
}

impl AgentIntent {
    /// The intent in a few words (check and the operator view).
    pub fn summary(&self) -> String {
        let a = self;
        match a {
            AgentIntent::Absent => "no state file (no renewal of its own)".to_string(),
            AgentIntent::Idle { phase, .. } => format!("idle, no renewal of its own ({phase})"),
            AgentIntent::Pending {
                phase,
                operation_id,
            } => format!(
                "a renewal of its own is unfinished ({}{})",
                phase_words(phase),
                operation_id
                    .as_deref()
                    .map(|i| format!(", operation {i}"))
                    .unwrap_or_default()
            ),
            AgentIntent::Unknown { reason } => format!("unknown: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(b: &[u8], needle: &str) {
        match parse_agent_state(b) {
            AgentIntent::Unknown { reason } => {
                assert!(reason.contains(needle), "{reason:?} lacks {needle:?}");
                assert!(
                    reason.len() < 300 && !reason.chars().any(char::is_control),
                    "{reason:?}"
                );
            }
            other => panic!(
                "expected unknown for {:?}, got {other:?}",
                String::from_utf8_lossy(b)
            ),
        }
    }

    #[test]
    fn pending_phases() {
        for p in ["renewing", "restart_pending"] {
            let b =
                format!(r#"{{"k8sCertRenewalState": {{"phase": "{p}", "operationID": "op-9"}}}}"#);
            let got = parse_agent_state(b.as_bytes());
            assert_eq!(
                got,
                AgentIntent::Pending {
                    phase: p.to_string(),
                    operation_id: Some("op-9".to_string())
                }
            );
            assert_eq!(got.as_str(), "pending");
        }
    }

    #[test]
    fn idle_phases() {
        for p in ["idle", "done", "completed", "failed"] {
            let b = format!(r#"{{"k8sCertRenewalState": {{"phase": "{p}"}}}}"#);
            let got = parse_agent_state(b.as_bytes());
            assert_eq!(
                got,
                AgentIntent::Idle {
                    phase: p.to_string(),
                    operation_id: None
                }
            );
            assert_eq!(got.as_str(), "idle");
        }
    }

    #[test]
    fn other_keys_are_ignored() {
        let b = br#"{"version": 3, "other": {"x": [1, 2]},
            "k8sCertRenewalState": {"phase": "restart_pending", "operationID": "abc",
                                    "nextComponent": "etcd", "startedAt": 12}}"#;
        assert_eq!(
            parse_agent_state(b),
            AgentIntent::Pending {
                phase: "restart_pending".into(),
                operation_id: Some("abc".into())
            }
        );
    }

    #[test]
    fn unknown_phase_values() {
        for p in [
            "",
            "Renewing",
            "RENEWING",
            "renewing ",
            "restarting",
            "unknown",
            "PHASE_RENEWING",
        ] {
            let b = format!(r#"{{"k8sCertRenewalState": {{"phase": "{p}"}}}}"#);
            unknown(b.as_bytes(), "not a known phase");
        }
        unknown(
            format!(
                r#"{{"k8sCertRenewalState": {{"phase": "{}"}}}}"#,
                "\\u001b".repeat(1000)
            )
            .as_bytes(),
            "not a known phase",
        );
    }

    #[test]
    fn wrong_shapes() {
        unknown(br#"{"k8sCertRenewalState": {"phase": 1}}"#, "not a string");
        unknown(
            br#"{"k8sCertRenewalState": {"phase": null}}"#,
            "not a string",
        );
        unknown(br#"{"k8sCertRenewalState": {}}"#, "no phase");
        unknown(br#"{"k8sCertRenewalState": null}"#, "not an object");
        unknown(br#"{"k8sCertRenewalState": "renewing"}"#, "not an object");
        unknown(br#"{"phase": "renewing"}"#, "no k8sCertRenewalState");
        unknown(br#"{}"#, "no k8sCertRenewalState");
        unknown(br#"[]"#, "not a JSON object");
        unknown(br#""renewing""#, "not a JSON object");
        unknown(
            br#"{"k8sCertRenewalState": {"phase": "idle", "operationID": 7}}"#,
            "operationID",
        );
        unknown(
            br#"{"k8sCertRenewalState": {"phase": "idle", "operationID": null}}"#,
            "operationID",
        );
    }

    #[test]
    fn unreadable_bytes() {
        unknown(b"", "JSON");
        unknown(b"{", "JSON");
        unknown(br#"{"k8sCertRenewalState": {"phase": "renewing"}"#, "JSON");
        unknown(
            b"{\"k8sCertRenewalState\": {\"phase\": \"renewing\xff\"}}",
            "UTF-8",
        );
        unknown(b"\xef\xbb\xbf{}", "JSON");
        unknown(
            br#"{"k8sCertRenewalState": {"phase": "idle", "phase": "renewing"}}"#,
            "duplicate key",
        );
        unknown(&vec![b' '; MAX_AGENT_STATE_BYTES + 1], "at most");
    }
}
