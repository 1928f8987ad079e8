package fence_test

import (
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/seqd/seqd/fence"
)

func TestAccept(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fence.NewSigner("k1", priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := fence.NewVerifier(map[string]ed25519.PublicKey{"k1": pub})
	if err != nil {
		t.Fatal(err)
	}
	signed := s.Sign(fence.Sequencer{Name: "orders", Token: 9007199254740993})
	election := s.Sign(fence.Sequencer{Kind: fence.KindElection, Name: "orders", Token: 7})
	for _, c := range []struct {
		accept fence.Accept
		seq    string
		want   error
	}{
		{fence.Accept{Name: "orders"}, "orders@5", nil},
		{fence.Accept{Name: "orders"}, "billing@5", fence.ErrWrongLock},
		{fence.Accept{Name: "orders"}, "election:orders@5", fence.ErrWrongLock},
		{fence.Accept{Kind: fence.KindElection, Name: "orders"}, "election:orders@5", nil},
		{fence.Accept{Name: "orders"}, "orders@05", fence.ErrInvalidSequencer},
		{fence.Accept{Name: "orders", Verifier: v}, signed, nil},
		{fence.Accept{Name: "orders", Verifier: v}, "orders@5", fence.ErrUnsigned},
		{fence.Accept{Name: "orders", Verifier: v}, election, fence.ErrWrongLock},
		{fence.Accept{Name: "billing", Verifier: v}, signed, fence.ErrWrongLock},
		{fence.Accept{Name: "orders"}, signed, nil}, // parsed, signature not checked: no Verifier
	} {
		seq, err := c.accept.Sequencer(c.seq)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%+v.Sequencer(%.40q) = %v, want %v", c.accept, c.seq, err, c.want)
		}
		if err == nil && seq.Name != c.accept.Name {
			t.Errorf("%.40q: name %q", c.seq, seq.Name)
		}
	}
}
