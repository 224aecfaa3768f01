package documents

import (
	"fmt"

	"nvke.example/certrunbook/internal/text"
)

// Status is how a node's renewal ended for the cycle: succeeded, or failed
// with the cluster mutation lock released (a later cycle retries) or
// retained (an operator must recover the node first). It is Result.Status,
// decided here, never printed by the binary: the document `--status-only`
// prints is StatusResult.
type Status string

// Statuses.
const (
	Succeeded          Status = "succeeded"
	FailedLockReleased Status = "failed-lock-released"
	FailedLockRetained Status = "failed-lock-retained"
)

// Reason is the typed code of a Result.
type Reason string

// Reasons.
const (
	// Succeeded.
	ReasonRenewed   Reason = "renewed"
	ReasonUnchanged Reason = "unchanged"
	// Renew's failures before cleanup: run CleanupAfter.
	ReasonCleanupRequired   Reason = "cleanup-required"   // the runbook failed or was cancelled
	ReasonReceiptUnverified Reason = "receipt-unverified" // exit 0 and a success, but no matching receipt
	// Released: termination confirmed, nothing left for an operator.
	ReasonFailed              Reason = "failed"               // the receipt says failed or cancelled
	ReasonFenced              Reason = "fenced"               // exit 5, or an abandoned/superseded receipt: this attempt was fenced
	ReasonAbandoned           Reason = "abandoned"            // no receipt: the fencing check recorded an abandoned one
	ReasonSucceededUnverified Reason = "succeeded-unverified" // the receipt says success, the attempt could not prove it
	ReasonUpgradeAgent        Reason = "upgrade-agent"        // typed V2 Start Unimplemented, no fallback (Plan.TypedUnimplemented)
	// Retained: termination not confirmed, or an operator must act.
	ReasonManifestNotActive Reason = "manifest-not-active" // exit 4, failed_not_restored, or a manifest not in manifests/
	ReasonUnconfirmed       Reason = "unconfirmed"         // a definitive unconfirmed answer (see Result.FenceReason)
	ReasonBudgetExhausted   Reason = "budget-exhausted"    // the lock stayed held until the cleanup budget ended
	ReasonUnreachable       Reason = "unreachable"         // transport errors until the cleanup budget ended
	ReasonMalformed         Reason = "malformed"           // a fencing answer that breaks the contract
)

// MaxMessage bounds Result.Message (the cycle's operator-facing message),
// as SPEC section 7 bounds the runbook's.
const MaxMessage = 512

// Result is a node renewal's result for the cycle: what Renew, Cleanup,
// CleanupAfter and Plan.TypedUnimplemented return.
type Result struct {
	Status      Status
	Reason      Reason
	FenceReason FenceReason // the fencing check's reason, when one answered
	Phase       Phase       // where the operation stopped, when known
	Outcome     Outcome     // the renewal's (or its receipt's) outcome, when known
	Message     string      // at most MaxMessage bytes
	OperationID string
	ExitCode    int // the renewal's exit code; -1 unknown
	// Renew and Fence: the documents behind the Result, when there were any.
	Renew *RenewResult
	Fence *FenceResult
	// FenceAttempts: fencing checks run by the cleanup (0: no cleanup).
	FenceAttempts int
	// Err: the last transport or protocol error of the cleanup.
	Err error
}

// LockRetained reports whether the cluster mutation lock stays held.
func (r *Result) LockRetained() bool { return r.Status == FailedLockRetained }

// NeedsCleanup reports whether r is a failure of Renew that no cleanup has
// judged yet: pass it to CleanupAfter.
func (r *Result) NeedsCleanup() bool {
	return r.Status != Succeeded && r.FenceAttempts == 0 &&
		(r.Reason == ReasonCleanupRequired || r.Reason == ReasonReceiptUnverified)
}

// RenewAnswer is what a renewal answered, as far as known.
type RenewAnswer struct {
	ExitCode        int          // -1: unknown (lost, or not at hand)
	Doc             *RenewResult // nil: unknown
	ReceiptVerified bool         // the read-only receipt lookup matched
}

// FenceFailure is why a cleanup has no definitive fencing answer.
type FenceFailure string

// Fence failures ("": a definitive answer, FenceAnswer.Doc).
const (
	FenceUnreachable     FenceFailure = "unreachable"
	FenceMalformed       FenceFailure = "malformed"
	FenceBudgetExhausted FenceFailure = "budget-exhausted"
)

// FenceAnswer is how the cleanup ended: a definitive fencing document, or
// a Failure (with the last document or error).
type FenceAnswer struct {
	Doc      *FenceResult
	Failure  FenceFailure
	Err      error
	Attempts int
}

// Decide maps a renewal's answer and its cleanup's fencing answer (nil: no
// cleanup yet) to the node's Result. Pure: the whole policy is here.
//
//	renewal                          cleanup (fencing check)                 Status               Reason
//	exit 0, renewed/unchanged,       not run                                 Succeeded            renewed/unchanged
//	  receipt verified
//	exit 0, success, receipt not     not run                                 FailedLockRetained   receipt-unverified (run cleanup)
//	  verified
//	anything else                    not run                                 FailedLockRetained   cleanup-required (run cleanup)
//	any                              transport errors until the budget end   FailedLockRetained   unreachable
//	any                              lock-timeout until the budget end,      FailedLockRetained   budget-exhausted
//	                                   or any unconfirmed answer to the
//	                                   executor's own SIGTERM at its end
//	any                              output breaking the contract            FailedLockRetained   malformed
//	any                              unconfirmed: legacy-unfinished,         FailedLockRetained   unconfirmed (+FenceReason)
//	                                   malformed-phase, malformed-receipt,
//	                                   write-failed, deadline
//	exit 4 (and the fencing check    confirmed                               FailedLockRetained   manifest-not-active
//	  put nothing back), or receipt
//	  failed_not_restored, or a
//	  manifest not in manifests/
//	  after the fencing check
//	exit 5, or an abandoned or       confirmed (existing receipt)            FailedLockReleased   fenced
//	  superseded receipt
//	no receipt (died, killed,        confirmed (abandoned recorded)          FailedLockReleased   abandoned
//	  never started)
//	receipt renewed/unchanged        confirmed                               FailedLockReleased   succeeded-unverified
//	receipt failed or cancelled      confirmed                               FailedLockReleased   failed
//
// Choices where the guide and SPEC are silent: a confirmed termination
// with a pod down (a manifest not active, whatever the exit code said) keeps
// the lock, since an operator must act on that node before any cycle
// touches the cluster again (SPEC 7's exit 4); a confirmed success receipt
// whose attempt could not prove it (lost answer, failed verification)
// releases the lock but stays a failure: the node is fine, the next cycle
// records unchanged, and the due time is not advanced on evidence the
// attempt did not see itself.
func Decide(operationID string, renew RenewAnswer, fence *FenceAnswer) *Result {
	r := &Result{OperationID: operationID, ExitCode: renew.ExitCode, Renew: renew.Doc}
	runbook := ""
	if d := renew.Doc; d != nil {
		r.Phase, r.Outcome, runbook = d.Phase, d.Outcome, d.Message
	}
	if fence == nil {
		d := renew.Doc
		switch {
		case renew.ExitCode == ExitOK && d != nil && d.Outcome.Success() && renew.ReceiptVerified:
			r.Status, r.Reason = Succeeded, Reason(d.Outcome)
			r.Message = bound(runbook)
		case renew.ExitCode == ExitOK && d != nil && d.Outcome.Success():
			r.Status, r.Reason = FailedLockRetained, ReasonReceiptUnverified
			r.Message = bound(fmt.Sprintf("renewal reported %s but its receipt could not be verified; termination not confirmed yet: %s", d.Outcome, runbook))
		default:
			r.Status, r.Reason = FailedLockRetained, ReasonCleanupRequired
			r.Message = bound(fmt.Sprintf("renewal failed (exit %d, outcome %q, phase %q); termination not confirmed yet: %s", renew.ExitCode, r.Outcome, r.Phase, runbook))
		}
		return r
	}
	r.FenceAttempts, r.Fence, r.Err = fence.Attempts, fence.Doc, fence.Err
	if fence.Doc != nil {
		r.FenceReason = fence.Doc.Reason
	}
	retained := func(reason Reason, format string, args ...any) *Result {
		r.Status, r.Reason = FailedLockRetained, reason
		r.Message = bound("cluster mutation lock retained: " + fmt.Sprintf(format, args...))
		return r
	}
	released := func(reason Reason, format string, args ...any) *Result {
		r.Status, r.Reason = FailedLockReleased, reason
		r.Message = bound(fmt.Sprintf(format, args...))
		return r
	}
	switch fence.Failure {
	case FenceUnreachable:
		return retained(ReasonUnreachable, "termination of %s not confirmed: node unreachable until the cleanup budget ended after %d attempts (%v)", operationID, fence.Attempts, fence.Err)
	case FenceMalformed:
		return retained(ReasonMalformed, "termination of %s not confirmed: unusable fencing answer (%v)", operationID, fence.Err)
	case FenceBudgetExhausted:
		return retained(ReasonBudgetExhausted, "termination of %s not confirmed: the renewal lock stayed held until the cleanup budget ended after %d attempts", operationID, fence.Attempts)
	}
	f := fence.Doc
	if f == nil {
		return retained(ReasonMalformed, "termination of %s not confirmed: no fencing answer", operationID)
	}
	if !f.Confirmed {
		return retained(ReasonUnconfirmed, "termination of %s unconfirmed (%s): %s", operationID, f.Reason, f.Message)
	}
	rec := f.Receipt
	if rec != nil {
		r.Outcome, r.Phase = rec.Outcome, rec.Phase
	}
	if f.Outcome != nil && rec == nil {
		r.Outcome = *f.Outcome
	}
	// Exit 4 said a manifest was not active when the renewal ended; the
	// fencing check puts back what a dead or late run left staged. When it
	// did (Restored) and then saw all four active, the pod is back under
	// the lock and nothing is left for an operator.
	repaired := len(f.Restored) > 0
	if down := notActive(f.Manifests); renew.ExitCode == ExitOperatorMustAct && !repaired || r.Outcome == OutcomeFailedNotRestored || len(down) > 0 {
		return retained(ReasonManifestNotActive, "%s terminated (%s) but a control-plane manifest is not active %v: an operator must act on the node: %s", operationID, r.Outcome, down, f.Message)
	}
	switch {
	case renew.ExitCode == ExitFenced || f.Action == FenceActionExistingReceipt && r.Outcome.Fenced():
		return released(ReasonFenced, "%s was fenced (%s receipt); nothing done by this attempt", operationID, r.Outcome)
	case f.Action == FenceActionAbandoned:
		return released(ReasonAbandoned, "%s ended without a receipt; recorded abandoned, termination confirmed; a later operation resumes any unfinished work: %s", operationID, runbook)
	case r.Outcome.Success():
		return released(ReasonSucceededUnverified, "the node's receipt for %s says %s, but this attempt could not verify it; termination confirmed", operationID, r.Outcome)
	}
	msg := runbook
	if rec != nil {
		msg = rec.Message
	}
	return released(ReasonFailed, "renewal %s %s (phase %s); termination confirmed: %s", operationID, r.Outcome, r.Phase, msg)
}

// notActive lists the components the fencing check saw not in manifests/.
func notActive(m ManifestViews) []Component {
	var out []Component
	for i, v := range []ManifestView{m.Etcd, m.KubeAPIServer, m.KubeControllerManager, m.KubeScheduler} {
		if !v.Active {
			out = append(out, Components[i])
		}
	}
	return out
}

// bound cuts s to MaxMessage bytes on a rune boundary.
func bound(s string) string { return text.Bound(s, MaxMessage) }
