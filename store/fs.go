package store

import (
	"fmt"
	"io"
	"os"
)

// fileSystem is what the store asks of the disk. The store runs on the real
// one; a test puts a recorder there that knows which bytes were synced, to
// replay a power loss at every point (see crash_test.go).
type fileSystem interface {
	ReadFile(name string) ([]byte, error)
	// OpenFile opens a file for writing (the log, or a log being rewritten).
	OpenFile(name string, flag int, perm os.FileMode) (file, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	Link(oldname, newname string) error
	// SyncDir makes the directory's entries (creations, renames) durable.
	SyncDir(dir string) error
}

// file is an open file of a fileSystem.
type file interface {
	io.Writer
	io.WriterAt // store.meta's slots; the log is only appended to
	Sync() error
	Truncate(size int64) error
	// Size is the file's length now.
	Size() (int64, error)
	Close() error
}

type osFS struct{}

func (osFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) Link(oldname, newname string) error   { return os.Link(oldname, newname) }

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", dir, err)
	}
	return nil
}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
