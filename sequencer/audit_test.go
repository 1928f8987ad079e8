package sequencer_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// auditLines reads the audit file at path as events.
func auditLines(t *testing.T, path string) []sequencer.AuditEvent {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []sequencer.AuditEvent
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var e sequencer.AuditEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// The audit file is the one at its path, never another: a planted
// symbolic link and a file others can write are refused at open, and a
// file removed or moved away (a rotation, a mistake) is noticed at the
// next line, which goes to a new file at the path.
func TestAuditFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, []byte("precious\n"), 0o600)
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if a, err := sequencer.OpenAuditFile(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		a.Close()
		t.Errorf("a symbolic link: %v, want refused as one", err)
	}
	open := filepath.Join(dir, "open.log")
	os.WriteFile(open, nil, 0o600)
	os.Chmod(open, 0o666)
	if a, err := sequencer.OpenAuditFile(open); err == nil || !strings.Contains(err.Error(), "writable by others") {
		a.Close()
		t.Errorf("a file others can write: %v, want refused", err)
	}

	path := filepath.Join(dir, "audit.log")
	a, err := sequencer.OpenAuditFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new audit file: %v %v, want mode 600", st, err)
	}
	line := func(name string) {
		t.Helper()
		if err := a.Record(sequencer.AuditEvent{Time: time.Now(), Event: sequencer.AuditGrant, Kind: "lock", Name: name, Token: 1}, true); err != nil {
			t.Fatalf("record %s: %v", name, err)
		}
	}
	line("one")
	if err := os.Rename(path, path+".1"); err != nil { // logrotate's move
		t.Fatal(err)
	}
	line("two")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	line("three")
	got := func(p string) (names []string) {
		for _, e := range auditLines(t, p) {
			names = append(names, e.Name)
		}
		return names
	}
	if g := strings.Join(got(path+".1"), ","); g != "one" {
		t.Errorf("the moved file holds %s, want one", g)
	}
	if g := strings.Join(got(path), ","); g != "three" {
		t.Errorf("the file at the path holds %s, want three (two went to the file removed)", g)
	}
	// A symbolic link planted where the file was removed is not followed:
	// the line is refused, the target untouched.
	os.Remove(path)
	os.Symlink(target, path)
	if err := a.Record(sequencer.AuditEvent{Time: time.Now(), Event: sequencer.AuditBreak, Name: "four"}, true); err == nil {
		t.Error("a line written through a planted symbolic link, want refused")
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Errorf("the link's target now holds %q", b)
	}
}

// A break whose audit line cannot be written and synced (here: a full
// disk, /dev/full) breaks nothing: 503, the holder still holds. A grant
// whose line is lost is still granted, and counted.
func TestBreakRefusedWithoutItsAuditLine(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("/dev/full: %v", err)
	}
	defer full.Close()
	zkc := sharedZK.Get(t)
	reg := prometheus.NewRegistry()
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), adminToken: testAdminToken, audit: sequencer.NewAuditLog(full, full.Sync), reg: reg})
	ctx := ctxT(t, time.Minute)
	userc, _ := client.New(d.srv.URL, client.WithoutEnv())
	admin, _ := client.New(d.srv.URL, client.WithoutEnv(), client.WithAPIToken(testAdminToken))
	held, err := userc.Acquire(ctx, "audited", client.Owner("holder"), client.TTL(time.Minute))
	if err != nil {
		t.Fatalf("a grant whose audit line is lost: %v, want granted", err)
	}
	if got := counter(t, reg, "seqd_audit_failures_total", map[string]string{"event": "grant"}); got != 1 {
		t.Errorf("seqd_audit_failures_total{event=grant} = %v, want 1", got)
	}
	_, err = admin.Break(ctx, api.Locks, "audited", "stuck", held.Token)
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "audit") {
		t.Fatalf("break without its audit line: %v, want 503 saying the audit line could not be written", err)
	}
	if st, err := userc.Status(ctx, "audited"); err != nil || !st.Held || st.Token != held.Token {
		t.Fatalf("after the refused break: %+v %v, want still held with token %d", st, err, held.Token)
	}
	if _, err := userc.Renew(ctx, held, 0); err != nil {
		t.Fatalf("renew after the refused break: %v, want the lease alive", err)
	}
	if got := counter(t, reg, "seqd_audit_failures_total", map[string]string{"event": "break"}); got != 1 {
		t.Errorf("seqd_audit_failures_total{event=break} = %v, want 1", got)
	}
}
