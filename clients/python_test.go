package clients_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPythonClient runs the Python client's unittest suite
// (clients/python/tests) against the harness's daemons. PY_CLIENT_TESTS
// (e.g. "tests.test_loss" or "tests.test_lock.LockTest.test_held_lock_refuses_within_a_short_wait")
// runs only those tests.
func TestPythonClient(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not installed: the Python client's tests need it")
	}
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	e := newEnv(t)
	args := []string{"-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."}
	if only := os.Getenv("PY_CLIENT_TESTS"); only != "" {
		args = append([]string{"-m", "unittest", "-v"}, strings.Fields(only)...)
	}
	e.run("python", 3*time.Minute, "python3", args...)
}
