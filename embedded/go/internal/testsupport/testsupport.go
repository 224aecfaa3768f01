// Package testsupport holds what the packages' tests share. Only _test.go
// files import it (layout_test.go allows it to no package's own files), so
// packaging/go-module leaves it out of the module a controller requires.
package testsupport

import "strings"

// HostileWords are arguments a shell must pass through unchanged: quotes,
// expansions, globs, operators, options, control bytes, invalid UTF-8 and
// long words. executor's tests round-trip them through real shells;
// sshtransport's through ssh's remote command line.
func HostileWords() []string {
	long := strings.Repeat("ab'c\"d $(x) `y` *?[z]\\ ", 10)[:200]
	return []string{
		"", "plain", "two words", "  lead and trail  ", "\ttab", "new\nline", "\n",
		"'", "''", "it's", `"`, `"double"`, `\`, `\\n`, `a\'b`,
		"$HOME", "${HOME}", "$(id -u)", "`id -u`", "$((1+2))", "$'x'", "$",
		"*", "?", "[a-z]*", "/etc/*", "{a,b}", "~", "~root", "#comment", "!",
		"!!", "a=b", "PATH=/x", "-", "--", "-n", "-e", "--version", "-c",
		";", "&&", "||", "|", "&", ">", "<", ">>x", "2>&1", "(", ")", "a;rm -rf /",
		"héllo", "日本語", "\xff\xfe", "\x01\x02\x1b[31m", "\r\n", "%s", "%%", "\\0",
		long, strings.Repeat("'", 200), strings.Repeat("x", 200),
	}
}
