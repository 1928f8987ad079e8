package store

import (
	"net/http"
	"strings"
	"testing"

	"github.com/seqd/seqd/fence"
)

func signerAndVerifier(t *testing.T, kids ...string) ([]*fence.Signer, *fence.Verifier) {
	t.Helper()
	var lines []byte
	var signers []*fence.Signer
	for _, kid := range kids {
		sk, vk, err := fence.GenerateKey(kid)
		if err != nil {
			t.Fatal(err)
		}
		s, err := fence.ParseSigningKey(sk)
		if err != nil {
			t.Fatal(err)
		}
		signers = append(signers, s)
		lines = append(lines, vk...)
	}
	keys, err := fence.ParseVerifyKeys(lines)
	if err != nil {
		t.Fatal(err)
	}
	v, err := fence.NewVerifier(keys)
	if err != nil {
		t.Fatal(err)
	}
	return signers, v
}

// TestOneHugeTokenPoisonsAnUnsignedStore is the control: a store that takes
// any number is locked out for ever by one request, even a GET of a key
// that does not exist.
func TestOneHugeTokenPoisonsAnUnsignedStore(t *testing.T) {
	srv, _, _ := newServer(t, FenceFull)
	do(t, srv, http.MethodGet, "k", "", HeaderToken, "18446744073709551615")
	if r := do(t, srv, http.MethodPut, "k", "legit", tok(5)...); r.status != http.StatusConflict {
		t.Fatalf("a legitimate write after the poisoning = %d, want 409: the control must show the attack works", r.status)
	}
}

// TestSignedStoreRefusesWhatSeqdDidNotSign: with signed sequencers
// required, a bare token, an unsigned, forged, moved, unknown-key or
// other-lock sequencer is 403 with the reason, and no max moves; the
// holder's own signed sequencer works, with either of two listed keys.
func TestSignedStoreRefusesWhatSeqdDidNotSign(t *testing.T) {
	srv, s, _ := newServer(t, FenceFull)
	signers, v := signerAndVerifier(t, "old", "new")
	outsider, _ := signerAndVerifier(t, "new")
	srv.Config.Handler.(*Handler).RequireSigned(v, []Guard{{Prefix: "orders/", Name: "jobs/orders"}, {Prefix: "leader/", Kind: fence.KindElection, Name: "scheduler"}})
	old, cur := signers[0], signers[1]

	if r := do(t, srv, http.MethodPut, "orders/1", "a", HeaderSequencer, cur.Sign(lockSeq("jobs/orders", 10))); r.status != http.StatusOK {
		t.Fatalf("the holder's signed write = %d %s", r.status, r.body)
	}
	good := cur.Sign(lockSeq("jobs/orders", 10))
	sig := good[strings.LastIndexByte(good, '.')+1:]
	for _, c := range []struct {
		what, method string
		headers      []string
		code         string
	}{
		{"a bare token", http.MethodPut, tok(1 << 62), "unsigned"},
		{"a bare token on a GET", http.MethodGet, []string{HeaderToken, "18446744073709551615"}, "unsigned"},
		{"an unsigned sequencer", http.MethodPut, []string{HeaderSequencer, "jobs/orders@99"}, "unsigned"},
		{"a signature moved to a higher token", http.MethodPut, []string{HeaderSequencer, "jobs/orders@18446744073709551615.new." + sig}, "bad_signature"},
		{"a key nobody listed", http.MethodPut, []string{HeaderSequencer, outsider[0].Sign(lockSeq("jobs/orders", 99))}, "bad_signature"},
		{"an unknown kid", http.MethodPut, []string{HeaderSequencer, "jobs/orders@10.gone." + sig}, "bad_signature"},
		{"another lock's sequencer", http.MethodDelete, []string{HeaderSequencer, cur.Sign(lockSeq("jobs/other", 1<<40))}, "wrong_lock"},
		{"an election's term of the same name", http.MethodPut, []string{HeaderSequencer, cur.Sign(fence.Sequencer{Kind: fence.KindElection, Name: "jobs/orders", Token: 1 << 40})}, "wrong_lock"},
		{"a semaphore's token of the same name", http.MethodPut, []string{HeaderSequencer, cur.Sign(fence.Sequencer{Kind: fence.KindSemaphore, Name: "jobs/orders", Token: 1 << 40})}, "wrong_lock"},
		{"a shared hold of the same lock", http.MethodPut, []string{HeaderSequencer, cur.Sign(fence.Sequencer{Kind: fence.KindShared, Name: "jobs/orders", Token: 1 << 40})}, "wrong_lock"},
	} {
		r := do(t, srv, c.method, "orders/1", "x", c.headers...)
		if r.status != http.StatusForbidden || r.err.Code != c.code {
			t.Errorf("%s: %d %q, want 403 %s", c.what, r.status, r.body, c.code)
		}
		if m := s.Max("orders/1"); m != 10 {
			t.Fatalf("%s moved the max to %d, want 10", c.what, m)
		}
	}
	wantValue(t, s, "orders/1", "a", 10)
	// Rotation: the old key verifies while it is listed.
	if r := do(t, srv, http.MethodPut, "orders/1", "b", HeaderSequencer, old.Sign(lockSeq("jobs/orders", 11))); r.status != http.StatusOK {
		t.Fatalf("a write signed by the old, still listed key = %d %s", r.status, r.body)
	}
	// A key under no guard takes any lock's signed sequencer; a plain GET
	// without a header is still a read.
	if r := do(t, srv, http.MethodPut, "free", "c", HeaderSequencer, cur.Sign(lockSeq("anything", 3))); r.status != http.StatusOK {
		t.Fatalf("an unguarded key = %d %s", r.status, r.body)
	}
	if r := do(t, srv, http.MethodGet, "free", ""); r.status != http.StatusOK || r.body != "c" {
		t.Fatalf("a plain read = %d %q", r.status, r.body)
	}
	// A key guarded by an election takes its leader's term, and not the
	// lock of the same name.
	term := fence.Sequencer{Kind: fence.KindElection, Name: "scheduler", Token: 7}
	if r := do(t, srv, http.MethodPut, "leader/x", "d", HeaderSequencer, cur.Sign(term)); r.status != http.StatusOK {
		t.Fatalf("the leader's term on a key guarded by its election = %d %s", r.status, r.body)
	}
	if r := do(t, srv, http.MethodPut, "leader/x", "e", HeaderSequencer, cur.Sign(lockSeq("scheduler", 8))); r.status != http.StatusForbidden || r.err.Code != "wrong_lock" {
		t.Fatalf("the lock scheduler's sequencer on a key guarded by the election = %d %s, want 403 wrong_lock", r.status, r.body)
	}
}

func lockSeq(name string, token uint64) fence.Sequencer {
	return fence.Sequencer{Name: name, Token: token}
}

func TestParseGuard(t *testing.T) {
	for in, want := range map[string]Guard{
		"orders/=jobs/orders":        {Prefix: "orders/", Name: "jobs/orders"},
		"leader/=election:scheduler": {Prefix: "leader/", Kind: fence.KindElection, Name: "scheduler"},
		"pool/=semaphore:pool":       {Prefix: "pool/", Kind: fence.KindSemaphore, Name: "pool"},
	} {
		if g, err := ParseGuard(in); err != nil || g != want {
			t.Errorf("ParseGuard(%q) = %+v, %v; want %+v", in, g, err, want)
		}
	}
	for _, bad := range []string{"orders/", "orders/=", "x=bad//lock", "=a@b", "x=lock:a", "x=leader:a", "x=election:"} {
		if _, err := ParseGuard(bad); err == nil {
			t.Errorf("ParseGuard(%q) = nil error", bad)
		}
	}
}
