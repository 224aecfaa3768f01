// Package artifact is the binary an Executor runs, as a value only this
// module can make: outside it, the one source of an *artifact.Binary is
// binary.Embedded() (the guide: V2 legacy dispatch always runs the
// embedded binary, never a configured override).
package artifact

import "errors"

// ErrNoBinary: no binary to push or run (executor.ErrNoBinary and
// binary.ErrNoBinary are this value).
var ErrNoBinary = errors.New("nvke-cert-runbook is not embedded (built with -tags certrunbook_nobinary, or Executor.Binary not set: certrunbook.New sets it)")

// Binary is the executable's bytes.
type Binary struct{ data []byte }

// New wraps b (nil when b is empty).
func New(b []byte) *Binary {
	if len(b) == 0 {
		return nil
	}
	return &Binary{data: b}
}

// Bytes returns the executable (nil for a nil Binary). Do not modify it.
func (b *Binary) Bytes() []byte {
	if b == nil {
		return nil
	}
	return b.data
}
