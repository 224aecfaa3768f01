package certrunbook

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The packages' dependency direction (issue 29 item 2): documents <-
// executor <- sshtransport; documents <- binary; the root imports them all;
// only binary embeds the runbook. A controller that decodes (documents) or tests
// (executor, certrunbooktest) never links the binary.
func TestPackageImports(t *testing.T) {
	allowed := map[string][]string{
		"documents":            {"internal/text"},
		"executor":             {"documents", "internal/artifact", "internal/text"},
		"sshtransport":         {"executor", "internal/text"},
		"binary":               {"documents", "internal/artifact"},
		"certrunbooktest":      {"documents", "executor"},
		"internal/text":        nil,
		"internal/artifact":    nil,
		"internal/testsupport": nil, // tests only
	}
	const mod = "nvke.example/certrunbook"
	for dir, want := range allowed {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		got := map[string]bool{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "//go:embed nvke-cert-runbook") != (f == filepath.Join("binary", "embed_binary.go")) {
				t.Errorf("%s: only binary/embed_binary.go embeds the runbook", f)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if p == mod {
					got["(root)"] = true
				} else if strings.HasPrefix(p, mod+"/") {
					got[strings.TrimPrefix(p, mod+"/")] = true
				}
			}
		}
		var extra []string
		for p := range got {
			ok := false
			for _, w := range want {
				ok = ok || p == w
			}
			if !ok {
				extra = append(extra, p)
			}
		}
		sort.Strings(extra)
		if len(extra) > 0 {
			t.Errorf("%s imports %v: allowed %v", dir, extra, want)
		}
	}
}
