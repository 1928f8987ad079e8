package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/seqd/seqd/api"
)

// DefaultAddr is the daemon's address when neither New nor SEQD_ADDR names
// one: a sidecar on loopback.
const DefaultAddr = "http://127.0.0.1:7070"

// The environment variables New reads for what its options do not set.
// seqd's other clients (the CLI, Python, Java, JavaScript) read the same.
const (
	EnvAddr         = "SEQD_ADDR"           // the daemon's base URL
	EnvAPITokenFile = "SEQD_API_TOKEN_FILE" // a file holding the bearer token
	EnvCACert       = "SEQD_CACERT"         // PEM CA that signed the daemon's certificate
	EnvCert         = "SEQD_CERT"           // PEM client certificate (mutual TLS)
	EnvKey          = "SEQD_KEY"            // its PEM key
)

// Client speaks the HTTP API of one seqd daemon. It is safe for concurrent
// use and keeps its connections alive between calls.
type Client struct {
	base    string // the daemon's base URL, without a trailing '/'
	token   string
	owner   string
	timeout time.Duration
	hc      *http.Client
}

// DefaultTimeout is how long a request may take beyond the wait it asks
// the daemon for (an acquire's, a blocking read's): connecting, sending,
// the first byte and the whole answer together.
const DefaultTimeout = 4 * time.Second

// String names the client's daemon; it never shows the API token.
func (c *Client) String() string { return "seqd.Client(" + c.base + ")" }

// GoString is String, so that %#v does not print the API token either.
func (c *Client) GoString() string { return c.String() }

// Option configures New.
type Option func(*settings)

type settings struct {
	token, tokenFile  *string
	cacert, cert, key *string
	tlsConfig         *tls.Config
	hc                *http.Client
	owner             string
	timeout           time.Duration
	noEnv             bool
}

// WithAPIToken sends token as the bearer token (SEQD_API_TOKEN_FILE is then
// not read).
func WithAPIToken(token string) Option { return func(s *settings) { s.token = &token } }

// WithAPITokenFile reads the bearer token from path (its first line).
func WithAPITokenFile(path string) Option { return func(s *settings) { s.tokenFile = &path } }

// WithTLSFiles trusts the CA in cacert (the system's roots if "") and
// presents the client certificate cert with key (none if both are "").
func WithTLSFiles(cacert, cert, key string) Option {
	return func(s *settings) { s.cacert, s.cert, s.key = &cacert, &cert, &key }
}

// WithTLSConfig uses cfg for https (SEQD_CACERT, SEQD_CERT and SEQD_KEY are
// then not read).
func WithTLSConfig(cfg *tls.Config) Option { return func(s *settings) { s.tlsConfig = cfg } }

// WithHTTPClient sends every request through hc (TLS settings are then
// hc's own).
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.hc = hc } }

// WithDefaultOwner is the owner named by grants that do not name one
// (default host:pid).
func WithDefaultOwner(owner string) Option { return func(s *settings) { s.owner = owner } }

// WithTimeout bounds each request beyond the wait it asks for (default
// DefaultTimeout): connecting, sending, the first byte and the whole
// answer together.
func WithTimeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// WithoutEnv reads no SEQD_* variable: what the options do not set takes
// its default.
func WithoutEnv() Option { return func(s *settings) { s.noEnv = true } }

// New returns a client of the daemon at addr, a base URL such as
// http://127.0.0.1:7070 or https://seqd.example:7070. An empty addr reads
// SEQD_ADDR, and then DefaultAddr. What the options leave unset is read
// from SEQD_API_TOKEN_FILE, SEQD_CACERT, SEQD_CERT and SEQD_KEY.
func New(addr string, opts ...Option) (*Client, error) {
	var s settings
	for _, o := range opts {
		o(&s)
	}
	env := func(name string) string {
		if s.noEnv {
			return ""
		}
		return os.Getenv(name)
	}
	if addr == "" {
		addr = env(EnvAddr)
	}
	if addr == "" {
		addr = DefaultAddr
	}
	base, err := baseURL(addr)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, owner: s.owner, hc: s.hc, timeout: s.timeout}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.owner == "" {
		host, _ := os.Hostname()
		c.owner = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if c.token, err = s.bearer(env); err != nil {
		return nil, err
	}
	if c.hc == nil {
		cfg, err := s.tls(env)
		if err != nil {
			return nil, err
		}
		c.hc = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			TLSClientConfig:     cfg,
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 64, // http.DefaultTransport keeps 2 and reconnects past that
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		}}
	}
	return c, nil
}

// baseURL checks addr: http or https, a host, no query.
func baseURL(addr string) (string, error) {
	u, err := url.Parse(addr)
	switch {
	case err != nil:
		return "", fmt.Errorf("seqd: daemon address %q: %w", addr, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("seqd: daemon address %q: want http://host:port or https://host:port", addr)
	case u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("seqd: daemon address %q: want a scheme, a host and a port, nothing after them", addr)
	}
	return strings.TrimSuffix(addr, "/"), nil
}

func (s *settings) bearer(env func(string) string) (string, error) {
	switch {
	case s.token != nil:
		return *s.token, nil
	case s.tokenFile != nil:
		return LoadToken(*s.tokenFile)
	case env(EnvAPITokenFile) != "":
		tok, err := LoadToken(env(EnvAPITokenFile))
		if err != nil {
			return "", fmt.Errorf("%s: %w", EnvAPITokenFile, err)
		}
		return tok, nil
	}
	return "", nil
}

func (s *settings) tls(env func(string) string) (*tls.Config, error) {
	if s.tlsConfig != nil {
		return s.tlsConfig, nil
	}
	ca, cert, key := env(EnvCACert), env(EnvCert), env(EnvKey)
	if s.cacert != nil {
		ca, cert, key = *s.cacert, *s.cert, *s.key
	}
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	return TLSConfig(ca, cert, key)
}

// LoadToken reads a bearer token file: its first line, trimmed.
func LoadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("seqd: API token: %w", err)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", fmt.Errorf("seqd: API token: %s is empty", path)
	}
	return tok, nil
}

// TLSConfig is the TLS configuration of a client that trusts the CA in
// cacert (the system's roots if "") and presents cert with key if given.
func TLSConfig(cacert, cert, key string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cacert != "" {
		b, err := os.ReadFile(cacert)
		if err != nil {
			return nil, fmt.Errorf("seqd: CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("seqd: CA certificate: %s holds no PEM certificate", cacert)
		}
		cfg.RootCAs = pool
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("seqd: a client certificate needs both a certificate file and a key file")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("seqd: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Addr is the daemon's base URL.
func (c *Client) Addr() string { return c.base }

// Owner is the owner named by grants that name none.
func (c *Client) Owner() string { return c.owner }

// do sends in (none if nil) as JSON and decodes a 2xx answer into out (if
// not nil). A non-2xx answer is an *APIError; a failed check's body is
// decoded into out as well.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.call(ctx, call{method: method, path: path, in: in, out: out})
}

// call is one request to the daemon.
type call struct {
	method, path string
	in, out      any
	// wait is how long the request asks the daemon to wait: the whole call
	// (connect, send, first byte, whole answer) is bounded by wait plus the
	// client's timeout.
	wait time.Duration
	// accept says what is wrong with a decoded 2xx answer, or "".
	accept func() string
}

// call sends a request as do does. A 2xx answer decoded into out must come
// as application/json, decode, whole, and pass accept: anything else is a
// *ProtocolError.
func (c *Client) call(ctx context.Context, r call) error {
	var body io.Reader
	if r.in != nil {
		b, err := json.Marshal(r.in)
		if err != nil {
			return fmt.Errorf("seqd: %w", err)
		}
		body = bytes.NewReader(b)
	}
	bound := r.wait + c.timeout
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, r.method, c.base+r.path, body)
	if err != nil {
		return fmt.Errorf("seqd: %w", err)
	}
	if r.in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	traceHeaders(ctx, req.Header)
	what := r.method + " " + r.path
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.unreachable(ctx, rctx, what, bound, err)
	}
	defer resp.Body.Close()
	ctype := resp.Header.Get("Content-Type")
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		if rctx.Err() != nil {
			return c.unreachable(ctx, rctx, what, bound, err)
		}
		return c.protocolError(what, "the answer was cut short ("+err.Error()+")", resp.StatusCode, ctype, raw)
	}
	if resp.StatusCode/100 != 2 {
		return c.apiError(resp.StatusCode, raw, r.out)
	}
	if r.out == nil {
		return nil
	}
	if mt, _, _ := strings.Cut(ctype, ";"); !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		if ctype == "" {
			ctype = "missing"
		}
		return c.protocolError(what, "the answer's Content-Type is "+ctype+", not application/json", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	if err := json.Unmarshal(raw, r.out); err != nil {
		return c.protocolError(what, "the answer is not JSON of the documented shape ("+err.Error()+")", resp.StatusCode, ctype, raw)
	}
	if r.accept != nil {
		if problem := r.accept(); problem != "" {
			return c.protocolError(what, problem, resp.StatusCode, ctype, raw)
		}
	}
	return nil
}

// unreachable is the error of a request that got no whole answer: the
// caller's context's error if it ended, else ErrDaemonUnreachable.
func (c *Client) unreachable(ctx, rctx context.Context, what string, bound time.Duration, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rctx.Err() != nil {
		return fmt.Errorf("%w: no whole answer to %s from %s within %v", ErrDaemonUnreachable, what, c.base, bound)
	}
	return fmt.Errorf("%w: %w", ErrDaemonUnreachable, err)
}

func (c *Client) apiError(status int, raw []byte, out any) error {
	var eb struct {
		api.ErrorBody
		Valid *bool `json:"valid"`
	}
	if err := json.Unmarshal(raw, &eb); err != nil || eb.Code == "" {
		msg := strings.TrimSpace(c.redact(string(raw)))
		if len(msg) > quoteLen {
			msg = msg[:quoteLen]
		}
		return &api.APIError{Status: status, Code: "http", Message: msg}
	}
	if eb.Valid != nil && out != nil { // a failed check has its body
		json.Unmarshal(raw, out)
	}
	return &api.APIError{Status: status, Code: eb.Code, Message: c.redact(eb.Error), CurrentToken: eb.CurrentToken, Limit: eb.Limit, Reason: eb.Reason}
}

// path is the URL path of a name under a family, each segment escaped.
func path(family, name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/v1/" + family + "/" + strings.Join(segs, "/")
}

// durationPtr is d for an optional duration field: nil (the daemon's
// default) for 0.
func durationPtr(d time.Duration) *api.Duration {
	if d == 0 {
		return nil
	}
	x := api.Duration(d)
	return &x
}

// blockingWait is how long a blocking read with wait may wait at the
// daemon: wait, or the daemon's default for 0.
func blockingWait(wait time.Duration) time.Duration {
	if wait <= 0 {
		return api.DefaultBlockingWait
	}
	return wait
}

// blockingQuery is the query of a blocking read: it answers once the
// state's index differs from index, or after wait (the daemon's default if
// 0).
func blockingQuery(index uint64, wait time.Duration) string {
	q := fmt.Sprintf("?index=%d", index)
	if wait > 0 {
		q += "&wait=" + url.QueryEscape(wait.String())
	}
	return q
}
