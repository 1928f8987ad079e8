package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// seqd lock records its token mode on the root: the other mode exits 64
// with a sentence naming both, and runs on another root.
func TestLockRefusesTheOtherTokenMode(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	env := []string{"SEQD_ZK=" + c.ConnectString()}
	if code, _, stderr := runLockT(t, time.Minute, env, "--root", "/modes", "job", "--", "true"); code != 0 {
		t.Fatalf("zxid mode: exit %d; stderr: %s", code, stderr)
	}
	version := append(env, "SEQD_TOKEN_MODE=version")
	code, _, stderr := runLockT(t, time.Minute, version, "--root", "/modes", "job", "--", "true")
	if code != ExitUsage || !strings.Contains(stderr, "zxid") || !strings.Contains(stderr, "version") {
		t.Errorf("version mode on the zxid root: exit %d, stderr %q; want %d and both modes named", code, stderr, ExitUsage)
	}
	if code, _, stderr := runLockT(t, time.Minute, version, "--root", "/modes-version", "job", "--", "true"); code != 0 {
		t.Errorf("version mode on its own root: exit %d; stderr: %s", code, stderr)
	}
}

// --zk-auth-file: a file others can read is a usage error; with a good one
// the nodes seqd lock creates carry the digest ACL, and a plain client
// cannot delete them.
func TestLockZKAuthFile(t *testing.T) {
	t.Parallel()
	c := zktest.StartT(t, testenv.Options{})
	dir := t.TempDir()
	auth := filepath.Join(dir, "zk-auth")
	if err := os.WriteFile(auth, []byte("seqd:lock-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(auth, 0o644)
	env := []string{"SEQD_ZK=" + c.ConnectString(), "SEQD_ZK_AUTH_FILE=" + auth}
	if code, _, stderr := runLockT(t, time.Minute, env, "job", "--", "true"); code != ExitUsage {
		t.Errorf("auth file readable by others: exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
	}
	os.Chmod(auth, 0o600)
	if code, _, stderr := runLockT(t, time.Minute, env, "--root", "/secured", "job", "--", "true"); code != 0 {
		t.Fatalf("with the auth file: exit %d; stderr: %s", code, stderr)
	}
	conn := zkConn(t, c)
	acl, _, err := conn.GetACL("/secured")
	if err != nil {
		t.Fatal(err)
	}
	if len(acl) != 2 || acl[0].Scheme != "digest" || acl[1].Scheme != "world" || acl[1].Perms != 1 {
		t.Errorf("ACL of the root = %+v, want digest ALL + world READ", acl)
	}
	if err := conn.Delete("/secured", -1); err == nil {
		t.Error("a plain client deleted the root")
	}
	if code, _, stderr := runLockT(t, time.Minute, env, "--zk-acl", "world", "job", "--", "true"); code != ExitUsage {
		t.Errorf("--zk-acl world: exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
	}
}
