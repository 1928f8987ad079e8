package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// TODO(placeholder): replaced by the issue that builds it.
func serveCommand() *cli.Command {
	return &cli.Command{Name: "serve", Action: func(*cli.Context) error { return errors.New("serve: not built yet") }}
}

// TODO(placeholder): replaced by the issue that builds it.
func devCommand() *cli.Command {
	return &cli.Command{Name: "dev", Action: func(*cli.Context) error { return errors.New("dev: not built yet") }}
}
