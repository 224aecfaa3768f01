package executor

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"nvke.example/certrunbook/internal/testsupport"
)

// realShells are the shells the round trip runs through: dash (/bin/sh on
// Debian) and bash (root's login shell on most nodes).
var realShells = []string{"/bin/sh", "/bin/bash"}

// roundTrip runs `printf '%s\0' words...` through shell -c and returns the
// words printf received.
func roundTrip(t testing.TB, shell string, words []string) []string {
	t.Helper()
	argv := append([]string{"printf", `%s\0`}, words...)
	line, err := ShellCommand(argv)
	if err != nil {
		t.Fatalf("ShellCommand: %v", err)
	}
	cmd := exec.Command(shell, "-c", line)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent-home", "LC_ALL=C"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v (%s)", shell, line, err, stderr.String())
	}
	if len(words) == 0 {
		// printf with no arguments still prints the format once.
		return nil
	}
	if !bytes.HasSuffix(out, []byte{0}) {
		t.Fatalf("%s -c %q: output %q does not end in NUL", shell, line, out)
	}
	return strings.Split(string(out[:len(out)-1]), "\x00")
}

func checkWords(t testing.TB, shell string, words []string) {
	t.Helper()
	got := roundTrip(t, shell, words)
	if len(got) != len(words) {
		t.Fatalf("%s: sent %d words %q, got %d %q", shell, len(words), words, len(got), got)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("%s: word %d: sent %q, got %q", shell, i, words[i], got[i])
		}
	}
}

func TestShellQuoteRoundTrip(t *testing.T) {
	for _, sh := range realShells {
		if _, err := os.Stat(sh); err != nil {
			t.Skipf("%s: %v", sh, err)
		}
		// All at once, and each word alone (a word's meaning could depend on
		// its neighbours, e.g. a first word NAME=value).
		checkWords(t, sh, testsupport.HostileWords())
		for _, w := range testsupport.HostileWords() {
			checkWords(t, sh, []string{w})
		}
	}
}

func TestShellQuoteForms(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "''"},
		{"abc", "abc"},
		{"/usr/bin/env", "/usr/bin/env"},
		{"--operation-id", "--operation-id"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"a=b", "'a=b'"},
		{"~", "'~'"},
		{"*", "'*'"},
	} {
		if got := ShellQuote(c.in); got != c.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// A first word NAME=value quoted is a command name, not an assignment: the
// shell looks for a program called "A=b" and fails (127), instead of
// running the second word as the command.
func TestShellCommandFirstWordIsNeverAnAssignment(t *testing.T) {
	line, err := ShellCommand([]string{"A=b", "true"})
	if err != nil {
		t.Fatal(err)
	}
	err = exec.Command("/bin/sh", "-c", line).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 {
		t.Fatalf("sh -c %q: %v, want exit 127 (command not found)", line, err)
	}
}

func TestShellCommandRefusesNULAndEmpty(t *testing.T) {
	if _, err := ShellCommand([]string{"printf", "a\x00b"}); !errors.Is(err, ErrShellNUL) {
		t.Fatalf("NUL word: err = %v, want ErrShellNUL", err)
	}
	if _, err := ShellCommand(nil); err == nil {
		t.Fatal("empty argv: no error")
	}
	if got, err := ShellCommand([]string{"echo", "", "x y"}); err != nil || got != `echo '' 'x y'` {
		t.Fatalf("ShellCommand = %q, %v", got, err)
	}
}

func FuzzShellQuote(f *testing.F) {
	for _, w := range testsupport.HostileWords() {
		f.Add(w, "")
	}
	f.Add("a", "b")
	f.Add("it's", "$(x)")
	f.Add("x\x00y", "z")
	f.Fuzz(func(t *testing.T, a, b string) {
		words := []string{a, b}
		line, err := ShellCommand(append([]string{"printf", `%s\0`}, words...))
		if strings.ContainsRune(a+b, 0) {
			if !errors.Is(err, ErrShellNUL) {
				t.Fatalf("NUL word accepted: %q, %v", line, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range realShells {
			checkWords(t, sh, words)
		}
	})
}
