// Command seqd is the seqd binary: the sequencer daemon (serve, dev), a lock
// runner (lock NAME -- CMD), HTTP API client commands and a small fenced
// key-value store. main is thin: it builds the signal context, calls run and
// is the only place that picks an exit code.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
	"github.com/urfave/cli/v2"
)

func main() {
	ctx, stop := exit.SignalContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// run builds the app and runs it; it never calls os.Exit, so deferred cleanup
// (releasing a lock, closing a session) always runs.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	app := newApp(stdin, stdout, stderr)
	var unknown string
	app.CommandNotFound = func(_ *cli.Context, name string) { unknown = name }
	err := app.RunContext(ctx, flagsFirst(app, args))
	if unknown != "" {
		return usageErrorf("unknown command %q; see seqd --help", unknown)
	}
	return err
}

// exitCode maps an error returned by run to the process exit status and prints
// it. Only main calls it.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := codeOf(err)
	if !silent(err) {
		fmt.Fprintf(stderr, "seqd: %s\n", termtext.Safe(userMessage(err)))
	}
	return code
}
