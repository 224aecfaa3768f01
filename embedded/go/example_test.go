package certrunbook

import (
	"context"
	"fmt"
	"time"
)

// A V2 renewal: success needs exit 0, a success outcome and its receipt,
// verified read-only.
func ExampleExecutor_Renew() {
	f := newFake().
		on("--status-only --operation-id cycle-1@cp-1", reply{stdout: statusDoc("cycle-1@cp-1", receipt("cycle-1@cp-1", OutcomeRenewed, PhaseDone), 0)}).
		on("--operation-id cycle-1@cp-1", reply{stdout: renewDoc("cycle-1@cp-1", OutcomeRenewed, PhaseDone, 0)})
	e := testExecutor(f) // an Executor{Transport: ..., Global: ...} over a fake node
	r, err := e.Renew(context.Background(), RenewRequest{OperationID: "cycle-1@cp-1"})
	if err != nil {
		fmt.Println("retry with the same ID:", IsRetryable(err))
		return
	}
	fmt.Println(r.Status, r.Reason, r.ExitCode)
	// Output: succeeded renewed 0
}

// After a failed renewal, the cleanup's fencing check decides whether the
// cluster mutation lock is released.
func ExampleExecutor_Cleanup() {
	f := newFake().
		on("--fence", fenceReply("cycle-2@cp-1", FenceReasonLockTimeout, FenceActionNone, ""),
			fenceReply("cycle-2@cp-1", FenceReasonReceipt, FenceActionExistingReceipt, OutcomeFailed)).
		on("--operation-id", reply{stdout: renewDoc("cycle-2@cp-1", OutcomeFailed, PhaseHealth, 1), exit: 1})
	e := testExecutor(f)
	r, _ := e.Renew(context.Background(), RenewRequest{OperationID: "cycle-2@cp-1"})
	fmt.Println(r.Status, r.Reason)
	c := e.CleanupAfter(context.Background(), r)
	fmt.Println(c.Status, c.Reason, c.FenceReason, c.FenceAttempts)
	// Output:
	// failed-lock-retained cleanup-required
	// failed-lock-released failed receipt 2
}

// The executor selection after the node agent's V2 Start answered
// Unimplemented.
func ExamplePlan_FallbackToLegacy() {
	for _, fallback := range []bool{true, false} { // the check's legacyFallback: no intent pending
		f := newFake().on("--check", checkDoc(DecisionRenew, []ExecutorKind{ExecutorTyped}, fallback))
		e := testExecutor(f)
		e.AllowLegacyFallback = true
		_, plan, err := e.Check(context.Background(), false, "")
		if err != nil {
			fmt.Println(err)
			return
		}
		if plan.FallbackToLegacy(true) {
			fmt.Println("no pending intent: renew with the embedded runbook")
			continue
		}
		r := plan.TypedUnimplemented("cycle-3@cp-1")
		fmt.Println("typed intent pending:", r.Status, r.Reason)
	}
	// Output:
	// no pending intent: renew with the embedded runbook
	// typed intent pending: failed-lock-released upgrade-agent
}

// The executor over the OpenSSH client, as a controller's activity uses it:
// the context's deadline becomes --deadline, a cancelled context reaches the
// runbook as SIGTERM, and a failure is judged by the cleanup, which has its
// own five-minute budget. (Compiled, not run: it needs a node.)
func ExampleSSHTransport() {
	e := &Executor{
		Transport: &SSHTransport{
			Host: "root@10.0.0.11",
			Options: []string{
				"IdentityFile=/etc/controller/id_ed25519",
				"IdentitiesOnly=yes",
				"UserKnownHostsFile=/etc/controller/known_hosts",
				"StrictHostKeyChecking=yes",
				"ConnectTimeout=10",
				"ServerAliveInterval=5",
			},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r, err := e.Renew(ctx, RenewRequest{OperationID: "cycle-42@cp-1"})
	if IsRetryable(err) {
		return // the activity retries with the same operation ID
	}
	if err != nil {
		r = e.Cleanup(ctx, "cycle-42@cp-1")
	} else if r.NeedsCleanup() {
		r = e.CleanupAfter(ctx, r)
	}
	fmt.Println(r.Status, r.Reason, r.LockRetained())
}
