package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seqd/seqd/internal/humantime"
)

// restartCase is case 6: the resource restarts between a new holder's
// write and the old holder's stale write, which must still be refused: the
// max survived. The new holder's write after it must still be admitted.
func (k *checker) restartCase(ctx context.Context) (Case, error) {
	const name = "restart, then old holder writes"
	if k.restart == nil {
		return skipped(6, name, "no restart"), nil
	}
	key := k.key(6)
	a, err := k.acquire(ctx, 6, 1)
	if err != nil {
		return Case{}, err
	}
	s1 := expect("the old holder writes", true, k.res.doWrite(ctx, key, a, k.value(6, 1, "w01")))
	b, err := k.handOver(ctx, a, 6, 2)
	if err != nil {
		return Case{}, err
	}
	s2 := expect("the new holder writes", true, k.res.doWrite(ctx, key, b, k.value(6, 2, "w01")))
	rctx, cancel := context.WithTimeout(ctx, k.restartFor)
	defer cancel()
	// Idle keep-alive connections would hold up a server's graceful stop.
	k.res.hc.CloseIdleConnections()
	start := time.Now()
	s3 := Step{What: "the restart", Expected: "restart", Observed: "failed"}
	if err := k.restart(rctx); err != nil {
		s3.detail = err.Error()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			s3.detail = "the restart did not finish within " + humantime.Duration(k.restartFor)
		}
		return stepsResult(6, name, s1, s2, s3), k.release(ctx, b)
	}
	s3.OK = true
	stale := k.untilAnswered(rctx, func() outcome { return k.res.doWrite(ctx, key, a, k.value(6, 1, "w02")) })
	s3.Observed = "restart " + humantime.Duration(time.Since(start).Round(10*time.Millisecond))
	s4 := expect(fmt.Sprintf("after the restart, the old holder (token %d) writes after the new one (token %d)", a.Token, b.Token), false, stale)
	s5 := expect("after the restart, the new holder writes", true, k.res.doWrite(ctx, key, b, k.value(6, 2, "w02")))
	return stepsResult(6, name, s1, s2, s3, s4, s5), k.release(ctx, b)
}

// untilAnswered sends f until the resource answers it (it may still be
// starting after the restart command returned), or until ctx ends.
func (k *checker) untilAnswered(ctx context.Context, f func() outcome) outcome {
	for {
		o := f()
		if !o.unreachable() {
			return o
		}
		select {
		case <-ctx.Done():
			return o
		case <-time.After(100 * time.Millisecond):
		}
	}
}
