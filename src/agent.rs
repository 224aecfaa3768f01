//! The node agent's persisted renewal intent (SPEC section 5). Pure.
//! File: `{"k8sCertRenewalState": {"phase": "...", "operationID": "..."}}`.

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
pub fn parse_agent_state(_bytes: &[u8]) -> AgentIntent {
    todo!()
}
