package fence

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testSigner(t testing.TB, kid string) (*Signer, []byte) {
	t.Helper()
	signing, verify, err := GenerateKey(kid)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSigningKey(signing)
	if err != nil {
		t.Fatal(err)
	}
	return s, verify
}

func testVerifier(t testing.TB, lines ...[]byte) *Verifier {
	t.Helper()
	var all []byte
	for _, l := range lines {
		all = append(all, l...)
	}
	keys, err := ParseVerifyKeys(all)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(keys)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVerifyRefusesWhatSeqdDidNotSign: only a sequencer signed by a listed
// key verifies; a forged, moved or re-keyed one is refused with the error
// that says why, and a plain one is unsigned.
func TestVerifyRefusesWhatSeqdDidNotSign(t *testing.T) {
	s1, v1 := testSigner(t, "k1")
	other, _ := testSigner(t, "k1") // same kid, another key
	v := testVerifier(t, v1)

	good := s1.Sign(lockSeq("jobs/nightly", 42))
	if seq, err := v.Verify(good); err != nil || seq != lockSeq("jobs/nightly", 42) {
		t.Fatalf("Verify(%q) = %+v, %v; want jobs/nightly, 42", good, seq, err)
	}
	sig := good[strings.LastIndexByte(good, '.')+1:]
	huge := s1.Sign(lockSeq("jobs/nightly", 18446744073709551615))
	// The last character of a 64-byte signature carries 4 bits of it and 2
	// unused ones: the same bytes, spelt with an unused bit set.
	lastBits := strings.IndexByte(b64Alphabet, good[len(good)-1])
	unusedBit := good[:len(good)-1] + string(b64Alphabet[lastBits|1])
	for _, c := range []struct {
		what, seq string
		want      error
	}{
		{"plain", "jobs/nightly@42", ErrUnsigned},
		{"the signature moved to a higher token", "jobs/nightly@43.k1." + sig, ErrBadSignature},
		{"the signature moved to another lock", "jobs/other@42.k1." + sig, ErrBadSignature},
		{"a key nobody listed", other.Sign(lockSeq("jobs/nightly", 42)), ErrBadSignature},
		{"the lock's signature on an election's term", "election:jobs/nightly@42.k1." + sig, ErrBadSignature},
		{"the lock's signature on a semaphore's token", "semaphore:jobs/nightly@42.k1." + sig, ErrBadSignature},
		{"the lock's signature on a shared hold", "shared:jobs/nightly@42.k1." + sig, ErrBadSignature},
		{"an election's signature on the lock", "jobs/nightly@42.k1." + strings.Split(s1.Sign(Sequencer{Kind: KindElection, Name: "jobs/nightly", Token: 42}), ".")[2], ErrBadSignature},
		{"the signature spelt with an unused bit set", unusedBit, ErrBadSignature},
		{"a version-1 signature", "jobs/nightly@42.k1." + v1Signature(s1, "jobs/nightly@42"), ErrBadSignature},
		{"an unknown kid", "jobs/nightly@42.k2." + sig, ErrBadSignature},
		{"a flipped signature byte", good[:len(good)-2] + flip(good[len(good)-2]) + good[len(good)-1:], ErrBadSignature},
		{"a short signature", "jobs/nightly@42.k1.abc", ErrInvalidSequencer},
		{"no signature part", "jobs/nightly@42.k1", ErrInvalidSequencer},
		{"a bad kid", "jobs/nightly@42.k!." + sig, ErrInvalidSequencer},
		{"a bad token", "jobs/nightly@042.k1." + sig, ErrInvalidSequencer},
	} {
		if _, err := v.Verify(c.seq); !errors.Is(err, c.want) {
			t.Errorf("%s: Verify(%q) = %v, want %v", c.what, c.seq, err, c.want)
		}
	}
	if seq, err := v.Verify(huge); err != nil || seq.Token != 18446744073709551615 {
		t.Errorf("a huge token seqd signed = %d, %v; want it verified", seq.Token, err)
	}
	for _, k := range []Kind{KindShared, KindSemaphore, KindElection} {
		want := Sequencer{Kind: k, Name: "jobs/nightly", Token: 42}
		if got, err := v.Verify(s1.Sign(want)); err != nil || got != want {
			t.Errorf("Verify(Sign(%+v)) = %+v, %v", want, got, err)
		}
	}
}

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func lockSeq(name string, token uint64) Sequencer { return Sequencer{Name: name, Token: token} }

// v1Signature is a signature made the way the first version of signed
// sequencers was (no kind, another context): it must not verify now.
func v1Signature(s *Signer, plain string) string {
	return base64.RawURLEncoding.EncodeToString(ed25519.Sign(s.key, []byte("seqd-sequencer-v1:"+plain)))
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// TestKeyRotation: while both keys are listed, sequencers of both verify;
// once the old one is removed, only the new one's do.
func TestKeyRotation(t *testing.T) {
	old, vOld := testSigner(t, "2025")
	cur, vCur := testSigner(t, "2026")
	both := testVerifier(t, vOld, []byte("# rotated in 2026\n\n"), vCur)
	for _, s := range []*Signer{old, cur} {
		if _, err := both.Verify(s.Sign(lockSeq("a", 7))); err != nil {
			t.Errorf("key %s while listed: %v", s.KeyID(), err)
		}
	}
	after := testVerifier(t, vCur)
	if _, err := after.Verify(old.Sign(lockSeq("a", 7))); !errors.Is(err, ErrBadSignature) {
		t.Errorf("old key after rotation = %v, want ErrBadSignature", err)
	}
	if _, err := after.Verify(cur.Sign(lockSeq("a", 8))); err != nil {
		t.Errorf("new key after rotation = %v", err)
	}
}

// TestParseSequencerAcceptsSigned: a resource without keys reads the kind,
// name and token of a signed sequencer.
func TestParseSequencerAcceptsSigned(t *testing.T) {
	s, _ := testSigner(t, "k")
	want := Sequencer{Kind: KindElection, Name: "a/b", Token: 9}
	if got, err := ParseSequencer(s.Sign(want)); err != nil || got != want {
		t.Fatalf("ParseSequencer(signed) = %+v, %v", got, err)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	signing, verify, err := GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	sk := filepath.Join(dir, "signing.key")
	if err := os.WriteFile(sk, signing, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigningKey(sk); err == nil || !strings.Contains(err.Error(), "readable by anyone") {
		t.Errorf("a world-readable signing key = %v, want refused", err)
	}
	os.Chmod(sk, 0o600)
	s, err := LoadSigningKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	vk := filepath.Join(dir, "verify.keys")
	os.WriteFile(vk, verify, 0o644)
	v, err := LoadVerifyKeys(vk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(s.Sign(lockSeq("x", 1))); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "k1\n", "k1 notbase64!\n", "k1 AAAA\n", "k! " + strings.Fields(string(verify))[1] + "\n", string(verify) + string(verify)} {
		if _, err := ParseVerifyKeys([]byte(bad)); err == nil {
			t.Errorf("ParseVerifyKeys(%q) = nil error", bad)
		}
	}
	// The verify line keygen writes is the signer's public key.
	if !s.Public().Equal(ed25519.PublicKey(mustKey(t, verify))) {
		t.Error("the verify line is not the signer's public key")
	}
}

func mustKey(t *testing.T, line []byte) []byte {
	t.Helper()
	keys, err := ParseVerifyKeys(line)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		return k
	}
	return nil
}

// FuzzVerify: whatever the input, Verify never admits a sequencer that the
// signer did not produce, and never panics.
func FuzzVerify(f *testing.F) {
	s, line := testSigner(f, "k1")
	v := testVerifier(f, line)
	good := s.Sign(lockSeq("a/b", 12))
	f.Add(good)
	f.Add(s.Sign(Sequencer{Kind: KindElection, Name: "a/b", Token: 12}))
	f.Add("a/b@12")
	f.Add("a/b@12.k1.")
	f.Add(good[:len(good)-1] + "A")
	f.Add("@.k1." + strings.Repeat("A", 86))
	f.Fuzz(func(t *testing.T, seq string) {
		got, err := v.Verify(seq)
		if err != nil {
			if !errors.Is(err, ErrUnsigned) && !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrInvalidSequencer) {
				t.Fatalf("Verify(%q) = %v: not one of the documented errors", seq, err)
			}
			return
		}
		if again := s.Sign(got); again != seq {
			t.Fatalf("Verify(%q) admitted %+v, which the signer spells %q", seq, got, again)
		}
	})
}

// BenchmarkAdmitSigned compares, in one run, admitting a holder's repeated
// signed sequencer (verify, served from the cache, then Admit) with a plain
// one (parse, then Admit), and reports first-time verification apart.
func BenchmarkAdmitSigned(b *testing.B) {
	s, line := testSigner(b, "k1")
	v := testVerifier(b, line)
	plain, signed := lockSeq("jobs/nightly", 42).String(), s.Sign(lockSeq("jobs/nightly", 42))
	f := New(nil)
	run := func(n int, admit func() error) float64 {
		b.Helper()
		start := nanotime()
		for range n {
			if err := admit(); err != nil {
				b.Fatal(err)
			}
		}
		return float64(nanotime()-start) / float64(n)
	}
	unsignedAdmit := func() error {
		seq, err := ParseSequencer(plain)
		if err != nil {
			return err
		}
		return f.Admit(seq.Name, seq.Token)
	}
	signedAdmit := func() error {
		seq, err := v.Verify(signed)
		if err != nil {
			return err
		}
		return f.Admit(seq.Name, seq.Token)
	}
	var plainNs, signedNs float64
	for b.Loop() {
		plainNs += run(1000, unsignedAdmit)
		signedNs += run(1000, signedAdmit)
	}
	b.ReportMetric(plainNs/float64(b.N), "ns/unsigned-admit")
	b.ReportMetric(signedNs/float64(b.N), "ns/signed-admit")
	b.ReportMetric(signedNs/plainNs, "signed/unsigned")
	first := 0.0
	const fresh = 200
	for i := range fresh {
		seq := s.Sign(lockSeq("jobs/nightly", uint64(1000+i)))
		start := nanotime()
		if _, err := v.Verify(seq); err != nil {
			b.Fatal(err)
		}
		first += float64(nanotime() - start)
	}
	b.ReportMetric(first/fresh, "ns/first-verify")
}

func nanotime() int64 { return time.Now().UnixNano() }
