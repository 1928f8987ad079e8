package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every flag of every command reads the environment variable named after
// it, --flag-name from SEQD_FLAG_NAME, and only that one; and a flag name
// has one type in every command that has it.
func TestFlagEnvVarsAreDerivedFromNames(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	kinds := map[string]string{} // flag name → type, and where it was first seen
	seen := 0
	for _, cmd := range app.Commands {
		flags := append(slices.Clone(app.Flags), cmd.Flags...)
		for _, f := range flags {
			names := f.Names()
			name := names[0]
			if len(names) > 1 {
				t.Errorf("seqd %s --%s has aliases %q: one flag, one name", cmd.Name, name, names[1:])
			}
			ev, ok := f.(interface{ GetEnvVars() []string })
			if !ok {
				t.Errorf("seqd %s --%s: %T reports no environment variables", cmd.Name, name, f)
				continue
			}
			want := []string{"SEQD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))}
			if got := ev.GetEnvVars(); !slices.Equal(got, want) {
				t.Errorf("seqd %s --%s: environment variables %q, want %q", cmd.Name, name, got, want)
			}
			kind := fmt.Sprintf("%T", f)
			if k, ok := kinds[name]; ok && k != kind {
				t.Errorf("seqd %s --%s is a %s, elsewhere a %s", cmd.Name, name, kind, k)
			}
			kinds[name] = kind
			seen++
		}
	}
	if seen < 20 {
		t.Fatalf("walked %d flags: the app's commands were not found", seen)
	}
}

// Durations are duration flags everywhere, so that they parse one way.
func TestDurationFlagsAreDurationFlags(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	for _, cmd := range app.Commands {
		for _, f := range cmd.Flags {
			name := f.Names()[0]
			isDuration := strings.HasSuffix(name, "-timeout") || strings.HasSuffix(name, "-grace") ||
				name == "wait" || name == "ttl"
			if _, ok := f.(*cli.DurationFlag); isDuration && !ok {
				t.Errorf("seqd %s --%s is a %T, want a *cli.DurationFlag", cmd.Name, name, f)
			}
		}
	}
}

func TestFlagErrorMessages(t *testing.T) {
	kinds := map[string]string{"wait": "duration", "shell": "bool", "token": "number"}
	for _, tc := range []struct{ in, want string }{
		{`invalid value "soon" for flag -wait: parse error`, `--wait "soon" is not valid: want a duration: write it like 30s, 1m30s or 500ms`},
		{`invalid value "x" for flag -token: parse error`, `--token "x" is not valid: want a whole number`},
		{`invalid boolean value "maybe" for -shell: parse error`, `--shell "maybe" is not valid: want true or false`},
		{`could not parse "10" as duration value from environment variable "SEQD_KILL_GRACE" for flag kill-grace: time: missing unit in duration "10"`,
			`SEQD_KILL_GRACE="10" (for --kill-grace) is not valid: want a duration: write it like 30s, 1m30s or 500ms`},
		{`flag provided but not defined: -timeout`, `flag --timeout is not defined for this command; see --help`},
		{`flag needs an argument: -wait`, `--wait needs a value`},
		{`something else`, `something else`},
	} {
		if got := flagErrorMessage(tc.in, kinds); got != tc.want {
			t.Errorf("flagErrorMessage(%q):\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// seqd --version and seqd version print one line: the version, the commit
// and the Go version.
func TestVersion(t *testing.T) {
	ctx := context.Background()
	info := readBuildInfo()
	want := "seqd version " + info.String() + "\n"
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		code, out, errs := runCLI(ctx, args...)
		if code != 0 || out != want {
			t.Errorf("seqd %s: exit %d, stdout %q (stderr %q); want 0 and %q", args[0], code, out, errs, want)
		}
	}
	if !strings.Contains(want, ", commit ") || !strings.HasSuffix(want, ", "+runtime.Version()+"\n") {
		t.Errorf("version line %q: want the commit and %s", want, runtime.Version())
	}
	if code, _, _ := runCLI(ctx, "version", "extra"); code != ExitUsage {
		t.Errorf("seqd version extra: exit %d, want 64", code)
	}
}

// The linker sets version and commit; the binary reports what it was given.
func TestVersionFromLinker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "seqd")
	out, err := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=v9.8.7 -X main.commit=feedc0de", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "version").Output()
	if want := "seqd version v9.8.7, commit feedc0de, " + runtime.Version() + "\n"; err != nil || string(out) != want {
		t.Errorf("seqd version: %q, %v; want %q", out, err, want)
	}
}

func TestHelpCommand(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "lock"}, {"--help"}} {
		code, out, errOut := runCLI(context.Background(), args...)
		if code != 0 || !strings.Contains(out, "lock") {
			t.Errorf("seqd %s: exit %d, stdout %q, stderr %q; want 0 and the help text", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// A command that takes no arguments refuses one (exit 64) before it does
// anything, and says so in the same words whichever command it is.
func TestNoArgumentsRefused(t *testing.T) {
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	var without []string
	for _, cmd := range app.Commands {
		if cmd.Before != nil {
			without = append(without, cmd.Name)
		}
	}
	want := []string{"serve", "dev", "store", "fence-check", "keygen", "init", "floor", "bench", "version"}
	if !slices.Equal(slices.Sorted(slices.Values(without)), slices.Sorted(slices.Values(want))) {
		t.Errorf("commands checked for no arguments: %q, want %q", without, want)
	}
	dir := t.TempDir()
	for _, cmd := range app.Commands {
		if cmd.Before == nil {
			continue
		}
		name, args := cmd.Name, []string{cmd.Name}
		if slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return f.Names()[0] == "dir" }) {
			// keygen, init and store would write into --dir, were they run.
			args = append(args, "--dir", filepath.Join(dir, name))
		}
		code, out, errs := runCLI(context.Background(), append(args, "extra", "more")...)
		if msg := fmt.Sprintf("%s takes no arguments, got [\"extra\" \"more\"]", name); code != ExitUsage || out != "" || !strings.Contains(errs, msg) {
			t.Errorf("seqd %s extra more: exit %d, stdout %q, stderr %q; want 64 and %q", name, code, out, errs, msg)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("refused commands wrote %v (%v), want nothing", entries, err)
	}
	if code, _, errs := runCLI(context.Background(), "version"); code != 0 {
		t.Errorf("seqd version: exit %d (%s), want 0: no arguments is no error", code, errs)
	}
}

// maxMainLines bounds package main: it reads flags and prints, and what
// else a command does lives in a package under internal/ (or a library
// package), where a reader looks for it.
const maxMainLines = 3000

func TestMainStaysThin(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines == 0 || lines >= maxMainLines {
		t.Errorf("package main has %d lines outside its tests, want fewer than %d: move what is not flag parsing or printing into the package it belongs to", lines, maxMainLines)
	}
	t.Logf("package main: %d lines outside its tests", lines)
}
