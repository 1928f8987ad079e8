package main

import (
	"io"

	"github.com/urfave/cli/v2"
)

// newApp builds the CLI. It takes its writers so that tests run commands in
// process and read what they print.
func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "seqd",
		Usage:     "a ZooKeeper-backed sequencer: locks with fencing tokens",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// Errors are printed once, by main, with their exit code.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError,
		Commands: []*cli.Command{
			serveCommand(),
			devCommand(),
			lockCommand(),
			acquireCommand(),
			renewCommand(),
			releaseCommand(),
			checkCommand(),
			statusCommand(),
			leaderCommand(),
			storeCommand(),
		},
		HideHelpCommand: true,
	}
	for _, c := range app.Commands {
		if c.OnUsageError == nil {
			c.OnUsageError = onUsageError
		}
	}
	return app
}

func onUsageError(_ *cli.Context, err error, _ bool) error {
	return usageErrorf("%v", err)
}
