package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// Bounds and defaults of a Config.
const (
	MinHolders     = 2
	MaxHolders     = 50
	DefaultHolders = 5
	// DefaultTimeout bounds each request when Config.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultRestartTimeout bounds a restart when Config.RestartTimeout is
	// zero.
	DefaultRestartTimeout = time.Minute
	// TTL is the TTL of the leases Daemon takes: long enough for a case
	// with a restart of the resource, short enough that a run killed before
	// it released them leaves nothing held for long.
	TTL = time.Minute
)

// Request is the shape of one kind of request to the resource: a method, a
// URL template and a body template, with {key}, {token}, {sequencer} and
// {value} placeholders. {key} is the only one not escaped in the URL.
type Request struct {
	Method string
	URL    string // "" : the resource has no such request to check
	Body   string // "" : no body
}

// Config describes one run: the resource, where the grants come from, and
// the run's names.
type Config struct {
	Write  Request // required; Method "" is PUT
	Read   Request // URL "": the read cases are not run; Method "" is GET
	Delete Request // URL "": the delete case is not run; Method "" is DELETE
	// TokenHeader, if set, names the header that carries the bare token;
	// SequencerHeader the one that carries the sequencer, [kind:]name@token
	// (signed when the daemon signs). Without either, each request must
	// carry {token} or {sequencer} in its URL or body.
	TokenHeader     string
	SequencerHeader string
	Header          http.Header // sent with every request to the resource
	// RefuseStatus is the status with which the resource refuses a stale
	// token, 300..599; 0: any 4xx.
	RefuseStatus int

	Grants  Grantor       // required: where the tokens come from
	Holders int           // holders in turn in the racing-writers case; 0: DefaultHolders
	Timeout time.Duration // bound on each request to the resource and to Grants; 0: DefaultTimeout
	// LockPrefix and KeyPrefix name the run's locks, PREFIX/RUN/cN, and
	// keys, PREFIXRUN-cN; RUN is random per run. "" is fence-check and
	// fence-check-.
	LockPrefix string
	KeyPrefix  string
	// Restart, if set, restarts the resource for the restart case (not
	// run without it); it returns once the resource is started again or
	// starting. ShellRestart runs a shell command.
	Restart        func(context.Context) error
	RestartTimeout time.Duration // bound on Restart and the resource's return; 0: DefaultRestartTimeout
	// Log receives what a run says besides its report: leases it could
	// not release. nil: discarded.
	Log io.Writer
	// HTTPClient sends the requests to the resource; nil: a client that
	// does not follow redirects (a 3xx is the resource's answer).
	HTTPClient *http.Client
}

// ConfigError is a Config that cannot run. Field names the field, as in
// the Config ("Write.URL", "Holders"), Value is its value, and Problem says
// what is wrong with it.
type ConfigError struct {
	Field   string
	Value   string
	Problem string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("fencecheck: %s %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("fencecheck: %s %q: %s", e.Field, e.Value, e.Problem)
}

// ErrNoToken is matched by the ConfigError of a request that carries the
// token nowhere: no header, and neither {token} nor {sequencer} in its URL
// or body.
var ErrNoToken = errors.New("fencecheck: the request carries no token")

// Is makes errors.Is(err, ErrNoToken) true for a request without a token.
func (e *ConfigError) Is(target error) bool {
	return target == ErrNoToken && strings.HasSuffix(e.Problem, noTokenProblem)
}

const noTokenProblem = "carries no token: set TokenHeader or SequencerHeader, or put {token} or {sequencer} in its URL or body"

// UnreachableError is a run stopped because the resource never answered
// its first write.
type UnreachableError struct{ Detail string }

func (e *UnreachableError) Error() string {
	return "the resource did not answer the first write: " + e.Detail
}

// Grant is a lease as a run uses it: the token and sequencer go to the
// resource; the lease id and token release it.
type Grant struct {
	Lock      string
	Token     uint64
	Sequencer string // signed when the daemon signs
	LeaseID   string
}

// Grantor hands out real grants. A run's lock names are its own, so
// nobody else holds them, and each holder releases before the next asks:
// Acquire need not wait.
type Grantor interface {
	Acquire(ctx context.Context, lock, owner string) (Grant, error)
	// Release releases g; a lease that has already ended is not an error.
	Release(ctx context.Context, g Grant) error
}

// Daemon is a Grantor over the daemon's HTTP API, with leases of TTL.
func Daemon(c *client.Client) Grantor { return daemonGrantor{c} }

type daemonGrantor struct{ c *client.Client }

func (d daemonGrantor) Acquire(ctx context.Context, lock, owner string) (Grant, error) {
	l, err := d.c.Acquire(ctx, lock, client.Owner(owner), client.TTL(TTL))
	if err != nil {
		return Grant{}, err
	}
	return Grant{Lock: l.Name, Token: l.Token, Sequencer: l.Sequencer, LeaseID: l.LeaseID}, nil
}

func (d daemonGrantor) Release(ctx context.Context, g Grant) error {
	err := d.c.ReleaseID(ctx, api.Locks, g.Lock, g.LeaseID, g.Token)
	if errors.Is(err, api.ErrLost) {
		return nil
	}
	return err
}

var (
	keyPrefixRE  = regexp.MustCompile(`^[A-Za-z0-9._/-]*$`)
	lockPrefixRE = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	methodRE     = regexp.MustCompile(`^[A-Za-z]+$`)
)

// HeaderName reports whether s is a valid HTTP header name.
func HeaderName(s string) bool { return headerNameRE.MatchString(s) }

// withDefaults is c with its zero fields given their defaults.
func (c Config) withDefaults() Config {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Write.Method, http.MethodPut)
	def(&c.Read.Method, http.MethodGet)
	def(&c.Delete.Method, http.MethodDelete)
	def(&c.LockPrefix, "fence-check")
	def(&c.KeyPrefix, "fence-check-")
	if c.Holders == 0 {
		c.Holders = DefaultHolders
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RestartTimeout == 0 {
		c.RestartTimeout = DefaultRestartTimeout
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.HTTPClient == nil {
		c.HTTPClient = resourceClient()
	}
	return c
}

// Check reports the first thing wrong with c's description of the
// resource and the run as a *ConfigError, before anything is sent; Run
// calls it, and also wants Grants. Zero fields take their defaults.
func (c Config) Check() error {
	c = c.withDefaults()
	bad := func(field, value, problem string) error {
		return &ConfigError{Field: field, Value: value, Problem: problem}
	}
	if c.Write.URL == "" {
		return bad("Write.URL", "", "is required: a URL template with {key}, e.g. http://127.0.0.1:7071/v1/kv/{key}")
	}
	if c.RefuseStatus != 0 && (c.RefuseStatus < 300 || c.RefuseStatus > 599) {
		return bad("RefuseStatus", fmt.Sprint(c.RefuseStatus), "is not an HTTP status from 300 to 599, nor 0 for any 4xx")
	}
	if c.Holders < MinHolders || c.Holders > MaxHolders {
		return bad("Holders", fmt.Sprint(c.Holders), fmt.Sprintf("is out of range: give %d..%d", MinHolders, MaxHolders))
	}
	if c.Timeout < 0 {
		return bad("Timeout", c.Timeout.String(), "is negative")
	}
	if c.RestartTimeout < 0 {
		return bad("RestartTimeout", c.RestartTimeout.String(), "is negative")
	}
	if !lockPrefixRE.MatchString(c.LockPrefix) {
		return bad("LockPrefix", c.LockPrefix, "is not a lock name prefix: use segments of letters, digits, '.', '_' and '-', joined by '/'")
	}
	if !keyPrefixRE.MatchString(c.KeyPrefix) {
		return bad("KeyPrefix", c.KeyPrefix, "has characters other than letters, digits, '.', '_', '-' and '/'")
	}
	for name := range c.Header {
		if !headerNameRE.MatchString(name) {
			return bad("Header", name, "is not a header name")
		}
	}
	for _, h := range []struct{ field, name string }{{"TokenHeader", c.TokenHeader}, {"SequencerHeader", c.SequencerHeader}} {
		if h.name != "" && !headerNameRE.MatchString(h.name) {
			return bad(h.field, h.name, "is not a header name")
		}
	}
	inHeader := c.TokenHeader != "" || c.SequencerHeader != ""
	for _, o := range []struct {
		field string
		req   Request
	}{{"Write", c.Write}, {"Read", c.Read}, {"Delete", c.Delete}} {
		if o.req.URL == "" {
			continue
		}
		if err := checkRequest(o.field, o.req); err != nil {
			return err
		}
		if !inHeader && !o.req.carriesToken() {
			return bad(o.field, "", "the "+strings.ToLower(o.field)+" "+noTokenProblem)
		}
	}
	return nil
}

// checkRequest checks one template: its method, URL and placeholders.
func checkRequest(field string, t Request) error {
	if !methodRE.MatchString(t.Method) {
		return &ConfigError{Field: field + ".Method", Value: t.Method, Problem: "is not an HTTP method"}
	}
	for _, s := range []struct{ field, tmpl string }{{field + ".URL", t.URL}, {field + ".Body", t.Body}} {
		for _, p := range placeholder.FindAllString(s.tmpl, -1) {
			if !placeholders[p] {
				return &ConfigError{Field: s.field, Value: s.tmpl, Problem: "has an unknown placeholder " + p + "; use {key}, {token}, {sequencer}, {value}"}
			}
		}
	}
	if !strings.Contains(t.URL, "{key}") {
		return &ConfigError{Field: field + ".URL", Value: t.URL, Problem: "has no {key}: each case writes a key of its own"}
	}
	sample := expand(t.URL, map[string]string{"key": "k", "token": "1", "sequencer": "s@1", "value": "v"}, url.PathEscape)
	u, err := url.Parse(sample)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &ConfigError{Field: field + ".URL", Value: t.URL, Problem: "is not an http:// or https:// URL template"}
	}
	return nil
}
