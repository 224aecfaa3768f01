//go:build certrunbook_nobinary

package certrunbook

// Built without the Rust artifact: no binary, no manifest (ErrNoBinary).
var (
	binary       []byte
	manifestJSON []byte
)
