package store

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
)

// HTTP header names. A request carries its token in either header; the
// response to a GET carries the value's token and the key's max.
const (
	HeaderToken     = "Fencing-Token"
	HeaderSequencer = "Fencing-Sequencer"
	HeaderMax       = "Fencing-Max-Token"
)

const kvPrefix = "/v1/kv/"

// ErrBadHeader is wrapped by every error of ParseFencingHeaders.
var ErrBadHeader = errors.New("store: bad fencing header")

// ParseFencingHeaders returns the token of a request: from Fencing-Token: N
// or from Fencing-Sequencer: name@N, 0 if neither is present. Each header may
// appear once; when both are present their tokens must agree. The name of a
// sequencer is not checked against the key: locks and keys are named
// independently, and the token alone orders holders.
func ParseFencingHeaders(h http.Header) (uint64, error) {
	var token uint64
	if vs := h.Values(HeaderToken); len(vs) > 0 {
		if len(vs) > 1 {
			return 0, fmt.Errorf("%w: send one %s header, not %d", ErrBadHeader, HeaderToken, len(vs))
		}
		t, err := fence.ParseToken(vs[0])
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %w", ErrBadHeader, HeaderToken, err)
		}
		token = t
	}
	if vs := h.Values(HeaderSequencer); len(vs) > 0 {
		if len(vs) > 1 {
			return 0, fmt.Errorf("%w: send one %s header, not %d", ErrBadHeader, HeaderSequencer, len(vs))
		}
		seq, err := fence.ParseSequencer(vs[0])
		t := seq.Token
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %w", ErrBadHeader, HeaderSequencer, err)
		}
		if token != 0 && t != token {
			return 0, fmt.Errorf("%w: %s says %d but %s says %d", ErrBadHeader, HeaderToken, token, HeaderSequencer, t)
		}
		token = t
	}
	return token, nil
}

// Handler serves the store's HTTP API:
//
//	PUT    /v1/kv/{key}  body = value       → 200 {"key","token"}
//	GET    /v1/kv/{key}                     → 200 raw value, Fencing-Token and Fencing-Max-Token headers
//	DELETE /v1/kv/{key}                     → 200 {"key","deleted":true,"token"}
//	GET    /metrics, GET /healthz
//
// Errors are {"error":"<sentence>","code":"<word>"}, with "current_token"
// on 409 stale_token and on 404 when the key has a max.
type Handler struct {
	s      *Store
	signed *signedOnly // nil: any well-formed token is taken
	bearer []byte      // "Bearer <token>" required on /v1/, if set
	sm     *metrics.StoreMetrics
	log    *slog.Logger
	prom   http.Handler
}

// NewHandler returns the HTTP API of s; gatherer serves /metrics and sm
// counts requests (nil for none). A nil logger discards.
func NewHandler(s *Store, gatherer prometheus.Gatherer, sm *metrics.StoreMetrics, logger *slog.Logger) *Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{s: s, sm: sm, log: logger, prom: promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{})}
}

// RequireBearer makes every /v1/ request need "Authorization: Bearer
// <token>"; others are answered 401 before their body is read.
func (h *Handler) RequireBearer(token string) { h.bearer = []byte("Bearer " + token) }

// ServeHTTP routes by hand rather than with http.ServeMux: the mux cleans
// paths and answers "/v1/kv/a/../b" with a redirect, where a bad key must be
// a 400 that says why.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, kvPrefix):
		if h.bearer != nil && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), h.bearer) != 1 {
			// Before anything of the request is read.
			w.Header().Set("WWW-Authenticate", `Bearer realm="seqd-store"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token: send Authorization: Bearer <token>", 0)
			return
		}
		h.kv(w, r, strings.TrimPrefix(p, kvPrefix))
	case p == "/metrics":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		h.prom.ServeHTTP(w, r)
	case p == "/healthz":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := h.s.Err(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "unavailable: %v\n", err)
			return
		}
		io.WriteString(w, "ok\n")
	default:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("store: no such path %q; the API is under %s{key}", p, kvPrefix), 0)
	}
}

func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
		fmt.Sprintf("store: method %s is not allowed here; use %s", r.Method, strings.Join(methods, ", ")), 0)
	return false
}

func (h *Handler) kv(w http.ResponseWriter, r *http.Request, key string) {
	if !allow(w, r, http.MethodGet, http.MethodPut, http.MethodDelete) {
		return
	}
	op := strings.ToLower(r.Method)
	fail := func(status int, code, msg string, current uint64) {
		h.sm.Operation(op, code)
		writeError(w, status, code, msg, current)
	}
	if err := ValidateKey(key); err != nil {
		fail(http.StatusBadRequest, metrics.StoreBadRequest, err.Error(), 0)
		return
	}
	token, err := h.token(r.Header, key)
	var ref *refusal
	if errors.As(err, &ref) {
		h.sm.Operation(op, metrics.StoreForbidden)
		writeError(w, http.StatusForbidden, ref.code, ref.msg, 0)
		return
	}
	if err != nil {
		fail(http.StatusBadRequest, metrics.StoreBadRequest, err.Error(), 0)
		return
	}
	switch r.Method {
	case http.MethodPut:
		if r.ContentLength > MaxValueBytes {
			fail(http.StatusBadRequest, metrics.StoreBadRequest, tooLarge(r.ContentLength), 0)
			return
		}
		value, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxValueBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				fail(http.StatusBadRequest, metrics.StoreBadRequest, tooLarge(-1), 0)
				return
			}
			fail(http.StatusBadRequest, metrics.StoreBadRequest, "store: reading the request body: "+err.Error(), 0)
			return
		}
		err = h.s.Put(key, value, token)
		if h.failed(err, key, fail) {
			return
		}
		h.sm.Operation(op, metrics.StoreOK)
		writeJSON(w, http.StatusOK, struct {
			Key   string `json:"key"`
			Token uint64 `json:"token"`
		}{key, token})
	case http.MethodDelete:
		err := h.s.Delete(key, token)
		if h.failed(err, key, fail) {
			return
		}
		h.sm.Operation(op, metrics.StoreOK)
		writeJSON(w, http.StatusOK, struct {
			Key     string `json:"key"`
			Deleted bool   `json:"deleted"`
			Token   uint64 `json:"token"`
		}{key, true, token})
	case http.MethodGet:
		e, err := h.s.Get(key, token)
		if errors.Is(err, ErrNotFound) {
			fail(http.StatusNotFound, metrics.StoreNotFound, fmt.Sprintf("store: key %q has no value", key), e.Max)
			return
		}
		if h.failed(err, key, fail) {
			return
		}
		h.sm.Operation(op, metrics.StoreOK)
		hd := w.Header()
		hd.Set("Content-Type", "application/octet-stream")
		hd.Set("Content-Length", strconv.Itoa(len(e.Value)))
		if e.Token > 0 {
			hd.Set(HeaderToken, strconv.FormatUint(e.Token, 10))
		}
		hd.Set(HeaderMax, strconv.FormatUint(e.Max, 10))
		w.WriteHeader(http.StatusOK)
		w.Write(e.Value)
	}
}

func (h *Handler) token(hd http.Header, key string) (uint64, error) {
	if h.signed != nil {
		return h.signed.token(hd, key)
	}
	return ParseFencingHeaders(hd)
}

// failed answers err, if any, and reports whether it did.
func (h *Handler) failed(err error, key string, fail func(int, string, string, uint64)) bool {
	var stale *fence.StaleTokenError
	switch {
	case err == nil:
		return false
	case errors.As(err, &stale):
		fail(http.StatusConflict, metrics.StoreStale, err.Error(), stale.Max)
	case errors.Is(err, ErrTokenRequired):
		fail(http.StatusBadRequest, metrics.StoreBadRequest,
			fmt.Sprintf("store: this store is fenced: send a %s or %s header", HeaderToken, HeaderSequencer), 0)
	case errors.Is(err, ErrInvalidKey), errors.Is(err, ErrValueTooLarge):
		fail(http.StatusBadRequest, metrics.StoreBadRequest, err.Error(), 0)
	case errors.Is(err, ErrClosed):
		fail(http.StatusServiceUnavailable, metrics.StoreUnavailable, "store: the store is shutting down", 0)
	default:
		h.log.Error("store operation failed", "key", key, "err", err)
		fail(http.StatusInternalServerError, metrics.StoreError, err.Error(), 0)
	}
	return true
}

func tooLarge(n int64) string {
	if n < 0 {
		return fmt.Sprintf("store: the value is larger than the limit of %d bytes", MaxValueBytes)
	}
	return fmt.Sprintf("store: the value is %d bytes, more than the limit of %d", n, MaxValueBytes)
}

type errorBody struct {
	Error        string  `json:"error"`
	Code         string  `json:"code"`
	CurrentToken *uint64 `json:"current_token,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, msg string, current uint64) {
	b := errorBody{Error: msg, Code: code}
	if current > 0 {
		b.CurrentToken = &current
	}
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
