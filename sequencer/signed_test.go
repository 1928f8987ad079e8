package sequencer_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/fence"
)

func newSigner(t testing.TB, kid string) (*fence.Signer, *fence.Verifier) {
	t.Helper()
	sk, vk, err := fence.GenerateKey(kid)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fence.ParseSigningKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := fence.ParseVerifyKeys(vk)
	if err != nil {
		t.Fatal(err)
	}
	v, err := fence.NewVerifier(keys)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// TestDaemonSignsSequencers: a daemon with a signing key hands out signed
// sequencers that a resource verifies with the public key alone; check
// verifies them too, and refuses one whose signature was moved to a higher
// token with 403 bad_signature.
func TestDaemonSignsSequencers(t *testing.T) {
	zkc := sharedZK.Get(t)
	signer, verifier := newSigner(t, "k1")
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), signer: signer})
	ctx := ctxT(t, 30*time.Second)
	l, err := d.client.Acquire(ctx, "signed", "A", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := verifier.Verify(l.Sequencer)
	if err != nil || seq != (fence.Sequencer{Name: "signed", Token: l.Token}) {
		t.Fatalf("the lease's sequencer %q verifies as %+v, %v; want signed, %d", l.Sequencer, seq, err, l.Token)
	}
	plain := fence.Sequencer{Name: "signed", Token: l.Token}.String()
	if ls := d.svc.Leases(); len(ls) != 1 || ls[0].Sequencer != plain {
		t.Fatalf("listed sequencer = %+v, want the unsigned %q: a signed one is for its holder only", ls, plain)
	}
	if r, err := d.client.CheckSequencer(ctx, l.Sequencer); err != nil || !r.Valid {
		t.Fatalf("check of the signed sequencer = %+v, %v; want valid", r, err)
	}
	if r, err := d.client.CheckSequencer(ctx, plain); err != nil || !r.Valid {
		t.Fatalf("check of the plain sequencer = %+v, %v; want valid", r, err)
	}
	sig := l.Sequencer[strings.LastIndexByte(l.Sequencer, '.')+1:]
	forged := fence.Sequencer{Name: "signed", Token: l.Token + 1}.String() + ".k1." + sig
	code, body := httpDo(t, "POST", d.srv.URL+"/v1/check", `{"sequencer":"`+forged+`"}`)
	if code != 403 || !strings.Contains(body, CodeBadSignature) {
		t.Fatalf("check of a forged sequencer = %d %s, want 403 bad_signature", code, body)
	}
}
