package fence

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidSequencer is matched by every error of ParseSequencer and
// ParseToken, so that callers can answer 400 without matching text.
var ErrInvalidSequencer = errors.New("fence: invalid sequencer")

// SequencerError is a sequencer refused: Err is ErrInvalidSequencer,
// ErrUnsigned or ErrBadSignature, and Reason a sentence that says why,
// without the package's prefix, for people.
type SequencerError struct {
	Err    error
	Reason string
}

func (e *SequencerError) Error() string { return e.Err.Error() + ": " + e.Reason }

func (e *SequencerError) Unwrap() error { return e.Err }

func refused(kind error, format string, args ...any) error {
	return &SequencerError{Err: kind, Reason: fmt.Sprintf(format, args...)}
}

// reason is err's sentence without a package prefix: a *SequencerError's
// reason, or the text of a lower check's error (checkLockName's and
// checkKeyID's have none).
func reason(err error) string {
	var se *SequencerError
	if errors.As(err, &se) {
		return se.Reason
	}
	return err.Error()
}

// Kind is the kind of grant a sequencer is of. A token is only comparable
// with tokens of the same kind and name: an election's terms and a
// semaphore's tokens follow counts of their own, so a resource guarded by
// a lock must not take them.
type Kind string

// The kinds of grant. An exclusive lock's sequencer has no kind prefix.
const (
	KindLock      Kind = ""          // an exclusive lock
	KindShared    Kind = "shared"    // a shared (reader's) hold of a lock
	KindSemaphore Kind = "semaphore" // one slot of a semaphore
	KindElection  Kind = "election"  // a leader's term
)

// String names the kind as people read it: "lock" for an exclusive lock.
func (k Kind) String() string {
	if k == KindLock {
		return "lock"
	}
	return string(k)
}

// ParseKind reads a kind prefix as a sequencer or a guard writes it:
// "shared", "semaphore" or "election"; "" is an exclusive lock.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindLock, KindShared, KindSemaphore, KindElection:
		return k, nil
	}
	return "", refused(ErrInvalidSequencer, "unknown kind %.40q: want shared, semaphore or election (no prefix for an exclusive lock)", s)
}

// Sequencer names one grant: its kind, its lock's (semaphore's, election's)
// name and its token. Its text form is
//
//	[<kind>:]<name>@<token>
//
// with no prefix for an exclusive lock, e.g. "jobs/orders@4711" or
// "election:scheduler@52". It is what a holder passes to a resource with
// every request.
type Sequencer struct {
	Kind  Kind
	Name  string
	Token uint64
}

// String is the sequencer's text form.
func (s Sequencer) String() string {
	if s.Kind == KindLock {
		return s.Name + "@" + formatUint(s.Token)
	}
	return string(s.Kind) + ":" + s.Name + "@" + formatUint(s.Token)
}

// ParseSequencer reads "[<kind>:]<name>@<token>" and validates every part:
// the kind with ParseKind, the name as a lock name (a relative path of
// [A-Za-z0-9._-] segments joined by '/', no empty, "." or ".." segment, at
// most 256 bytes), the token with ParseToken. Names contain neither ':' nor
// '@'. A signed sequencer ("…@<token>.<kid>.<sig>") parses too, with the
// form of its signature checked but not the signature: that takes a
// Verifier.
func ParseSequencer(s string) (Sequencer, error) {
	plain, _, _, err := splitSigned(s)
	if err != nil {
		return Sequencer{}, err
	}
	return parsePlain(plain)
}

func parsePlain(s string) (Sequencer, error) {
	var seq Sequencer
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return Sequencer{}, refused(ErrInvalidSequencer, "%.300q has no '@'; want [<kind>:]<name>@<token>", s)
	}
	name := s[:i]
	if k, n, ok := strings.Cut(name, ":"); ok {
		if k == "" || k == "lock" {
			return Sequencer{}, refused(ErrInvalidSequencer, "%.300q: an exclusive lock's sequencer has no kind prefix", s)
		}
		kind, err := ParseKind(k)
		if err != nil {
			return Sequencer{}, err
		}
		seq.Kind, name = kind, n
	}
	if err := checkLockName(name); err != nil {
		return Sequencer{}, refused(ErrInvalidSequencer, "%s", reason(err))
	}
	token, err := ParseToken(s[i+1:])
	if err != nil {
		return Sequencer{}, err
	}
	seq.Name, seq.Token = name, token
	return seq, nil
}

// ParseToken parses a fencing token: base-10 digits only, no sign, no leading
// zero, greater than zero and within uint64. The form is strict so that a
// token has exactly one spelling: a header or log line can be compared as
// text, and a typo ("+5", "05", "-1") is refused instead of guessed at.
func ParseToken(s string) (uint64, error) {
	if s == "" {
		return 0, refused(ErrInvalidSequencer, "the token is empty")
	}
	if len(s) > 20 {
		return 0, refused(ErrInvalidSequencer, "token %.24q is longer than any uint64", s)
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, refused(ErrInvalidSequencer, "token %q must be base-10 digits only, found %q", s, rune(c))
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, refused(ErrInvalidSequencer, "token %q overflows uint64", s)
		}
		n = n*10 + d
	}
	if n == 0 {
		return 0, refused(ErrInvalidSequencer, "token %q must be greater than zero", s)
	}
	if s[0] == '0' {
		return 0, refused(ErrInvalidSequencer, "token %q has a leading zero", s)
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
