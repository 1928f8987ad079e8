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
