package zklock

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

func clientTLS(t *testing.T, ca *testenv.CA, withCert bool) *tls.Config {
	t.Helper()
	var cert, key string
	if withCert {
		var err error
		if cert, key, err = ca.Issue("seqd-client", false); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := security.ClientTLS(ca.CertFile, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A session over TLS to a standalone server grants and releases, with
// and without a client certificate required; without the certificate that
// mTLS requires, or trusting another CA, no session is established.
func TestTLSStandalone(t *testing.T) {
	for _, mtls := range []bool{false, true} {
		name := map[bool]string{false: "server-auth", true: "mutual"}[mtls]
		t.Run(name, func(t *testing.T) {
			c := zktest.StartT(t, testenv.Options{TLS: &testenv.TLSOptions{ClientAuth: mtls}})
			start := time.Now()
			dial(t, c.Servers(), Options{})
			plain := time.Since(start)
			start = time.Now()
			dial(t, c.SecureServers(), Options{TLS: clientTLS(t, c.CA, mtls)})
			first := time.Since(start) // includes the server's first TLS set-up
			start = time.Now()
			s := dial(t, c.SecureServers(), Options{TLS: clientTLS(t, c.CA, mtls)})
			t.Logf("session established over TLS (%s) in %v (first: %v), over the plain port in %v",
				name, time.Since(start).Round(time.Millisecond), first.Round(time.Millisecond), plain.Round(time.Millisecond))
			g, err := mutex(t, s, "tls/"+name).Acquire(ctxT(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if g.Token == 0 {
				t.Error("token 0")
			}
			if err := g.Release(ctxT(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}

			other, err := testenv.NewCA(t.TempDir(), "other")
			if err != nil {
				t.Fatal(err)
			}
			refused := map[string]*tls.Config{"another CA": clientTLS(t, other, mtls)}
			if mtls {
				refused["no client certificate"] = clientTLS(t, c.CA, false)
			}
			for what, cfg := range refused {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				s, err := Dial(ctx, c.SecureServers(), Options{TLS: cfg, SessionTimeout: 4 * time.Second})
				cancel()
				if err == nil {
					s.Close()
					t.Errorf("%s: session established, want refused", what)
				} else if !errors.Is(err, ErrUnavailable) {
					t.Errorf("%s: %v, want ErrUnavailable", what, err)
				}
			}
		})
	}
}

// A 3-node TLS ensemble loses its leader while a lock is held: the holder
// is either kept (its session moves to another member) or declared lost,
// never both, and the next grant's token is higher.
func TestTLSEnsembleLeaderKill(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{Servers: 3, TLS: &testenv.TLSOptions{ClientAuth: true}})
	start := time.Now()
	a := dial(t, c.SecureServers(), Options{TLS: clientTLS(t, c.CA, true)})
	t.Logf("mTLS session with the ensemble established in %v", time.Since(start).Round(time.Millisecond))
	b := dial(t, c.SecureServers(), Options{TLS: clientTLS(t, c.CA, true)})
	ma, mb := mutex(t, a, "tls/failover"), mutex(t, b, "tls/failover")
	g1, err := ma.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	leader.Kill()

	// The holder's session either survives (it answers again) or the grant
	// is declared lost; either way b gets the lock after a lets go.
	zktest.Eventually(t, 30*time.Second, "the holder's session to answer again or its grant to be lost", func() bool {
		return g1.Err() != nil || (a.Connected() && a.LastHeard().After(killed))
	})
	kept := g1.Err() == nil
	t.Logf("leader killed: holder %s after %v", map[bool]string{true: "kept", false: "lost"}[kept], time.Since(killed).Round(time.Millisecond))
	if err := g1.Release(ctxT(t, 20*time.Second)); kept && err != nil {
		// The connection may move again after the failover: the node is
		// then left to the session's janitor, and b's grant below shows
		// that it goes.
		t.Logf("release of the kept grant: %v (left to the janitor)", err)
	}
	g2, err := mb.Acquire(ctxT(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover: next grant %v after the leader was killed", time.Since(killed).Round(time.Millisecond))
	if g2.Token <= g1.Token {
		t.Fatalf("token after failover %d, want above %d", g2.Token, g1.Token)
	}
	g2.Release(ctxT(t, 10*time.Second))
}
