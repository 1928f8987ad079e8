package fence_test

import (
	"strings"
	"testing"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// The lock library and the fence check lock names separately (the fence
// must not depend on the lock library). A name the lock library grants a
// lock for must be one a resource accepts in a sequencer; the lock library
// may refuse more.

var sharedNames = []string{
	"a", "a/b", "jobs/nightly-report", "A.b_c-9", "..a", "a..", ".a/b.",
	strings.Repeat("x", 256), strings.Repeat("x", 257),
	"", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "a b", "a@b", "ü",
	"x-lock-0000000003", "jobs/x__lock__0000000004/y",
}

func checkAgrees(t *testing.T, name string) {
	t.Helper()
	if zklock.ValidateName(name) != nil {
		return
	}
	if _, err := fence.ParseSequencer(name + "@1"); err != nil {
		t.Errorf("zklock.ValidateName(%q) accepts it, fence.ParseSequencer(%q) = %v", name, name+"@1", err)
	}
}

func TestLockNamesAcceptedByZklockAreAcceptedByFence(t *testing.T) {
	for _, name := range sharedNames {
		checkAgrees(t, name)
	}
}

func FuzzLockNamesAcceptedByZklockAreAcceptedByFence(f *testing.F) {
	for _, name := range sharedNames {
		f.Add(name)
	}
	f.Fuzz(checkAgrees)
}
