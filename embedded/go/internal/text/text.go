// Package text holds the few text helpers the documents, the executor and
// the SSH transport share: a line splitter, bounded messages, tails.
package text

import (
	"bytes"
	"sync"
	"unicode/utf8"
)

// Lines calls Line with each complete line written to it; Flush hands over
// the last partial one.
type Lines struct {
	mu   sync.Mutex
	buf  []byte
	Line func(string)
}

func (w *Lines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		l := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		w.Line(l)
	}
	if len(w.buf) > 64<<10 { // a line without end: hand it over as it is
		w.Line(string(w.buf))
		w.buf = nil
	}
	return len(p), nil
}

// Flush hands over the last partial line.
func (w *Lines) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.Line(string(w.buf))
		w.buf = nil
	}
}

// Bound cuts s to max bytes on a rune boundary ("..." marks a cut).
func Bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max-3]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// LastBytes is the last n bytes of b.
func LastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
