package sequencer

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The election endpoints and the query of blocking reads.

// elections serves /v1/elections/{name}[/action].
func (h *handler) elections(w http.ResponseWriter, r *http.Request, rest string) {
	if r.Method == http.MethodPost {
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			w.Header().Set("Allow", "GET")
			writeError(w, http.StatusMethodNotAllowed, CodeMethod, "POST needs an action: /v1/elections/{name}/campaign, /renew, /resign or /proclaim", nil)
			return
		}
		name, action := rest[:i], rest[i+1:]
		switch action {
		case "campaign":
			h.campaign(w, r, name)
		case "renew":
			var req LeaseRequest
			if !decode(w, r, &req) {
				return
			}
			var ttl time.Duration
			if req.TTL != nil {
				ttl = time.Duration(*req.TTL)
			}
			l, err := h.s.RenewElection(r.Context(), name, req.LeaseID, req.Token, ttl)
			h.answer(w, r, l, err)
		case "resign":
			var req LeaseRequest
			if !decode(w, r, &req) {
				return
			}
			if req.TTL != nil {
				writeError(w, http.StatusBadRequest, CodeBadRequest, "resign takes no ttl", nil)
				return
			}
			err := h.s.Resign(r.Context(), name, req.LeaseID, req.Token)
			h.answer(w, r, ReleaseResponse{Released: true}, err)
		case "proclaim":
			var req ProclaimRequest
			if !decode(w, r, &req) {
				return
			}
			l, err := h.s.Proclaim(r.Context(), name, req.LeaseID, req.Token, req.Value)
			h.answer(w, r, l, err)
		default:
			writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("unknown action %q: use campaign, renew, resign or proclaim", action), nil)
		}
		return
	}
	if !allow(w, r, http.MethodGet) {
		return
	}
	q, ok := blockingQuery(w, r)
	if !ok {
		return
	}
	var (
		st  ElectionStatus
		err error
	)
	if q.blocking {
		st, err = h.s.WaitElection(r.Context(), rest, q.index, q.wait)
	} else {
		st, err = h.s.ElectionStatus(r.Context(), rest)
	}
	if err == nil {
		w.Header().Set(IndexHeader, strconv.FormatUint(st.Index, 10))
	}
	h.answer(w, r, st, err)
}

func (h *handler) campaign(w http.ResponseWriter, r *http.Request, name string) {
	var req CampaignRequest
	if !decode(w, r, &req) {
		return
	}
	ttl, wait, opts := acquireArgs(req.TTL, req.Wait, req.LeaseID)
	l, err := h.s.Campaign(r.Context(), name, req.Owner, req.Value, ttl, wait, opts...)
	h.answer(w, r, l, err)
}

// answer writes v, or the error.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// blocking is the query of a GET of a lock's or an election's state.
type blocking struct {
	blocking bool
	index    uint64
	wait     time.Duration
	leaseID  string // the holder asking how long its lease is safe (locks)
}

// blockingQuery reads ?index=I&wait=D&lease_id=ID strictly (no other
// parameter, each once, index a decimal integer, wait a duration within
// MaxWait, wait only with index). It answers 400 itself and reports whether
// to go on.
func blockingQuery(w http.ResponseWriter, r *http.Request) (blocking, bool) {
	var q blocking
	bad := func(msg string) (blocking, bool) {
		writeError(w, http.StatusBadRequest, CodeBadRequest, msg, nil)
		return blocking{}, false
	}
	vals, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		return bad(err.Error())
	}
	for k, v := range vals {
		if len(v) > 1 {
			return bad(fmt.Sprintf("the query parameter %q appears more than once", k))
		}
		if k != "index" && k != "wait" && k != "lease_id" {
			return bad(fmt.Sprintf("unknown query parameter %q: use index, wait and lease_id", k))
		}
	}
	if v, ok := vals["lease_id"]; ok {
		q.leaseID = v[0]
	}
	if v, ok := vals["index"]; ok {
		idx, err := strconv.ParseUint(v[0], 10, 64)
		if err != nil {
			return bad(fmt.Sprintf("index %.40q must be a decimal integer, as returned in the index field", v[0]))
		}
		q.blocking, q.index, q.wait = true, idx, DefaultBlockingWait
	}
	if v, ok := vals["wait"]; ok {
		if !q.blocking {
			return bad("wait needs an index: ?index=I&wait=D waits for a state other than I")
		}
		d, err := time.ParseDuration(v[0])
		if err != nil {
			return bad(fmt.Sprintf("wait %.40q is not a duration such as \"30s\"", v[0]))
		}
		if d <= 0 || d > MaxWait {
			return bad(fmt.Sprintf("wait %v is out of range: it must be more than 0s and at most %v", d, MaxWait))
		}
		q.wait = d
	}
	return q, true
}

// parseQuery is url.ParseQuery that refuses what it would skip silently.
func parseQuery(raw string) (map[string][]string, error) {
	out := map[string][]string{}
	if raw == "" {
		return out, nil
	}
	for _, part := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		key, err1 := unescape(k)
		val, err2 := unescape(v)
		if err1 != nil || err2 != nil || key == "" {
			return nil, fmt.Errorf("malformed query %.60q", raw)
		}
		out[key] = append(out[key], val)
	}
	return out, nil
}

func unescape(s string) (string, error) { return url.QueryUnescape(s) }
