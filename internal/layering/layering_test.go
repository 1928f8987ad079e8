package layering

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const mod = "github.com/seqd/seqd/"

// TestImportRules: a resource (fence, store) links no ZooKeeper client and
// no lock library; fence links nothing outside the standard library; zklock
// is a library of its own, linking neither seqd's metrics nor internal
// packages; and the seqd binary does not link package testing.
func TestImportRules(t *testing.T) {
	for _, r := range []struct {
		pkg     string
		forbid  []string
		stdOnly bool
		why     string
	}{
		{pkg: "fence", stdOnly: true, why: "a resource that imports fence must pull in nothing but the standard library"},
		{pkg: "store", forbid: []string{"github.com/go-zookeeper/zk", mod + "zklock", mod + "sequencer"}, why: "a resource must not pull in ZooKeeper"},
		{pkg: "zklock", forbid: []string{mod + "metrics", mod + "internal/", mod + "sequencer", "github.com/prometheus/"}, why: "zklock is a library of its own"},
		{pkg: "cmd/seqd", forbid: []string{"testing"}, why: "the binary must not link package testing"},
	} {
		for _, dep := range listDeps(t, mod+r.pkg) {
			if dep == mod+r.pkg {
				continue
			}
			if r.stdOnly {
				if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") {
					t.Errorf("%s depends on %s: %s", r.pkg, dep, r.why)
				}
			}
			for _, f := range r.forbid {
				if dep == f || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s: %s", r.pkg, dep, r.why)
				}
			}
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
