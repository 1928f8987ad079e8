package fence

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoZooKeeperDependency: a resource that imports fence must not link a
// ZooKeeper client, the lock library or Prometheus. It runs `go list -deps`,
// which sees what the package really imports, build tags and all.
func TestNoZooKeeperDependency(t *testing.T) {
	deps := listDeps(t, "github.com/seqd/seqd/fence")
	for _, dep := range deps {
		if dep == "github.com/seqd/seqd/fence" {
			continue
		}
		// Outside the standard library, an import path starts with a domain.
		if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") {
			t.Errorf("fence depends on %s; it must depend on the standard library only", dep)
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
