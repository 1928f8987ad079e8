package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// TODO(placeholder): replaced by the issue that builds it.
func storeCommand() *cli.Command {
	return &cli.Command{Name: "store", Action: func(*cli.Context) error { return errors.New("store: not built yet") }}
}
