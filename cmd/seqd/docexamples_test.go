package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv/zktest"
)

// The shell examples of README.md and docs/*.md. Every ```sh block carries,
// on the line before its fence, one of:
//
//	<!-- runs: dev -->             TestDocExamples runs it against a fresh seqd dev
//	<!-- runs: docs/F.sh -->       the block is the script's body; a test runs the script
//	<!-- runs: TestName -->        that test extracts the block from the Markdown and runs it
//	<!-- not runnable: REASON -->  and why not
//
// In a block that runs, the comment lines right after a command are what it
// prints (the quickstart's rule): compared as they are, with "…" standing for
// what differs from run to run (lease ids, times, signatures). Numbers are
// compared too: a fresh `make run` prints the same tokens every time.

// docBlock is one shell example.
type docBlock struct {
	file   string // relative to the repository: README.md, docs/cli.md
	line   int    // the line of the block's first line
	marker string // the marker's text: "runs: dev", "not runnable: …"; "" if none
	lines  []string
}

func (b docBlock) where(i int) string { return fmt.Sprintf("%s:%d", b.file, b.line+i) }

var (
	shellFence = regexp.MustCompile("^```(sh|bash|shell|console)\\s*$")
	docMarker  = regexp.MustCompile(`^<!--\s*((?:runs|not runnable):.*?)\s*-->\s*$`)
)

// docFiles are the Markdown files whose examples must run.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		out = append(out, filepath.Join("docs", filepath.Base(f)))
	}
	return out
}

// docBlocks reads the shell blocks of the file (relative to root).
func docBlocks(t *testing.T, root, file string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		start := i
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
		}
		if !shellFence.MatchString(lines[start]) {
			continue
		}
		blk := docBlock{file: file, line: start + 2, lines: lines[start+1 : min(i, len(lines))]}
		if start > 0 {
			if m := docMarker.FindStringSubmatch(lines[start-1]); m != nil {
				blk.marker = m[1]
			}
		}
		out = append(out, blk)
	}
	return out
}

// docLine is an expected output line and where the doc shows it.
type docLine struct {
	where string
	text  string
}

// docExpected reads the outputs a block shows: the comment lines that
// directly follow a command (a blank line or another command ends them).
func docExpected(lines []string, where func(int) string) []docLine {
	var want []docLine
	afterCommand := false
	for i, line := range lines {
		switch {
		case strings.TrimSpace(line) == "":
			afterCommand = false
		case strings.HasPrefix(line, "#"):
			if afterCommand && !strings.HasPrefix(line, "#!") {
				want = append(want, docLine{where(i), strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ")})
			}
		default:
			afterCommand = true
		}
	}
	return want
}

// tokenContext says that the number right after it is a token (or a term):
// the numbers whose relations the examples show.
var tokenContext = regexp.MustCompile(`(?:@|token"?:? ?|term"?:? ?|Token: )$`)

// docNumber is a number a doc shows, and what the run printed in its place.
type docNumber struct {
	where     string
	doc, got  uint64
	isToken   bool
	docString string
}

// compileDocLine is the pattern of a line as the doc shows it: "…" stands
// for anything, each number is captured.
func compileDocLine(text string) (*regexp.Regexp, []bool) {
	num := regexp.MustCompile(`[0-9]+`)
	var tokens []bool
	var parts []string
	for _, part := range strings.Split(text, "…") {
		var re strings.Builder
		last := 0
		for _, loc := range num.FindAllStringIndex(part, -1) {
			re.WriteString(regexp.QuoteMeta(part[last:loc[0]]))
			re.WriteString(`([0-9]+)`)
			tokens = append(tokens, tokenContext.MatchString(part[:loc[0]]))
			last = loc[1]
		}
		re.WriteString(regexp.QuoteMeta(part[last:]))
		parts = append(parts, re.String())
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*?") + "$"), tokens
}

// checkDocOutput compares what a run printed with what the doc shows and
// returns the problems, each naming the doc's file and line: a line that
// differs; a token the doc shows twice that the run printed as two
// numbers, or two tokens in the wrong order (the relations: the token
// printed later is the one captured, a new holder's is higher); and a
// number that drifted from the doc's (the doc shows those of a fresh run).
func checkDocOutput(got []string, want []docLine) []string {
	var problems []string
	var nums []docNumber
	aligned := true
	for i, w := range want {
		if i >= len(got) {
			problems = append(problems, fmt.Sprintf("%s: the run printed nothing more, the doc shows %q", w.where, w.text))
			aligned = false
			break
		}
		g := strings.TrimRight(got[i], "\r")
		re, tokens := compileDocLine(w.text)
		m := re.FindStringSubmatch(g)
		if m == nil {
			problems = append(problems, fmt.Sprintf("%s: the run printed %q, the doc shows %q", w.where, g, w.text))
			aligned = false
			break // the lines after it no longer line up
		}
		docNums := regexp.MustCompile(`[0-9]+`).FindAllString(strings.ReplaceAll(w.text, "…", " "), -1)
		for j, s := range m[1:] {
			d, _ := strconv.ParseUint(docNums[j], 10, 64)
			n, _ := strconv.ParseUint(s, 10, 64)
			nums = append(nums, docNumber{where: w.where, doc: d, got: n, isToken: tokens[j], docString: docNums[j]})
		}
	}
	if aligned && len(got) > len(want) {
		last := "the start"
		if len(want) > 0 {
			last = want[len(want)-1].where
		}
		problems = append(problems, fmt.Sprintf("after %s the run printed %d more lines the doc does not show: %q", last, len(got)-len(want), got[len(want):]))
	}
	// Drift first: a doc edited by hand shows here, naming its line.
	seen := map[string]bool{}
	for _, n := range nums {
		if n.doc != n.got && !seen[n.where+n.docString] {
			seen[n.where+n.docString] = true
			what := "number"
			if n.isToken {
				what = "token"
			}
			problems = append(problems, fmt.Sprintf("%s: the doc shows %s %s, a fresh run prints %d", n.where, what, n.docString, n.got))
		}
	}
	// Then the relations, whatever the numbers: one problem per pair of
	// lines.
	var toks []docNumber
	for _, n := range nums {
		if n.isToken {
			toks = append(toks, n)
		}
	}
	for i, a := range toks {
		for _, b := range toks[i+1:] {
			var p string
			switch {
			case a.doc == b.doc && a.got != b.got:
				p = fmt.Sprintf("%s: token %d where %s printed %d: the doc shows the same token (%d) at both", b.where, b.got, a.where, a.got, a.doc)
			case a.doc < b.doc && a.got >= b.got, a.doc > b.doc && a.got <= b.got:
				p = fmt.Sprintf("%s: token %d after %d at %s: the doc shows %d after %d", b.where, b.got, a.got, a.where, b.doc, a.doc)
			}
			if p != "" && !seen[a.where+" "+b.where] {
				seen[a.where+" "+b.where] = true
				problems = append(problems, p)
			}
		}
	}
	return problems
}

// testNames are the names of the repository's test functions.
func testNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			b, _ := os.ReadFile(path)
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
		}
		return nil
	})
	return names
}

// scriptBody is what a doc shows of a script: its lines after the line
// that exports its settings (or after its comment header).
func scriptBody(script string) string {
	if _, body, ok := strings.Cut(script, "export SEQD_ADDR SEQD_ZK\n"); ok {
		return body
	}
	return script
}

// TestDocExamplesAreRunOrMarked: every shell block of README.md and
// docs/*.md says how it is run, or why it cannot be; a block run by a test
// names a test that exists; a block that is a script's body is the script.
func TestDocExamplesAreRunOrMarked(t *testing.T) {
	root := repoRoot(t)
	tests := testNames(t, root)
	counts := map[string]int{}
	for _, file := range docFiles(t, root) {
		for _, b := range docBlocks(t, root, file) {
			kind, arg, _ := strings.Cut(b.marker, ":")
			arg = strings.TrimSpace(arg)
			switch {
			case b.marker == "":
				t.Errorf("%s: a shell example with no marker: put <!-- runs: dev --> (or runs: TestName, runs: docs/F.sh) or <!-- not runnable: why --> on the line before its fence", b.where(-1))
			case kind == "not runnable" && arg == "":
				t.Errorf("%s: not runnable, but the marker gives no reason", b.where(-1))
			case kind == "not runnable":
				counts["not runnable"]++
			case arg == "dev":
				counts["runs: dev"]++
			case strings.HasSuffix(arg, ".sh"):
				script, err := os.ReadFile(filepath.Join(root, arg))
				if err != nil {
					t.Errorf("%s: runs as %s: %v", b.where(-1), arg, err)
				} else if strings.TrimSpace(strings.Join(b.lines, "\n")) != strings.TrimSpace(scriptBody(string(script))) {
					t.Errorf("%s: the block differs from %s's lines", b.where(-1), arg)
				}
				counts["runs: script"]++
			case tests[arg]:
				counts["runs: "+arg]++
			default:
				t.Errorf("%s: runs by %q, which is no test of this repository", b.where(-1), arg)
			}
		}
	}
	t.Logf("shell examples: %v", counts)
}

// TestDocOutputCheckerCatchesDrift is the checker's negative control: one
// token changed in a doc's output, two tokens that should be equal, and a
// holder's token lower than the one before are each reported, naming the
// line.
func TestDocOutputCheckerCatchesDrift(t *testing.T) {
	want := []docLine{
		{"x.md:3", `alice holds demo with token 12`},
		{"x.md:5", `{"name":"demo","token":12,"sequencer":"demo@12","lease_id":"…"}`},
		{"x.md:8", `bob holds demo with token 16`},
		{"x.md:9", `409`},
	}
	good := []string{"alice holds demo with token 12", `{"name":"demo","token":12,"sequencer":"demo@12","lease_id":"abc"}`, "bob holds demo with token 16", "409"}
	if p := checkDocOutput(good, want); len(p) != 0 {
		t.Fatalf("the run as the doc shows it: %q", p)
	}
	for _, tc := range []struct {
		name string
		got  []string
		want string
	}{
		{"drift", []string{"alice holds demo with token 13", `{"name":"demo","token":13,"sequencer":"demo@13","lease_id":"x"}`, "bob holds demo with token 17", "409"},
			"x.md:3: the doc shows token 12, a fresh run prints 13"},
		{"a captured token printed as another", []string{"alice holds demo with token 12", `{"name":"demo","token":12,"sequencer":"demo@14","lease_id":"x"}`, "bob holds demo with token 16", "409"},
			"x.md:5: token 14 where x.md:3 printed 12"},
		{"a new holder's token not higher", []string{"alice holds demo with token 12", `{"name":"demo","token":12,"sequencer":"demo@12","lease_id":"x"}`, "bob holds demo with token 11", "409"},
			"x.md:8: token 11 after 12 at x.md:3"},
		{"another line", []string{"alice holds demo with token 12", `{"name":"demo","token":12,"sequencer":"demo#12","lease_id":"x"}`},
			"x.md:5: the run printed"},
		{"a line missing", good[:3], "x.md:9: the run printed nothing more"},
		{"a line more", append(slices.Clone(good), "extra"), `after x.md:9 the run printed 1 more lines`},
	} {
		p := checkDocOutput(tc.got, want)
		if !slices.ContainsFunc(p, func(s string) bool { return strings.HasPrefix(s, tc.want) }) {
			t.Errorf("%s: problems %q, want one starting %q", tc.name, p, tc.want)
		}
	}
	// A changed token in a real doc: the quickstart's bob line, with the
	// run as a fresh make run prints it.
	root := repoRoot(t)
	script, err := os.ReadFile(filepath.Join(root, "docs", "quickstart.sh"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(script), "\n")
	where := func(i int) string { return fmt.Sprintf("docs/quickstart.sh:%d", i+1) }
	want = docExpected(lines, where)
	var run []string
	for _, w := range want {
		run = append(run, strings.ReplaceAll(w.text, "…", "x"))
	}
	i := slices.IndexFunc(want, func(w docLine) bool { return strings.HasPrefix(w.text, "bob holds demo with token ") })
	if i < 0 {
		t.Fatal("the quickstart has no bob line")
	}
	changed := slices.Clone(lines)
	n := slices.IndexFunc(changed, func(l string) bool { return strings.HasPrefix(l, "# bob holds demo with token ") })
	changed[n] = "# bob holds demo with token 99"
	p := checkDocOutput(run, docExpected(changed, where))
	wantProblem := fmt.Sprintf("docs/quickstart.sh:%d: the doc shows token 99", n+1)
	if !slices.ContainsFunc(p, func(s string) bool { return strings.HasPrefix(s, wantProblem) }) {
		t.Errorf("one token changed in the quickstart: problems %q, want %q", p, wantProblem)
	}
}

// runDocScript runs script with sh in a new directory, seqd first on PATH and
// env the only SEQD_* settings; it returns what the terminal shows.
func runDocScript(t *testing.T, env []string, script string) ([]string, error) {
	t.Helper()
	bin := lockTestBinary(t)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = lockEnv(append(env, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))...)
	var out zktest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute): // a headless browser on a loaded machine is slow to start
		cmd.Process.Kill()
		err = fmt.Errorf("still running after five minutes")
	}
	s := strings.TrimRight(out.String(), "\n")
	if s == "" {
		return nil, err
	}
	return strings.Split(s, "\n"), err
}

// TestDocExamples runs, for each doc, its blocks marked <!-- runs: dev -->
// in order, as one shell session, against a fresh seqd dev (what make run
// starts), and checks every line they print against the doc.
func TestDocExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper and the daemon for each doc")
	}
	for _, tool := range []string{"curl", "od", "openssl", "chromium", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (scripts/deps.sh installs it)", tool)
		}
	}
	root := repoRoot(t)
	bin := lockTestBinary(t)
	for _, file := range docFiles(t, root) {
		var blocks []docBlock
		for _, b := range docBlocks(t, root, file) {
			if b.marker == "runs: dev" {
				blocks = append(blocks, b)
			}
		}
		if len(blocks) == 0 {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			d := startDev(t, t.TempDir(), lockEnv(), bin, "dev", "--zk-port", "0", "--listen", "127.0.0.1:0")
			script := "set -eu\n"
			var want []docLine
			for _, b := range blocks {
				script += strings.Join(b.lines, "\n") + "\n"
				want = append(want, docExpected(b.lines, b.where)...)
			}
			// SEQD_SRC is the checkout docs/clients.md builds against
			// (the module is not published); GOBIN keeps its go install
			// inside the test.
			env := []string{"SEQD_ADDR=" + d.addr, "SEQD_ZK=" + d.zk, "SEQD_SRC=" + root, "GOBIN=" + t.TempDir(), "GOWORK=", "GOFLAGS="}
			got, err := runDocScript(t, env, script)
			if err != nil {
				t.Errorf("%s's examples: %v; they printed:\n%s", file, err, strings.Join(got, "\n"))
			}
			problems := checkDocOutput(got, want)
			for _, p := range problems {
				t.Error(p)
			}
			if len(problems) > 0 {
				t.Logf("%s's examples printed:\n%s", file, strings.Join(got, "\n"))
			}
		})
	}
}
