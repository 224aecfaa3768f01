package executor

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// Transport reaches one control-plane node. The package ships an
// implementation over the OpenSSH client (sshtransport.Transport); a controller can
// bring its own (golang.org/x/crypto/ssh, a bastion, a test fake).
//
// Every argv is a list of separate words: an implementation that goes
// through a shell quotes each word (ShellQuote), never joins them with
// spaces.
type Transport interface {
	// Push writes data to path on the node with mode 0755 through a
	// temporary file in the same directory and a rename, creating the
	// directory (0755) when missing. A failed push leaves no partial file
	// at path.
	Push(ctx context.Context, path string, data []byte) error
	// Start starts argv on the node as root with stdin closed. ctx bounds
	// starting only: once Start returned, cancelling ctx does not touch
	// the remote process (the executor signals it with Remote.Signal).
	Start(ctx context.Context, argv []string) (Remote, error)
}

// Remote is one command started on a node.
type Remote interface {
	// Wait waits for the command to end and returns what it printed and
	// its exit status. ExitCode is -1 when the transport lost the status
	// (the connection died); the error is then a *TransportError.
	Wait() (*RunResult, error)
	// Signal sends sig (syscall.SIGTERM or SIGINT) to the remote process,
	// if it is still the process Start started.
	Signal(ctx context.Context, sig syscall.Signal) error
	// Close stops waiting and releases the local side (for SSH: the
	// client). It never signals the remote process: the runbook survives
	// a closed session and its receipt tells the outcome.
	Close() error
}

// RunResult is what a remote command printed, and how it ended.
type RunResult struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int // -1: unknown (see Remote.Wait)
}

// TransportError is a failure to reach the node or to keep the session:
// worth retrying, unlike anything the runbook itself answered.
type TransportError struct {
	Op  string // "push", "start", "wait", "signal"
	Err error
}

func (e *TransportError) Error() string { return fmt.Sprintf("transport %s: %v", e.Op, e.Err) }
func (e *TransportError) Unwrap() error { return e.Err }

// IsTransportError reports whether err is (or wraps) a *TransportError.
func IsTransportError(err error) bool {
	var t *TransportError
	return errors.As(err, &t)
}

// TestDouble is implemented by a Transport that is a fake node
// (certrunbooktest.Node). An Executor without a Binary (none is embedded:
// package binary is not imported, or was built with the tag
// certrunbook_nobinary) pushes and runs StandInBinary in its place, so
// that a controller's unit tests run the real Executor with no Rust
// artifact. With a Binary, StandInBinary is never called: a node is only
// ever given the embedded binary.
type TestDouble interface {
	Transport
	// StandInBinary: the bytes to push in place of the binary (not empty).
	StandInBinary() []byte
}

// ErrProcessGone is returned (wrapped) by Remote.Signal when the process
// Start started is no longer running on the node (ended, or its pid now
// belongs to another process): nothing was signalled.
var ErrProcessGone = errors.New("the remote process is gone")
