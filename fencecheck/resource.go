package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// resource is the HTTP resource as a Config describes it.
type resource struct {
	write, read     Request // read.URL "": the resource has no read to check
	del             Request // del.URL "": no delete to check
	tokenHeader     string  // header that carries the bare token, or ""
	sequencerHeader string  // header that carries the sequencer, or ""
	headers         http.Header
	refuse          int // the status of a refusal; 0: any 4xx
	timeout         time.Duration
	hc              *http.Client
	answered        atomic.Bool // some request got an HTTP answer
}

// outcome is what the resource answered to one request.
type outcome struct {
	req    string // "PUT http://…/k with token 7", for details
	status int
	body   []byte
	err    error // no answer
	refuse int
}

func (o outcome) admitted() bool { return o.err == nil && o.status/100 == 2 }

func (o outcome) refused() bool {
	if o.err != nil {
		return false
	}
	if o.refuse == 0 {
		return o.status/100 == 4
	}
	return o.status == o.refuse
}

// unreachable reports whether the resource was not there to answer (a
// restarting server), as opposed to answering badly.
func (o outcome) unreachable() bool {
	switch o.status {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return o.err != nil
}

// String is the outcome as the table shows it: the status, or why there
// was none.
func (o outcome) String() string {
	switch {
	case errors.Is(o.err, context.DeadlineExceeded):
		return "timed out"
	case o.err != nil:
		return "no answer"
	}
	return strconv.Itoa(o.status)
}

// refusal is how a refusal looks, for the expected column.
func (o outcome) refusal() string {
	if o.refuse == 0 {
		return "4xx"
	}
	return strconv.Itoa(o.refuse)
}

// detail is the request and the whole answer, for a step that failed.
func (o outcome) detail() string {
	if o.err != nil {
		return fmt.Sprintf("%s: no answer: %v", o.req, o.err)
	}
	body := strings.Join(strings.Fields(string(o.body)), " ")
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	return fmt.Sprintf("%s: %d %s", o.req, o.status, body)
}

// doWrite sends a write of value to key with g's token.
func (r *resource) doWrite(ctx context.Context, key string, g *Grant, value string) outcome {
	return r.do(ctx, r.write, key, g, value)
}

// doDelete sends a delete of key with g's token.
func (r *resource) doDelete(ctx context.Context, key string, g *Grant) outcome {
	return r.do(ctx, r.del, key, g, "")
}

// doRead sends a read of key with g's token.
func (r *resource) doRead(ctx context.Context, key string, g *Grant) outcome {
	return r.do(ctx, r.read, key, g, "")
}

func (r *resource) do(ctx context.Context, t Request, key string, g *Grant, value string) outcome {
	vars := map[string]string{"key": key, "token": strconv.FormatUint(g.Token, 10), "sequencer": g.Sequencer, "value": value}
	u := expand(t.URL, vars, url.PathEscape)
	o := outcome{req: fmt.Sprintf("%s %s with token %d", t.Method, u, g.Token), refuse: r.refuse}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var body io.Reader
	if t.Body != "" {
		body = strings.NewReader(expand(t.Body, vars, nil))
	}
	req, err := http.NewRequestWithContext(ctx, t.Method, u, body)
	if err != nil {
		o.err = err
		return o
	}
	for k, vs := range r.headers {
		req.Header[k] = vs
	}
	if r.tokenHeader != "" {
		req.Header.Set(r.tokenHeader, vars["token"])
	}
	if r.sequencerHeader != "" {
		req.Header.Set(r.sequencerHeader, g.Sequencer)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	r.answered.Store(true)
	o.status = resp.StatusCode
	o.body, o.err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return o
}

// placeholder matches what looks like a placeholder in a template; JSON
// such as {"a":1} does not.
var placeholder = regexp.MustCompile(`\{[A-Za-z_]+\}`)

// placeholders are the names a template may use.
var placeholders = map[string]bool{"{key}": true, "{token}": true, "{sequencer}": true, "{value}": true}

// expand replaces the placeholders of tmpl with vars, escaped by esc if it
// is not nil.
func expand(tmpl string, vars map[string]string, esc func(string) string) string {
	return placeholder.ReplaceAllStringFunc(tmpl, func(p string) string {
		v, ok := vars[p[1:len(p)-1]]
		if !ok {
			return p
		}
		if esc != nil && p != "{key}" {
			return esc(v)
		}
		return v
	})
}

// carriesToken reports whether a request built from t carries the token
// somewhere besides the headers.
func (t Request) carriesToken() bool {
	for _, s := range []string{t.URL, t.Body} {
		if strings.Contains(s, "{token}") || strings.Contains(s, "{sequencer}") {
			return true
		}
	}
	return false
}

// resourceClient does not follow redirects: a 3xx is the resource's answer.
func resourceClient() *http.Client {
	return &http.Client{
		Transport: http.DefaultTransport.(*http.Transport).Clone(),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
