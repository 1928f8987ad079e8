package fence

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidSequencer is wrapped by every error of ParseSequencer and
// ParseToken, so that callers can answer 400 without matching text.
var ErrInvalidSequencer = errors.New("fence: invalid sequencer")

// FormatSequencer returns the sequencer string of a grant, "<name>@<token>".
// It is what a holder passes to a resource along with a request.
func FormatSequencer(name string, token uint64) string {
	return name + "@" + formatUint(token)
}

// ParseSequencer splits "<name>@<token>" and validates both halves: the name
// as a lock name (a relative path of [A-Za-z0-9._-] segments joined by '/',
// no empty, "." or ".." segment, at most 256 bytes), the token with
// ParseToken. Lock names cannot contain '@', so the last '@' is the
// separator. A signed sequencer ("<name>@<token>.<kid>.<sig>") parses too,
// with its signature's form checked but not the signature: that takes a
// Verifier.
func ParseSequencer(s string) (name string, token uint64, err error) {
	s, _, _, err = splitSigned(s)
	if err != nil {
		return "", 0, err
	}
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return "", 0, fmt.Errorf("%w: %q has no '@'; want <name>@<token>", ErrInvalidSequencer, s)
	}
	name = s[:i]
	if err := checkLockName(name); err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrInvalidSequencer, err)
	}
	token, err = ParseToken(s[i+1:])
	if err != nil {
		return "", 0, err
	}
	return name, token, nil
}

// ParseToken parses a fencing token: base-10 digits only, no sign, no leading
// zero, greater than zero and within uint64. The form is strict so that a
// token has exactly one spelling: a header or log line can be compared as
// text, and a typo ("+5", "05", "-1") is refused instead of guessed at.
func ParseToken(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: the token is empty", ErrInvalidSequencer)
	}
	if len(s) > 20 {
		return 0, fmt.Errorf("%w: token %.24q is longer than any uint64", ErrInvalidSequencer, s)
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: token %q must be base-10 digits only, found %q", ErrInvalidSequencer, s, rune(c))
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, fmt.Errorf("%w: token %q overflows uint64", ErrInvalidSequencer, s)
		}
		n = n*10 + d
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: token %q must be greater than zero", ErrInvalidSequencer, s)
	}
	if s[0] == '0' {
		return 0, fmt.Errorf("%w: token %q has a leading zero", ErrInvalidSequencer, s)
	}
	return n, nil
}

func formatUint(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
