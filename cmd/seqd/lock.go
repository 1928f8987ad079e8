package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// TODO(placeholder): replaced by the issue that builds it.
func lockCommand() *cli.Command {
	return &cli.Command{Name: "lock", Action: func(*cli.Context) error { return errors.New("lock: not built yet") }}
}
