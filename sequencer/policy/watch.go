package policy

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Files the daemon reads again when they change (the policy, the named
// tokens): a poll reads the file and, when its bytes differ from the last
// ones read, parses it. A file that no longer parses (or cannot be read)
// keeps the last good contents in force: a typo in a reload must not open
// the daemon, nor lock everybody out.

// Watched is a file's parsed contents, replaced when the file changes and
// parses. A nil *Watched holds nothing (Load returns nil).
type Watched[T any] struct {
	path  string
	what  string // "policy", "tokens"
	parse func(path string, data []byte) (*T, error)
	read  func(path string) ([]byte, error)
	cur   atomic.Pointer[T]

	mu     sync.Mutex
	last   []byte // the contents in force
	bad    []byte // the contents that last failed to parse
	failed bool
}

// WatchPolicy reads the policy file at path; an error (a line that does
// not parse, a file that cannot be read) names the file and line.
func WatchPolicy(path string) (*Watched[Policy], error) {
	return newWatched(path, "policy", ParsePolicy, os.ReadFile)
}

// Fixed is a Watched that holds v and reads no file: a policy or tokens
// given in code.
func Fixed[T any](what string, v *T) *Watched[T] {
	w := &Watched[T]{what: what}
	w.cur.Store(v)
	return w
}

// WatchTokens reads the tokens file at path (see ParseTokens), which others
// must not be able to read.
func WatchTokens(path string) (*Watched[Tokens], error) {
	return newWatched(path, "tokens", ParseTokens, readPrivate)
}

func newWatched[T any](path, what string, parse func(string, []byte) (*T, error), read func(string) ([]byte, error)) (*Watched[T], error) {
	w := &Watched[T]{path: path, what: what, parse: parse, read: read}
	if _, err := w.Reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// Load is the contents in force.
func (w *Watched[T]) Load() *T {
	if w == nil {
		return nil
	}
	return w.cur.Load()
}

// Path is the file's path; What says what it holds ("policy", "tokens").
func (w *Watched[T]) Path() string { return w.path }
func (w *Watched[T]) What() string { return w.what }

// Reload reads the file and, if it changed, parses it: changed says new
// contents are in force. On an error the old contents stay in force.
func (w *Watched[T]) Reload() (changed bool, err error) {
	if w.read == nil {
		return false, nil // Fixed: no file
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := w.read(w.path)
	if err == nil && w.cur.Load() != nil && bytes.Equal(data, w.last) {
		if w.failed { // back to what is in force
			w.failed = false
			return true, nil
		}
		return false, nil
	}
	if err == nil && w.failed && bytes.Equal(data, w.bad) {
		return false, nil // refused already: said once
	}
	var v *T
	if err == nil {
		v, err = w.parse(w.path, data)
	}
	if err != nil {
		w.failed, w.bad = true, data
		return false, err
	}
	w.cur.Store(v)
	w.last, w.failed = data, false
	return true, nil
}

// Reloadable is a file Poll reads again: a *Watched.
type Reloadable interface {
	Reload() (changed bool, err error)
	Path() string
	What() string
}

// Reports counts reloads: ok false for one that failed (its file's old
// contents stay in force). The daemon's metrics implement it.
type Reports interface {
	ConfigReloaded(file string, ok bool)
}

// Poll reloads files at every tick until ctx ends: a reload that fails
// keeps the old contents, and is logged and reported to m (nil: none).
func Poll(ctx context.Context, tick <-chan time.Time, log *slog.Logger, m Reports, files ...Reloadable) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			ReloadAll(log, m, files...)
		}
	}
}

// ReloadAll is one round of Poll.
func ReloadAll(log *slog.Logger, m Reports, files ...Reloadable) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, f := range files {
		changed, err := f.Reload()
		switch {
		case err != nil:
			log.Error("the "+f.What()+" file did not reload: the old one stays in force", "file", f.Path(), "err", err)
			if m != nil {
				m.ConfigReloaded(f.What(), false)
			}
		case changed:
			log.Info("the "+f.What()+" file reloaded", "file", f.Path())
			if m != nil {
				m.ConfigReloaded(f.What(), true)
			}
		}
	}
}
