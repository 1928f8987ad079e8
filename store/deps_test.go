package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoZooKeeperDependency: the store is a resource; it checks tokens with
// package fence and must not link a ZooKeeper client or the lock library.
func TestNoZooKeeperDependency(t *testing.T) {
	for _, dep := range listDeps(t, "github.com/seqd/seqd/store") {
		switch dep {
		case "github.com/go-zookeeper/zk", "github.com/seqd/seqd/zklock", "github.com/seqd/seqd/sequencer":
			t.Errorf("store depends on %s; a resource must not pull in ZooKeeper", dep)
		}
	}
}

// listDeps returns `go list -deps pkg`. It fails the test, rather than
// skipping it, when there is no go command: a skipped check passes silently.
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, serr := os.Stat(goTool); os.Getenv("GOROOT") == "" || serr != nil {
			t.Fatalf("no go command on PATH (%v) or in $GOROOT/bin: cannot list the dependencies of %s", err, pkg)
		}
	}
	out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	return strings.Fields(string(out))
}
