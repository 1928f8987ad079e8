package httpapi

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// What a web page can make a browser send: a form or a text/plain fetch
// goes out without a preflight, cross-origin, and once a page has rebound
// its own name to 127.0.0.1 it is served as if it were the daemon's. A
// daemon without an API token would grant or list for it. So every /v1/
// request passes three checks, token or not, before anything else:
//
//   - its Host is a loopback name or address, the address the connection
//     arrived on, or a name given in HandlerOptions.AllowedHosts (DNS
//     rebinding needs a name of the attacker's);
//   - it names no other origin: an Origin header is the daemon's own, and a
//     Sec-Fetch-Site header says same-origin or none;
//   - a POST's body is application/json, which no form can send and no
//     fetch can send cross-origin without a preflight the daemon never
//     answers.
//
// A body sent with Transfer-Encoding is refused first, whoever sends it.

// guard holds the names a Host header may give besides loopback ones.
type guard struct {
	hosts map[string]bool
}

func newGuard(allowed []string) *guard {
	g := &guard{hosts: map[string]bool{}}
	for _, h := range allowed {
		g.hosts[hostName(h)] = true
	}
	return g
}

// hostName is the host of a Host header value, lowercase, without a port,
// brackets or a final dot.
func hostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// check refuses a request a web page may have sent.
func (g *guard) check(r *http.Request) error {
	if err := g.host(r); err != nil {
		return err
	}
	if err := sameOrigin(r); err != nil {
		return err
	}
	if r.Method == http.MethodPost {
		return jsonBody(r)
	}
	return nil
}

// host refuses a Host that a rebinding page could have put there.
func (g *guard) host(r *http.Request) error {
	local, isTCP := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if _, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && !isTCP {
		return nil // a unix socket: no browser reaches it
	}
	h := hostName(r.Host)
	switch {
	case r.Host == "", h == "localhost", strings.HasSuffix(h, ".localhost"), g.hosts[h]:
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && (ip.IsLoopback() || local != nil && ip.Equal(local.IP)) {
		return nil
	}
	return &forbiddenError{Msg: fmt.Sprintf("the Host %q is neither a loopback name or address nor a name this daemon was given (seqd serve --host): a web page that rebinds its name to this address would send it", r.Host)}
}

// sameOrigin refuses a request that a browser says comes from a page of
// another origin.
func sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return &forbiddenError{Msg: fmt.Sprintf("the request comes from a page of another origin (Sec-Fetch-Site: %s): /v1/ serves only this daemon's own page and programs", site)}
	}
	o, ok := r.Header["Origin"]
	if !ok {
		return nil
	}
	u, err := url.Parse(strings.Join(o, ","))
	if err != nil || len(o) != 1 || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return &forbiddenError{Msg: fmt.Sprintf("the request comes from a page of another origin (Origin: %s): /v1/ serves only this daemon's own page and programs", strings.Join(o, ","))}
	}
	return nil
}

// jsonBody refuses a POST whose body does not say it is JSON: a form's
// types and text/plain are what a page sends without a preflight.
func jsonBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil // no body: nothing a form sends
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return badRequest("a POST to /v1/ needs Content-Type: application/json (this one has %s); with curl, add -H 'Content-Type: application/json'", ct)
}

// guarded serves next only to requests that pass g.
func (h *handler) guarded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			// Go has dropped a Content-Length sent with it by now; a proxy in
			// front may have read that length instead (request smuggling).
			// No seqd client sends a chunked body: refuse it, and read
			// nothing more from this connection.
			w.Header().Set("Connection", "close")
			h.fail(w, r, badRequest("a request body must come with a Content-Length, not Transfer-Encoding: %s (with both, a proxy may read another request than seqd does)", strings.Join(r.TransferEncoding, ", ")))
			return
		}
		if err := h.guard.check(r); err != nil {
			h.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
