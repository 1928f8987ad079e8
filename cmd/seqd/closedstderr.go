package main

import (
	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/urfave/cli/v2"
)

// stopOnClosedStderr makes a write to a closed stderr stop the command
// (exit 141) instead of killing it before its cleanup; see
// exit.StopOnClosedStderr.
func stopOnClosedStderr(c *cli.Context) {
	c.Context, c.App.ErrWriter = exit.StopOnClosedStderr(c.Context, c.App.ErrWriter)
}

// stderrClosed is err, or exit 141 if the command stopped because its
// stderr was closed.
func stderrClosed(c *cli.Context, err error) error {
	return exit.StderrClosed(c.Context, c.Command.Name, err)
}
