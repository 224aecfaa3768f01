package sshtransport_test

import (
	"context"
	"fmt"
	"time"

	"nvke.example/certrunbook/executor"
	"nvke.example/certrunbook/sshtransport"
)

// The executor over the OpenSSH client, as a controller's activity uses it:
// the context's deadline becomes --deadline, a cancelled context reaches the
// runbook as SIGTERM, and a failure is judged by the cleanup, which has its
// own five-minute budget. (Compiled, not run: it needs a node.)
func ExampleTransport() {
	e := &executor.Executor{
		Transport: &sshtransport.Transport{
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
	r, err := e.Renew(ctx, executor.RenewRequest{OperationID: "cycle-42@cp-1"})
	if executor.IsRetryable(err) {
		return // the activity retries with the same operation ID
	}
	if err != nil {
		r = e.Cleanup(ctx, "cycle-42@cp-1")
	} else if r.NeedsCleanup() {
		r = e.CleanupAfter(ctx, r)
	}
	fmt.Println(r.Status, r.Reason, r.LockRetained())
}
