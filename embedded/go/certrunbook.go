// Package certrunbook is the face of the nvke-cert-runbook Go module for
// a fleet controller: New wires an Executor (package executor) to the
// embedded binary (package binary), NewSSH over the OpenSSH client
// (package sshtransport), and the few names a controller writes every
// day are aliases of theirs. Importing this package links the static
// runbook (megabytes); a controller that only decodes documents imports
// nvke.example/certrunbook/documents alone, one that tests against
// certrunbooktest imports executor and documents: neither links it.
//
//	documents        the documents, decoders, typed closed lists, Decide
//	executor         Executor, Transport, argument builders, events, errors
//	sshtransport     the Transport over the OpenSSH client
//	binary           the embedded binary and its manifest (//go:embed)
//	certrunbooktest  a fake node for a controller's unit tests
//
// Standard library only.
package certrunbook

import (
	"nvke.example/certrunbook/binary"
	"nvke.example/certrunbook/documents"
	"nvke.example/certrunbook/executor"
	"nvke.example/certrunbook/sshtransport"
)

// New returns an Executor that runs the embedded binary on the node t
// reaches. Its other fields keep their defaults; set them before use.
func New(t Transport) *Executor {
	return &executor.Executor{Transport: t, Binary: binary.Embedded()}
}

// NewSSH is New over the OpenSSH client: host is ssh's destination
// ("root@10.0.0.11"), options its -o Name=value options (IdentityFile,
// UserKnownHostsFile, StrictHostKeyChecking=yes, ConnectTimeout...).
func NewSSH(host string, options ...string) *Executor {
	return New(&sshtransport.Transport{Host: host, Options: options})
}

// The names a controller's activity writes every day.
type (
	Executor     = executor.Executor
	Transport    = executor.Transport
	RenewRequest = executor.RenewRequest
	Plan         = executor.Plan
	Event        = executor.Event
	Result       = documents.Result
	Status       = documents.Status // Result.Status; the --status-only document is documents.StatusResult
	Reason       = documents.Reason
)

// A node renewal's Status (documents).
const (
	Succeeded          = documents.Succeeded
	FailedLockReleased = documents.FailedLockReleased
	FailedLockRetained = documents.FailedLockRetained
)

// IsRetryable reports whether the activity should retry with the same
// operation ID (executor.IsRetryable).
func IsRetryable(err error) bool { return executor.IsRetryable(err) }

// ErrNoBinary: the binary is not embedded (built with -tags
// certrunbook_nobinary); the same value as executor.ErrNoBinary and
// binary.ErrNoBinary.
var ErrNoBinary = binary.ErrNoBinary
