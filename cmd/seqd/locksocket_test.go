package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/underlock"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

func askLockSocket(path string) (underlock.SocketState, error) {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}
	var st underlock.SocketState
	resp, err := c.Get("http://lock/")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// TestLockSocketSafeFor: the command asks SEQD_LOCK_SOCKET how long it is
// safe. With its ZooKeeper server frozen, safe_for_ms shrinks and reaches 0
// before a contender on another server of the ensemble is granted the lock;
// the socket (mode 0600) is gone when seqd lock exits.
func TestLockSocketSafeFor(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{Servers: 3})
	followers := c.Followers()
	if len(followers) < 2 {
		t.Fatalf("followers = %d, want 2", len(followers))
	}
	const sessionTimeout = 2 * time.Second
	dir := t.TempDir()
	p := startLock(t, []string{"SEQD_ZK=" + followers[0].ClientAddr, "D=" + dir},
		"--session-timeout", sessionTimeout.String(), "--kill-grace", "5s", "safe", "--",
		"sh", "-c", `trap 'exit 0' TERM; echo "$SEQD_LOCK_SOCKET" > "$D/sock.tmp" && mv "$D/sock.tmp" "$D/sock"; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done`)
	var sock string
	zktest.Eventually(t, 30*time.Second, "the command to write the socket path", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "sock"))
		sock = strings.TrimSpace(string(b))
		return err == nil && sock != ""
	})
	st, err := askLockSocket(sock)
	if err != nil || !st.Held || st.SafeForMS <= 0 || st.SafeForMS > sessionTimeout.Milliseconds() || !strings.HasPrefix(st.Sequencer, "safe@") {
		t.Fatalf("lock state = %+v, %v; want held, safe for (0, %v]", st, err, sessionTimeout)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi, err)
	}

	// A contender on another server waits for the lock.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	other, err := zklock.Dial(ctx, []string{followers[1].ClientAddr}, zklock.Options{SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	m, err := zklock.NewMutex(other, "safe")
	if err != nil {
		t.Fatal(err)
	}
	granted := make(chan time.Time, 1)
	go func() {
		if g, err := m.Acquire(ctx); err == nil {
			granted <- time.Now()
			g.Release(context.Background())
		}
		close(granted)
	}()

	if err := followers[0].Pause(); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer followers[0].Resume()
	var zeroAt time.Time
	last := st.SafeForMS + 1
	for zeroAt.IsZero() && time.Since(frozen) < 10*time.Second {
		st, err := askLockSocket(sock)
		switch {
		case err != nil:
			zeroAt = time.Now() // seqd lock stopped answering: it gave the lock up
		case st.SafeForMS == 0:
			zeroAt = time.Now()
			if st.Held {
				t.Errorf("safe_for_ms 0 but held")
			}
		case st.SafeForMS > last:
			t.Errorf("safe_for_ms grew from %d to %d while ZooKeeper was frozen", last, st.SafeForMS)
		default:
			last = st.SafeForMS
		}
		time.Sleep(20 * time.Millisecond)
	}
	if zeroAt.IsZero() {
		t.Fatal("safe_for_ms never reached 0 with ZooKeeper frozen")
	}
	at, ok := <-granted
	if !ok {
		t.Fatal("the other contender was never granted")
	}
	t.Logf("safe_for_ms reached 0 at %.2f of the session timeout after the freeze; the other contender was granted at %.2f",
		float64(zeroAt.Sub(frozen))/float64(sessionTimeout), float64(at.Sub(frozen))/float64(sessionTimeout))
	if !zeroAt.Before(at) {
		t.Fatalf("safe_for_ms reached 0 at %v, after the other contender was granted at %v", zeroAt.Sub(frozen), at.Sub(frozen))
	}
	if code := p.wait(t, 30*time.Second); code != ExitLockLost {
		t.Errorf("seqd lock exit = %d, want %d", code, ExitLockLost)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after seqd lock exited: %v", err)
	}
}
