package fence

import (
	"strings"
	"testing"
)

var lockNameTests = []struct {
	name string
	ok   bool
}{
	{"a", true},
	{"jobs/nightly-report", true},
	{"A.b_c-9/x.y", true},
	{"..a/b..", true},
	{"x-lock-0000000003", true}, // contender-shaped: only ZooKeeper cares
	{strings.Repeat("x", 256), true},
	{strings.Repeat("x", 257), false},
	{"", false},
	{"/abs", false},
	{"a/", false},
	{"a//b", false},
	{".", false},
	{"..", false},
	{"a/./b", false},
	{"a/../b", false},
	{"a b", false},
	{"a@b", false},
	{"ü", false},
	{"a\x00", false},
}

func TestCheckLockName(t *testing.T) {
	for _, tc := range lockNameTests {
		err := checkLockName(tc.name)
		if tc.ok && err != nil {
			t.Errorf("checkLockName(%q) = %v, want nil", tc.name, err)
		}
		if !tc.ok && err == nil {
			t.Errorf("checkLockName(%q) = nil, want an error", tc.name)
		}
	}
}

func TestCheckLockNameDoesNotAllocate(t *testing.T) {
	name := "jobs/nightly/" + strings.Repeat("x", 200)
	if n := testing.AllocsPerRun(100, func() { _ = checkLockName(name) }); n != 0 {
		t.Errorf("checkLockName allocates %v times per call, want 0", n)
	}
}

// FuzzCheckLockName compares checkLockName with a direct reading of the
// syntax: split on '/', every segment non-empty, not "." or "..", and made of
// [A-Za-z0-9._-]; at most 256 bytes in all.
func FuzzCheckLockName(f *testing.F) {
	for _, tc := range lockNameTests {
		f.Add(tc.name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want := name != "" && len(name) <= 256
		for _, seg := range strings.Split(name, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.Trim(seg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
				want = false
			}
		}
		if err := checkLockName(name); (err == nil) != want {
			t.Fatalf("checkLockName(%q) = %v, want accepted=%v", name, err, want)
		}
	})
}
