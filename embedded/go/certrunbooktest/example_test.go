package certrunbooktest_test

import (
	"context"
	"fmt"
	"time"

	"nvke.example/certrunbook/certrunbooktest"
	"nvke.example/certrunbook/executor"
)

// A controller's unit test drives the real Executor against a fake node,
// with no Rust artifact (also under -tags certrunbook_nobinary).
func ExampleNode() {
	node := certrunbooktest.NewNode().
		Plan("cycle-1@cp-1", certrunbooktest.Succeeds).
		Plan("cycle-2@cp-1", certrunbooktest.FailsGate)
	e := &executor.Executor{Transport: node}
	for _, id := range []string{"cycle-1@cp-1", "cycle-2@cp-1"} {
		r, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: id})
		if err != nil {
			fmt.Println(err)
			return
		}
		if r.NeedsCleanup() {
			r = e.CleanupAfter(context.Background(), r)
		}
		fmt.Println(id, r.Status, r.Reason)
	}
	fmt.Println("runs:", len(node.Runs("")), "pushes:", len(node.Pushes()))
	// Output:
	// cycle-1@cp-1 succeeded renewed
	// cycle-2@cp-1 failed-lock-released failed
	// runs: 5 pushes: 1
}

// An unreachable node: Renew's error is retryable, and the cleanup ends
// with the lock retained when its budget ends.
func ExampleNode_SetUnreachable() {
	node := certrunbooktest.NewNode().SetUnreachable(true)
	e := &executor.Executor{Transport: node, CleanupBudget: 50 * time.Millisecond}
	_, err := e.Renew(context.Background(), executor.RenewRequest{OperationID: "cycle-3@cp-1"})
	fmt.Println("retryable:", executor.IsRetryable(err))
	r := e.Cleanup(context.Background(), "cycle-3@cp-1")
	fmt.Println(r.Status, r.Reason)
	// Output:
	// retryable: true
	// failed-lock-retained unreachable
}

// A cancelled activity: the runbook gets SIGTERM and answers cancelled.
func ExampleNode_Plan_hangs() {
	node := certrunbooktest.NewNode().Plan("cycle-4@cp-1", certrunbooktest.Hangs)
	e := &executor.Executor{Transport: node}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r, err := e.Renew(ctx, executor.RenewRequest{OperationID: "cycle-4@cp-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Outcome, node.Signals())
	fmt.Println(e.CleanupAfter(context.Background(), r).Reason)
	// Output:
	// cancelled [terminated]
	// failed
}
