package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/sequencer/policy"
)

// TestInitThenKeygenRotates: the verify.keys seqd init writes is one that
// seqd keygen adds a key to, as after its own first run.
func TestInitThenKeygenRotates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code, _, errs := runCLI(ctx, "init", "--dir", dir); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	if err := os.Rename(filepath.Join(dir, "signing.key"), filepath.Join(dir, "signing.key.old")); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(ctx, "keygen", "--dir", dir, "--kid", "next"); code != 0 {
		t.Fatalf("keygen into seqd init's directory: exit %d %s", code, errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "verify.keys"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := fence.ParseVerifyKeys(b)
	if err != nil || len(keys) != 2 {
		t.Fatalf("verify.keys after the rotation: %d keys, %v; want init's and keygen's", len(keys), err)
	}
}

// A directory another user owns is theirs to fill: they could replace
// verify.keys or point client.env at their own address after seqd init
// wrote it, or before seqd dev --secure reads it. Both refuse it, and one
// others can write, as seqd keygen does; a parent anyone can write (and
// so rename the directory in) is warned about.
func TestInitAndDevSecureRefuseDirectoriesOfOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test gives a directory to another user, which needs root (CI runs as root)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	theirs := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	// A directory seqd init wrote, then handed to another user.
	given := filepath.Join(t.TempDir(), "given")
	if code, _, errs := runCLI(ctx, "init", "--dir", given); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	if err := os.Chown(given, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(t.TempDir(), "open")
	if code, _, errs := runCLI(ctx, "init", "--dir", open); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"init into another user's directory", []string{"init", "--dir", theirs}, "owned by uid 65534"},
		{"dev --secure on another user's directory", []string{"dev", "--secure", "--dir", theirs}, "owned by uid 65534"},
		{"dev --secure on init's files in another user's directory", []string{"dev", "--secure", "--dir", given}, "owned by uid 65534"},
		{"dev --secure on init's files in a directory others can write", []string{"dev", "--secure", "--dir", open}, "can be written by others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(ctx, tc.args...)
			if code != ExitUsage || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d %q, want %d saying %q", code, errs, ExitUsage, tc.want)
			}
		})
	}
	if ents, _ := os.ReadDir(theirs); len(ents) != 0 {
		t.Fatalf("another user's directory holds %d files after the refusals, want none", len(ents))
	}

	// A parent anyone may write to: written, with a warning naming it.
	parent := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(parent, 0o777) // whatever the umask
	code, _, errs := runCLI(ctx, "init", "--dir", filepath.Join(parent, "mine"))
	if code != 0 || !strings.Contains(errs, "warning") || !strings.Contains(errs, parent) {
		t.Fatalf("init under a world-writable parent: exit %d %q, want 0 with a warning naming %s", code, errs, parent)
	}
	// A sticky one (/tmp): others cannot rename what is ours in it.
	sticky := filepath.Join(t.TempDir(), "sticky")
	os.Mkdir(sticky, 0o777)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	if code, _, errs := runCLI(ctx, "init", "--dir", filepath.Join(sticky, "mine")); code != 0 || strings.Contains(errs, "warning") {
		t.Fatalf("init under a sticky parent: exit %d %q, want 0 and no warning", code, errs)
	}
}

// The names given to seqd init are the ones client.env's SEQD_ADDR may
// use: the serve command it prints serves /v1/ under each (--host), and
// nothing more for IP addresses, which need no flag.
func TestInitServeCommandNamesItsHosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "named")
	code, out, errs := runCLI(ctx, "init", "--dir", dir, "--listen", "0.0.0.0:7443", "--host", "seqd.internal.example", "--host", "10.1.2.3", "--host", "seqd2.internal.example")
	if code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	args := strings.Join(printedCommand(t, out, "serve"), " ")
	if !strings.Contains(args, "--host seqd.internal.example --host seqd2.internal.example") || strings.Contains(args, "--host 10.1.2.3") {
		t.Fatalf("the printed serve command %q: want --host for each name, none for the address", args)
	}
	env, _ := os.ReadFile(filepath.Join(dir, lockdown.ClientEnvFile))
	if !strings.Contains(string(env), "https://seqd.internal.example:7443") {
		t.Fatalf("client.env %q: want SEQD_ADDR naming seqd.internal.example", env)
	}
}

// seqd init --identity writes a client certificate per identity, naming it
// as the daemon reads certificates: a URI in a URI SAN, a plain name as
// the CN; a name the policy could not hold is exit 64.
func TestInitIssuesACertificatePerIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "ids")
	code, out, errs := runCLI(ctx, "init", "--dir", dir, "--identity", "spiffe://example.org/team-a", "--identity", "team-b")
	if code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	for i, want := range []string{"spiffe://example.org/team-a", "team-b"} {
		cf, kf := lockdown.IdentityCertFiles(i)
		b, err := os.ReadFile(filepath.Join(dir, cf))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := policy.CertIdentity(cert); got != want {
			t.Errorf("%s names %q, want %q", cf, got, want)
		}
		if st, err := os.Stat(filepath.Join(dir, kf)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v; want mode 0600", kf, err)
		}
		if !strings.Contains(out, cf+", "+kf) {
			t.Errorf("init's summary does not list %s:\n%s", cf, out)
		}
	}
	if code, _, errs := runCLI(ctx, "init", "--dir", filepath.Join(t.TempDir(), "bad"), "--identity", "two words"); code != 64 || !strings.Contains(errs, "has a space") {
		t.Fatalf("init --identity 'two words': exit %d %s, want 64 naming the space", code, errs)
	}
	for _, id := range []string{"admin", "anonymous"} {
		dir := filepath.Join(t.TempDir(), "reserved")
		code, _, errs := runCLI(ctx, "init", "--dir", dir, "--identity", id)
		if code != 64 || !strings.Contains(errs, "refuses a certificate that names it") {
			t.Fatalf("init --identity %s: exit %d %s, want 64 saying the daemon refuses such a certificate", id, code, errs)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("init --identity %s wrote %s (%v)", id, dir, err)
		}
	}
}
