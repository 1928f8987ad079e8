package lockdown

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/fence"
)

// VerifyKeysHeader is the first line keygen writes to a verify.keys it
// creates. keygen appends only to a file that starts with it and that no
// one else could have written (see openVerifyKeys).
const VerifyKeysHeader = "# seqd keygen: public keys for --verify-keys-file, one \"<kid> <base64 public key>\" per line\n"

// KeyIDError is a key id that fence.GenerateKey refuses.
type KeyIDError struct{ Err error }

func (e *KeyIDError) Error() string { return "key id: " + e.Err.Error() }

func (e *KeyIDError) Unwrap() error { return e.Err }

// KeyExistsError is a verify.keys that already holds the key id to add.
type KeyExistsError struct{ Path, KeyID string }

func (e *KeyExistsError) Error() string {
	return fmt.Sprintf("keygen: %s already holds key %q", e.Path, e.KeyID)
}

// WriteKeyPair writes DIR/signing.key and adds the key's line to
// DIR/verify.keys, after checking that nobody else can write to DIR or
// has written DIR/verify.keys: someone who plants a verify.keys there gets
// their own key trusted next to the real one by every resource handed the
// file. Files are opened relative to the directory opened once, without
// following symbolic links, so that the directory checked is the one
// written to. It returns the two paths.
func WriteKeyPair(dir, kid string) (string, string, error) {
	signing, verify, err := fence.GenerateKey(kid)
	if err != nil {
		return "", "", &KeyIDError{err}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	d, err := os.Open(dir)
	if err != nil {
		return "", "", err
	}
	defer d.Close()
	if err := checkKeyDir(d, dir); err != nil {
		return "", "", err
	}
	sk, vk := filepath.Join(dir, SigningKeyFile), filepath.Join(dir, VerifyKeysFile)
	dfd := int(d.Fd())
	vf, existing, prefix, err := openVerifyKeys(dfd, vk, kid)
	if err != nil {
		return "", "", err
	}
	// O_EXCL: never overwrite a key that may already sign tokens.
	sfd, err := syscall.Openat(dfd, SigningKeyFile, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		vf.Close()
		if !existing {
			syscall.Unlinkat(dfd, VerifyKeysFile)
		}
		return "", "", exit.Usagef("%s: %v (move the old key away to make a new one)", sk, err)
	}
	sf := os.NewFile(uintptr(sfd), sk)
	if err := writeSyncClose(sf, signing); err != nil {
		vf.Close()
		syscall.Unlinkat(dfd, SigningKeyFile)
		return "", "", err
	}
	// Rotation: the new public key is added next to the old ones.
	line := append(prefix, verify...)
	if err := writeSyncClose(vf, line); err != nil {
		syscall.Unlinkat(dfd, SigningKeyFile)
		return "", "", err
	}
	return sk, vk, d.Sync()
}

// checkKeyDir refuses a directory someone else can write to: a group- or
// world-writable one, unless it is sticky and ours (then others may add
// files but not remove or rename ours), and one another user owns.
func checkKeyDir(d *os.File, dir string) error {
	st, err := statOf(d)
	if err != nil {
		return err
	}
	mode := os.FileMode(st.Mode & 0o7777)
	euid := uint32(os.Geteuid())
	if st.Uid != euid && st.Uid != 0 {
		return exit.Usagef("keygen: %s is owned by uid %d, not by this user (uid %d), who could replace the keys in it: "+
			"use a directory of your own", dir, st.Uid, euid)
	}
	sticky := st.Mode&syscall.S_ISVTX != 0 && st.Uid == euid
	if mode&0o022 != 0 && !sticky {
		return exit.Usagef("keygen: %s is writable by group or others (mode %04o): anyone who can write there can plant "+
			"a verify.keys whose key resources would then trust, or replace the keys; chmod go-w %s, or use a private directory",
			dir, mode, dir)
	}
	return nil
}

// openVerifyKeys opens dir's verify.keys for appending, or reports that
// there is none yet (the caller creates it). An existing one must be a
// regular file with one link (not a symbolic or hard link to a file
// elsewhere), owned by this user, writable by no one else, starting with
// keygen's first line, holding only key lines, and not yet holding kid.
// It also returns what to write before the new key's line: keygen's first
// line for a new file, a newline for a file that does not end in one.
func openVerifyKeys(dfd int, path, kid string) (*os.File, bool, []byte, error) {
	fd, err := syscall.Openat(dfd, VerifyKeysFile, syscall.O_RDWR|syscall.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, syscall.ENOENT):
		fd, err = syscall.Openat(dfd, VerifyKeysFile, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, false, nil, fmt.Errorf("%s: %w", path, err)
		}
		return os.NewFile(uintptr(fd), path), false, []byte(VerifyKeysHeader), nil
	case errors.Is(err, syscall.ELOOP):
		return nil, false, nil, refuseVerifyKeys(path, "is not a regular file but a symbolic link")
	case err != nil:
		return nil, false, nil, fmt.Errorf("%s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	b, err := checkVerifyKeys(f, path, kid)
	if err != nil {
		f.Close()
		return nil, false, nil, err
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		return f, true, []byte("\n"), nil
	}
	return f, true, nil, nil
}

// checkVerifyKeys checks an existing verify.keys and returns its contents.
func checkVerifyKeys(f *os.File, path, kid string) ([]byte, error) {
	st, err := statOf(f)
	if err != nil {
		return nil, err
	}
	euid := uint32(os.Geteuid())
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return nil, refuseVerifyKeys(path, "is not a regular file")
	case st.Nlink != 1:
		return nil, refuseVerifyKeys(path, fmt.Sprintf("has %d hard links: it is also a file elsewhere", st.Nlink))
	case st.Uid != euid:
		return nil, refuseVerifyKeys(path, fmt.Sprintf("is owned by uid %d, not by this user (uid %d)", st.Uid, euid))
	case st.Mode&0o022 != 0:
		return nil, refuseVerifyKeys(path, fmt.Sprintf("is writable by group or others (mode %04o)", st.Mode&0o7777))
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	if string(first)+"\n" != VerifyKeysHeader {
		return nil, refuseVerifyKeys(path, "was not written by seqd keygen (its first line is not keygen's)")
	}
	keys, err := fence.ParseVerifyKeys(b)
	if err != nil {
		return nil, refuseVerifyKeys(path, "does not read as a verify keys file: "+exit.Message(err))
	}
	if _, dup := keys[kid]; dup {
		return nil, &KeyExistsError{Path: path, KeyID: kid}
	}
	return b, nil
}

func refuseVerifyKeys(path, why string) error {
	return exit.Usagef("keygen: refusing to add a key to %s: it %s; anyone who could write it may have added a key "+
		"of their own that resources would trust; check it and move it away, or keygen into a new private directory "+
		"and hand its verify.keys to resources", path, why)
}

func statOf(f *os.File) (*syscall.Stat_t, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no owner or mode to check", f.Name())
	}
	return st, nil
}

func writeSyncClose(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
