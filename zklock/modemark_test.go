package zklock

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The first grant on a root records its token mode; the other mode is then
// refused on that root (by other sessions and by the same one) and allowed
// on another root.
func TestTokenModeRecordedPerRoot(t *testing.T) {
	c := shared.Get(t)
	a, b := dial(t, c.Servers(), Options{}), dial(t, c.Servers(), Options{})
	const root, other = "/modes/one", "/modes/other"

	g, err := mutex(t, a, "job", WithRoot(root)).Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	g.Release(ctxT(t, 10*time.Second))
	data, _, err := a.conn.Get(root)
	if err != nil || string(data) != "seqd-token-mode=zxid" {
		t.Fatalf("root data = %q, %v; want seqd-token-mode=zxid", data, err)
	}

	for _, s := range []*Session{b, a} {
		m := mutex(t, s, "job", WithRoot(root), WithTokenMode(TokenVersion))
		for what, err := range map[string]error{
			"Acquire":        errOf(m.Acquire(ctxT(t, 10*time.Second))),
			"TryAcquire":     errOf(m.TryAcquire(ctxT(t, 10*time.Second))),
			"ClaimTokenMode": s.ClaimTokenMode(ctxT(t, 10*time.Second), root, TokenVersion),
		} {
			var te *TokenModeError
			if !errors.Is(err, ErrTokenModeMismatch) || !errors.As(err, &te) {
				t.Fatalf("%s in version mode on a zxid root: %v, want ErrTokenModeMismatch", what, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "zxid") || !strings.Contains(msg, "version") {
				t.Errorf("%s: %q does not name both modes", what, msg)
			}
		}
		if ch := children(t, s, root+"/job"); len(ch) != 0 {
			t.Errorf("refused acquires left contenders: %v", ch)
		}
	}

	// The control: version mode on a root of its own.
	m := mutex(t, b, "job", WithRoot(other), WithTokenMode(TokenVersion))
	for want := uint64(1); want <= 2; want++ {
		g, err := m.Acquire(ctxT(t, 10*time.Second))
		if err != nil {
			t.Fatalf("version mode on its own root: %v", err)
		}
		if g.Token != want {
			t.Errorf("version token = %d, want %d", g.Token, want)
		}
		g.Release(ctxT(t, 10*time.Second))
	}
	if err := a.ClaimTokenMode(ctxT(t, 10*time.Second), other, TokenZxid); !errors.Is(err, ErrTokenModeMismatch) {
		t.Errorf("zxid mode on the version root: %v, want ErrTokenModeMismatch", err)
	}
}

// A root made before modes were recorded (no data) takes the first mode
// claimed; a root holding other data is refused.
func TestTokenModeOnExistingRoot(t *testing.T) {
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	raw := rawConn(t, c.Servers())
	for _, p := range []string{"/modes-old", "/modes-foreign"} {
		if _, err := raw.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := raw.Set("/modes-foreign", []byte("something else"), -1); err != nil {
		t.Fatal(err)
	}
	if err := s.ClaimTokenMode(ctxT(t, 10*time.Second), "/modes-old", TokenVersion); err != nil {
		t.Fatalf("claim on a root without data: %v", err)
	}
	if data, _, _ := raw.Get("/modes-old"); string(data) != "seqd-token-mode=version" {
		t.Errorf("root data = %q, want seqd-token-mode=version", data)
	}
	if err := s.ClaimTokenMode(ctxT(t, 10*time.Second), "/modes-foreign", TokenZxid); !errors.Is(err, ErrTokenModeMismatch) {
		t.Errorf("claim on a root with foreign data: %v, want ErrTokenModeMismatch", err)
	}
}

func errOf(_ *Grant, err error) error { return err }
