package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// TODO(placeholder): replaced by the issue that builds it.
func acquireCommand() *cli.Command {
	return &cli.Command{Name: "acquire", Action: func(*cli.Context) error { return errors.New("acquire: not built yet") }}
}

// TODO(placeholder): replaced by the issue that builds it.
func renewCommand() *cli.Command {
	return &cli.Command{Name: "renew", Action: func(*cli.Context) error { return errors.New("renew: not built yet") }}
}

// TODO(placeholder): replaced by the issue that builds it.
func releaseCommand() *cli.Command {
	return &cli.Command{Name: "release", Action: func(*cli.Context) error { return errors.New("release: not built yet") }}
}

// TODO(placeholder): replaced by the issue that builds it.
func checkCommand() *cli.Command {
	return &cli.Command{Name: "check", Action: func(*cli.Context) error { return errors.New("check: not built yet") }}
}

// TODO(placeholder): replaced by the issue that builds it.
func statusCommand() *cli.Command {
	return &cli.Command{Name: "status", Action: func(*cli.Context) error { return errors.New("status: not built yet") }}
}
