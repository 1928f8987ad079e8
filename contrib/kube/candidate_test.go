package kube_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/seqd/seqd/contrib/kube"
)

// A candidate is this test binary run with KUBE_TEST_CANDIDATE=<identity>:
// a controller that runs client-go's elector on a kube.Lock of the election
// KUBE_TEST_ELECTION (the daemon at SEQD_ADDR) and writes, when told, to the
// fenced store at KUBE_TEST_STORE, through kube.Transport. It prints
//
//	leading ID TERM     it started leading (OnStartedLeading)
//	ended ID CAUSE      the context OnStartedLeading was given ended
//	stopped ID          the elector stopped (OnStoppedLeading)
//
// and reads commands, one a line, from its standard input:
//
//	write VALUE   PUT VALUE to the key "leader" under its leadership's
//	              context; prints "wrote STATUS"
//	prepare       keeps its leadership's context for a later write (the
//	              moment a controller decides to write); prints
//	              "prepared TERM"
//	late VALUE    PUT VALUE under the kept context, ignoring that it may
//	              have ended (a write the controller had already begun
//	              when it paused); prints "late STATUS"
const (
	envCandidate = "KUBE_TEST_CANDIDATE"
	envElection  = "KUBE_TEST_ELECTION"
	envStore     = "KUBE_TEST_STORE"
)

// The candidates' timers: short, so that a takeover takes seconds.
const (
	candidateTTL   = 2 * time.Second
	candidateRenew = 1500 * time.Millisecond
	candidateRetry = 200 * time.Millisecond
)

func runCandidate(id string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	lock, err := kube.New(kube.Config{Election: os.Getenv(envElection), Identity: id, TTL: candidateTTL})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	var mu sync.Mutex
	var leading, kept context.Context // the leadership's context; the one kept by prepare
	hc := &http.Client{Transport: kube.Transport(nil), Timeout: 10 * time.Second}
	put := func(ctx context.Context, value string) string {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, os.Getenv(envStore)+"/v1/kv/leader", strings.NewReader(value))
		if err != nil {
			return err.Error()
		}
		resp, err := hc.Do(req)
		if err != nil {
			return strings.ReplaceAll(err.Error(), "\n", " ")
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmd, arg, _ := strings.Cut(sc.Text(), " ")
			mu.Lock()
			cur, k := leading, kept
			mu.Unlock()
			switch {
			case cmd == "write" && cur != nil:
				say("wrote %s", put(cur, arg))
			case cmd == "prepare" && cur != nil:
				mu.Lock()
				kept = cur
				mu.Unlock()
				t, _ := kube.TermFrom(cur)
				say("prepared %d", t.Number)
			case cmd == "late" && k != nil:
				say("late %s", put(context.WithoutCancel(k), arg))
			default:
				say("refused %q: not leading, or nothing prepared", sc.Text())
			}
		}
	}()
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            os.Getenv(envElection),
		LeaseDuration:   candidateTTL,
		RenewDeadline:   candidateRenew,
		RetryPeriod:     candidateRetry,
		ReleaseOnCancel: true,
		Callbacks: lock.Callbacks(leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				t, _ := kube.TermFrom(ctx)
				mu.Lock()
				leading = ctx
				mu.Unlock()
				say("leading %s %d", id, t.Number)
				<-ctx.Done()
				say("ended %s %v", id, context.Cause(ctx))
			},
			OnStoppedLeading: func() { say("stopped %s", id) },
		}),
	})
	return 0
}
