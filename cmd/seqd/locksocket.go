package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// lockState is what `seqd lock` tells its command on SEQD_LOCK_SOCKET.
type lockState struct {
	Held      bool   `json:"held"`
	Token     uint64 `json:"token"`
	Sequencer string `json:"sequencer"`
	// SafeForMS is how many milliseconds the lock is guaranteed not to be
	// granted elsewhere; 0 once lost.
	SafeForMS int64 `json:"safe_for_ms"`
	// Sequencers are every lock's sequencer, for a set of locks (seqd lock
	// A B -- CMD); Token and Sequencer are then the first lock's.
	Sequencers []string `json:"sequencers,omitempty"`
}

// lockSocket serves the lock's state to the command on a unix socket in a
// directory of its own (mode 0700; the socket 0600), removed by close. A
// command about to do something no token can fence asks first:
//
//	curl -s --unix-socket "$SEQD_LOCK_SOCKET" http://lock/
type lockSocket struct {
	path string
	dir  string
	srv  *http.Server
	done chan struct{}
}

func startLockSocket(grant interface{ SafeFor() time.Duration }, token uint64, seqs []string) (*lockSocket, error) {
	dir, err := os.MkdirTemp("", "seqd-lock-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "lock.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	ls := &lockSocket{path: path, dir: dir, done: make(chan struct{})}
	ls.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		// Held and safe_for_ms agree: under a millisecond left counts as
		// no longer safe.
		ms := grant.SafeFor().Milliseconds()
		st := lockState{Held: ms > 0, Token: token, Sequencer: seqs[0], SafeForMS: ms}
		if len(seqs) > 1 {
			st.Sequencers = seqs
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})}
	go func() {
		defer close(ls.done)
		ls.srv.Serve(ln)
	}()
	return ls, nil
}

// close stops serving and removes the socket and its directory.
func (ls *lockSocket) close() {
	ls.srv.Close()
	<-ls.done
	os.RemoveAll(ls.dir)
}
