package sequencer_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/store"
)

// TestListingCarriesNoSignedSequencer: a signed sequencer is a bearer
// capability, so GET /v1/locks, which needs no lease id, must not hand one
// out: what it lists is refused by a store that admits signed sequencers.
func TestListingCarriesNoSignedSequencer(t *testing.T) {
	zkc := sharedZK.Get(t)
	signer, verifier := newSigner(t, "k1")
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), signer: signer})
	if code, body := httpDo(t, "POST", d.srv.URL+"/v1/locks/jobs/orders/acquire", `{"owner":"holder"}`); code != 200 {
		t.Fatalf("acquire: %d %s", code, body)
	}
	code, body := httpDo(t, "GET", d.srv.URL+"/v1/locks", "")
	if code != 200 {
		t.Fatalf("listing: %d %s", code, body)
	}
	var list struct {
		Locks []map[string]any `json:"locks"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Locks) != 1 {
		t.Fatalf("listing %s: %v, want one lock", body, err)
	}
	seq, _ := list.Locks[0]["sequencer"].(string)
	if _, err := verifier.Verify(seq); !errors.Is(err, fence.ErrUnsigned) {
		t.Fatalf("the listing's sequencer %q verifies (err %v): anyone who lists the locks can write as their holders", seq, err)
	}
}

// TestGuardAdmitsOnlyItsKind: a store key guarded by the lock jobs/orders
// admits the lock's signed sequencer, and refuses those of an election and
// a semaphore of the same name (their terms and tokens follow other counts).
func TestGuardAdmitsOnlyItsKind(t *testing.T) {
	zkc := sharedZK.Get(t)
	signer, verifier := newSigner(t, "k1")
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), signer: signer})
	grant := func(path, body string) string {
		t.Helper()
		code, out := httpDo(t, "POST", d.srv.URL+path, body)
		if code != 200 {
			t.Fatalf("POST %s: %d %s", path, code, out)
		}
		var l struct{ Sequencer string }
		json.Unmarshal([]byte(out), &l)
		return l.Sequencer
	}
	election := grant("/v1/elections/jobs/orders/campaign", `{"owner":"e"}`)
	semaphore := grant("/v1/semaphores/jobs/orders/acquire", `{"owner":"s","limit":2}`)
	lock := grant("/v1/locks/jobs/orders/acquire", `{"owner":"l"}`)

	dir := t.TempDir()
	st, err := store.Open(store.Options{Dir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := store.NewHandler(st, nil, nil, nil)
	h.RequireSigned(verifier, []store.Guard{{Prefix: "orders/", Name: "jobs/orders"}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	put := func(seq string) (int, string) {
		req, _ := http.NewRequest("PUT", srv.URL+"/v1/kv/orders/1", strings.NewReader("v"))
		req.Header.Set(store.HeaderSequencer, seq)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	for _, c := range []struct {
		kind, seq string
	}{{"election", election}, {"semaphore", semaphore}} {
		if code, body := put(c.seq); code != http.StatusForbidden || !strings.Contains(body, "wrong_lock") {
			t.Errorf("the %s's sequencer %q on a key guarded by the lock: %d %s, want 403 wrong_lock", c.kind, c.seq, code, body)
		}
	}
	if code, body := put(lock); code != 200 {
		t.Errorf("the lock's own sequencer %q: %d %s, want 200", lock, code, body)
	}
	_ = os.Remove
}
