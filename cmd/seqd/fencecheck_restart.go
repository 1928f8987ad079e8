package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// restarter runs --restart-cmd.
type restarter struct {
	cmd     string
	timeout time.Duration // for the command and the resource's return
	out     io.Writer     // the command's stdout and stderr
}

// run runs the command through sh in a process group of its own (a
// resource it starts in the background is not in seqd's group, so a Ctrl-C
// at seqd's terminal does not reach it), and kills the group if the
// command outlives ctx.
func (r *restarter) run(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", r.cmd)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A server started in the background may keep the output open: stop
	// copying it a moment after the command itself has exited.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case errors.Is(err, exec.ErrWaitDelay):
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("--restart-cmd did not finish within --restart-timeout %s", shortDuration(r.timeout))
	case err != nil:
		return fmt.Errorf("--restart-cmd failed: %v", err)
	}
	return nil
}

// restartCase is case 6: the resource restarts between a new holder's
// write and the old holder's stale write, which must still be refused: the
// max survived. The new holder's write after it must still be admitted.
func (k *checker) restartCase(ctx context.Context) (caseResult, error) {
	const name = "restart, then old holder writes"
	if k.restart == nil {
		return skipped(6, name, "no --restart-cmd"), nil
	}
	key := k.key(6)
	a, err := k.acquire(ctx, 6, 1)
	if err != nil {
		return caseResult{}, err
	}
	s1 := expect("the old holder writes", true, k.res.doWrite(ctx, key, a, k.value(6, 1, "w01")))
	b, err := k.handOver(ctx, a, 6, 2)
	if err != nil {
		return caseResult{}, err
	}
	s2 := expect("the new holder writes", true, k.res.doWrite(ctx, key, b, k.value(6, 2, "w01")))
	rctx, cancel := context.WithTimeout(ctx, k.restart.timeout)
	defer cancel()
	// Idle keep-alive connections would hold up a server's graceful stop.
	k.res.hc.CloseIdleConnections()
	start := time.Now()
	s3 := step{What: "the restart", Expected: "restart", Observed: "failed"}
	if err := k.restart.run(rctx); err != nil {
		s3.detail = err.Error()
		return stepsResult(6, name, s1, s2, s3), k.release(ctx, b)
	}
	s3.OK = true
	stale := k.untilAnswered(rctx, func() outcome { return k.res.doWrite(ctx, key, a, k.value(6, 1, "w02")) })
	s3.Observed = "restart " + shortDuration(time.Since(start).Round(10*time.Millisecond))
	s4 := expect(fmt.Sprintf("after the restart, the old holder (token %d) writes after the new one (token %d)", a.token, b.token), false, stale)
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
