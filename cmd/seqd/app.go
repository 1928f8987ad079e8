package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// newApp builds the CLI. It takes its writers so that tests run commands in
// process and read what they print.
func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	info := readBuildInfo()
	app := &cli.App{
		Name: "seqd",
		// --version prints "seqd version " and this, as `seqd version` does.
		Version:   info.String(),
		Usage:     "a ZooKeeper-backed sequencer: locks with fencing tokens",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are printed once, by main, with their exit code.
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			serveCommand(),
			devCommand(),
			lockCommand(),
			campaignCommand(),
			acquireCommand(),
			renewCommand(),
			releaseCommand(),
			checkCommand(),
			statusCommand(),
			breakCommand(),
			leaderCommand(),
			storeCommand(),
			fenceCheckCommand(),
			keygenCommand(),
			initCommand(),
			floorCommand(),
			benchCommand(),
			versionCommand(info),
		},
	}
	// A flag name means one thing in every command, so one table of kinds
	// serves every command's messages.
	kinds := map[string]string{}
	for _, c := range app.Commands {
		for _, f := range c.Flags {
			kinds[f.Names()[0]] = flagKind(f)
		}
	}
	onUsageError := func(_ *cli.Context, err error, _ bool) error {
		return usageErrorf("%s", flagErrorMessage(err.Error(), kinds))
	}
	app.OnUsageError = onUsageError
	for _, c := range app.Commands {
		if c.OnUsageError == nil {
			c.OnUsageError = onUsageError
		}
	}
	return app
}

// noArguments is the Before of the commands that take no arguments: one
// check, and one message, for all of them.
func noArguments(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("%s takes no arguments, got %q", c.Command.Name, c.Args().Slice())
	}
	return nil
}

// flagKind names what a flag's value is, for messages.
func flagKind(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "duration"
	case *cli.BoolFlag:
		return "bool"
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		return "number"
	}
	return "value"
}

// valueHints say how to write a value of each kind.
var valueHints = map[string]string{
	"duration": "a duration: write it like 30s, 1m30s or 500ms",
	"bool":     "true or false",
	"number":   "a whole number",
}

var (
	// Go's flag package: invalid value "soon" for flag -wait: parse error
	// or: invalid boolean value "maybe" for -token-only: parse error
	flagValueErr = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([\w-]+): (.*)$`)
	// urfave/cli, for a value from the environment:
	// could not parse "10" as duration value from env var "SEQD_KILL_GRACE" for flag kill-grace: ...
	envValueErr = regexp.MustCompile(`^could not parse "(.*)" as (\w+) value from (?:env var|environment variable) "(\w+)" for flag ([\w-]+): `)
	// flag provided but not defined: -timeout; flag needs an argument: -wait
	flagNameErr = regexp.MustCompile(`^(flag provided but not defined|flag needs an argument): -{1,2}([\w-]+)$`)
)

// flagErrorMessage rephrases the flag parsers' errors as sentences that
// name flags as people type them (--wait) and say how to write the value.
func flagErrorMessage(msg string, kinds map[string]string) string {
	if m := flagValueErr.FindStringSubmatch(msg); m != nil {
		if hint, ok := valueHints[kinds[m[2]]]; ok {
			return fmt.Sprintf("--%s %q is not valid: want %s", m[2], m[1], hint)
		}
		return fmt.Sprintf("--%s %q is not valid: %s", m[2], m[1], m[3])
	}
	if m := envValueErr.FindStringSubmatch(msg); m != nil {
		kind := m[2]
		if strings.Contains(kind, "int") {
			kind = "number"
		}
		hint, ok := valueHints[kind]
		if !ok {
			hint = "a " + kind
		}
		return fmt.Sprintf("%s=%q (for --%s) is not valid: want %s", m[3], m[1], m[4], hint)
	}
	if m := flagNameErr.FindStringSubmatch(msg); m != nil {
		if m[1] == "flag needs an argument" {
			return fmt.Sprintf("--%s needs a value", m[2])
		}
		return fmt.Sprintf("flag --%s is not defined for this command; see --help", m[2])
	}
	return msg
}
