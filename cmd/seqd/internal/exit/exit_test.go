package exit

import (
	"errors"
	"testing"
)

// The libraries prefix their errors with their package name; people see
// the sentence without it, also where a wrapped part carries one.
func TestMessageHasNoPackagePrefixes(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"sequencer: invalid sequencer: token \"y\" must be digits", "invalid sequencer: token \"y\" must be digits"},
		{"check: sequencer: invalid sequencer: x", "check: invalid sequencer: x"},
		{"lock a was not acquired: zklock: lock lost: zklock: session expired", "lock a was not acquired: lock lost: session expired"},
		{"lock: --kill-signal: runlock: \"FOO\" is not a signal name", "lock: --kill-signal: \"FOO\" is not a signal name"},
		{"lock jobs/store: held", "lock jobs/store: held"},
		{"seqd: the daemon at http://x broke the protocol", "the daemon at http://x broke the protocol"},
		{"acquire: seqd: daemon unreachable: no whole answer", "acquire: daemon unreachable: no whole answer"},
	} {
		if got := Message(errors.New(tc.err)); got != tc.want {
			t.Errorf("Message(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A child's status passes through quietly, and status 0 is no error.
func TestChildStatusIsQuiet(t *testing.T) {
	if err := Child(0); err != nil {
		t.Fatalf("Child(0) = %v, want nil", err)
	}
	var e *Error
	if err := Child(3); !errors.As(err, &e) || e.Code != 3 || !e.Quiet {
		t.Fatalf("Child(3) = %#v, want a quiet *Error with code 3", err)
	}
	if err := Usagef("bad %s", "flag"); !errors.As(err, &e) || e.Code != Usage || e.Quiet || err.Error() != "bad flag" {
		t.Fatalf("Usagef = %#v, want a loud usage error %q", err, "bad flag")
	}
}
