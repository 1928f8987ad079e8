package sequencer

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seqd/seqd/fence"
)

// HandlerOptions configures NewHandler.
type HandlerOptions struct {
	// APIToken, if set, is required as "Authorization: Bearer <token>" on
	// every /v1/ call.
	APIToken string
	// Gatherer serves /metrics; nil serves no /metrics.
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
}

// NewHandler serves the HTTP API over s: the endpoints and bodies of
// api.go, plus /healthz, /readyz and, with a Gatherer, /metrics.
func NewHandler(s *Service, opts HandlerOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{s: s, token: opts.APIToken, log: opts.Logger.With("component", "http")}
	var metricsHandler http.Handler
	if opts.Gatherer != nil {
		metricsHandler = promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{})
	}
	v1 := h.auth(http.HandlerFunc(h.v1))
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
		default:
			writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, p), nil)
		}
	})
}

type handler struct {
	s     *Service
	token string
	log   *slog.Logger
}

func (h *handler) auth(next http.Handler) http.Handler {
	if h.token == "" {
		return next
	}
	want := []byte("Bearer " + h.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="seqd"`)
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token>", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	writeJSON(w, http.StatusOK, ProbeResponse{Status: "ok"})
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	if !h.s.Ready() {
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the zookeeper session is not connected", nil)
		return
	}
	writeJSON(w, http.StatusOK, ProbeResponse{Status: "ready"})
}

// v1 routes by hand: lock names contain slashes, so the action is the last
// path segment of a POST (a GET of ".../acquire" is the status of a lock
// whose name ends in "acquire").
func (h *handler) v1(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/v1/check":
		if allow(w, r, http.MethodPost) {
			h.check(w, r)
		}
		return
	case p == "/v1/renew":
		if allow(w, r, http.MethodPost) {
			h.renewMany(w, r)
		}
		return
	case p == "/v1/locks" || p == "/v1/locks/":
		if allow(w, r, http.MethodGet) {
			writeJSON(w, http.StatusOK, LeaseList{Locks: h.s.Leases()})
		}
		return
	}
	if rest, ok := strings.CutPrefix(p, "/v1/elections/"); ok {
		h.elections(w, r, rest)
		return
	}
	if rest, ok := strings.CutPrefix(p, "/v1/semaphores/"); ok {
		h.semaphores(w, r, rest)
		return
	}
	rest, ok := strings.CutPrefix(p, "/v1/locks/")
	if !ok {
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no such endpoint: %s", p), nil)
		return
	}
	if r.Method == http.MethodPost {
		i := strings.LastIndexByte(rest, '/')
		if i < 0 {
			w.Header().Set("Allow", "GET")
			writeError(w, http.StatusMethodNotAllowed, CodeMethod, "POST needs an action: /v1/locks/{name}/acquire, /renew or /release", nil)
			return
		}
		name, action := rest[:i], rest[i+1:]
		switch action {
		case "acquire":
			h.acquire(w, r, name)
		case "renew":
			h.renew(w, r, name)
		case "release":
			h.release(w, r, name)
		default:
			writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("unknown action %q: use acquire, renew or release", action), nil)
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
		st  LockStatus
		err error
	)
	if q.blocking {
		st, err = h.s.WaitLock(r.Context(), rest, q.index, q.wait)
	} else {
		st, err = h.s.Status(r.Context(), rest)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if q.leaseID != "" {
		// The holder asks how long it is safe: only with its own lease's id.
		if safe, ok := h.s.SafeFor(rest, q.leaseID); ok {
			ms := safe.Milliseconds()
			st.SafeForMS = &ms
		}
	}
	w.Header().Set(IndexHeader, strconv.FormatUint(st.Index, 10))
	writeJSON(w, http.StatusOK, st)
}

// acquireArgs reads the ttl, wait and lease_id of an acquire or a campaign,
// with their defaults.
func acquireArgs(ttlIn, waitIn *Duration, leaseID string) (ttl, wait time.Duration, opts []AcquireOption) {
	ttl = DefaultTTL
	if ttlIn != nil {
		ttl = time.Duration(*ttlIn)
	}
	if waitIn != nil {
		wait = time.Duration(*waitIn)
	}
	if leaseID != "" {
		opts = append(opts, WithLeaseID(leaseID))
	}
	return ttl, wait, opts
}

func (h *handler) acquire(w http.ResponseWriter, r *http.Request, name string) {
	var req AcquireRequest
	if !decodeAcquire(w, r, &req) {
		return
	}
	ttl, wait, opts := acquireArgs(req.TTL, req.Wait, req.LeaseID)
	if req.LockDelay != nil {
		opts = append(opts, WithLockDelay(time.Duration(*req.LockDelay)))
	}
	switch req.Mode {
	case "", ModeExclusive:
	case ModeShared:
		opts = append(opts, WithShared())
	default:
		writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("mode %.40q: want exclusive or shared", req.Mode), nil)
		return
	}
	l, err := h.s.Acquire(r.Context(), name, req.Owner, ttl, wait, opts...)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeLease(w, http.StatusOK, &l)
}

func (h *handler) renew(w http.ResponseWriter, r *http.Request, name string) {
	var req LeaseRequest
	if !decodeLease(w, r, &req) {
		return
	}
	var ttl time.Duration
	if req.TTL != nil {
		ttl = time.Duration(*req.TTL)
	}
	l, err := h.s.Renew(r.Context(), name, req.LeaseID, req.Token, ttl)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeLease(w, http.StatusOK, &l)
}

func (h *handler) release(w http.ResponseWriter, r *http.Request, name string) {
	var req LeaseRequest
	if !decodeLease(w, r, &req) {
		return
	}
	if req.TTL != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "release takes no ttl", nil)
		return
	}
	if err := h.s.Release(r.Context(), name, req.LeaseID, req.Token); err != nil {
		h.fail(w, r, err)
		return
	}
	writeReleased(w)
}

func (h *handler) check(w http.ResponseWriter, r *http.Request) {
	var req CheckRequest
	if !decode(w, r, &req) {
		return
	}
	name, token := req.Name, req.Token
	switch {
	case req.Sequencer != "" && (req.Name != "" || req.Token != 0):
		writeError(w, http.StatusBadRequest, CodeBadRequest, "send either sequencer or name and token, not both", nil)
		return
	case req.Sequencer != "":
		var err error
		if name, token, err = h.s.parseSequencer(req.Sequencer); err != nil {
			status, code := http.StatusBadRequest, CodeBadRequest
			if errors.Is(err, fence.ErrBadSignature) {
				status, code = http.StatusForbidden, CodeBadSignature
			}
			writeError(w, status, code, err.Error(), nil)
			return
		}
	case req.Name == "":
		writeError(w, http.StatusBadRequest, CodeBadRequest, `send {"sequencer":"name@token"} or {"name":"…","token":N}`, nil)
		return
	}
	cur, err := h.s.Check(r.Context(), name, token)
	var ce *ConflictError
	if errors.As(err, &ce) {
		writeJSON(w, http.StatusConflict, CheckResponse{Valid: false, CurrentToken: cur, Code: conflictCode(ce), Error: ce.Error()})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, CheckResponse{Valid: true, CurrentToken: cur})
}

func conflictCode(ce *ConflictError) string {
	switch {
	case errors.Is(ce.Err, fence.ErrStaleToken):
		return CodeStaleToken
	case errors.Is(ce.Err, ErrHeld):
		return CodeHeld
	case errors.Is(ce.Err, ErrNotHeld):
		return CodeNotHeld
	}
	return CodeLost
}

// fail maps a Service error to its status and code.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, body := h.failure(r, err)
	writeError(w, status, body.Code, body.Error, body.CurrentToken)
}

// failure is the status and body that answer err.
func (h *handler) failure(r *http.Request, err error) (int, ErrorBody) {
	var ce *ConflictError
	switch {
	case errors.As(err, &ce):
		var cur *uint64
		if ce.CurrentToken != 0 {
			cur = &ce.CurrentToken
		}
		return http.StatusConflict, ErrorBody{Error: ce.Error(), Code: conflictCode(ce), CurrentToken: cur}
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, ErrorBody{Error: sentence(err), Code: CodeBadRequest}
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, ErrorBody{Error: sentence(err), Code: CodeUnavailable}
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this.
		return 499, ErrorBody{Error: "request canceled", Code: "canceled"}
	default:
		h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		return http.StatusInternalServerError, ErrorBody{Error: err.Error(), Code: CodeInternal}
	}
}

// sentence strips the package prefixes of a wrapped sentinel for the API.
func sentence(err error) string {
	s := err.Error()
	for _, p := range []string{"sequencer: bad request: ", "sequencer: zookeeper unavailable: ", "zklock: invalid lock name: "} {
		s = strings.Replace(s, p, "", 1)
	}
	return s
}

// decode reads a JSON body strictly: at most MaxBodyBytes, no unknown
// fields, one value. It answers 400 itself and reports whether to go on.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, CodeMethod, fmt.Sprintf("method %s is not allowed here; use %s", r.Method, strings.Join(methods, " or ")), nil)
	return false
}

func writeError(w http.ResponseWriter, status int, code, msg string, current *uint64) {
	e := ErrorBody{Error: msg, Code: code, CurrentToken: current}
	if strictJSONOnly.Load() {
		writeJSON(w, status, e)
		return
	}
	bp := getBuf()
	b := appendErrorBody((*bp)[:0], &e)
	writeBytes(w, status, b)
	putBuf(bp, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}
