package fence

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

var sequencerTests = []struct {
	in    string
	name  string
	token uint64
	ok    bool
	kind  Kind
}{
	{"jobs/nightly@42", "jobs/nightly", 42, true, KindLock},
	{"shared:jobs/nightly@42", "jobs/nightly", 42, true, KindShared},
	{"semaphore:pool@7", "pool", 7, true, KindSemaphore},
	{"election:leader/x@9", "leader/x", 9, true, KindElection},
	{"lock:a@1", "", 0, false, ""},  // an exclusive lock has no prefix: one spelling
	{":a@1", "", 0, false, ""},      // an empty kind
	{"mutex:a@1", "", 0, false, ""}, // an unknown kind
	{"Election:a@1", "", 0, false, ""},
	{"election:election:a@1", "", 0, false, ""},
	{"election:@1", "", 0, false, ""},
	{"a@1", "a", 1, true, ""},
	{"a.b_c-d/e@18446744073709551615", "a.b_c-d/e", math.MaxUint64, true, ""},
	{"a@18446744073709551616", "", 0, false, ""}, // overflow by one
	{"a@99999999999999999999", "", 0, false, ""},
	{"a@123456789012345678901", "", 0, false, ""},
	{"a@0", "", 0, false, ""},
	{"a@00", "", 0, false, ""},
	{"a@07", "", 0, false, ""},
	{"a@+7", "", 0, false, ""},
	{"a@-7", "", 0, false, ""},
	{"a@ 7", "", 0, false, ""},
	{"a@7 ", "", 0, false, ""},
	{"a@0x10", "", 0, false, ""},
	{"a@", "", 0, false, ""},
	{"@5", "", 0, false, ""},
	{"a", "", 0, false, ""},
	{"", "", 0, false, ""},
	{"a@b@5", "", 0, false, ""},
	{"/abs@5", "", 0, false, ""},
	{"a/../b@5", "", 0, false, ""},
	{"a//b@5", "", 0, false, ""},
	{"a b@5", "", 0, false, ""},
	{strings.Repeat("x", 256) + "@5", strings.Repeat("x", 256), 5, true, ""},
	{strings.Repeat("x", 257) + "@5", "", 0, false, ""},
}

func TestParseSequencer(t *testing.T) {
	for _, tc := range sequencerTests {
		seq, err := ParseSequencer(tc.in)
		if tc.ok {
			want := Sequencer{Kind: tc.kind, Name: tc.name, Token: tc.token}
			if err != nil || seq != want {
				t.Errorf("ParseSequencer(%q) = %+v, %v; want %+v, nil", tc.in, seq, err, want)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseSequencer(%q) = %+v, nil; want an error", tc.in, seq)
			continue
		}
		if !errors.Is(err, ErrInvalidSequencer) {
			t.Errorf("ParseSequencer(%q) error %v does not wrap ErrInvalidSequencer", tc.in, err)
		}
		if !strings.HasPrefix(err.Error(), "fence: ") {
			t.Errorf("ParseSequencer(%q) error %q lacks the package prefix", tc.in, err)
		}
	}
}

func TestSequencerString(t *testing.T) {
	for _, tc := range []struct {
		seq  Sequencer
		want string
	}{
		{Sequencer{Name: "a", Token: 1}, "a@1"},
		{Sequencer{Name: "jobs/nightly", Token: 1 << 40}, "jobs/nightly@1099511627776"},
		{Sequencer{Name: "x", Token: math.MaxUint64}, "x@18446744073709551615"},
		{Sequencer{Kind: KindShared, Name: "x", Token: 3}, "shared:x@3"},
		{Sequencer{Kind: KindSemaphore, Name: "p/q", Token: 3}, "semaphore:p/q@3"},
		{Sequencer{Kind: KindElection, Name: "e", Token: 3}, "election:e@3"},
	} {
		if got := tc.seq.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.seq, got, tc.want)
		}
	}
}

// FuzzParseSequencer checks that whatever parses is canonical: formatting the
// result gives back the input, and the token agrees with strconv.
func FuzzParseSequencer(f *testing.F) {
	for _, tc := range sequencerTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seq, err := ParseSequencer(s)
		if err != nil {
			if seq != (Sequencer{}) {
				t.Fatalf("ParseSequencer(%q) returned %+v with error %v", s, seq, err)
			}
			return
		}
		if got := seq.String(); got != s {
			t.Fatalf("ParseSequencer(%q).String() = %q", s, got)
		}
		token := seq.Token
		if token == 0 {
			t.Fatalf("ParseSequencer(%q) accepted token 0", s)
		}
		want, perr := strconv.ParseUint(s[strings.LastIndexByte(s, '@')+1:], 10, 64)
		if perr != nil || want != token {
			t.Fatalf("ParseSequencer(%q) token %d, strconv says %d, %v", s, token, want, perr)
		}
	})
}
