package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"
)

// stopOnClosedStderr is for the commands that make temporary directories
// (seqd dev, seqd bench --dev): a write to a closed stderr (`seqd bench
// --dev 2>&1 | head -1`) would kill the process with SIGPIPE before its
// deferred cleanup ran, and leave the throwaway ZooKeeper's directory
// behind. With SIGPIPE ignored such a write fails with EPIPE instead, and
// the first one cancels the command's context as a signal would (exit
// 141, 128+SIGPIPE): the command stops and removes what it made. Only for
// the process's own stderr; the writers of a test are left as they are.
func stopOnClosedStderr(c *cli.Context) {
	if c.App.ErrWriter != os.Stderr {
		return
	}
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancelCause(c.Context)
	c.Context = ctx
	c.App.ErrWriter = &pipeWatch{w: os.Stderr, cancel: cancel}
}

// pipeWatch cancels at the first write that finds its reader gone.
type pipeWatch struct {
	w      io.Writer
	cancel context.CancelCauseFunc
	once   sync.Once
}

func (p *pipeWatch) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.once.Do(func() { p.cancel(&signalError{syscall.SIGPIPE}) })
	}
	return n, err
}

// stderrClosed is err, or exit 141 if the command stopped because its
// stderr was closed (whatever the stop did to err).
func stderrClosed(c *cli.Context, err error) error {
	var se *signalError
	if errors.As(context.Cause(c.Context), &se) && se.sig == syscall.SIGPIPE {
		return interrupted(c.Context, c.Command.Name)
	}
	return err
}
