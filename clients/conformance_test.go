package clients_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// conformanceSecret is the API token every conformance client sends; no
// error, printout or log line of a client may show it.
const conformanceSecret = "conformance-secret-7f3a9c"

// result is one line of a runner's results file.
type result struct {
	ID       string `json:"id"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	Pass     bool   `json:"pass"`
}

// runConformance plays every vector of clients/conformance/vectors.json
// against one client's runner (run in dir), which writes one JSON result
// per vector to the file named by SEQD_CONFORMANCE_RESULTS. The test
// fails for every vector the runner failed or left out.
//
// The runner's environment:
//
//	SEQD_CONFORMANCE_ADDR        the hostile daemon, http://127.0.0.1:PORT
//	SEQD_CONFORMANCE_TLS_ADDR    the same on https, with a certificate no CA the client trusts signed
//	SEQD_CONFORMANCE_VECTORS     the vectors file
//	SEQD_CONFORMANCE_TOKEN_FILE  the API token the client sends
//	SEQD_CONFORMANCE_SECRET      that token, which the runner looks for in what the client prints
//	SEQD_CONFORMANCE_RESULTS     where the runner writes its results
//	SEQD_CONFORMANCE_ONLY        (optional, passed on) the ids to run, comma-separated
func runConformance(t *testing.T, dir string, timeout time.Duration, name string, args ...string) {
	t.Helper()
	vf := loadVectors(t)
	plain, secure := startHostile(t, vf)
	tmp := t.TempDir()
	tokenFile := filepath.Join(tmp, "api-token")
	if err := os.WriteFile(tokenFile, []byte(conformanceSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resultsFile := filepath.Join(tmp, "results.jsonl")
	vectorsFile, err := filepath.Abs("conformance/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(withoutSeqdVars(os.Environ()),
		"SEQD_CONFORMANCE_ADDR="+plain,
		"SEQD_CONFORMANCE_TLS_ADDR="+secure,
		"SEQD_CONFORMANCE_VECTORS="+vectorsFile,
		"SEQD_CONFORMANCE_TOKEN_FILE="+tokenFile,
		"SEQD_CONFORMANCE_SECRET="+conformanceSecret,
		"SEQD_CONFORMANCE_RESULTS="+resultsFile,
		"SEQD_CONFORMANCE_ONLY="+os.Getenv("SEQD_CONFORMANCE_ONLY"),
		"PYTHONDONTWRITEBYTECODE=1",
	)
	cmd.WaitDelay = 5 * time.Second
	out, runErr := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %v", name, timeout)
	}
	got := map[string]result{}
	if f, err := os.Open(resultsFile); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("results line %q: %v", sc.Text(), err)
				continue
			}
			got[r.ID] = r
		}
		f.Close()
	}
	only := map[string]bool{}
	for _, id := range strings.Split(os.Getenv("SEQD_CONFORMANCE_ONLY"), ",") {
		if id != "" {
			only[id] = true
		}
	}
	failed := 0
	ids := map[string]bool{}
	for _, v := range vf.Vectors {
		ids[v.ID] = true
		if len(only) > 0 && !only[v.ID] {
			continue
		}
		r, ok := got[v.ID]
		switch {
		case !ok:
			t.Errorf("vector %s: the runner reported no result", v.ID)
			failed++
		case !r.Pass:
			t.Errorf("vector %s (%s): got %s, want %s", v.ID, v.About, r.Observed, r.Expected)
			failed++
		}
	}
	// A runner may play vectors a second time, through another API of its
	// client (Java's SeqdLock), as rows of ids of its own.
	for id, r := range got {
		if !ids[id] && !r.Pass {
			t.Errorf("%s: got %s, want %s", id, r.Observed, r.Expected)
			failed++
		}
	}
	if runErr != nil && failed == 0 {
		t.Errorf("%s failed (%v) although every vector passed", name, runErr)
	}
}

// TestPythonConformance runs the vectors through the Python client
// (clients/python/tests/conformance.py).
//
// The conformance tests run in parallel with one another: they mostly wait
// (on stalls, deadlines), each against a hostile daemon of its own.
func TestPythonConformance(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not installed: the Python client's conformance runner needs it")
	}
	runConformance(t, "python", 3*time.Minute, "python3", "-m", "tests.conformance")
}

// TestPythonAsyncConformance runs the vectors through the Python asyncio
// client, seqd.aio (clients/python/tests/conformance_aio.py).
func TestPythonAsyncConformance(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not installed: the Python client's conformance runner needs it")
	}
	runConformance(t, "python", 3*time.Minute, "python3", "-m", "tests.conformance_aio")
}

// TestJSConformance runs the vectors through the JavaScript client
// (clients/js/test/conformance.js).
func TestJSConformance(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client's conformance runner needs Node.js 20 or later")
	}
	runConformance(t, "js", 3*time.Minute, node, "test/conformance.js")
}

// TestJavaConformance runs the vectors through the Java client
// (clients/java/src/test/java/dev/seqd/client/Conformance.java).
func TestJavaConformance(t *testing.T) {
	t.Parallel()
	runConformance(t, "java", 5*time.Minute, "bash", "build.sh", "conformance")
}
