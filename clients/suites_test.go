package clients_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// testsOnly is unittest's arguments for the suite in dir, or for the tests
// the variable only names (e.g. "tests.test_loss" or
// "tests.test_lock.LockTest.test_held_lock_refuses_within_a_short_wait").
func testsOnly(dir, only string) []string {
	if tests := strings.Fields(os.Getenv(only)); len(tests) > 0 {
		return append([]string{"-m", "unittest", "-v"}, tests...)
	}
	return []string{"-m", "unittest", "discover", "-v", "-s", dir, "-t", "."}
}

// TestPythonClient runs the Python client's unittest suite
// (clients/python/tests) against the harness's daemons. PY_CLIENT_TESTS
// runs only the tests it names.
func TestPythonClient(t *testing.T) {
	py := python(t)
	runSuite(t, 3*time.Minute, "python", newEnv(t).environ(), py, testsOnly("tests", "PY_CLIENT_TESTS")...)
}

// TestPythonIntegrations runs the suite of the Python client's
// integrations (clients/python/integration_tests: seqd.locked under a
// Celery app) against the harness's daemons, then docs/clients.md's Python
// integration examples. PY_INTEGRATION_TESTS (e.g.
// "integration_tests.test_locked") runs only those.
func TestPythonIntegrations(t *testing.T) {
	py := python(t, "tooz", "celery")
	e := newEnv(t)
	runSuite(t, 3*time.Minute, "python", append(e.environ(), "XDG_CACHE_HOME="+t.TempDir()),
		py, testsOnly("integration_tests", "PY_INTEGRATION_TESTS")...)
	if os.Getenv("PY_INTEGRATION_TESTS") == "" {
		runPythonDocExamples(t, e)
	}
}

// TestToozAdapter runs the tooz adapter's suite (contrib/tooz/tooz_tests:
// the driver through tooz's own get_coordinator, found by the adapter's
// entry point; what pip installs with the client and with the adapter)
// against the harness's daemons, with the client on PYTHONPATH.
// TOOZ_TESTS (e.g. "tooz_tests.test_tooz.ToozLockTest") runs only those.
func TestToozAdapter(t *testing.T) {
	py := python(t, "tooz")
	client, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	// XDG_CACHE_HOME: stevedore's entry-point cache.
	runSuite(t, 3*time.Minute, "../contrib/tooz", append(newEnv(t).environ(), "XDG_CACHE_HOME="+t.TempDir(),
		"PYTHONPATH="+client), py, testsOnly("tooz_tests", "TOOZ_TESTS")...)
}

// pythonDocExampleRE is an example of docs/clients.md's Python
// integration sections: a "<!-- python example: NAME -->" marker, the
// program, and the output shown in the text block after it.
var pythonDocExampleRE = regexp.MustCompile("(?s)<!-- python example: ([\\w-]+) -->\n```python\n(.*?)```\n\n```text\n(.*?)```")

// runPythonDocExamples runs each Python example of docs/clients.md as
// written, with the client and the tooz adapter on PYTHONPATH beside the
// metadata pip would install (so that tooz finds the driver by the
// adapter's entry point), against the harness's plain daemon; each must
// print what the document shows.
func runPythonDocExamples(t *testing.T, e *env) {
	b, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := pythonDocExampleRE.FindAllStringSubmatch(string(b), -1)
	if n := strings.Count(string(b), "<!-- python example:"); n != len(examples) || n < 4 {
		t.Fatalf("docs/clients.md has %d python example markers, %d of them followed by a program and its output; want the 4 of asyncio, tooz, Celery and cron", n, len(examples))
	}
	pkg, adapter, dist := abs(t, "python"), abs(t, "../contrib/tooz"), t.TempDir()
	meta := "import sys; sys.path.insert(0, 'build_backend'); import seqd_backend; seqd_backend.prepare_metadata_for_build_wheel(sys.argv[1])"
	for _, dir := range []string{pkg, adapter} {
		if out, err := run(t, time.Minute, dir, nil, debianPython, "-c", meta, dist); err != nil {
			t.Fatalf("writing the metadata of %s: %v\n%s", dir, err, out.all)
		}
	}
	path := strings.Join([]string{pkg, adapter, dist}, string(os.PathListSeparator))
	for _, ex := range examples {
		name, code, want := ex[1], ex[2], ex[3]
		t.Run("doc_"+name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "example_"+name+".py") // not tooz.py: that would shadow tooz
			writeFile(t, f, code)
			out, err := run(t, 2*time.Minute, dir, []string{"SEQD_ADDR=" + e.vars["SEQD_ADDR"], "PYTHONPATH=" + path,
				"XDG_CACHE_HOME=" + dir, "PYTHONWARNINGS=ignore"}, debianPython, f)
			if err != nil {
				t.Fatalf("docs/clients.md's %s example: %v\n%s", name, err, out.all)
			}
			if err := matchDocOutput(out.stdout, want); err != nil {
				t.Errorf("docs/clients.md's %s example: %v", name, err)
			}
		})
	}
}

// TestJavaClient runs the Java client's JUnit suite (clients/java, built
// with javac alone by build.sh) against the harness's daemons.
func TestJavaClient(t *testing.T) {
	runSuite(t, 5*time.Minute, "java", newEnv(t).environ(), "bash", "build.sh", "test")
}

// TestJavaLockExample runs the example of docs/clients.md's section "Java
// `Lock`" as written, in a directory of its own against the harness's plain
// daemon, and compares what it prints with the comment lines the doc shows
// after each command ("…" stands for what differs from run to run).
func TestJavaLockExample(t *testing.T) {
	e := newEnv(t)
	root := abs(t, "..")
	block, want := javaLockExample(t, filepath.Join(root, "docs", "clients.md"), "## Java `Lock`")
	out := runSuite(t, 3*time.Minute, t.TempDir(), []string{"SEQD_ADDR=" + e.vars["SEQD_ADDR"], "SEQD_SRC=" + root}, "/bin/sh", "-c", "set -eu\n"+block)
	if err := matchDocOutput(out.all, strings.Join(want, "\n")); err != nil {
		t.Errorf("the example: %v", err)
	}
}

// javaLockExample is the first sh block after heading in the Markdown file,
// and the output lines it shows: the comment lines right after a command.
func javaLockExample(t *testing.T, file, heading string) (block string, want []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n"+heading+"\n")
	_, rest, ok := strings.Cut(rest, "\n```sh\n")
	if !ok {
		t.Fatalf("%s: no section %q with an sh block", file, heading)
	}
	if block, _, ok = strings.Cut(rest, "\n```\n"); !ok {
		t.Fatalf("%s: the section %q's sh block does not end", file, heading)
	}
	afterCommand := false
	for _, line := range strings.Split(block, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			afterCommand = false
		case strings.HasPrefix(line, "# "):
			if afterCommand {
				want = append(want, strings.TrimPrefix(line, "# "))
			}
		default:
			afterCommand = true
		}
	}
	return block, want
}

// TestJSClient runs the JavaScript client's suite (clients/js/test) with
// `node --test` against the harness's daemons.
func TestJSClient(t *testing.T) {
	node, args := node(t), nodeTests(t, "js", "test")
	runSuite(t, 3*time.Minute, "js", newEnv(t).environ(), node, args...)
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writeFile writes s to path, readable by this user alone (a token file
// must be).
func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
