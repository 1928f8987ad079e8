package underlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// SocketState is what `seqd lock` tells its command on SEQD_LOCK_SOCKET.
type SocketState struct {
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
// directory of its own, seqd-lock-<pid>-<random> in the temporary directory
// (mode 0700; the socket 0600), removed by close. A command about to do
// something no token can fence asks first:
//
//	curl -s --unix-socket "$SEQD_LOCK_SOCKET" http://lock/
type lockSocket struct {
	path string
	dir  string
	srv  *http.Server
	done chan struct{}
}

func startLockSocket(grant interface{ SafeFor() time.Duration }, token uint64, seqs []string) (*lockSocket, error) {
	// A seqd lock killed with SIGKILL could not remove its directory.
	removeStaleLockDirs(os.TempDir())
	dir, err := os.MkdirTemp("", fmt.Sprintf("seqd-lock-%d-", os.Getpid()))
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
		st := SocketState{Held: ms > 0, Token: token, Sequencer: seqs[0], SafeForMS: ms}
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

// lockDirName is the name of a lock socket's directory: the pid of the
// seqd lock that made it, and os.MkdirTemp's random digits.
var lockDirName = regexp.MustCompile(`^seqd-lock-([1-9][0-9]*)-[0-9]+$`)

// removeStaleLockDirs removes, from tmp, the socket directories of seqd
// lock processes that are gone, and returns how many. It touches only
// directories (never a symbolic link, nor anything one points to) named
// by lockDirName, owned by this user, whose pid is not alive and whose
// socket answers no connection: the last check keeps the directory of a
// live seqd lock whose pid this process cannot see (another pid namespace
// sharing tmp).
func removeStaleLockDirs(tmp string) int {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	euid := uint32(os.Geteuid())
	removed := 0
	for _, e := range entries {
		m := lockDirName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || processAlive(pid) {
			continue
		}
		path := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != euid {
			continue
		}
		if c, err := net.DialTimeout("unix", filepath.Join(path, "lock.sock"), 100*time.Millisecond); err == nil {
			c.Close()
			continue
		}
		// RemoveAll removes a symbolic link it meets, never what it
		// points to; and in a sticky tmp only we can rename our directory.
		if os.RemoveAll(path) == nil {
			removed++
		}
	}
	return removed
}

// processAlive reports whether pid names a process, ours or another
// user's.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
