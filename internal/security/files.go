package security

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A NewFile is a file for WriteNew to create.
type NewFile struct {
	Name string // a base name, inside the directory
	Data []byte
	Mode os.FileMode // 0600 for secrets, 0644 for what may be shown
}

// ExistsError says that files WriteNew was to create already exist: it
// wrote nothing.
type ExistsError struct {
	Dir   string
	Names []string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already holds %s: nothing was written (seqd never overwrites keys that may be in use); give a new directory, or move them away",
		e.Dir, strings.Join(e.Names, ", "))
}

// UnsafeDirError says that a directory others can write is no place for
// secrets: they could replace a file between its writing and its use.
type UnsafeDirError struct {
	Dir  string
	Mode os.FileMode
	// Owner, when not -1, is the uid of the other user who owns Dir.
	Owner int
}

func (e *UnsafeDirError) Error() string {
	if e.Owner >= 0 {
		return fmt.Sprintf("%s is owned by uid %d, not by this user (uid %d), who could replace what is written there: nothing was written or read; give a directory of your own", e.Dir, e.Owner, os.Geteuid())
	}
	return fmt.Sprintf("%s can be written by others (mode %v): nothing was written; give a directory only you can write (chmod 700 %s), or a new one", e.Dir, e.Mode.Perm(), e.Dir)
}

func (e *UnsafeDirError) Unwrap() error { return ErrUnsafe }

// WriteNew writes files into dir, all of them or none, and never over an
// existing file. dir is made (mode 0700) if it does not exist; a directory
// that others can write is refused (*UnsafeDirError). Each file is written
// under a temporary name first; only once every one is written are they
// linked to their names, and a name taken meanwhile undoes the ones
// already linked (*ExistsError).
func WriteNew(dir string, files []NewFile) error {
	if err := checkNewDir(dir); err != nil {
		return err
	}
	var taken []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f.Name)); err == nil {
			taken = append(taken, f.Name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if len(taken) > 0 {
		return &ExistsError{Dir: dir, Names: taken}
	}

	temps := make([]string, 0, len(files))
	defer func() {
		for _, t := range temps {
			os.Remove(t)
		}
	}()
	for _, f := range files {
		t, err := writeTemp(dir, f)
		if err != nil {
			return err
		}
		temps = append(temps, t)
	}
	var linked []string
	for i, f := range files {
		final := filepath.Join(dir, f.Name)
		// link(2), unlike rename(2), fails on an existing name.
		if err := os.Link(temps[i], final); err != nil {
			for _, l := range linked {
				os.Remove(l)
			}
			if errors.Is(err, fs.ErrExist) {
				return &ExistsError{Dir: dir, Names: []string{f.Name}}
			}
			return err
		}
		linked = append(linked, final)
	}
	return syncDir(dir)
}

// checkNewDir makes dir (0700) if it is missing, and refuses one that
// others can write.
func checkNewDir(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		st, err = os.Stat(dir)
	}
	if err != nil {
		return err
	}
	return checkPrivate(dir, st)
}

// CheckPrivateDir refuses a directory that another user owns (root
// aside) or that others can write (*UnsafeDirError): whoever can write
// there can replace a key, a certificate or an address between its
// writing and its use.
func CheckPrivateDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return checkPrivate(dir, st)
}

func checkPrivate(dir string, st fs.FileInfo) error {
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != os.Geteuid() {
		return &UnsafeDirError{Dir: dir, Mode: st.Mode(), Owner: int(sys.Uid)}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return &UnsafeDirError{Dir: dir, Mode: st.Mode(), Owner: -1}
	}
	return nil
}

// ParentWarning is a sentence when dir's parent is writable by everyone
// without the sticky bit (anyone may then rename dir and put another in
// its place), or "" when it is not.
func ParentWarning(dir string) string {
	parent := filepath.Dir(filepath.Clean(dir))
	st, err := os.Stat(parent)
	if err != nil || st.Mode().Perm()&0o002 == 0 || st.Mode()&os.ModeSticky != 0 {
		return ""
	}
	return fmt.Sprintf("%s is writable by everyone (mode %v, not sticky): anyone may rename %s and put a directory of their own in its place; keep it under a directory only you can write", parent, st.Mode().Perm(), filepath.Base(dir))
}

func writeTemp(dir string, f NewFile) (string, error) {
	t, err := os.CreateTemp(dir, "."+f.Name+".new-*")
	if err != nil {
		return "", err
	}
	name := t.Name()
	err = t.Chmod(f.Mode) // exact, whatever the umask
	if err == nil {
		_, err = t.Write(f.Data)
	}
	if err == nil {
		err = t.Sync()
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
