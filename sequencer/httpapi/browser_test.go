package httpapi

import (
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/seqd/seqd/api"
)

// What a web page can make a browser send to a daemon on loopback: a form
// or a text/plain fetch (no preflight), a request naming the page's own
// origin, and, after DNS rebinding, a Host that is the page's name. None of
// them reaches /v1/; the daemon's own page and every client do.
func TestBrowserRequestsRefused(t *testing.T) {
	svc := &fakeService{}
	own := serve(t, svc, HandlerOptions{})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(own, "http://"))
	acquire := own + "/v1/locks/csrf/acquire"
	body := `{"owner":"evil=","ttl":"1h"}`
	type hdr = map[string]string
	for _, tc := range []struct {
		name, method, url, body string
		headers                 hdr
		status                  int
		want                    string
	}{
		{"form post as text/plain", "POST", acquire, body, hdr{"Content-Type": "text/plain"}, 400, "Content-Type: application/json"},
		{"form post urlencoded", "POST", acquire, body, hdr{"Content-Type": "application/x-www-form-urlencoded"}, 400, "Content-Type: application/json"},
		{"multipart form", "POST", acquire, "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n" + body + "\r\n--b--\r\n", hdr{"Content-Type": "multipart/form-data; boundary=b"}, 400, "Content-Type: application/json"},
		{"body without a type", "POST", acquire, body, hdr{}, 400, "Content-Type: application/json"},
		{"json from another origin", "POST", acquire, body, hdr{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, "another origin"},
		{"json from another port", "POST", acquire, body, hdr{"Content-Type": "application/json", "Origin": "http://127.0.0.1:1"}, 403, "another origin"},
		{"opaque origin", "POST", acquire, body, hdr{"Content-Type": "application/json", "Origin": "null"}, 403, "another origin"},
		{"cross-site fetch metadata", "POST", acquire, body, hdr{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "another origin"},
		{"same-site fetch metadata", "POST", acquire, body, hdr{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, 403, "another origin"},
		{"rebound host on a post", "POST", acquire, body, hdr{"Content-Type": "application/json", "Host": "evil.example:" + port}, 403, `Host "evil.example:` + port + `"`},
		{"rebound host on a listing", "GET", own + "/v1/locks", "", hdr{"Host": "evil.example"}, 403, `Host "evil.example"`},
		{"rebound host on a status", "GET", own + "/v1/locks/csrf", "", hdr{"Host": "rebind.127.0.0.1.nip.io:" + port}, 403, "Host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, got := httpDoWith(t, tc.method, tc.url, tc.body, tc.headers)
			var eb api.ErrorBody
			if err := json.Unmarshal([]byte(got), &eb); err != nil {
				t.Fatalf("body %q is not an error object: %v", got, err)
			}
			if status != tc.status || !strings.Contains(eb.Error, tc.want) {
				t.Fatalf("got %d %q, want %d with a sentence containing %q", status, got, tc.status, tc.want)
			}
		})
	}
	if v := svc.asked(); len(v) != 0 {
		t.Fatalf("refused requests reached the service: %v", v)
	}
	// The control: the same acquire as a client sends it reaches it.
	if status, got := httpDoWith(t, "POST", acquire, body, hdr{"Content-Type": "application/json"}); status != 200 {
		t.Fatalf("a client's acquire: %d %s", status, got)
	}
	if v := svc.asked(); len(v) != 1 || v[0] != "Acquire" {
		t.Fatalf("a client's acquire reached the service as %v, want [Acquire]", v)
	}

	// What the daemon's own page, curl with -H and the clients send.
	for i, h := range []hdr{
		{"Content-Type": "application/json"},
		{"Content-Type": "application/json; charset=utf-8", "Origin": own, "Sec-Fetch-Site": "same-origin"},
		{"Content-Type": "Application/JSON", "Host": "localhost:" + port},
		{"Content-Type": "application/json", "Host": "[::1]:" + port},
		{"Content-Type": "application/json", "Host": "127.0.0.2"},
	} {
		status, got := httpDoWith(t, "POST", own+"/v1/locks/ok/acquire", `{"owner":"me"}`, h)
		if status != 200 {
			t.Fatalf("request %d %v: got %d %s, want 200", i, h, status, got)
		}
		var l api.Lease
		json.Unmarshal([]byte(got), &l)
		if st, got := httpDoWith(t, "POST", own+"/v1/locks/ok/release", `{"lease_id":"`+l.LeaseID+`","token":`+jsonNum(l.Token)+`}`, h); st != 200 {
			t.Fatalf("release %d: %d %s", i, st, got)
		}
	}
	if st, got := httpDoWith(t, "GET", own+"/v1/locks", "", hdr{"Sec-Fetch-Site": "none"}); st != 200 {
		t.Fatalf("a listing typed into the address bar: %d %s, want 200", st, got)
	}
	// Probes and metrics answer whatever the Host: a scraper names the
	// daemon by its service name.
	if st, _ := httpDoWith(t, "GET", own+"/healthz", "", hdr{"Host": "seqd1:7070"}); st != 200 {
		t.Fatalf("healthz with a service name: %d, want 200", st)
	}
}

// A name given to the daemon is served; a token does not lift the Host
// rule.
func TestAllowedHosts(t *testing.T) {
	srv := serve(t, &fakeService{}, HandlerOptions{APIToken: "s3cret-s3cret-s3cret", AllowedHosts: []string{"seqd.internal", "Other.Example."}})
	auth := "Bearer s3cret-s3cret-s3cret"
	for _, tc := range []struct {
		host   string
		status int
	}{
		{"seqd.internal:7070", 200},
		{"SEQD.internal", 200},
		{"other.example", 200},
		{"evil.example", 403},
		{"seqd.internal.evil.example", 403},
		{"localhost", 200},
	} {
		st, got := httpDoWith(t, "GET", srv+"/v1/locks", "", map[string]string{"Host": tc.host, "Authorization": auth})
		if st != tc.status {
			t.Errorf("Host %q: got %d %s, want %d", tc.host, st, got, tc.status)
		}
	}
}
