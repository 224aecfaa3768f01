package binary

import (
	"errors"
	"testing"
)

func TestEmbeddedBinaryMatchesItsManifest(t *testing.T) {
	if Bytes() == nil {
		// -tags certrunbook_nobinary: every use of the binary says so.
		if _, err := WriteBinary(t.TempDir()); !errors.Is(err, ErrNoBinary) {
			t.Fatalf("WriteBinary: %v", err)
		}
		if err := Verify(); !errors.Is(err, ErrNoBinary) || SHA256() != "" || Size() != 0 || Embedded() != nil {
			t.Fatalf("Verify: %v, sha %q", err, SHA256())
		}
		if _, err := Manifest(); !errors.Is(err, ErrNoBinary) {
			t.Fatalf("Manifest: %v", err)
		}
		return
	}
	if err := Verify(); err != nil {
		t.Fatal(err)
	}
	if len(SHA256()) != 64 || Size() < 1<<20 || len(Embedded().Bytes()) != Size() {
		t.Fatalf("sha256 %q, size %d", SHA256(), Size())
	}
	m, err := Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Modes) != 7 || len(m.ExitCodes) != 6 || len(m.Schemas) == 0 {
		t.Fatalf("manifest: %+v", m)
	}
}
