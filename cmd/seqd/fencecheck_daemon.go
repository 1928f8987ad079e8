package main

import (
	"context"
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// fenceCheckTTL is the TTL of fence-check's leases: long enough for a case
// with a restart of the resource, short enough that a run killed before it
// released them leaves nothing held for long.
const fenceCheckTTL = time.Minute

// grant is a lease as fence-check uses it: the token and sequencer go to
// the resource; the lease id and token release it.
type grant struct {
	lock      string
	token     uint64
	sequencer string // signed when the daemon signs
	leaseID   string
}

// grantor hands out real grants of the daemon. It is all fence-check asks
// of the daemon's client, so that the client can change behind it.
type grantor interface {
	acquire(ctx context.Context, lock, owner string) (grant, error)
	release(ctx context.Context, g grant) error
}

// daemonGrantor is a grantor over the daemon's HTTP API.
type daemonGrantor struct{ c *client.Client }

// newGrantor builds the client from --addr, --api-token-file, --cacert,
// --cert and --key, as the client commands do.
func newGrantor(c *cli.Context) (grantor, error) {
	cl, err := newClient(c)
	if err != nil {
		return nil, err
	}
	return daemonGrantor{cl}, nil
}

// acquire tries once: fence-check's lock names are its own, so nobody else
// holds them, and each holder releases before the next one asks.
func (d daemonGrantor) acquire(ctx context.Context, lock, owner string) (grant, error) {
	l, err := d.c.Acquire(ctx, lock, client.Owner(owner), client.TTL(fenceCheckTTL))
	if err != nil {
		return grant{}, err
	}
	return grant{lock: l.Name, token: l.Token, sequencer: l.Sequencer, leaseID: l.LeaseID}, nil
}

// release releases g; a lease that has already ended is not an error.
func (d daemonGrantor) release(ctx context.Context, g grant) error {
	err := d.c.ReleaseID(ctx, api.Locks, g.lock, g.leaseID, g.token)
	if errors.Is(err, api.ErrLost) {
		return nil
	}
	return err
}
