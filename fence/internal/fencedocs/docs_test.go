package fencedocs_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/dbtest"
)

const doc = "../../../docs/fencing.md"

var marker = regexp.MustCompile("(?m)^<!-- (example|output): ([a-z]+) -->\n```[a-z]*\n")

// blocks returns the document's examples and outputs by name.
func blocks(t *testing.T) (examples, outputs map[string]string) {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	examples, outputs = map[string]string{}, map[string]string{}
	for _, m := range marker.FindAllStringSubmatchIndex(s, -1) {
		kind, name := s[m[2]:m[3]], s[m[4]:m[5]]
		rest := s[m[1]:]
		end := strings.Index(rest, "```")
		if end < 0 {
			t.Fatalf("%s: the %s block %s is not closed", doc, kind, name)
		}
		if kind == "example" {
			examples[name] = rest[:end]
		} else {
			outputs[name] = rest[:end]
		}
	}
	return examples, outputs
}

// TestFencingDocExamples builds each database example of docs/fencing.md
// as a program, runs it against a fresh server of its database, and
// compares its output with the document's.
func TestFencingDocExamples(t *testing.T) {
	examples, outputs := blocks(t)
	var names []string
	for n := range examples {
		names = append(names, n)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "mariadb postgres redis" {
		t.Fatalf("%s has the examples %v, want mariadb, postgres and redis", doc, names)
	}
	// Built inside the module (testdata is left out of ./...), so that the
	// examples import this checkout's packages and go.mod's drivers.
	dir, err := os.MkdirTemp("testdata", "run-")
	if err != nil {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if dir, err = os.MkdirTemp("testdata", "run-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll("testdata") })
	args := []string{"build", "-o", filepath.Join(dir, "bin") + "/"}
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "main.go"), []byte(examples[n]), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "./"+filepath.Join(dir, n))
	}
	goCmd := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		goCmd = "go"
	}
	if out, err := exec.Command(goCmd, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	servers := map[string]testenv.DBOptions{
		"postgres": {Kind: testenv.Postgres},
		"mariadb":  {Kind: testenv.MariaDB},
		"redis":    {Kind: testenv.Redis, AppendOnly: true},
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			d := dbtest.StartT(t, servers[n])
			env := map[string]string{"postgres": "DATABASE_URL=" + d.DSN(), "mariadb": "MYSQL_DSN=" + d.DSN(), "redis": "REDIS_ADDR=" + d.Addr()}[n]
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, "bin", n))
			cmd.Env = append(os.Environ(), env)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the %s example: %v\n%s", n, err, out)
			}
			if want, ok := outputs[n]; !ok {
				t.Errorf("%s shows no output of the %s example", doc, n)
			} else if string(out) != want {
				t.Errorf("the %s example prints\n%s\nthe document shows\n%s", n, out, want)
			}
		})
	}
}
