package main

import (
	"fmt"
	"io"
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
