// Package termtext makes text from elsewhere safe for an operator's
// terminal. What the daemon answers is anybody's text: an owner, a
// command, an election's value and a name may hold a terminal escape (a
// clipboard write, a cursor move) or a newline that forges a table row.
// The terminal sees them only as visible escapes. IsTerminal tells a
// terminal from a pipe or a file, for the commands that print a table to
// people and JSON to programs, and Duration writes a duration as people
// do.
package termtext

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seqd/seqd/internal/humantime"
)

// Safe is s with every rune a terminal would act on written as a Go
// escape (\x1b, \n, \u202e), and bytes that are not UTF-8 as \xNN.
func Safe(s string) string {
	if strings.IndexFunc(s, actsOnTerminal) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case actsOnTerminal(r):
			b.WriteString(escapeRune(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// actsOnTerminal reports whether a terminal acts on r instead of showing
// it: C0 and C1 controls, DEL, and the bidirectional overrides and
// isolates that reorder what follows.
func actsOnTerminal(r rune) bool {
	return r < 0x20 || r >= 0x7f && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x80 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// JSON writes JSON that encoding/json made (which escapes C0
// controls already) with DEL, C1 controls and the bidirectional runes
// escaped as \uXXXX: the same JSON value, and nothing a terminal acts on.
type JSON struct{ W io.Writer }

func (j JSON) Write(p []byte) (int, error) {
	if bytes.IndexFunc(p, func(r rune) bool { return r != '\n' && actsOnTerminal(r) }) < 0 {
		return j.W.Write(p)
	}
	var b bytes.Buffer
	for _, r := range string(p) {
		if r != '\n' && actsOnTerminal(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	if _, err := j.W.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// IsTerminal reports whether w is a terminal (a character device), where
// a table is shown instead of JSON and progress lines are rewritten in
// place.
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Duration is d as people write it, without trailing zero units: 10m and
// 1h, not 10m0s and 1h0m0s.
func Duration(d time.Duration) string { return humantime.Duration(d) }
