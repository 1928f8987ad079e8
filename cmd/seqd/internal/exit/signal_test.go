package exit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// A context cancelled by signal N is exit 128+N; cancelled otherwise, 130.
func TestInterruptionStatus(t *testing.T) {
	for _, tc := range []struct {
		cause error
		want  int
	}{
		{nil, Interrupted},
		{&SignalError{Sig: syscall.SIGTERM}, 143},
		{&SignalError{Sig: syscall.SIGPIPE}, 141},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(tc.cause)
		var e *Error
		if err := Interruption(ctx, "cmd"); !errors.As(err, &e) || e.Code != tc.want {
			t.Errorf("cause %v: %v, want exit %d", tc.cause, err, tc.want)
		}
	}
}

// The first signal cancels the context with itself as the cause; stop
// without a signal cancels it with none.
func TestSignalContext(t *testing.T) {
	ctx, stop := SignalContext(context.Background(), syscall.SIGUSR1)
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGUSR1 did not cancel the context")
	}
	stop()
	var se *SignalError
	if !errors.As(context.Cause(ctx), &se) || se.Sig != syscall.SIGUSR1 {
		t.Errorf("cause %v, want SIGUSR1 received", context.Cause(ctx))
	}
	var e *Error
	if err := Interruption(ctx, "cmd"); !errors.As(err, &e) || e.Code != 128+int(syscall.SIGUSR1) {
		t.Errorf("Interruption after SIGUSR1: %v, want exit %d", err, 128+int(syscall.SIGUSR1))
	}

	ctx, stop = SignalContext(context.Background(), syscall.SIGUSR1)
	stop()
	if ctx.Err() == nil || errors.As(context.Cause(ctx), &se) {
		t.Errorf("stopped without a signal: err %v, cause %v; want cancelled, with no signal", ctx.Err(), context.Cause(ctx))
	}
}

// The first write that finds the reader gone cancels with SIGPIPE, and
// StderrClosed then turns any error into exit 141; a writer that is not
// the process's stderr is left alone.
func TestClosedStderrStops(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	p := &pipeWatch{w: w, cancel: cancel}
	if _, err := p.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a closed pipe: %v, want EPIPE", err)
	}
	var e *Error
	if err := StderrClosed(ctx, "dev", errors.New("other")); !errors.As(err, &e) || e.Code != 141 {
		t.Errorf("StderrClosed after EPIPE: %v, want exit 141", err)
	}
	other := errors.New("other")
	if err := StderrClosed(context.Background(), "dev", other); err != other {
		t.Errorf("StderrClosed without EPIPE: %v, want the error as it was", err)
	}
	var b bytes.Buffer
	if c, wr := StopOnClosedStderr(context.Background(), &b); wr != &b || c.Err() != nil {
		t.Error("StopOnClosedStderr wrapped a writer that is not stderr")
	}
}
