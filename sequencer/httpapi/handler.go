package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
)

// HandlerOptions configures NewHandler.
type HandlerOptions struct {
	// APIToken, if set, is required as "Authorization: Bearer <token>" on
	// every /v1/ call; the admin token and the named tokens of the
	// service's Authority are accepted wherever it is.
	APIToken string
	// AllowedHosts are the names a request's Host may give besides
	// loopback names and addresses and the address it arrived on (the
	// daemon's DNS names when it listens beyond loopback).
	AllowedHosts []string
	// Gatherer serves /metrics; nil serves no /metrics.
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
}

// NewHandler serves the HTTP API over s: the routes of the families in
// routes, /v1/check and /v1/renew, plus /healthz, /readyz and, with a
// Gatherer, /metrics. The wire types are package api's. The handler names
// each caller with s's Authority and attaches it to the request's
// context; s's verbs decide what it may do.
func NewHandler(s Service, opts HandlerOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{s: s, token: opts.APIToken, log: opts.Logger.With("component", "http"), families: routes(), guard: newGuard(opts.AllowedHosts)}
	var metricsHandler http.Handler
	if opts.Gatherer != nil {
		metricsHandler = promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{EnableOpenMetrics: true})
	}
	v1 := h.guarded(h.auth(http.HandlerFunc(h.v1)))
	// Routed by hand, not by http.ServeMux: the mux cleans paths and
	// redirects "/v1/locks/a/../b" and "a//b", where a bad name must get a
	// 400 that says why.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/healthz":
			h.healthz(w, r)
		case p == "/readyz":
			h.readyz(w, r)
		case p == "/metrics" && metricsHandler != nil:
			metricsHandler.ServeHTTP(w, r)
		case strings.HasPrefix(p, "/v1/"):
			v1.ServeHTTP(w, r)
		case p == "/ui" || strings.HasPrefix(p, "/ui/"):
			serveUI(w, r)
		default:
			writeError(w, http.StatusNotFound, api.ErrorBody{Error: fmt.Sprintf("no such endpoint: %s %s", r.Method, p), Code: api.CodeNotFound})
		}
	})
}

type handler struct {
	s        Service
	token    string
	log      *slog.Logger
	families map[api.Family]*family
	guard    *guard
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	if allow(w, r, http.MethodGet, http.MethodHead) {
		writeJSON(w, http.StatusOK, api.ProbeResponse{Status: "ok"})
	}
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	if !h.s.Ready() {
		writeError(w, http.StatusServiceUnavailable, api.ErrorBody{Error: "the zookeeper session is not connected", Code: api.CodeUnavailable})
		return
	}
	writeJSON(w, http.StatusOK, api.ProbeResponse{Status: "ready"})
}

// v1 routes by hand: names contain slashes, so the action is the last path
// segment of a POST (a GET of ".../acquire" is the status of a lock whose
// name ends in "acquire").
func (h *handler) v1(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/v1/")
	switch p {
	case "check":
		if allow(w, r, http.MethodPost) {
			v, err := h.check(w, r)
			h.answer(w, r, v, err)
		}
		return
	case "renew":
		if allow(w, r, http.MethodPost) {
			h.renewMany(w, r)
		}
		return
	}
	fam, rest, _ := strings.Cut(p, "/")
	f := h.families[api.Family(fam)]
	switch {
	case f == nil:
		writeError(w, http.StatusNotFound, api.ErrorBody{Error: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path), Code: api.CodeNotFound})
	case rest == "" && r.URL.Query().Has("all") && !f.bare:
		if allow(w, r, http.MethodGet) {
			h.overview(w, r, api.Family(fam))
		}
	case rest == "":
		if allow(w, r, http.MethodGet) && h.noQuery(w, r) {
			if f.list != nil {
				writeJSON(w, http.StatusOK, f.list(h, r))
				return
			}
			writeJSON(w, http.StatusOK, api.LeaseList{Family: fam, Leases: h.s.Leases(r.Context(), api.Family(fam))})
		}
	case r.Method == http.MethodPost:
		h.act(w, r, api.Family(fam), f, rest)
	case r.Method == http.MethodGet:
		h.status(w, r, f, rest)
	default:
		methods := []string{http.MethodGet}
		if _, a := f.split(rest); f.actions[a] != nil {
			methods = append(methods, http.MethodPost)
		}
		allow(w, r, methods...)
	}
}

// act serves POST /v1/{family}/{name}/{action}. A POST to a path without a
// known action is a POST to a status: 405.
func (h *handler) act(w http.ResponseWriter, r *http.Request, fam api.Family, f *family, rest string) {
	name, a := f.split(rest)
	do := f.actions[a]
	if do == nil {
		names := make([]string, 0, len(f.actions))
		for a := range f.actions {
			names = append(names, a)
		}
		slices.Sort(names)
		path := fmt.Sprintf("/v1/%s/{name}/{%s}", fam, strings.Join(names, "|"))
		if f.bare {
			path = fmt.Sprintf("/v1/%s/{%s}", fam, strings.Join(names, "|"))
		}
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, api.ErrorBody{
			Error: fmt.Sprintf("POST needs an action: %s; %s is a status, read with GET", path, r.URL.Path),
			Code:  api.CodeMethod,
		})
		return
	}
	v, err := do(h, w, r, name)
	h.answer(w, r, v, err)
}

// status serves GET /v1/{family}/{name}[?index=I&wait=D&lease_id=ID].
func (h *handler) status(w http.ResponseWriter, r *http.Request, f *family, name string) {
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v, index, err := f.status(h, r, name, q)
	if err == nil {
		w.Header().Set(api.IndexHeader, strconv.FormatUint(index, 10))
	}
	h.answer(w, r, v, err)
}

// overview serves GET /v1/{family}?all=1[&index=I&wait=D].
func (h *handler) overview(w http.ResponseWriter, r *http.Request, f api.Family) {
	vals, err := splitQuery(r.URL.RawQuery)
	if err == nil && (len(vals["all"]) != 1 || vals["all"][0] != "1") {
		err = badRequest("all takes the value 1: ?all=1 lists every name under the root")
	}
	var q query
	if err == nil {
		var rest []string
		for _, part := range strings.Split(r.URL.RawQuery, "&") {
			if k, _, _ := strings.Cut(part, "="); k != "all" {
				rest = append(rest, part)
			}
		}
		q, err = parseQuery(strings.Join(rest, "&"))
	}
	if err == nil && q.leaseID != "" {
		err = badRequest("an overview takes no lease_id")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	o, err := h.s.Overview(r.Context(), f, q.blocking, q.index, q.wait)
	if err == nil {
		w.Header().Set(api.IndexHeader, strconv.FormatUint(o.Index, 10))
	}
	h.answer(w, r, o, err)
}

// safeFor is the safe_for_ms of a status read that names a lease of this
// daemon; nil when it names none.
func (h *handler) safeFor(ctx context.Context, f api.Family, name string, q query) *int64 {
	if q.leaseID == "" {
		return nil
	}
	safe, ok := h.s.SafeFor(ctx, f, name, q.leaseID)
	if !ok {
		return nil
	}
	ms := safe.Milliseconds()
	return &ms
}

// readStatus reads a status: a blocking read (wait) when q has an index, a
// plain read otherwise.
func readStatus[S any](ctx context.Context, name string, q query, plain func(context.Context, string) (S, error), wait func(context.Context, string, uint64, time.Duration) (S, error)) (S, error) {
	if q.blocking {
		return wait(ctx, name, q.index, q.wait)
	}
	return plain(ctx, name)
}

func lockStatus(h *handler, r *http.Request, name string, q query) (any, uint64, error) {
	st, err := readStatus(r.Context(), name, q, h.s.Status, h.s.WaitLock)
	st.SafeForMS = h.safeFor(r.Context(), api.Locks, name, q)
	return st, st.Index, err
}

func multiLockStatusRead(h *handler, r *http.Request, id string, q query) (any, uint64, error) {
	if q.leaseID != "" && api.ValidLeaseID(id) {
		return nil, 0, badRequest("the lease id is in the path: GET /v1/multilocks/{lease_id} takes no lease_id parameter")
	}
	st, err := h.s.MultiLockStatus(r.Context(), id, q.blocking, q.index, q.wait)
	return st, st.Index, err
}

func semaphoreStatusRead(h *handler, r *http.Request, name string, q query) (any, uint64, error) {
	st, err := readStatus(r.Context(), name, q, h.s.SemaphoreStatus, h.s.WaitSemaphore)
	st.SafeForMS = h.safeFor(r.Context(), api.Semaphores, name, q)
	return st, st.Index, err
}

func electionStatusRead(h *handler, r *http.Request, name string, q query) (any, uint64, error) {
	st, err := readStatus(r.Context(), name, q, h.s.ElectionStatus, h.s.WaitElection)
	st.SafeForMS = h.safeFor(r.Context(), api.Elections, name, q)
	return st, st.Index, err
}

// noQuery refuses a query on a route that takes none.
func (h *handler) noQuery(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.RawQuery != "" {
		h.fail(w, r, badRequest("%s takes no query parameters", r.URL.Path))
		return false
	}
	return true
}

// check serves POST /v1/check: a sequencer (plain or signed, of any kind),
// or an exclusive lock's name and token.
func (h *handler) check(w http.ResponseWriter, r *http.Request) (any, error) {
	var req api.CheckRequest
	if err := decode(w, r, &req); err != nil {
		return nil, err
	}
	seq := fence.Sequencer{Name: req.Name, Token: req.Token}
	switch {
	case req.Sequencer != "" && (req.Name != "" || req.Token != 0):
		return nil, badRequest("send either sequencer or name and token, not both")
	case req.Sequencer != "":
		var err error
		if seq, err = h.s.ParseSequencer(req.Sequencer); err != nil {
			return nil, err
		}
	case req.Name == "":
		return nil, badRequest(`send {"sequencer":"[kind:]name@token"} or {"name":"…","token":N}`)
	}
	cur, err := h.s.Check(r.Context(), seq)
	var ce *api.ConflictError
	if errors.As(err, &ce) {
		writeJSON(w, http.StatusConflict, api.CheckResponse{Valid: false, CurrentToken: cur, Code: ce.Code(), Error: ce.Error()})
		return nil, errAnswered
	}
	if err != nil {
		return nil, err
	}
	return api.CheckResponse{Valid: true, CurrentToken: cur}, nil
}

// renewMany serves POST /v1/renew.
func (h *handler) renewMany(w http.ResponseWriter, r *http.Request) {
	var req api.RenewManyRequest
	if err := decode(w, r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	leases, errs, err := h.s.RenewMany(r.Context(), req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.renewManyAnswer(req, leases, errs, func(err error) (int, api.ErrorBody) { return h.failure(r, err) }))
}

// renewManyAnswer is the answer of POST /v1/renew for what RenewMany did.
func (h *handler) renewManyAnswer(req api.RenewManyRequest, leases []api.Lease, errs []error, fail func(error) (int, api.ErrorBody)) api.RenewManyResponse {
	resp := api.RenewManyResponse{Results: make([]api.RenewResult, len(leases))}
	for i := range leases {
		res := api.RenewResult{Name: req.Leases[i].Name, Status: 200}
		if errs[i] != nil {
			var body api.ErrorBody
			res.Status, body = fail(errs[i])
			res.Error, res.Code, res.CurrentToken = body.Error, body.Code, body.CurrentToken
		} else {
			res.Lease = &leases[i]
		}
		resp.Results[i] = res
	}
	return resp
}

// allow answers 405 with Allow unless r's method is one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, api.ErrorBody{Error: fmt.Sprintf("method %s is not allowed here; use %s", r.Method, strings.Join(methods, " or ")), Code: api.CodeMethod})
	return false
}

func writeError(w http.ResponseWriter, status int, e api.ErrorBody) { writeJSON(w, status, e) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
