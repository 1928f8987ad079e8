package clients_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJSClient runs the JavaScript client's suite (clients/js/test) with
// `node --test` against the harness's daemons. The files run one at a time:
// one of them restarts the plain daemon the others use.
func TestJSClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client's tests need Node.js 20 or later")
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	version := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(version, "v"), ".", 2)[0])
	if major < 20 {
		t.Fatalf("node %s is too old: the JavaScript client's tests need Node.js 20 or later", version)
	}
	files, err := filepath.Glob(filepath.Join("js", "test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in js/test (%v)", err)
	}
	args := []string{"--test", "--test-concurrency=1", "--test-reporter=spec"}
	for _, f := range files {
		args = append(args, strings.TrimPrefix(f, "js"+string(filepath.Separator)))
	}
	e := newEnv(t)
	e.run("js", 3*time.Minute, node, args...)
}
