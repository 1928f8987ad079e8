package clients_test

// The hostile daemon of the conformance suite: it answers the lock routes
// from clients/conformance/vectors.json. A lock's name is
// "conformance/<vector id>"; the vector's "acquire" and "renew" fields say
// how the daemon answers those calls (a well-formed grant unless said),
// and a release is always answered {"released":true}. Any other route is
// 404. GET /conformance/stats?name=NAME counts what a client sent for a
// name: its POSTs, their connections and its renewals.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
)

// vector is one entry of vectors.json, as the daemon and the Go runner
// read it; each client's runner reads it in its own language.
type vector struct {
	ID      string `json:"id"`
	Op      string `json:"op"`
	Acquire string `json:"acquire"`
	Renew   string `json:"renew"`
	About   string `json:"about"`
	// RenewBy ("renew_by", seconds) is when, from the grant, the daemon
	// must have seen the lease's first renewal: the daemon checks it
	// itself, whichever client plays the vector.
	RenewBy float64 `json:"renew_by"`
	Wait    string  `json:"wait"`
	TTL     string  `json:"ttl"`
	TLS     bool    `json:"tls"`
	Expect  struct {
		Result string   `json:"result"`
		Token  string   `json:"token"`
		Reason string   `json:"reason"`
		Quotes string   `json:"quotes"`
		Within *float64 `json:"within"`
		For    float64  `json:"for"`
	} `json:"expect"`
}

type vectorFile struct {
	Token   string   `json:"token"`
	Vectors []vector `json:"vectors"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	b, err := os.ReadFile("conformance/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("conformance/vectors.json: %v", err)
	}
	return f
}

// hostile is the scripted daemon.
type hostile struct {
	vectors map[string]vector
	token   string // the token of a well-formed grant

	mu     sync.Mutex
	stats  map[string]*nameStats
	grants map[string]grantTime // by lease id
	stop   chan struct{}
}

type nameStats struct {
	Posts       int `json:"posts"`
	Renews      int `json:"renews"`
	Connections int `json:"connections"`
	conns       map[string]bool
	// firstRenew is how long after its grant the name's first renewal
	// came; 0 before one did.
	firstRenew time.Duration
}

type grantTime struct {
	at  time.Time
	ttl time.Duration
}

var leaseIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// startHostile starts the daemon on plain HTTP and on HTTPS (a certificate
// of httptest's own CA, which no client trusts); both stop at cleanup.
func startHostile(t *testing.T, f vectorFile) (plainURL, tlsURL string) {
	t.Helper()
	h := &hostile{vectors: map[string]vector{}, token: f.Token, stats: map[string]*nameStats{},
		grants: map[string]grantTime{}, stop: make(chan struct{})}
	for _, v := range f.Vectors {
		h.vectors[v.ID] = v
	}
	plain := httptest.NewServer(h)
	secure := httptest.NewTLSServer(h)
	t.Cleanup(func() {
		close(h.stop) // ends the stalls and drips first: Close waits for them
		plain.Close()
		secure.Close()
		for _, why := range h.lateRenewals() {
			t.Error(why)
		}
	})
	return plain.URL, secure.URL
}

// lateRenewals says, for each played vector with a renew_by, that its
// lease was not renewed in time.
func (h *hostile) lateRenewals() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for id, v := range h.vectors {
		s := h.stats["conformance/"+id]
		if v.RenewBy == 0 || s == nil || s.Posts == 0 {
			continue
		}
		if why := renewedBy(s, v.RenewBy); why != "" {
			out = append(out, "vector "+id+": "+why)
		}
	}
	sort.Strings(out)
	return out
}

// renewedBy says what is wrong with a lease's first renewal for a bound
// of by seconds from its grant ("" when it came in time).
func renewedBy(s *nameStats, by float64) string {
	limit := time.Duration(by * float64(time.Second))
	switch {
	case s.Renews == 0:
		return fmt.Sprintf("the lease was never renewed; a client renews every TTL/%d and must have by %v", api.RenewDivisor, limit)
	case s.firstRenew > limit:
		return fmt.Sprintf("the first renewal came %v after the grant, past %v: a client renews every TTL/%d", s.firstRenew.Round(time.Millisecond), limit, api.RenewDivisor)
	}
	return ""
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/conformance/stats" {
		h.mu.Lock()
		s := h.stats[r.URL.Query().Get("name")]
		if s == nil {
			s = &nameStats{}
		}
		b, _ := json.Marshal(s)
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/locks/conformance/")
	i := strings.LastIndex(rest, "/")
	if !ok || r.Method != http.MethodPost || i < 0 {
		http.Error(w, "the conformance daemon answers POST /v1/locks/conformance/<vector>/<action> only", http.StatusNotFound)
		return
	}
	id, action := rest[:i], rest[i+1:]
	v, ok := h.vectors[id]
	if !ok {
		http.Error(w, "no vector "+id, http.StatusNotFound)
		return
	}
	name := "conformance/" + id
	var req struct {
		LeaseID string          `json:"lease_id"`
		TTL     string          `json:"ttl"`
		Token   json.RawMessage `json:"token"`
	}
	json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req)
	h.count(name, r.RemoteAddr, action == "renew")
	leaseID := req.LeaseID
	if !leaseIDRE.MatchString(leaseID) {
		leaseID = randomLeaseID()
	}
	ttl, err := time.ParseDuration(req.TTL)
	if err != nil || ttl <= 0 {
		ttl = 15 * time.Second
	}
	switch action {
	case "acquire":
		h.mu.Lock()
		h.grants[leaseID] = grantTime{at: time.Now(), ttl: ttl}
		h.mu.Unlock()
		h.answer(w, r, v.Acquire, name, leaseID, ttl)
	case "renew":
		h.mu.Lock()
		g, ok := h.grants[leaseID]
		if s := h.stats[name]; ok && s.firstRenew == 0 {
			s.firstRenew = max(time.Since(g.at), time.Nanosecond)
		}
		h.mu.Unlock()
		if ok {
			ttl = g.ttl
		}
		h.answer(w, r, v.Renew, name, leaseID, ttl)
	case "release":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"released":true}`)
	default:
		http.Error(w, "no action "+action, http.StatusNotFound)
	}
}

func (h *hostile) count(name, remote string, renew bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats[name]
	if s == nil {
		s = &nameStats{conns: map[string]bool{}}
		h.stats[name] = s
	}
	s.Posts++
	if renew {
		s.Renews++
	}
	if !s.conns[remote] {
		s.conns[remote] = true
		s.Connections++
	}
}

func randomLeaseID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// leaseJSON is a lease as the daemon writes one, with the token's JSON
// text as given.
func leaseJSON(name, leaseID, token string, ttl time.Duration) string {
	return fmt.Sprintf(`{"name":%q,"token":%s,"sequencer":%q,"lease_id":%q,"owner":"conformance","ttl":%q,"expires_at":%q}`,
		name, token, name+"@"+strings.Trim(token, `"`), leaseID, ttl.String(), time.Now().Add(ttl).UTC().Format(time.RFC3339Nano))
}

// answer plays one of the script's answers.
func (h *hostile) answer(w http.ResponseWriter, r *http.Request, how, name, leaseID string, ttl time.Duration) {
	if how == "" {
		how = "grant"
	}
	// reply answers status with body as the content type ("": none, and
	// no sniffing either).
	reply := func(status int, ctype, body string) {
		w.Header()["Content-Type"] = nil
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
	json200 := func(body string) { reply(http.StatusOK, "application/json", body) }
	switch {
	case how == "grant":
		json200(leaseJSON(name, leaseID, h.token, ttl))
	case strings.HasPrefix(how, "token="):
		json200(leaseJSON(name, leaseID, strings.TrimPrefix(how, "token="), ttl))
	case how == "html":
		reply(http.StatusOK, "text/html; charset=utf-8", "<html><body><h1>Service Unavailable</h1><p>The proxy has no upstream.</p></body></html>\n")
	case how == "garbage":
		json200("\x00\x01 not json at all \xff")
	case how == "empty":
		json200("")
	case how == "array":
		json200(`[{"name":` + fmt.Sprintf("%q", name) + `}]`)
	case how == "shape":
		json200(`{"granted":true}`)
	case how == "no-content-type":
		reply(http.StatusOK, "", leaseJSON(name, leaseID, h.token, ttl))
	case how == "text-plain":
		reply(http.StatusOK, "text/plain; charset=utf-8", leaseJSON(name, leaseID, h.token, ttl))
	case how == "no-token":
		json200(strings.Replace(leaseJSON(name, leaseID, "12", ttl), `"token":12,`, "", 1))
	case how == "foreign-name":
		json200(leaseJSON("conformance/someone-else", leaseID, h.token, ttl))
	case how == "foreign-lease-id":
		json200(leaseJSON(name, randomLeaseID(), h.token, ttl))
	case how == "bad-lease-id":
		json200(leaseJSON(name, "not-a-lease-id", h.token, ttl))
	case how == "echo-auth":
		reply(http.StatusOK, "text/html", "<html>proxy debug: Authorization: "+r.Header.Get("Authorization")+"</html>")
	case how == "401-echo":
		reply(http.StatusUnauthorized, "text/plain", fmt.Sprintf("refused credentials %q", r.Header.Get("Authorization")))
	case how == "409-lost":
		reply(http.StatusConflict, "application/json", `{"error":"the lease was lost","code":"lost"}`)
	case how == "truncated":
		h.truncated(w, leaseJSON(name, leaseID, h.token, ttl))
	case how == "stall":
		h.pause(r, -1)
	case how == "drip":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for ok := true; ok; ok = h.pause(r, 200*time.Millisecond) {
			w.Write([]byte(" "))
			w.(http.Flusher).Flush()
		}
	case how == "drip-headers":
		h.dripHeaders(w, r)
	case how == "late":
		h.mu.Lock()
		g := h.grants[leaseID]
		h.mu.Unlock()
		if h.pause(r, time.Until(g.at.Add(g.ttl+300*time.Millisecond))) {
			json200(leaseJSON(name, leaseID, h.token, ttl))
		}
	default:
		http.Error(w, "the script names no answer "+how, http.StatusInternalServerError)
	}
}

// truncated promises 400 bytes of body, sends the first 60 of a lease and
// closes the connection.
func (h *hostile) truncated(w http.ResponseWriter, body string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n%s", body[:60])
	buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// dripHeaders sends a status line, then one byte of a header line every
// 200 ms, never ending the headers.
func (h *hostile) dripHeaders(w http.ResponseWriter, r *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprint(buf, "HTTP/1.1 200 OK\r\nX-Drip: ")
	for ok := true; ok; ok = h.pause(r, 200*time.Millisecond) {
		buf.WriteByte('.')
		if buf.Flush() != nil {
			return
		}
	}
}

// pause waits d (forever if negative) and says whether it did: false when
// the request or the daemon ended first.
func (h *hostile) pause(r *http.Request, d time.Duration) bool {
	var after <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return true
	case <-r.Context().Done():
	case <-h.stop:
	}
	return false
}

// TestHostileDaemonPlaysItsScript checks the conformance daemon itself: a
// vector means something only if the daemon does what it says (a
// client's pass against a daemon that answered well would prove nothing).
func TestHostileDaemonPlaysItsScript(t *testing.T) {
	t.Parallel()
	plain, _ := startHostile(t, loadVectors(t))
	post := func(vector, action, body string) (*http.Response, []byte, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, plain+"/v1/locks/conformance/"+vector+"/"+action, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+conformanceSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	const lease = `{"owner":"check","ttl":"1s","lease_id":"0123456789abcdef0123456789abcdef"}`

	resp, b, err := post("grant-valid", "acquire", lease)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(string(b), `"token":12,`) || !strings.Contains(string(b), `"lease_id":"0123456789abcdef0123456789abcdef"`) {
		t.Errorf("grant: got %v %v %q, want a well-formed lease of token 12 with the lease id sent", err, resp, b)
	}
	if resp, b, _ := post("grant-no-content-type", "acquire", lease); resp == nil || len(resp.Header.Values("Content-Type")) != 0 || !strings.HasPrefix(string(b), `{"name"`) {
		t.Errorf("no-content-type: got headers %v body %q, want a lease without a Content-Type", resp.Header, b)
	}
	if _, b, _ := post("grant-token-2^64", "acquire", lease); !strings.Contains(string(b), `"token":18446744073709551616,`) {
		t.Errorf("token=2^64: got %q", b)
	}
	if _, b, _ := post("grant-foreign-lease-id", "acquire", lease); strings.Contains(string(b), "0123456789abcdef0123456789abcdef") {
		t.Errorf("foreign-lease-id: got %q, which carries the lease id sent", b)
	}
	if _, b, _ := post("grant-echo-token", "acquire", lease); !strings.Contains(string(b), conformanceSecret) {
		t.Errorf("echo-auth: got %q, want the bearer token echoed", b)
	}
	if _, _, err := post("grant-truncated", "acquire", lease); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: reading the body got %v, want %v", err, io.ErrUnexpectedEOF)
	}
	start := time.Now()
	if _, _, err := post("grant-stall", "acquire", lease); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stall: got %v after %v, want no answer within 1s", err, time.Since(start))
	}
	if _, _, err := post("grant-drip", "acquire", lease); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("drip: got %v, want a body unfinished after 1s", err)
	}
	// A renewal: the daemon keeps the grant's TTL and answers the late 200
	// only after the lease's deadline.
	post("renew-late-200", "acquire", lease)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", strings.TrimPrefix(plain, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	start = time.Now()
	body := `{"lease_id":"0123456789abcdef0123456789abcdef","token":12}`
	io.WriteString(conn, "POST /v1/locks/conformance/renew-late-200/renew HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	r, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || r.StatusCode != 200 || time.Since(start) < time.Second {
		t.Errorf("late: got %v %v after %v, want a 200 after the 1s TTL", r, err, time.Since(start))
	}
	if resp, b, _ := post("renew-token-up", "renew", `{"lease_id":"0123456789abcdef0123456789abcdef","token":12}`); resp == nil || !strings.Contains(string(b), `"token":13,`) {
		t.Errorf("renew token=13: got %q", b)
	}
}
