//! One read of the node that the read-only modes share (`--check` and the
//! operator view of `--status-only`): the state directory, the lock and
//! its owner, the phase file judged as a renewal would judge it, the
//! receipts (for the operator view), the node agent's intent, the manifests
//! and both staging directories, and the PKI, read once and in that order.
//! Creates nothing. The check decides from it, the operator view judges
//! from it, and both print the same views of it.

use crate::contract as doc;
use crate::node::fsx::Root;
use crate::node::inspect::{self, LockReport, PhaseReport, ReceiptLookup, ReceiptSummary};
use crate::node::manifests::{self, ManifestsReport};
use crate::node::node_pki::{self, PkiReport};
use crate::node::statedir::StateDir;
use crate::rules::agent::AgentIntent;
use crate::rules::opid::OperationId;

/// What `completed/` holds, as the operator view shows it.
#[derive(Debug, Clone, Default)]
pub struct Receipts {
    /// `completed/` could not be used (it then hides every receipt).
    pub error: Option<String>,
    /// How many receipts there are.
    pub count: usize,
    /// The ones listed: the most recent, at most
    /// [`inspect::RECENT_RECEIPTS`], unless the listing asked for more.
    pub recent: Vec<ReceiptSummary>,
    /// Every operation ID with a receipt, read only when the ID asked
    /// about has none (to name the nearest ones).
    pub known_ids: Vec<String>,
    /// The receipt of the operation asked about (None: no ID asked;
    /// `Some(None)`: it has none). A refused `completed/` makes it
    /// unreadable (a fencing check would be unconfirmed), not absent.
    pub asked: Option<Option<ReceiptLookup>>,
}

/// The node as the read-only modes see it.
#[derive(Debug, Clone)]
pub struct NodeSnapshot {
    /// The state directory could not be used.
    pub state_error: Option<String>,
    pub lock: LockReport,
    pub phase: PhaseReport,
    /// Only when asked for (the operator view).
    pub receipts: Option<Receipts>,
    /// The agent state file's node path, and what it says.
    pub agent_path: String,
    pub agent: AgentIntent,
    pub manifests: ManifestsReport,
    pub pki: PkiReport,
    /// The kubelet's own certificates (v1.2).
    pub kubelet: crate::node::kubelet::KubeletReport,
    /// The operation logs in `state/log/` (file names).
    pub logs: Vec<String>,
}

impl NodeSnapshot {
    /// What `--check` reads: no receipts beyond the one the phase file's
    /// operation may have; the agent state at `agent_state` (`--agent-state`).
    pub fn for_check(root: &Root, agent_state: Option<&str>) -> NodeSnapshot {
        NodeSnapshot::read(root, agent_state, None)
    }

    /// What the operator view reads: the receipts too, and the one of the
    /// operation asked about.
    pub fn for_status(
        root: &Root,
        asked: Option<&OperationId>,
        listing: inspect::Listing,
    ) -> NodeSnapshot {
        NodeSnapshot::read(root, None, Some((asked, listing)))
    }

    fn read(
        root: &Root,
        agent_state: Option<&str>,
        receipts: Option<(Option<&OperationId>, inspect::Listing)>,
    ) -> NodeSnapshot {
        let (state, state_error) = match StateDir::open(root) {
            Ok(s) => (s, None),
            Err(e) => (None, Some(e.to_string())),
        };
        let lock = inspect::read_lock(state.as_ref());
        let logs = state
            .as_ref()
            .map(|s| StateDir::new(s).log_names())
            .unwrap_or_default();
        let phase = inspect::read_phase(state.as_ref());
        let receipts = receipts.map(|(asked, listing)| {
            let (completed, error) = match state.as_ref().map(|s| StateDir::new(s).completed()) {
                Some(Ok(c)) => (c, None),
                Some(Err(e)) => (None, Some(e.to_string())),
                None => (None, None),
            };
            let (count, recent) = inspect::list_receipts(completed.as_ref(), listing);
            let asked = asked.map(|id| match &error {
                Some(e) => Some(ReceiptLookup::malformed(e.clone())),
                None => crate::node::statedir::lookup_receipt(completed.as_ref(), id),
            });
            let known_ids = match asked {
                Some(None) => inspect::receipt_ids(completed.as_ref()),
                _ => Vec::new(),
            };
            Receipts {
                error,
                count,
                recent,
                known_ids,
                asked,
            }
        });
        let (agent_path, agent) = inspect::read_agent(root, agent_state);
        let manifests = manifests::inspect(root);
        let pki = node_pki::read(root);
        let kubelet = crate::node::kubelet::read(root);
        NodeSnapshot {
            state_error,
            lock,
            phase,
            receipts,
            agent_path,
            agent,
            manifests,
            pki,
            kubelet,
            logs,
        }
    }

    /// The agent's intent as the read-only modes print it.
    pub fn agent_view(&self) -> doc::AgentStateView {
        inspect::agent_view(&self.agent_path, &self.agent)
    }
}
