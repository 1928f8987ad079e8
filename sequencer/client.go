package sequencer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/seqd/seqd/fence"
)

// Client speaks the HTTP API of a seqd daemon.
type Client struct {
	// Addr is the daemon's base URL, e.g. http://127.0.0.1:7070.
	Addr string
	// APIToken is sent as a bearer token when set.
	APIToken string
	// HTTP is the client to use; default one of the Client's own.
	HTTP *http.Client

	once sync.Once
	own  *http.Client
}

// APIError is a non-2xx answer of the daemon.
type APIError struct {
	Status       int
	Code         string
	Message      string
	CurrentToken *uint64
}

func (e *APIError) Error() string {
	return fmt.Sprintf("sequencer: %s (%d %s)", e.Message, e.Status, e.Code)
}

// Is maps API codes to the package's sentinels, so that callers use
// errors.Is(err, fence.ErrStaleToken) alike for local and remote calls.
func (e *APIError) Is(target error) bool {
	switch target {
	case fence.ErrStaleToken:
		return e.Code == CodeStaleToken
	case ErrHeld:
		return e.Code == CodeHeld
	case ErrLost:
		return e.Code == CodeLost
	case ErrUnavailable:
		return e.Code == CodeUnavailable
	case ErrBadRequest:
		return e.Code == CodeBadRequest
	case ErrNotHeld:
		return e.Code == CodeNotHeld
	}
	return false
}

// Acquire asks for name for owner. ttl and wait of 0 take the daemon's
// defaults (15s, try once). WithLeaseID makes it idempotent.
func (c *Client) Acquire(ctx context.Context, name, owner string, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	req := AcquireRequest{Owner: owner, LeaseID: o.leaseID}
	if o.shared {
		req.Mode = ModeShared
	}
	if o.lockDelay != nil {
		d := Duration(*o.lockDelay)
		req.LockDelay = &d
	}
	req.TTL, req.Wait = durationPtr(ttl), durationPtr(wait)
	var l Lease
	err := c.send(ctx, http.MethodPost, lockPath(name)+"/acquire", encodeAcquire(&req), &l)
	return l, err
}

// Renew renews a lease (ttl 0 keeps its TTL).
func (c *Client) Renew(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return c.renew(ctx, lockPath(name), leaseID, token, ttl)
}

// renew renews the lease of the lock, semaphore or election at path.
func (c *Client) renew(ctx context.Context, path, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	req := LeaseRequest{LeaseID: leaseID, Token: token, TTL: durationPtr(ttl)}
	var l Lease
	err := c.send(ctx, http.MethodPost, path+"/renew", encodeLease(&req), &l)
	return l, err
}

// durationPtr is d for an optional duration field: nil (the daemon's
// default) for 0.
func durationPtr(d time.Duration) *Duration {
	if d == 0 {
		return nil
	}
	x := Duration(d)
	return &x
}

// Release releases a lease.
func (c *Client) Release(ctx context.Context, name, leaseID string, token uint64) error {
	return c.release(ctx, lockPath(name), leaseID, token)
}

// release releases the lease of the lock or semaphore at path.
func (c *Client) release(ctx context.Context, path, leaseID string, token uint64) error {
	req := LeaseRequest{LeaseID: leaseID, Token: token}
	return c.send(ctx, http.MethodPost, path+"/release", encodeLease(&req), nil)
}

// Check checks a token against the lock's current holder. A stale token is
// an error matching fence.ErrStaleToken; the response is returned either way.
func (c *Client) Check(ctx context.Context, name string, token uint64) (CheckResponse, error) {
	var res CheckResponse
	err := c.do(ctx, http.MethodPost, "/v1/check", CheckRequest{Name: name, Token: token}, &res)
	return res, err
}

// CheckSequencer asks whether seq (plain or signed) is its lock's current
// holder's sequencer.
func (c *Client) CheckSequencer(ctx context.Context, seq string) (CheckResponse, error) {
	var res CheckResponse
	err := c.do(ctx, http.MethodPost, "/v1/check", CheckRequest{Sequencer: seq}, &res)
	return res, err
}

// Status reads a lock's state.
func (c *Client) Status(ctx context.Context, name string) (LockStatus, error) {
	var st LockStatus
	err := c.do(ctx, http.MethodGet, lockPath(name), nil, &st)
	return st, err
}

// Leases lists the leases held through the daemon.
func (c *Client) Leases(ctx context.Context) ([]Lease, error) {
	var res LeaseList
	err := c.do(ctx, http.MethodGet, "/v1/locks", nil, &res)
	return res.Locks, err
}

// AcquireSemaphore asks for one of limit slots of name for owner; ttl and
// wait as for Acquire.
func (c *Client) AcquireSemaphore(ctx context.Context, name, owner string, limit int, ttl, wait time.Duration, opts ...AcquireOption) (Lease, error) {
	var o acquireOptions
	for _, opt := range opts {
		opt(&o)
	}
	req := SemaphoreAcquireRequest{Owner: owner, LeaseID: o.leaseID, Limit: limit}
	req.TTL, req.Wait = durationPtr(ttl), durationPtr(wait)
	var l Lease
	err := c.do(ctx, http.MethodPost, semaphorePath(name)+"/acquire", req, &l)
	return l, err
}

// RenewSemaphore renews a semaphore lease (ttl 0 keeps its TTL).
func (c *Client) RenewSemaphore(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	return c.renew(ctx, semaphorePath(name), leaseID, token, ttl)
}

// ReleaseSemaphore releases a semaphore lease.
func (c *Client) ReleaseSemaphore(ctx context.Context, name, leaseID string, token uint64) error {
	return c.release(ctx, semaphorePath(name), leaseID, token)
}

// SemaphoreStatus counts a semaphore's holders.
func (c *Client) SemaphoreStatus(ctx context.Context, name string) (SemaphoreStatus, error) {
	var st SemaphoreStatus
	err := c.do(ctx, http.MethodGet, semaphorePath(name), nil, &st)
	return st, err
}

func semaphorePath(name string) string {
	return "/v1/semaphores/" + strings.TrimPrefix(lockPath(name), "/v1/locks/")
}

func lockPath(name string) string {
	if plainName(name) {
		return "/v1/locks/" + name
	}
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/v1/locks/" + strings.Join(segs, "/")
}

// encodeAcquire is json.Marshal(req), by hand unless strictJSONOnly. The
// buffer is not pooled: the Transport may read a body after Do returns.
func encodeAcquire(req *AcquireRequest) []byte {
	if strictJSONOnly.Load() {
		b, _ := json.Marshal(req) // cannot fail: strings and durations
		return b
	}
	return appendAcquireRequest(make([]byte, 0, 128), req)
}

// encodeLease is json.Marshal(req), by hand unless strictJSONOnly.
func encodeLease(req *LeaseRequest) []byte {
	if strictJSONOnly.Load() {
		b, _ := json.Marshal(req)
		return b
	}
	return appendLeaseRequest(make([]byte, 0, 96), req)
}

// plainName reports whether url.PathEscape leaves each of name's segments
// as it is: they are made of [A-Za-z0-9._-], as every valid lock name.
func plainName(name string) bool {
	for i := range len(name) {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-', c == '/':
		default:
			return false
		}
	}
	return true
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	return c.send(ctx, method, path, body, out)
}

// send sends body (none if nil) and decodes a 2xx answer into out.
func (c *Client) send(ctx context.Context, method, path string, in []byte, out any) error {
	var body io.Reader
	if in != nil {
		body = bytes.NewReader(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Addr, "/")+path, body)
	if err != nil {
		return fmt.Errorf("sequencer: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIToken)
	}
	hc := c.httpClient()
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	defer resp.Body.Close()
	bp := getBuf()
	raw, err := readAll(io.LimitReader(resp.Body, 1<<20), (*bp)[:0])
	defer putBuf(bp, raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDaemonUnreachable, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			ErrorBody
			Valid *bool `json:"valid"`
		}
		if err := json.Unmarshal(raw, &eb); err != nil || eb.Code == "" {
			return &APIError{Status: resp.StatusCode, Code: "http", Message: strings.TrimSpace(string(raw))}
		}
		if eb.Valid != nil && out != nil { // a failed check still has its body
			json.Unmarshal(raw, out)
		}
		return &APIError{Status: resp.StatusCode, Code: eb.Code, Message: eb.Error, CurrentToken: eb.CurrentToken}
	}
	if out == nil {
		return nil
	}
	if l, ok := out.(*Lease); ok && !strictJSONOnly.Load() && fastLeaseReply(raw, l) {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("sequencer: decode %s %s: %w", method, path, err)
	}
	return nil
}

// httpClient is c.HTTP, or the Client's own, which keeps enough idle
// connections for a busy sidecar client (http.DefaultClient keeps 2 per
// host and reconnects past that).
func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	c.once.Do(func() {
		c.own = &http.Client{Transport: &http.Transport{
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		}}
	})
	return c.own
}

// ErrDaemonUnreachable: the daemon did not answer.
var ErrDaemonUnreachable = errors.New("sequencer: daemon unreachable")
