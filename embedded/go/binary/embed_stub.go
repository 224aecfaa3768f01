//go:build certrunbook_nobinary

package binary

// Built without the Rust artifact: no binary, no manifest (ErrNoBinary).
var (
	binary       []byte
	manifestJSON []byte
)
