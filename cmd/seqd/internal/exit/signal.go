package exit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// SignalError is the cause of a context cancelled by a signal.
type SignalError struct{ Sig syscall.Signal }

func (e *SignalError) Error() string { return e.Sig.String() + " received" }

// SignalContext is cancelled by the first of sigs, with a *SignalError
// naming it as the cause, so that an interrupted command can exit 128+N.
// Later signals are caught too (the process does not die of them) until
// stop is called.
func SignalContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case sig := <-ch:
			if s, ok := sig.(syscall.Signal); ok {
				cancel(&SignalError{Sig: s})
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

// Interruption is the error of a command whose context was cancelled: exit
// 128+N for signal N (130 for Ctrl-C), and 130 when no signal is known.
func Interruption(ctx context.Context, command string) error {
	code := Interrupted
	err := fmt.Errorf("%s interrupted: %w", command, context.Cause(ctx))
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) {
		code = 128 + int(se.Sig)
	}
	return With(code, err)
}

// StopOnClosedStderr is for the commands that make temporary directories
// (seqd dev, seqd bench --dev): a write to a closed stderr (`seqd bench
// --dev 2>&1 | head -1`) would kill the process with SIGPIPE before its
// deferred cleanup ran, and leave the throwaway ZooKeeper's directory
// behind. With SIGPIPE ignored such a write fails with EPIPE instead, and
// the first one cancels the returned context as a signal would (exit 141,
// 128+SIGPIPE): the command stops and removes what it made. It returns
// the context and the writer to use in place of ctx and stderr; only the
// process's own stderr is watched, other writers (a test's) are left as
// they are.
func StopOnClosedStderr(ctx context.Context, stderr io.Writer) (context.Context, io.Writer) {
	if stderr != os.Stderr {
		return ctx, stderr
	}
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancelCause(ctx)
	return ctx, &pipeWatch{w: os.Stderr, cancel: cancel}
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
		p.once.Do(func() { p.cancel(&SignalError{syscall.SIGPIPE}) })
	}
	return n, err
}

// StderrClosed is err, or exit 141 if the command stopped because its
// stderr was closed (whatever the stop did to err).
func StderrClosed(ctx context.Context, command string, err error) error {
	var se *SignalError
	if errors.As(context.Cause(ctx), &se) && se.Sig == syscall.SIGPIPE {
		return Interruption(ctx, command)
	}
	return err
}
