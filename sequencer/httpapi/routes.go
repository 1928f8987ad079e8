package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/seqd/seqd/api"
)

// family is the routes of one family of leases, one row of the table in
// routes:
//
//	POST /v1/{family}/{name}/{action}   actions
//	GET  /v1/{family}/{name}[?query]    status
//	GET  /v1/{family}                   the family's leases on this daemon
//
// A bare family's actions take no name (POST /v1/{family}/{action}: the
// body names what they act on), and its status is read by lease id.
type family struct {
	actions map[string]action
	status  func(h *handler, r *http.Request, name string, q query) (any, uint64, error)
	bare    bool
	list    func(h *handler, r *http.Request) any // the listing, when not a LeaseList
}

// action serves a POST to an action of a family: it reads the body and
// returns the answer.
type action func(h *handler, w http.ResponseWriter, r *http.Request, name string) (any, error)

// routes is the table of every family's routes: what differs between the
// families is a row here.
func routes() map[api.Family]*family {
	return map[api.Family]*family{
		api.Locks: {
			actions: map[string]action{
				"acquire": post(Service.Acquire),
				"renew":   post(renewIn(api.Locks)),
				"release": post(releaseIn(api.Locks)),
				"break":   breakIn(api.Locks),
			},
			status: lockStatus,
		},
		api.Semaphores: {
			actions: map[string]action{
				"acquire": post(Service.AcquireSemaphore),
				"renew":   post(renewIn(api.Semaphores)),
				"release": post(releaseIn(api.Semaphores)),
				"break":   breakIn(api.Semaphores),
			},
			status: semaphoreStatusRead,
		},
		api.Elections: {
			actions: map[string]action{
				"campaign": post(Service.Campaign),
				"renew":    post(renewIn(api.Elections)),
				"resign":   post(releaseIn(api.Elections)),
				"proclaim": post(Service.Proclaim),
				"break":    breakIn(api.Elections),
			},
			status: electionStatusRead,
		},
		api.MultiLocks: {
			bare: true,
			actions: map[string]action{
				"acquire": postBare(Service.AcquireMulti),
				"renew":   postBare(Service.RenewMulti),
				"release": postBare(Service.ReleaseMulti),
			},
			status: multiLockStatusRead,
			list: func(h *handler, r *http.Request) any {
				return api.MultiLeaseList{MultiLocks: h.s.MultiLeases(r.Context())}
			},
		},
	}
}

// post is the action that decodes the body strictly into a Req and answers
// with what do returns.
func post[Req, Resp any](do func(Service, context.Context, string, Req) (Resp, error)) action {
	return func(h *handler, w http.ResponseWriter, r *http.Request, name string) (any, error) {
		var req Req
		if err := decode(w, r, &req); err != nil {
			return nil, err
		}
		return do(h.s, r.Context(), name, req)
	}
}

// postBare is post for an action of a bare family, which names nothing in
// its path.
func postBare[Req, Resp any](do func(Service, context.Context, Req) (Resp, error)) action {
	return post(func(s Service, ctx context.Context, _ string, req Req) (Resp, error) {
		return do(s, ctx, req)
	})
}

func renewIn(f api.Family) func(Service, context.Context, string, api.LeaseRequest) (api.Lease, error) {
	return func(s Service, ctx context.Context, name string, req api.LeaseRequest) (api.Lease, error) {
		return s.Renew(ctx, f, name, req)
	}
}

func releaseIn(f api.Family) func(Service, context.Context, string, api.LeaseRequest) (api.ReleaseResponse, error) {
	return func(s Service, ctx context.Context, name string, req api.LeaseRequest) (api.ReleaseResponse, error) {
		return api.ReleaseResponse{Released: true}, s.Release(ctx, f, name, req)
	}
}

// breakIn serves POST /v1/{family}/{name}/break.
func breakIn(f api.Family) action {
	return func(h *handler, w http.ResponseWriter, r *http.Request, name string) (any, error) {
		var req api.BreakRequest
		if err := decode(w, r, &req); err != nil {
			return nil, err
		}
		return h.s.Break(r.Context(), f, name, req, r.RemoteAddr)
	}
}

// split cuts the path after the family into the name and the action it
// would have as a POST: the last segment (the whole of it in a bare
// family).
func (f *family) split(rest string) (name, action string) {
	if f.bare {
		return "", rest
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return rest, ""
	}
	return rest[:i], rest[i+1:]
}

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

// Route is one route of the API, as Routes lists it: Path has {name}
// where a lease's name (or a multi-lock's lease id) goes.
type Route struct {
	Method string
	Path   string
	Family api.Family // "" for /v1/check and /v1/renew
	Action string     // a POST's action; "status", "list" or "overview" for a GET
}

// Routes lists every /v1/ route the handler serves, from its route table,
// sorted: what a test that must reach every route enumerates.
func Routes() []Route {
	out := []Route{{Method: http.MethodPost, Path: "/v1/check", Action: "check"}, {Method: http.MethodPost, Path: "/v1/renew", Action: "renew"}}
	for fam, f := range routes() {
		base := "/v1/" + string(fam)
		out = append(out, Route{http.MethodGet, base, fam, "list"}, Route{http.MethodGet, base + "/{name}", fam, "status"})
		if !f.bare {
			out = append(out, Route{http.MethodGet, base + "?all=1", fam, "overview"})
		}
		for a := range f.actions {
			p := base + "/{name}/" + a
			if f.bare {
				p = base + "/" + a
			}
			out = append(out, Route{http.MethodPost, p, fam, a})
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Method+" "+a.Path, b.Method+" "+b.Path) })
	return out
}
