package httpapi

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seqd/seqd/api"
)

// query is the query of a status read, the same for every family:
// ?index=I&wait=D makes it a blocking read; ?lease_id=ID asks, for this
// daemon's lease ID, how long it is safe.
type query struct {
	blocking bool
	index    uint64
	wait     time.Duration
	leaseID  string
}

// parseQuery reads a status read's query strictly: no other parameter,
// each once, index a decimal integer, wait a duration within MaxWait and
// only with index, lease_id a lease id. A failure is a *RequestError.
func parseQuery(raw string) (query, error) {
	var q query
	vals, err := splitQuery(raw)
	if err != nil {
		return q, err
	}
	for k, v := range vals {
		if len(v) > 1 {
			return q, badRequest("the query parameter %q appears more than once", k)
		}
		if k != "index" && k != "wait" && k != "lease_id" {
			return q, badRequest("unknown query parameter %.40q: a status read takes index, wait and lease_id", k)
		}
	}
	if v, ok := vals["lease_id"]; ok {
		if !api.ValidLeaseID(v[0]) {
			return q, badRequest("lease_id %.40q must be 32 lowercase hex digits", v[0])
		}
		q.leaseID = v[0]
	}
	if v, ok := vals["index"]; ok {
		idx, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil {
			return q, badRequest("index %.40q must be a decimal integer, as returned in the index field", v[0])
		}
		q.blocking, q.index, q.wait = true, idx, api.DefaultBlockingWait
	}
	if v, ok := vals["wait"]; ok {
		if !q.blocking {
			return q, badRequest("wait needs an index: ?index=I&wait=D waits for a state other than I")
		}
		d, err := time.ParseDuration(v[0])
		if err != nil {
			return q, badRequest("wait %.40q is not a duration such as \"30s\"", v[0])
		}
		if d <= 0 || d > api.MaxWait {
			return q, badRequest("wait %v is out of range: it must be more than 0s and at most %v", d, api.MaxWait)
		}
		q.wait = d
	}
	return q, nil
}

// splitQuery is url.ParseQuery that refuses what it would skip silently.
func splitQuery(raw string) (map[string][]string, error) {
	out := map[string][]string{}
	if raw == "" {
		return out, nil
	}
	for _, part := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || key == "" {
			return nil, badRequest("malformed query %.60q", raw)
		}
		out[key] = append(out[key], val)
	}
	return out, nil
}
