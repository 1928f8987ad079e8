package clients_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// debianPython is the interpreter whose packages (python3-tooz,
// python3-celery, python3-pyflakes, python3-mypy) the integration suites
// and the checks use.
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

// TestPythonIntegrations runs the suite of the Python client's
// integrations (clients/python/integration_tests: seqd.locked under a
// Celery app) against the harness's daemons, with Debian's python3-celery,
// then docs/clients.md's Python integration examples.
// PY_INTEGRATION_TESTS (e.g. "integration_tests.test_locked") runs only those.
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
	if os.Getenv("PY_INTEGRATION_TESTS") == "" {
		runPythonDocExamples(t, e)
	}
}

// TestToozAdapter runs the tooz adapter's suite (contrib/tooz/tooz_tests:
// the driver through tooz's own get_coordinator, found by the adapter's
// entry point; what pip installs with the client and with the adapter)
// against the harness's daemons, with Debian's python3-tooz and the client
// on PYTHONPATH. TOOZ_TESTS (e.g. "tooz_tests.test_tooz.ToozLockTest")
// runs only those.
func TestToozAdapter(t *testing.T) {
	if out, err := exec.Command(debianPython, "-c", "import tooz").CombinedOutput(); err != nil {
		t.Fatalf("the tooz adapter's tests need %s with python3-tooz (scripts/deps.sh installs it): %v\n%s", debianPython, err, out)
	}
	client, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // stevedore's entry-point cache
	t.Setenv("PYTHONPATH", client)
	e := newEnv(t)
	args := []string{"-m", "unittest", "discover", "-v", "-s", "tooz_tests", "-t", "."}
	if only := os.Getenv("TOOZ_TESTS"); only != "" {
		args = append([]string{"-m", "unittest", "-v"}, strings.Fields(only)...)
	}
	e.run("../contrib/tooz", 3*time.Minute, debianPython, args...)
}

// pythonDocExampleRE is an example of docs/clients.md's Python
// integration sections: a "<!-- python example: NAME -->" marker, the
// program, and the output shown in the text block after it.
var pythonDocExampleRE = regexp.MustCompile("(?s)<!-- python example: ([\\w-]+) -->\n```python\n(.*?)```\n\n```text\n(.*?)```")

// runPythonDocExamples runs each Python example of docs/clients.md as
// written, with Debian's python3, the client and the tooz adapter on
// PYTHONPATH beside the metadata pip would install (so that tooz finds the
// driver by the adapter's entry point), against the harness's plain
// daemon; each must print what the document shows.
func runPythonDocExamples(t *testing.T, e *env) {
	b, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := pythonDocExampleRE.FindAllStringSubmatch(string(b), -1)
	if n := strings.Count(string(b), "<!-- python example:"); n != len(examples) || n < 4 {
		t.Fatalf("docs/clients.md has %d python example markers, %d of them followed by a program and its output; want the 4 of asyncio, tooz, Celery and cron", n, len(examples))
	}
	pkg, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	adapter, err := filepath.Abs("../contrib/tooz")
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	meta := "import sys; sys.path.insert(0, 'build_backend'); import seqd_backend; seqd_backend.prepare_metadata_for_build_wheel(sys.argv[1])"
	for _, dir := range []string{pkg, adapter} {
		cmd := exec.Command(debianPython, "-c", meta, dist)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("writing the metadata of %s: %v\n%s", dir, err, out)
		}
	}
	path := strings.Join([]string{pkg, adapter, dist}, string(os.PathListSeparator))
	for _, ex := range examples {
		name, code, want := ex[1], ex[2], ex[3]
		t.Run("doc_"+name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "example_"+name+".py") // not tooz.py: that would shadow tooz
			if err := os.WriteFile(f, []byte(code), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, debianPython, f)
			cmd.Dir = dir
			cmd.Env = append(withoutSeqdVars(os.Environ()), "SEQD_ADDR="+e.vars["SEQD_ADDR"], "PYTHONPATH="+path,
				"PYTHONDONTWRITEBYTECODE=1", "XDG_CACHE_HOME="+dir, "PYTHONWARNINGS=ignore")
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.Output()
			if err != nil {
				stderr := ""
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("docs/clients.md's %s example: %v\n%s%s", name, err, out, stderr)
			}
			if err := matchDocOutput(string(out), want); err != nil {
				t.Errorf("docs/clients.md's %s example: %v", name, err)
			}
		})
	}
}

// matchDocOutput compares what an example printed with what the document
// shows, line by line; "…" in a shown line stands for anything (a token).
func matchDocOutput(got, want string) error {
	g := strings.Split(strings.TrimRight(got, "\n"), "\n")
	w := strings.Split(strings.TrimRight(want, "\n"), "\n")
	for i, line := range w {
		if i >= len(g) {
			return fmt.Errorf("it printed %d lines, the document shows %d (the next: %q)", len(g), len(w), line)
		}
		parts := strings.Split(line, "…")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".+?") + "$").MatchString(g[i]) {
			return fmt.Errorf("line %d: it printed %q, the document shows %q", i+1, g[i], line)
		}
	}
	if len(g) > len(w) {
		return fmt.Errorf("it printed %d lines more than the document shows: %q", len(g)-len(w), g[len(w):])
	}
	return nil
}

// TestDocOutputMatcherCatchesDrift is matchDocOutput's negative control: a
// changed word, a missing line and an extra line are each refused, and a
// token shown as "…" matches any.
func TestDocOutputMatcherCatchesDrift(t *testing.T) {
	want := "holding docs/x@…\nwaiters left behind: 0\n"
	if err := matchDocOutput("holding docs/x@4711\nwaiters left behind: 0\n", want); err != nil {
		t.Fatalf("the output as shown: %v", err)
	}
	for _, got := range []string{
		"holding docs/x@4711\nwaiters left behind: 1\n",
		"holding docs/x@4711\n",
		"holding docs/x@4711\nwaiters left behind: 0\nextra\n",
		"holding docs/y@4711\nwaiters left behind: 0\n",
	} {
		if matchDocOutput(got, want) == nil {
			t.Errorf("output %q matched %q", got, want)
		}
	}
}
