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
	"os/signal"
	"syscall"

	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
	"github.com/urfave/cli/v2"
)

func main() {
	ctx, stop := signalContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// signalContext is cancelled by the first of sigs, with a *signalError
// naming it as the cause, so that an interrupted command can exit 128+N.
// Later signals are caught too (the process does not die of them) until
// stop is called.
func signalContext(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case sig := <-ch:
			if s, ok := sig.(syscall.Signal); ok {
				cancel(&signalError{Sig: s})
			} else {
				cancel(nil)
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
		signal.Stop(ch)
	}
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
