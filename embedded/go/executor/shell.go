package executor

import (
	"errors"
	"fmt"
	"strings"
)

// ShellQuote quotes word for a POSIX shell (sh, dash, bash, ksh, zsh in
// sh mode): the shell reads it back as exactly one word, byte for byte,
// with no expansion of any kind. A word made only of characters that are
// never special (A-Z a-z 0-9 _ . / : @ % + , -) stays bare; any other word
// is put in single quotes, each single quote in it written as quote,
// backslash, quote, quote; the empty word becomes two single quotes:
//
//	ShellQuote("it's")  == `'it'\''s'`
//	ShellQuote("")      == `''`
//	ShellQuote("-x")    == `-x`
//
// A NUL byte cannot reach a program through a shell (nor through execve);
// ShellQuote cannot refuse it, so use ShellCommand, which does.
//
// '=' is not a safe character: a bare first word NAME=value would be an
// assignment, not a command. '~', '#', '!', '{', '}' and glob characters
// are quoted for the same reason (tilde expansion, comments, bash history
// and brace expansion, globbing).
func ShellQuote(word string) string {
	if word == "" {
		return "''"
	}
	if shellSafe(word) {
		return word
	}
	return "'" + strings.ReplaceAll(word, "'", `'\''`) + "'"
}

func shellSafe(word string) bool {
	for i := 0; i < len(word); i++ {
		c := word[i]
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == '/' || c == ':' || c == '@' || c == '%' ||
			c == '+' || c == ',' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// ErrShellNUL is returned (wrapped) by ShellCommand for a word holding a
// NUL byte, which no shell and no execve can pass on.
var ErrShellNUL = errors.New("a NUL byte cannot pass through a shell")

// ShellCommand joins argv into one POSIX shell command line, each word
// quoted with ShellQuote, separated by single spaces. It refuses an empty
// argv and any word holding a NUL byte instead of passing on a command
// that would not be the one asked for.
//
// The result is meant for a POSIX login shell (what sshd runs the remote
// command with: `$SHELL -c COMMAND`); csh and fish quote differently.
func ShellCommand(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("shell command: empty argv")
	}
	var b strings.Builder
	for i, w := range argv {
		if j := strings.IndexByte(w, 0); j >= 0 {
			return "", fmt.Errorf("shell command: word %d has a NUL byte at byte %d: %w", i, j, ErrShellNUL)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(ShellQuote(w))
	}
	return b.String(), nil
}
