package sequencer

import (
	"net/http"
	"strings"
)

// LeaseUpkeep reports whether r keeps leases alive or ends them: a renew,
// release or resign of a lease of any family, or the batch renew. These are
// the requests a busy server serves ahead of all others, since a renewal
// that waits behind them lets a live lease expire. It looks at the method
// and path only: whether the lease is live is for the handler to say, at
// once (a renewal of an unknown lease costs no ZooKeeper request).
func LeaseUpkeep(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	p, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		return false
	}
	if p == "renew" {
		return true
	}
	switch p[strings.LastIndexByte(p, '/')+1:] {
	case "renew", "release", "resign":
		return strings.Contains(p, "/")
	}
	return false
}

// ProvesLease reports whether r, answered status, proved that its client
// holds a live lease: a lease granted (acquire, campaign) or the renewal of
// one lease, answered 200 (the batch renew answers 200 whatever becomes of
// its leases). A server may keep such a client's connection for its next
// renewal.
func ProvesLease(r *http.Request, status int) bool {
	if status != http.StatusOK || r.Method != http.MethodPost || r.URL.Path == "/v1/renew" {
		return false
	}
	p, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok || !strings.Contains(p, "/") {
		return false
	}
	switch p[strings.LastIndexByte(p, '/')+1:] {
	case "acquire", "campaign", "renew":
		return true
	}
	return false
}
