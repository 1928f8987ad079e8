package sequencer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// A daemon on a TLS-only connection (client certificate required) with a
// digest identity: leases work, and a plain client without the identity
// can read the holder but not delete its contender.
func TestDaemonOverMutualTLSWithAuth(t *testing.T) {
	c := zktest.StartT(t, testenv.Options{TLS: &testenv.TLSOptions{ClientAuth: true}})
	cert, key, err := c.CA.Issue("seqd", false)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := security.ClientTLS(c.CA.CertFile, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := startDaemon(t, daemonOpts{servers: c.SecureServers(), zkTLS: cfg, zkAuth: &zklock.DigestAuth{User: "seqd", Password: "daemon-secret"}})
	t.Logf("daemon started over mTLS in %v", time.Since(start).Round(time.Millisecond))
	l, err := d.client.Acquire(ctxT(t, 10*time.Second), "secure", "alice", 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	rogue := zkConn(t, c.Servers())
	lockNode := d.svc.Config().Root + "/secure"
	kids, _, err := rogue.Children(lockNode)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children of %s = %v, %v", lockNode, kids, err)
	}
	if err := rogue.Delete(lockNode+"/"+kids[0], -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("delete of the holder's contender without the identity: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := d.client.Renew(ctxT(t, 10*time.Second), "secure", l.LeaseID, l.Token, 0); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if res, err := d.client.Check(ctxT(t, 10*time.Second), "secure", l.Token); err != nil || !res.Valid {
		t.Fatalf("check: %+v, %v", res, err)
	}
}
