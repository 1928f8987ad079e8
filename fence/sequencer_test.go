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
}{
	{"jobs/nightly@42", "jobs/nightly", 42, true},
	{"a@1", "a", 1, true},
	{"a.b_c-d/e@18446744073709551615", "a.b_c-d/e", math.MaxUint64, true},
	{"a@18446744073709551616", "", 0, false}, // overflow by one
	{"a@99999999999999999999", "", 0, false},
	{"a@123456789012345678901", "", 0, false},
	{"a@0", "", 0, false},
	{"a@00", "", 0, false},
	{"a@07", "", 0, false},
	{"a@+7", "", 0, false},
	{"a@-7", "", 0, false},
	{"a@ 7", "", 0, false},
	{"a@7 ", "", 0, false},
	{"a@0x10", "", 0, false},
	{"a@", "", 0, false},
	{"@5", "", 0, false},
	{"a", "", 0, false},
	{"", "", 0, false},
	{"a@b@5", "", 0, false},
	{"/abs@5", "", 0, false},
	{"a/../b@5", "", 0, false},
	{"a//b@5", "", 0, false},
	{"a b@5", "", 0, false},
	{strings.Repeat("x", 256) + "@5", strings.Repeat("x", 256), 5, true},
	{strings.Repeat("x", 257) + "@5", "", 0, false},
}

func TestParseSequencer(t *testing.T) {
	for _, tc := range sequencerTests {
		name, token, err := ParseSequencer(tc.in)
		if tc.ok {
			if err != nil || name != tc.name || token != tc.token {
				t.Errorf("ParseSequencer(%q) = %q, %d, %v; want %q, %d, nil", tc.in, name, token, err, tc.name, tc.token)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseSequencer(%q) = %q, %d, nil; want an error", tc.in, name, token)
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

func TestFormatSequencer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token uint64
		want  string
	}{
		{"a", 1, "a@1"},
		{"jobs/nightly", 1 << 40, "jobs/nightly@1099511627776"},
		{"x", math.MaxUint64, "x@18446744073709551615"},
	} {
		if got := FormatSequencer(tc.name, tc.token); got != tc.want {
			t.Errorf("FormatSequencer(%q, %d) = %q, want %q", tc.name, tc.token, got, tc.want)
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
		name, token, err := ParseSequencer(s)
		if err != nil {
			if name != "" || token != 0 {
				t.Fatalf("ParseSequencer(%q) returned %q, %d with error %v", s, name, token, err)
			}
			return
		}
		if got := FormatSequencer(name, token); got != s {
			t.Fatalf("FormatSequencer(ParseSequencer(%q)) = %q", s, got)
		}
		if token == 0 {
			t.Fatalf("ParseSequencer(%q) accepted token 0", s)
		}
		want, perr := strconv.ParseUint(s[strings.LastIndexByte(s, '@')+1:], 10, 64)
		if perr != nil || want != token {
			t.Fatalf("ParseSequencer(%q) token %d, strconv says %d, %v", s, token, want, perr)
		}
	})
}
