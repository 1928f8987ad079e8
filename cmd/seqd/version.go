package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
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

// buildInfo is what `seqd version` prints and seqd_build_info reports.
type buildInfo struct {
	version   string
	commit    string // vcs.revision, or "unknown" (go test, a build outside git)
	modified  bool   // built from a work tree with uncommitted changes
	goVersion string
}

func readBuildInfo() buildInfo {
	b := buildInfo{version: version, commit: commit, goVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.commit == "":
				b.commit = s.Value
			case s.Key == "vcs.modified":
				b.modified = s.Value == "true"
			}
		}
	}
	if b.commit == "" {
		b.commit = "unknown"
	}
	return b
}

// String is the version line without the program name:
// "v1.2.3, commit 0123abc…, go1.26.8".
func (b buildInfo) String() string {
	commit := b.commit
	if b.modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("%s, commit %s, %s", b.version, commit, b.goVersion)
}

func versionCommand(info buildInfo) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, the commit and the Go version seqd was built with (as --version does)",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("version takes no arguments, got %q", c.Args().Slice())
			}
			_, err := fmt.Fprintf(c.App.Writer, "%s version %s\n", c.App.Name, info)
			return err
		},
	}
}
