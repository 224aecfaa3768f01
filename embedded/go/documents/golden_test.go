package documents

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func repoPath(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", ".."}, parts...)...)
}

// inRepo skips a test that reads the repository's files (the Rust
// goldens) when the package is tested outside it: skipped, not failed.
func inRepo(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(repoPath("Cargo.toml")); err != nil {
		t.Skipf("outside the nvke-cert-runbook repository (%v)", err)
	}
}

// Every JSON document of the Rust golden cases decodes into its type.
func TestGoldenDocumentsDecode(t *testing.T) {
	inRepo(t)
	dirs, err := filepath.Glob(repoPath("tests", "golden", "*", "stdout"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	kinds := map[Kind]int{}
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("{")) {
			continue
		}
		// The golden normalization masks the owner's pid.
		b = bytes.ReplaceAll(b, []byte(`"pid": "[masked]"`), []byte(`"pid": 4242`))
		// ... and the real lock holder's (it varies per run).
		b = bytes.ReplaceAll(b, []byte(`"pid": "[HOLDER]"`), []byte(`"pid": 4243`))
		k, _, err := Decode(b)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		kinds[k]++
	}
	for _, k := range []Kind{KindCheck, KindStatus, KindFence, KindUsageError} {
		if kinds[k] == 0 {
			t.Errorf("no golden %s document", k)
		}
	}
	// A field this package does not know is refused, at any depth.
	b, err := os.ReadFile(repoPath("tests", "golden", "check-clean-unchanged", "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to string }{
		{`"decision":`, `"newField": 1, "decision":`},
		{`"agentStaged":`, `"agentStagedToo": false, "agentStaged":`},
		{`"withinThreshold":`, `"inThreshold":`}, // (encoding/json matches names case-insensitively)
	} {
		m := bytes.Replace(b, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(m, b) {
			t.Fatalf("%q not found", c.from)
		}
		if _, err := DecodeCheck(m); err == nil {
			t.Errorf("drift not detected: %s", c.to)
		}
	}
	t.Logf("golden documents decoded: %v", kinds)
}
