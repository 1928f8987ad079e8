// Package client is the Go client of seqd's HTTP API, the sidecar that
// grants fenced locks, semaphore slots and leaderships. The bodies it
// sends and receives are those of package api, the wire contract that the
// daemon imports too.
//
// A program that talks to a seqd sidecar needs nothing else: the package
// depends on the standard library and packages api and fence only, and links no
// ZooKeeper client and no Prometheus.
//
//	c, err := client.New("") // SEQD_ADDR, SEQD_API_TOKEN_FILE, SEQD_CACERT, SEQD_CERT, SEQD_KEY
//	h, err := c.Hold(ctx, "jobs/nightly")
//	defer h.Release(context.Background())
//	// send h.Lease().Sequencer with every write; stop when h.Lost() closes
//
// Holding is never guaranteed: a lease can be lost at any moment (its TTL
// passed without a renewal, the daemon lost its ZooKeeper session, an
// operator broke it) without the holder knowing at once. The fencing token
// is what makes that safe: send it with every write, and let the resource
// refuse tokens lower than the highest it has seen (package fence).
package client
