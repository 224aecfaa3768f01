package documents

import "strings"

// The closed lists of the contract (SPEC sections 3 to 7), as typed strings.
// A value decoded from a document is whatever the binary printed: Valid
// tells whether it is one this package knows.

// Mode is a document's mode field.
type Mode string

// Modes.
const (
	ModeRenew    Mode = "renew"
	ModeLegacyV1 Mode = "legacy-v1"
	ModeCheck    Mode = "check"
	ModeStatus   Mode = "status"
	ModeVersion  Mode = "version"
	ModeHelp     Mode = "help"
)

// Valid reports whether m is one of the six modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeRenew, ModeLegacyV1, ModeCheck, ModeStatus, ModeVersion, ModeHelp:
		return true
	}
	return false
}

// Outcome is an operation's outcome (receipts, renew results), or
// usage_error in a usage error document.
type Outcome string

// Outcomes.
const (
	OutcomeRenewed           Outcome = "renewed"
	OutcomeUnchanged         Outcome = "unchanged"
	OutcomeFailed            Outcome = "failed"
	OutcomeFailedNotRestored Outcome = "failed_not_restored"
	OutcomeCancelled         Outcome = "cancelled"
	OutcomeAbandoned         Outcome = "abandoned"
	OutcomeSuperseded        Outcome = "superseded"
	OutcomeUsageError        Outcome = "usage_error"
)

// Valid reports whether o is one of the eight outcomes.
func (o Outcome) Valid() bool { return o.ValidReceipt() || o == OutcomeUsageError }

// ValidReceipt reports whether o is an outcome a receipt can carry (all
// but usage_error).
func (o Outcome) ValidReceipt() bool {
	switch o {
	case OutcomeRenewed, OutcomeUnchanged, OutcomeFailed, OutcomeFailedNotRestored,
		OutcomeCancelled, OutcomeAbandoned, OutcomeSuperseded:
		return true
	}
	return false
}

// Success reports whether o is renewed or unchanged.
func (o Outcome) Success() bool { return o == OutcomeRenewed || o == OutcomeUnchanged }

// Fenced reports whether o is abandoned or superseded: a replay of such a
// receipt exits 5.
func (o Outcome) Fenced() bool { return o == OutcomeAbandoned || o == OutcomeSuperseded }

// Component is one of the four kubeadm control-plane static pods.
type Component string

// Components.
const (
	ComponentEtcd                  Component = "etcd"
	ComponentKubeAPIServer         Component = "kube-apiserver"
	ComponentKubeControllerManager Component = "kube-controller-manager"
	ComponentKubeScheduler         Component = "kube-scheduler"
)

// Components are the four, in restart order.
var Components = []Component{ComponentEtcd, ComponentKubeAPIServer, ComponentKubeControllerManager, ComponentKubeScheduler}

// Valid reports whether c is one of the four.
func (c Component) Valid() bool {
	for _, k := range Components {
		if c == k {
			return true
		}
	}
	return false
}

// Phase is where an operation stopped (SPEC section 3, "Phases").
type Phase string

// Phases; a restart is PhaseRestart(component).
const (
	PhaseArguments             Phase = "arguments"
	PhaseLock                  Phase = "lock"
	PhaseReceipt               Phase = "receipt"
	PhasePhaseFile             Phase = "phase-file"
	PhaseTopology              Phase = "topology"
	PhaseStagingConflict       Phase = "staging-conflict"
	PhaseCACheck               Phase = "ca-check"
	PhaseExpiry                Phase = "expiry"
	PhaseHealth                Phase = "health"
	PhaseTwoControlPlaneVoters Phase = "two-control-plane-voters"
	PhaseBackup                Phase = "backup"
	PhaseRenewCerts            Phase = "renew-certs"
	PhasePostflight            Phase = "postflight"
	PhaseCancelled             Phase = "cancelled"
	PhaseDone                  Phase = "done"
)

const restartPrefix = "restart:"

// PhaseRestart is the phase of c's restart, "restart:<component>".
func PhaseRestart(c Component) Phase { return Phase(restartPrefix + string(c)) }

// Restart returns the component of a restart phase.
func (p Phase) Restart() (Component, bool) {
	c, ok := strings.CutPrefix(string(p), restartPrefix)
	if !ok || !Component(c).Valid() {
		return "", false
	}
	return Component(c), true
}

// Valid reports whether p is in the closed list.
func (p Phase) Valid() bool {
	switch p {
	case PhaseArguments, PhaseLock, PhaseReceipt, PhasePhaseFile, PhaseTopology, PhaseStagingConflict,
		PhaseCACheck, PhaseExpiry, PhaseHealth, PhaseTwoControlPlaneVoters, PhaseBackup, PhaseRenewCerts,
		PhasePostflight, PhaseCancelled, PhaseDone:
		return true
	}
	_, ok := p.Restart()
	return ok
}

// Decision is the check's decision.
type Decision string

// Decisions.
const (
	DecisionRenew     Decision = "renew"
	DecisionUnchanged Decision = "unchanged"
	DecisionFailed    Decision = "failed"
)

// Valid reports whether d is one of the three.
func (d Decision) Valid() bool {
	return d == DecisionRenew || d == DecisionUnchanged || d == DecisionFailed
}

// ExecutorKind is an executor the check selects.
type ExecutorKind string

// Executors: the embedded runbook (legacy) and the node agent's typed
// operation.
const (
	ExecutorLegacy ExecutorKind = "legacy"
	ExecutorTyped  ExecutorKind = "typed"
)

// Valid reports whether k is legacy or typed.
func (k ExecutorKind) Valid() bool { return k == ExecutorLegacy || k == ExecutorTyped }

// AgentState is the node agent's intent as the check reads it.
type AgentState string

// Agent states.
const (
	AgentAbsent  AgentState = "absent"
	AgentIdle    AgentState = "idle"
	AgentPending AgentState = "pending"
	AgentUnknown AgentState = "unknown"
)

// Valid reports whether a is one of the four.
func (a AgentState) Valid() bool {
	return a == AgentAbsent || a == AgentIdle || a == AgentPending || a == AgentUnknown
}

// Location is where one of the four manifests is (receipts, renew results
// and the read-only views alike). The empty Location is a renewal that
// stopped before it looked at the node (`{}`).
type Location string

// Locations.
const (
	LocationActive  Location = "active"
	LocationStaged  Location = "staged"
	LocationBoth    Location = "both"
	LocationMissing Location = "missing"
)

// Valid reports whether l is one of the four.
func (l Location) Valid() bool {
	return l == LocationActive || l == LocationStaged || l == LocationBoth || l == LocationMissing
}

// Active reports whether the manifest is in manifests/ (active or both):
// SPEC section 7's "active".
func (l Location) Active() bool { return l == LocationActive || l == LocationBoth }

// Termination is the fencing check's answer.
type Termination string

// Terminations.
const (
	TerminationConfirmed   Termination = "confirmed"
	TerminationUnconfirmed Termination = "unconfirmed"
)

// Valid reports whether t is confirmed or unconfirmed.
func (t Termination) Valid() bool { return t == TerminationConfirmed || t == TerminationUnconfirmed }

// FenceAction is what a fencing check did.
type FenceAction string

// Fence actions.
const (
	FenceActionNone            FenceAction = "none"
	FenceActionExistingReceipt FenceAction = "existing-receipt"
	FenceActionAbandoned       FenceAction = "abandoned"
)

// Valid reports whether a is one of the three.
func (a FenceAction) Valid() bool {
	return a == FenceActionNone || a == FenceActionExistingReceipt || a == FenceActionAbandoned
}

// FenceReason is why a fencing check answered as it did (SPEC section 6).
type FenceReason string

// Fence reasons: the first two confirm, the others do not.
const (
	FenceReasonReceipt          FenceReason = "receipt"
	FenceReasonAbandoned        FenceReason = "abandoned"
	FenceReasonLegacyUnfinished FenceReason = "legacy-unfinished"
	FenceReasonMalformedPhase   FenceReason = "malformed-phase"
	FenceReasonMalformedReceipt FenceReason = "malformed-receipt"
	FenceReasonWriteFailed      FenceReason = "write-failed"
	FenceReasonLockTimeout      FenceReason = "lock-timeout"
	FenceReasonDeadline         FenceReason = "deadline"
)

// Valid reports whether r is one of the eight.
func (r FenceReason) Valid() bool {
	switch r {
	case FenceReasonReceipt, FenceReasonAbandoned, FenceReasonLegacyUnfinished, FenceReasonMalformedPhase,
		FenceReasonMalformedReceipt, FenceReasonWriteFailed, FenceReasonLockTimeout, FenceReasonDeadline:
		return true
	}
	return false
}

// Confirms reports whether r confirms termination (receipt, abandoned).
func (r FenceReason) Confirms() bool { return r == FenceReasonReceipt || r == FenceReasonAbandoned }

// Retryable reports whether a controller retries a fencing check that
// answered r: only lock-timeout (SPEC section 6); every other unconfirmed
// reason is definitive.
func (r FenceReason) Retryable() bool { return r == FenceReasonLockTimeout }
