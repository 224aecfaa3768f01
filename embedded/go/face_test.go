package certrunbook_test

import (
	"context"
	"fmt"

	"nvke.example/certrunbook"
	"nvke.example/certrunbook/certrunbooktest"
)

// An Executor wired to the embedded binary (a fake node here: with the
// binary embedded it is pushed to the node; built with -tags
// certrunbook_nobinary the node's stand-in is).
func ExampleNew() {
	node := certrunbooktest.NewNode().Plan("cycle-1@cp-1", certrunbooktest.Succeeds)
	e := certrunbook.New(node)
	r, err := e.Renew(context.Background(), certrunbook.RenewRequest{OperationID: "cycle-1@cp-1"})
	if certrunbook.IsRetryable(err) {
		return
	}
	fmt.Println(err, r.Status == certrunbook.Succeeded)
	// Output: <nil> true
}
