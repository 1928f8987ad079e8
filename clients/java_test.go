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

// TestJavaClient runs the Java client's JUnit suite (clients/java, built
// with javac alone by build.sh) against the harness's daemons.
func TestJavaClient(t *testing.T) {
	e := newEnv(t)
	e.run("java", 5*time.Minute, "bash", "build.sh", "test")
}

// TestJavaLockExample runs the example of docs/clients.md's section "Java
// `Lock`" as written, in a directory of its own against the harness's plain
// daemon, and compares what it prints with the comment lines the doc shows
// after each command ("…" stands for what differs from run to run).
func TestJavaLockExample(t *testing.T) {
	e := newEnv(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	block, want := javaLockExample(t, filepath.Join(root, "docs", "clients.md"), "## Java `Lock`")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", "set -eu\n"+block)
	cmd.Dir = t.TempDir()
	cmd.Env = append(withoutSeqdVars(os.Environ()), "SEQD_ADDR="+e.vars["SEQD_ADDR"], "SEQD_SRC="+root)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("the example printed:\n%s", out)
	if err != nil {
		t.Fatalf("the example failed: %v", err)
	}
	for _, p := range javaLockExampleProblems(strings.Split(strings.TrimRight(string(out), "\n"), "\n"), want) {
		t.Error(p)
	}
}

// javaLockExampleProblems compares the lines a run printed with the lines
// the doc shows, "…" standing for any text.
func javaLockExampleProblems(got, want []string) []string {
	if len(got) != len(want) {
		return []string{fmt.Sprintf("the example printed %d lines, the doc shows %d: got %q, want %q", len(got), len(want), got, want)}
	}
	var problems []string
	for i, w := range want {
		parts := strings.Split(w, "…")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".+") + "$").MatchString(got[i]) {
			problems = append(problems, fmt.Sprintf("line %d: the example printed %q, the doc shows %q", i+1, got[i], w))
		}
	}
	return problems
}

// TestJavaLockExampleCheckerCatchesADifference is the comparison's negative
// control: a changed line and a missing one are reported.
func TestJavaLockExampleCheckerCatchesADifference(t *testing.T) {
	want := []string{"holding demo/java, fence …", "same fence on re-entry: true"}
	if p := javaLockExampleProblems([]string{"holding demo/java, fence 15", "same fence on re-entry: true"}, want); len(p) != 0 {
		t.Fatalf("the run as the doc shows it: %q", p)
	}
	for _, got := range [][]string{
		{"holding demo/java, fence 15", "same fence on re-entry: false"},
		{"holding demo/java, fence ", "same fence on re-entry: true"},
		{"holding demo/java, fence 15"},
	} {
		if p := javaLockExampleProblems(got, want); len(p) == 0 {
			t.Errorf("%q against the doc's %q: no problem reported", got, want)
		}
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
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", file, heading)
	}
	_, rest, ok = strings.Cut(rest, "\n```sh\n")
	if !ok {
		t.Fatalf("%s: the section %q has no sh block", file, heading)
	}
	block, _, ok = strings.Cut(rest, "\n```\n")
	if !ok {
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
