package underlock

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/seqd/seqd/internal/runlock"
)

// waitWatch ends the wait for the lock at the first forwarded signal.
type waitWatch struct {
	ctx    context.Context // the wait's: cancelled by a signal
	cancel context.CancelCauseFunc
	outer  context.Context // main's
	sigs   <-chan os.Signal
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	sig    syscall.Signal // written by the watcher, read after end
}

func watchWait(ctx context.Context, sigs <-chan os.Signal) *waitWatch {
	w := &waitWatch{outer: ctx, sigs: sigs, stop: make(chan struct{}), done: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	go func() {
		defer close(w.done)
		select {
		case sig := <-sigs:
			if s, ok := sig.(syscall.Signal); ok {
				w.sig = s
				w.cancel(errors.New(runlock.SignalName(s) + " received"))
			}
		case <-w.stop:
		}
	}()
	return w
}

// end stops watching; signals go to the command from then on.
func (w *waitWatch) end() {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
	})
}

// signal reports the signal that ended the wait, if any, also one that
// arrived just as the wait ended: the command must not start after it. A
// context cancelled from outside is main's signal context: find the signal
// on our own channel, which received it too. Call it after end.
func (w *waitWatch) signal() (syscall.Signal, bool) {
	if w.sig != 0 {
		return w.sig, true
	}
	select {
	case sig := <-w.sigs:
		if s, ok := sig.(syscall.Signal); ok {
			return s, true
		}
	default:
	}
	if w.outer.Err() == nil {
		return 0, false
	}
	t := time.NewTimer(signalSettle)
	defer t.Stop()
	select {
	case sig := <-w.sigs:
		if s, ok := sig.(syscall.Signal); ok {
			return s, true
		}
	case <-t.C:
	}
	return syscall.SIGTERM, true
}
