package clients_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// debianPython is the interpreter whose packages (python3-tooz,
// python3-celery) the integration suites use.
const debianPython = "/usr/bin/python3"

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

// TestPythonIntegrations runs the suites of the Python integrations
// (clients/python/integration_tests: the tooz driver through tooz's own
// get_coordinator, seqd.locked under a Celery app) against the harness's
// daemons, with Debian's python3-tooz and python3-celery.
// PY_INTEGRATION_TESTS (e.g. "integration_tests.test_tooz") runs only those.
func TestPythonIntegrations(t *testing.T) {
	if out, err := exec.Command(debianPython, "-c", "import tooz, celery").CombinedOutput(); err != nil {
		t.Fatalf("the Python integrations' tests need %s with python3-tooz and python3-celery (scripts/deps.sh installs them): %v\n%s", debianPython, err, out)
	}
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // stevedore's entry-point cache
	e := newEnv(t)
	args := []string{"-m", "unittest", "discover", "-v", "-s", "integration_tests", "-t", "."}
	if only := os.Getenv("PY_INTEGRATION_TESTS"); only != "" {
		args = append([]string{"-m", "unittest", "-v"}, strings.Fields(only)...)
	}
	e.run("python", 3*time.Minute, debianPython, args...)
}
