package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/fence"
)

// plantedKey is a verify.keys line for a key pair an attacker holds.
func plantedKey(t *testing.T) []byte {
	t.Helper()
	_, verify, err := fence.GenerateKey("attacker")
	if err != nil {
		t.Fatal(err)
	}
	return verify
}

// TestKeygenRefusesDirectoryOthersCanWrite: in a directory writable by group
// or others, someone else can plant a verify.keys (or swap the files after
// keygen); keygen refuses it with exit 64 and writes nothing. A directory
// with the sticky bit that this user owns (only owners may remove or rename
// entries) is accepted.
func TestKeygenRefusesDirectoryOthersCanWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mode := range []os.FileMode{0o777, 0o775, 0o757} {
		dir := filepath.Join(t.TempDir(), "keys")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, mode)
		code, _, errs := runCLI(ctx, "keygen", "--dir", dir)
		if code != ExitUsage || !strings.Contains(errs, "writable") || !strings.Contains(errs, "chmod") {
			t.Errorf("keygen into a directory of mode %v = %d %q, want 64 and a sentence naming the fix", mode, code, errs)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("keygen refused mode %v but wrote %v", mode, entries)
		}
	}

	sticky := filepath.Join(t.TempDir(), "sticky")
	if err := os.Mkdir(sticky, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(sticky, 0o777|os.ModeSticky)
	if code, _, errs := runCLI(ctx, "keygen", "--dir", sticky); code != 0 {
		t.Errorf("keygen into a sticky directory this user owns = %d %q, want 0", code, errs)
	}
}

// TestKeygenRefusesVerifyKeysItDidNotWrite: an attacker plants verify.keys
// holding its own public key where keygen will write, and keygen would add
// the real key next to it, so that resources trust both. keygen refuses a
// verify.keys owned by another user, writable by others, a symbolic link, a
// hard link, or one without its own first line, and leaves it unchanged with
// no signing key written.
func TestKeygenRefusesVerifyKeysItDidNotWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	target := filepath.Join(t.TempDir(), "elsewhere")
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, vk string)
		words string
	}{
		{"a file without keygen's first line", func(t *testing.T, vk string) {
			os.WriteFile(vk, plantedKey(t), 0o644)
		}, "not written by seqd keygen"},
		{"writable by others", func(t *testing.T, vk string) {
			os.WriteFile(vk, append([]byte(lockdown.VerifyKeysHeader), plantedKey(t)...), 0o666)
			os.Chmod(vk, 0o666)
		}, "writable"},
		{"a symbolic link", func(t *testing.T, vk string) {
			os.WriteFile(target, append([]byte(lockdown.VerifyKeysHeader), plantedKey(t)...), 0o644)
			os.Symlink(target, vk)
		}, "not a regular file"},
		{"a hard link", func(t *testing.T, vk string) {
			os.WriteFile(target, append([]byte(lockdown.VerifyKeysHeader), plantedKey(t)...), 0o644)
			os.Link(target, vk)
		}, "link"},
		{"owned by another user", func(t *testing.T, vk string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			os.WriteFile(vk, append([]byte(lockdown.VerifyKeysHeader), plantedKey(t)...), 0o644)
			if err := os.Chown(vk, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(target)
			dir := t.TempDir()
			vk := filepath.Join(dir, "verify.keys")
			tc.plant(t, vk)
			before, _ := os.ReadFile(vk)
			code, _, errs := runCLI(ctx, "keygen", "--dir", dir, "--kid", "real")
			if code != ExitUsage || !strings.Contains(errs, tc.words) {
				t.Errorf("keygen with a planted verify.keys (%s) = %d %q, want 64 and %q", tc.name, code, errs, tc.words)
			}
			if after, _ := os.ReadFile(vk); string(after) != string(before) {
				t.Errorf("keygen changed the planted verify.keys:\n%s", after)
			}
			if _, err := os.Stat(filepath.Join(dir, "signing.key")); err == nil {
				t.Error("keygen refused verify.keys but wrote signing.key")
			}
		})
	}
}

// TestKeygenRotation: keygen into a private directory, move the signing key
// away, keygen again with a new key id: verify.keys holds both keys (even
// after an edit dropped its last newline), and a resource loading it
// accepts either.
func TestKeygenRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "keys")
	if code, _, errs := runCLI(ctx, "keygen", "--dir", dir, "--kid", "old"); code != 0 {
		t.Fatalf("first keygen = %d %q", code, errs)
	}
	if err := os.Rename(filepath.Join(dir, "signing.key"), filepath.Join(dir, "signing.key.old")); err != nil {
		t.Fatal(err)
	}
	// An edit that dropped the last newline must not glue the next key on.
	vk := filepath.Join(dir, "verify.keys")
	b, _ := os.ReadFile(vk)
	if err := os.WriteFile(vk, bytes.TrimSuffix(b, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(ctx, "keygen", "--dir", dir, "--kid", "new"); code != 0 {
		t.Fatalf("keygen of the next key = %d %q", code, errs)
	}
	v, err := fence.LoadVerifyKeys(filepath.Join(dir, "verify.keys"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kid := range []string{"old", "new"} {
		file := "signing.key"
		if kid == "old" {
			file = "signing.key.old"
		}
		s, err := fence.LoadSigningKey(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		sq := s.Sign(fence.Sequencer{Name: "jobs/x", Token: 7})
		if _, err := v.Verify(sq); err != nil {
			t.Errorf("a sequencer signed with key %q does not verify against the rotated verify.keys: %v", kid, err)
		}
	}
}
