package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/buildinfo"
)

// version and commit are set at link time:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD)" ./cmd/seqd
//
// Left alone, the build info fills them in where it can: the module version
// (go install …@v1.2.3) and vcs.revision (a go build inside a git checkout;
// not a git worktree, nor with -buildvcs=false).
var (
	version = "dev"
	commit  = ""
)

// readBuildInfo is what this binary was built from.
func readBuildInfo() buildinfo.Info { return buildinfo.Read(version, commit) }

func versionCommand(info buildinfo.Info) *cli.Command {
	return &cli.Command{
		Name:   "version",
		Usage:  "print the version, the commit and the Go version seqd was built with (as --version does)",
		Before: noArguments,
		Action: func(c *cli.Context) error {
			_, err := fmt.Fprintf(c.App.Writer, "%s version %s\n", c.App.Name, info)
			return err
		},
	}
}
