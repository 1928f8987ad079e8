package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// runsACommand are the commands whose words after NAME are a command to
// run (seqd lock NAME CMD, without "--"): their flags stay before NAME.
var runsACommand = map[string]bool{"lock": true, "campaign": true}

// flagsFirst moves the flags given after a command's arguments in front of
// them, since the flag parser stops at the first argument: `seqd acquire
// demo --token-only` reads as `seqd acquire --token-only demo`. A flag's
// value goes with it; "--" ends the flags, and what follows stays an
// argument. seqd lock and seqd campaign are left as they are (their words
// after NAME may be CMD's flags), but for a "--" before any NAME: the flag
// parser would drop it, and CMD's first word would become the lock's name
// (seqd lock -- make deploy would lock "make"). Doubled, one "--" is left
// for lockArgs, which refuses it as a missing NAME.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 3 {
		return args
	}
	cmd := app.Command(args[1])
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	runs := runsACommand[cmd.Name]
	var flags, positional []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" && runs {
			return append(append(append([]string{}, args[:2+i]...), "--"), rest[i:]...)
		}
		if a == "--" {
			positional = append(positional, rest[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			if runs {
				return args
			}
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && takesValue[name] && i+1 < len(rest) {
			i++
			flags = append(flags, rest[i])
		}
	}
	if runs || len(positional) == 0 || len(flags) == 0 {
		return args
	}
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, positional...)
}
