package documents

// BinaryName is the executable's name.
const BinaryName = "nvke-cert-runbook"

// ContractVersion is the contract these types and argument builders
// describe; the embedded binary must report the same.
const ContractVersion = "nvke-cert-runbook/contract/v1"

// Exit codes (SPEC section 7).
const (
	ExitOK              = 0 // renewed or unchanged (or a replayed success); status: confirmed, or a clean node; check: decided
	ExitFailed          = 1 // failed, cancelled, or refused, all four manifests active; status: unconfirmed or not clean; check: failed
	ExitUsage           = 2 // usage error; nothing written
	ExitLockTimeout     = 3 // lock not acquired in time; nothing written
	ExitOperatorMustAct = 4 // a manifest is still staged or missing: an operator must act
	ExitFenced          = 5 // replay of an abandoned or superseded receipt: this attempt was fenced
)
