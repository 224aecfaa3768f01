package executor_test

import (
	"context"
	"fmt"
	"time"

	"nvke.example/certrunbook/certrunbooktest"
	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/executor"
)

// A V2 renewal: success needs exit 0, a success outcome and its receipt,
// verified read-only. The same operation ID again (an activity retry)
// replays the receipt.
func ExampleExecutor_Renew() {
	node := certrunbooktest.NewNode() // a fake node; in production an sshtransport.Transport
	e := &executor.Executor{Transport: node}
	for i := 0; i < 2; i++ {
		r, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "cycle-1@cp-1"})
		if err != nil {
			fmt.Println("retry with the same ID:", executor.IsRetryable(err))
			return
		}
		fmt.Println(r.Status, r.Reason, r.ExitCode, "replayed:", r.Renew.Replayed)
	}
	// Output:
	// succeeded renewed 0 replayed: false
	// succeeded renewed 0 replayed: true
}

// After a failed renewal, the cleanup's fencing check decides whether the
// cluster mutation lock is released.
func ExampleExecutor_CleanupAfter() {
	node := certrunbooktest.NewNode().Plan("cycle-2@cp-1", certrunbooktest.FailsGate)
	e := &executor.Executor{Transport: node}
	r, _ := e.Renew(context.Background(), executor.RenewRequest{OperationID: "cycle-2@cp-1"})
	fmt.Println(r.Status, r.Reason, r.Phase)
	if r.NeedsCleanup() {
		r = e.CleanupAfter(context.Background(), r)
	}
	fmt.Println(r.Status, r.Reason, r.FenceReason, "lock retained:", r.LockRetained())
	// Output:
	// failed-lock-retained cleanup-required restart:etcd
	// failed-lock-released failed receipt lock retained: false
}

// A node whose renewal lock another run holds: the cleanup cannot confirm
// termination within its budget and the lock is retained; a later cleanup,
// once the lock is free, records the operation abandoned and releases it;
// a late attempt of that ID is fenced (exit 5).
func ExampleExecutor_Cleanup() {
	node := certrunbooktest.NewNode().HoldLock()
	e := &executor.Executor{Transport: node, CleanupBudget: 100 * time.Millisecond}
	_, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "cycle-3@cp-1"})
	fmt.Println("retryable:", executor.IsRetryable(err))
	r := e.Cleanup(context.Background(), "cycle-3@cp-1")
	fmt.Println(r.Status, r.Reason)
	node.ReleaseLock()
	r = e.Cleanup(context.Background(), "cycle-3@cp-1")
	fmt.Println(r.Status, r.Reason)
	late, _ := e.Renew(context.Background(), executor.RenewRequest{OperationID: "cycle-3@cp-1"})
	fmt.Println("late attempt: exit", late.ExitCode, late.Outcome)
	// Output:
	// retryable: true
	// failed-lock-retained budget-exhausted
	// failed-lock-released abandoned
	// late attempt: exit 5 abandoned
}

// Progress for a Temporal activity's heartbeats: the phases the renewal
// reached and the components it restarted.
func ExampleExecutor_OnEvent() {
	e := &executor.Executor{Transport: certrunbooktest.NewNode()}
	e.OnEvent = func(ev executor.Event) {
		switch {
		case ev.Kind == executor.EventRestarted:
			fmt.Println("heartbeat: restarted", ev.Component) // activity.RecordHeartbeat(ctx, ev)
		case ev.Kind == executor.EventStepStarted && ev.Phase == documents.PhaseRenewCerts:
			fmt.Println("heartbeat: phase", ev.Phase)
		}
	}
	r, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "cycle-4@cp-1"})
	if err != nil {
		return
	}
	fmt.Println(r.Status)
	// Output:
	// heartbeat: phase renew-certs
	// heartbeat: restarted etcd
	// heartbeat: restarted kube-apiserver
	// heartbeat: restarted kube-controller-manager
	// heartbeat: restarted kube-scheduler
	// succeeded
}

// The executor selection after the node agent's V2 Start answered
// Unimplemented.
func ExamplePlan_FallbackToLegacy() {
	for _, noPendingIntent := range []bool{true, false} { // the check's legacyFallback
		node := certrunbooktest.NewNode().SetCheck(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorTyped}, noPendingIntent)
		e := &executor.Executor{Transport: node, AllowLegacyFallback: true}
		_, plan, err := e.Check(context.Background(), false, "")
		if err != nil {
			fmt.Println(err)
			return
		}
		if plan.FallbackToLegacy(true) {
			fmt.Println("no pending intent: renew with the embedded runbook")
			continue
		}
		r := plan.TypedUnimplemented("cycle-5@cp-1")
		fmt.Println("typed intent pending:", r.Status, r.Reason)
	}
	// Output:
	// no pending intent: renew with the embedded runbook
	// typed intent pending: failed-lock-released upgrade-agent
}
