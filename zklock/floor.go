package zklock

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
)

// Token floors. A zxid or a data version rises only within one ZooKeeper
// history: an ensemble restored from an older copy of its data directories
// goes back to older zxids and counters, and one rebuilt empty starts from
// zxid 1. So every token is floor + zxid (or floor + version), where the
// floor is recorded in the root's token mark next to its mode; a root whose
// history was restored or rebuilt gets a floor above every token issued
// before, and tokens keep rising. What was issued before is what each
// process remembers in its Floors (a file, fsynced before a grant is
// declared): a session refuses to grant on a root whose history went back
// (its contenders' zxids at or below the highest one it recorded) while the
// root's floor is below the highest token it recorded, and on a root with no
// mark at all once it recorded tokens there.

// MaxTokenFloor is the highest floor a root may record: far below 2^64, so
// that floor + zxid cannot wrap.
const MaxTokenFloor = 1 << 62

// ErrBelowFloor: a root's tokens would fall below tokens already issued on
// it (ZooKeeper was restored from an older copy or rebuilt empty), and its
// floor has not been raised above them. Nothing is granted on it until it
// is.
var ErrBelowFloor = errors.New("zklock: tokens below those already issued")

// FloorError gives the figures of a root refused for its floor.
type FloorError struct {
	Root string
	// Unmarked: the root has no token mark (ZooKeeper rebuilt empty, or a
	// new ensemble); otherwise its history went back (Zxid at or below the
	// highest recorded).
	Unmarked bool
	Floor    uint64 // the root's floor (for an unmarked root, the floor it would get)
	Zxid     uint64 // the contender's zxid that showed the history went back
	Issued   Issued // what this process recorded as issued on the root
	File     string // where it is recorded ("" when not in a file)
}

func (e *FloorError) Error() string {
	what := fmt.Sprintf("zklock: root %s has no token mark, but tokens up to %d were issued on it", e.Root, e.Issued.Token)
	if !e.Unmarked {
		what = fmt.Sprintf("zklock: root %s went back in ZooKeeper's history (zxid %d, at or below the %d seen before) and its token floor %d is not above the tokens up to %d issued on it",
			e.Root, e.Zxid, e.Issued.Zxid, e.Floor, e.Issued.Token)
	}
	if e.File != "" {
		what += " (as " + e.File + " records)"
	}
	return what + fmt.Sprintf(": ZooKeeper was restored or rebuilt, and its tokens would go back; the root's floor must be raised to at least %d", e.Issued.Token)
}

// Is makes errors.Is(err, ErrBelowFloor) true.
func (e *FloorError) Is(target error) bool { return target == ErrBelowFloor }

// Issued is what a process issued on one root: its highest token, and the
// highest zxid among the contenders it granted them to.
type Issued struct {
	Token uint64 `json:"token"`
	Zxid  uint64 `json:"zxid"`
	Floor uint64 `json:"floor"` // the highest floor they were issued under
}

// raise is is raised to by (each field its highest).
func (is Issued) raise(by Issued) Issued {
	return Issued{Token: max(is.Token, by.Token), Zxid: max(is.Zxid, by.Zxid), Floor: max(is.Floor, by.Floor)}
}

// Floors remembers, per root, the highest token a process issued and the
// highest contender zxid it granted, durably when it has a file: Record
// returns once what it records is fsynced, and concurrent Records share
// one write. Share one Floors among the sessions of a process (or of the
// processes that use one file, one at a time).
type Floors struct {
	path string

	mu      sync.Mutex
	cond    sync.Cond
	issued  map[string]Issued
	changes uint64 // bumped at each change of issued
	synced  uint64 // the changes the file holds
	writing bool
}

// NewFloors is an empty Floors kept in memory only (for tests, and for
// processes whose grants need not outlive them).
func NewFloors() *Floors {
	f := &Floors{issued: map[string]Issued{}}
	f.cond.L = &f.mu
	return f
}

// OpenFloors reads the floor file at path, or starts an empty one if it
// does not exist; its directory must exist.
func OpenFloors(path string) (*Floors, error) {
	f := NewFloors()
	f.path = path
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("zklock: floor file: %w", err)
	}
	var ff floorFile
	if err := json.Unmarshal(data, &ff); err != nil || ff.Roots == nil {
		return nil, fmt.Errorf("zklock: floor file %s is not a floor file (%v): move it away only if no tokens were issued with it", path, err)
	}
	f.issued = ff.Roots
	return f, nil
}

// floorFile is the file's JSON.
type floorFile struct {
	Roots map[string]Issued `json:"roots"`
}

// Path is the file's path ("" for a Floors in memory).
func (f *Floors) Path() string {
	if f == nil {
		return ""
	}
	return f.path
}

// Issued is what was recorded for root.
func (f *Floors) Issued(root string) Issued {
	if f == nil {
		return Issued{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issued[root]
}

// All is a copy of every root's record.
func (f *Floors) All() map[string]Issued {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.issued)
}

// Record raises root's record to by (it never lowers) and returns once
// the file holds it: a write in progress is waited for, and the next write
// carries every record made meanwhile.
func (f *Floors) Record(root string, by Issued) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issued[root]
	if up := is.raise(by); up != is {
		f.issued[root] = up
		f.changes++
	}
	want := f.changes
	if f.path == "" {
		f.synced = want
		return nil
	}
	for f.synced < want {
		if f.writing {
			f.cond.Wait()
			continue
		}
		f.writing = true
		snap, upTo := maps.Clone(f.issued), f.changes
		f.mu.Unlock()
		err := writeFloorFile(f.path, snap)
		f.mu.Lock()
		f.writing = false
		if err == nil {
			f.synced = max(f.synced, upTo)
		}
		f.cond.Broadcast()
		if err != nil {
			return fmt.Errorf("zklock: floor file: %w", err)
		}
	}
	return nil
}

// writeFloorFile replaces the file at path with roots: a temporary file
// written and fsynced, renamed over it, and the directory fsynced, so that
// a crash leaves the old file or the new one.
func writeFloorFile(path string, roots map[string]Issued) error {
	data, err := json.Marshal(floorFile{Roots: roots})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}
