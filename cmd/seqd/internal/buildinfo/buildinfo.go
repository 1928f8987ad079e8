// Package buildinfo says what a seqd binary was built from: the version
// and commit the linker set, or else those the Go toolchain recorded in the
// binary, and the Go version. It is what `seqd version` prints and what
// seqd_build_info reports; it reads nothing but the running binary.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info is a binary's version, commit and Go version.
type Info struct {
	Version   string
	Commit    string // vcs.revision, or "unknown" (go test, a build outside git)
	Modified  bool   // built from a work tree with uncommitted changes
	GoVersion string
}

// Read is the running binary's Info. version and commit are what the
// linker set (-X), "dev" and "" when it set nothing: then the module
// version (go install …@v1.2.3) and vcs.revision (a go build inside a git
// checkout; not a git worktree, nor with -buildvcs=false) fill them in
// where they can.
func Read(version, commit string) Info {
	bi, _ := debug.ReadBuildInfo()
	return from(version, commit, bi)
}

// from is Read with the toolchain's record given (nil: none).
func from(version, commit string, bi *debug.BuildInfo) Info {
	b := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi != nil {
		if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// String is the version line without the program name:
// "v1.2.3, commit 0123abc…, go1.26.8".
func (b Info) String() string {
	commit := b.Commit
	if b.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("%s, commit %s, %s", b.Version, commit, b.GoVersion)
}
