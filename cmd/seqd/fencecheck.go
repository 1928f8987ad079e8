package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/zklock"
)

// Bounds of fence-check's flags.
const (
	minFenceCheckHolders = 2
	maxFenceCheckHolders = 50
)

func fenceCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "fence-check",
		Usage:     "check that your HTTP resource honours fencing tokens, with real grants from the daemon (exit 0: every case holds; 1: one fails)",
		ArgsUsage: " ",
		Description: "Writes (and reads, and deletes) keys of the resource with the tokens of real grants and checks that it admits the\n" +
			"holder's writes, refuses older holders' writes, reads and deletes, keeps its max across a restart, and compares\n" +
			"tokens as 64-bit integers (across a power of ten, above 2^53 and 2^63). See docs/fencing.md.",
		Flags:  fenceCheckFlags(),
		Action: fenceCheckAction,
	}
}

func fenceCheckFlags() []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: "http://127.0.0.1:7070", Usage: "the daemon's base URL (https:// with TLS)", EnvVars: []string{"SEQD_ADDR"}},
		&cli.StringFlag{Name: "write-url", Usage: "`URL` template of a write, with {key} (and optionally {token}, {sequencer}); required", EnvVars: []string{"SEQD_WRITE_URL"}},
		&cli.StringFlag{Name: "write-method", Value: http.MethodPut, Usage: "HTTP method of a write", EnvVars: []string{"SEQD_WRITE_METHOD"}},
		&cli.StringFlag{Name: "write-body", Value: "{value}", Usage: "body template of a write: {value}, {token}, {sequencer}, {key}", EnvVars: []string{"SEQD_WRITE_BODY"}},
		&cli.StringFlag{Name: "read-url", Usage: "`URL` template of a fenced read, with {key}; without it the read cases are not run", EnvVars: []string{"SEQD_READ_URL"}},
		&cli.StringFlag{Name: "read-method", Value: http.MethodGet, Usage: "HTTP method of a read", EnvVars: []string{"SEQD_READ_METHOD"}},
		&cli.StringFlag{Name: "read-body", Usage: "body template of a read (default: none)", EnvVars: []string{"SEQD_READ_BODY"}},
		&cli.StringFlag{Name: "delete-url", Usage: "`URL` template of a fenced delete, with {key}; without it the delete case is not run", EnvVars: []string{"SEQD_DELETE_URL"}},
		&cli.StringFlag{Name: "delete-method", Value: http.MethodDelete, Usage: "HTTP method of a delete", EnvVars: []string{"SEQD_DELETE_METHOD"}},
		&cli.StringFlag{Name: "delete-body", Usage: "body template of a delete (default: none)", EnvVars: []string{"SEQD_DELETE_BODY"}},
		&cli.StringFlag{Name: "token-header", Usage: "send the token in this header (e.g. Fencing-Token)", EnvVars: []string{"SEQD_TOKEN_HEADER"}},
		&cli.StringFlag{Name: "sequencer-header", Usage: "send the sequencer, [kind:]name@token (signed if the daemon signs), in this header (e.g. Fencing-Sequencer)", EnvVars: []string{"SEQD_SEQUENCER_HEADER"}},
		&cli.StringSliceFlag{Name: "header", Usage: "a `HEADER` sent with every request to the resource, written NAME: VALUE (repeatable), e.g. its Authorization", EnvVars: []string{"SEQD_HEADER"}},
		&cli.IntFlag{Name: "refuse-status", Usage: "the HTTP status with which the resource refuses a stale token; 0: any 4xx", DefaultText: "any 4xx", EnvVars: []string{"SEQD_REFUSE_STATUS"}},
		&cli.StringFlag{Name: "restart-cmd", Usage: "shell command that restarts the resource, for the restart case (not run without it)", EnvVars: []string{"SEQD_RESTART_CMD"}},
		&cli.DurationFlag{Name: "restart-timeout", Value: time.Minute, Usage: "how long --restart-cmd and the resource's return may take", EnvVars: []string{"SEQD_RESTART_TIMEOUT"}},
		&cli.IntFlag{Name: "holders", Value: 5, Usage: fmt.Sprintf("holders in turn in the racing-writers case, %d..%d", minFenceCheckHolders, maxFenceCheckHolders), EnvVars: []string{"SEQD_HOLDERS"}},
		&cli.DurationFlag{Name: "request-timeout", Value: 10 * time.Second, Usage: "bound on each request to the resource and to the daemon", EnvVars: []string{"SEQD_REQUEST_TIMEOUT"}},
		&cli.StringFlag{Name: "lock-prefix", Value: "fence-check", Usage: "the run's locks are PREFIX/RUN/cN, RUN random per run", EnvVars: []string{"SEQD_LOCK_PREFIX"}},
		&cli.StringFlag{Name: "key-prefix", Value: "fence-check-", Usage: "the run's keys are PREFIXRUN-cN", EnvVars: []string{"SEQD_KEY_PREFIX"}},
		&cli.BoolFlag{Name: "json", Usage: "print the report as JSON instead of a table", EnvVars: []string{"SEQD_JSON"}},
	}
	return append(fs, clientSecurityFlags()...)
}

func fenceCheckAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErrorf("fence-check takes no arguments, got %q", c.Args().First())
	}
	k, err := newChecker(c)
	if err != nil {
		return err
	}
	if k.grants, err = newGrantor(c); err != nil {
		return err
	}
	start := time.Now()
	cases, err := k.runCases(c.Context)
	k.releaseAll(c.Context, c.App.ErrWriter)
	switch {
	case c.Context.Err() != nil:
		return interrupted(c.Context, "fence-check")
	case err != nil:
		return fenceCheckError(c, err)
	}
	rep := k.report(cases, time.Since(start))
	if c.Bool("json") {
		err = rep.writeJSON(c.App.Writer)
	} else {
		err = rep.writeTable(c.App.Writer)
	}
	if err != nil {
		return err
	}
	if !rep.Holds {
		return &exitError{code: ExitConflict, err: errors.New("fence-check: a case fails"), quiet: true}
	}
	return nil
}

// errResourceUnreachable is a run stopped because the resource never
// answered.
type errResourceUnreachable struct{ detail string }

func (e *errResourceUnreachable) Error() string {
	return "the resource did not answer the first write: " + e.detail
}

// fenceCheckError maps an error that stopped the run to an exit status.
func fenceCheckError(c *cli.Context, err error) error {
	var ru *errResourceUnreachable
	if errors.As(err, &ru) {
		return withCode(ExitUnavailable, err)
	}
	return clientError(c, err)
}

// newChecker reads every flag but the daemon's; bad input is a usage error
// before anything is sent.
func newChecker(c *cli.Context) (*checker, error) {
	res, err := newResource(c)
	if err != nil {
		return nil, err
	}
	k := &checker{res: res, timeout: res.timeout, holders: c.Int("holders"), id: runID()}
	if k.holders < minFenceCheckHolders || k.holders > maxFenceCheckHolders {
		return nil, usageErrorf("--holders %d is out of range: give %d..%d", k.holders, minFenceCheckHolders, maxFenceCheckHolders)
	}
	k.lockPrefix, k.keyPrefix = c.String("lock-prefix"), c.String("key-prefix")
	if err := zklock.ValidateName(k.lock(1)); err != nil {
		return nil, usageErrorf("--lock-prefix %q: %v", k.lockPrefix, userMessage(err))
	}
	if !keyPrefixRE.MatchString(k.keyPrefix) {
		return nil, usageErrorf("--key-prefix %q: use letters, digits, '.', '_', '-' and '/'", k.keyPrefix)
	}
	if cmd := c.String("restart-cmd"); cmd != "" {
		d, err := durationFlag(c, "restart-timeout", time.Second, time.Hour)
		if err != nil {
			return nil, err
		}
		k.restart = &restarter{cmd: cmd, timeout: d, out: c.App.ErrWriter}
	}
	return k, nil
}

var keyPrefixRE = regexp.MustCompile(`^[A-Za-z0-9._/-]*$`)

// runID names one run: its locks, keys, owners and values, so that runs at
// the same time or one after another never meet.
func runID() string {
	b := make([]byte, 6)
	rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// newResource reads the flags that describe the resource.
func newResource(c *cli.Context) (*resource, error) {
	timeout, err := durationFlag(c, "request-timeout", time.Millisecond, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	r := &resource{
		write:           request{method: c.String("write-method"), url: c.String("write-url"), body: c.String("write-body")},
		read:            request{method: c.String("read-method"), url: c.String("read-url"), body: c.String("read-body")},
		del:             request{method: c.String("delete-method"), url: c.String("delete-url"), body: c.String("delete-body")},
		tokenHeader:     c.String("token-header"),
		sequencerHeader: c.String("sequencer-header"),
		refuse:          c.Int("refuse-status"),
		timeout:         timeout,
		hc:              resourceClient(),
	}
	if r.write.url == "" {
		return nil, usageErrorf("fence-check needs --write-url, a URL template with {key}, e.g. http://127.0.0.1:7071/v1/kv/{key}")
	}
	if r.refuse != 0 && (r.refuse < 300 || r.refuse > 599) {
		return nil, usageErrorf("--refuse-status %d: give an HTTP status from 300 to 599, or 0 for any 4xx", r.refuse)
	}
	if r.headers, err = parseHeaders(c.StringSlice("header")); err != nil {
		return nil, err
	}
	for _, h := range []struct{ flag, name string }{{"token-header", r.tokenHeader}, {"sequencer-header", r.sequencerHeader}} {
		if h.name != "" && !headerNameRE.MatchString(h.name) {
			return nil, usageErrorf("--%s %q is not a header name", h.flag, h.name)
		}
	}
	if err := checkRequests(c, r); err != nil {
		return nil, err
	}
	return r, nil
}

var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// parseHeaders reads the --header values, NAME: VALUE each.
func parseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, s := range hs {
		name, value, ok := strings.Cut(s, ":")
		if !ok || !headerNameRE.MatchString(name) {
			return nil, usageErrorf("--header %q: write it as NAME: VALUE", s)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

// checkRequests checks the write and read templates: methods, URLs,
// placeholders, and that each request carries the token somewhere.
func checkRequests(c *cli.Context, r *resource) error {
	inHeader := r.tokenHeader != "" || r.sequencerHeader != ""
	if err := checkRequest("write", r.write); err != nil {
		return err
	}
	if !inHeader && !r.write.carriesToken() {
		return usageErrorf("fence-check needs to know where the token goes: --token-header NAME, --sequencer-header NAME, or {token} or {sequencer} in --write-body or --write-url")
	}
	for _, o := range []struct {
		kind string
		req  request
	}{{"read", r.read}, {"delete", r.del}} {
		if o.req.url == "" {
			if c.IsSet(o.kind+"-body") || c.IsSet(o.kind+"-method") {
				return usageErrorf("--%s-body and --%s-method describe the %s of --%s-url, which is not given", o.kind, o.kind, o.kind, o.kind)
			}
			continue
		}
		if err := checkRequest(o.kind, o.req); err != nil {
			return err
		}
		if !inHeader && !o.req.carriesToken() {
			return usageErrorf("a %s must carry the token to be fenced: give --token-header or --sequencer-header, or {token} or {sequencer} in --%s-body or --%s-url", o.kind, o.kind, o.kind)
		}
	}
	return nil
}

var methodRE = regexp.MustCompile(`^[A-Za-z]+$`)

// checkRequest checks one template (kind is write or read, as in the flag
// names).
func checkRequest(kind string, t request) error {
	if !methodRE.MatchString(t.method) {
		return usageErrorf("--%s-method %q is not an HTTP method", kind, t.method)
	}
	for _, s := range []struct{ flag, tmpl string }{{kind + "-url", t.url}, {kind + "-body", t.body}} {
		for _, p := range placeholder.FindAllString(s.tmpl, -1) {
			if !placeholders[p] {
				return usageErrorf("--%s %q: unknown placeholder %s; use {key}, {token}, {sequencer}, {value}", s.flag, s.tmpl, p)
			}
		}
	}
	if !strings.Contains(t.url, "{key}") {
		return usageErrorf("--%s-url %q has no {key}: each case writes a key of its own", kind, t.url)
	}
	sample := expand(t.url, map[string]string{"key": "k", "token": "1", "sequencer": "s@1", "value": "v"}, url.PathEscape)
	u, err := url.Parse(sample)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErrorf("--%s-url %q is not an http:// or https:// URL template", kind, t.url)
	}
	return nil
}

// releaseAll releases the grants still held, even after the run was
// interrupted; a release that fails is said, and expires with its TTL.
func (k *checker) releaseAll(ctx context.Context, stderr io.Writer) {
	ctx = context.WithoutCancel(ctx)
	for len(k.live) > 0 {
		g := k.live[0]
		if err := k.release(ctx, g); err != nil {
			fmt.Fprintf(stderr, "fence-check: could not release %s (it expires within %s): %s\n", g.sequencer, shortDuration(fenceCheckTTL), userMessage(err))
			k.live = k.live[1:]
		}
	}
}
