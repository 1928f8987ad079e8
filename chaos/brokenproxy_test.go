package chaos

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Ways a brokenProxy breaks the daemon behind it.
const (
	// brokenTwin answers an acquire or a campaign the daemon refused (409:
	// held, full) with a grant of a twin name (the name plus "-twin"),
	// shown under the name asked for, and sends that lease's renewals and
	// releases to the twin: an extra holder.
	brokenTwin = 1 << iota
	// brokenStaleLeader answers every other leader read with the first
	// answer it saw: a read that goes back.
	brokenStaleLeader
	// brokenNoDelay drops the lock_delay of every acquire.
	brokenNoDelay
	// brokenFakeBreak answers a break itself, as broken, without breaking.
	brokenFakeBreak
	// brokenCachedCheck answers a /v1/check of a token it has seen checked
	// with the first answer it had for it.
	brokenCachedCheck
	// brokenRenewOK answers a renewal the daemon refused with the lease's
	// last answer: a daemon that says held past the lease's end.
	brokenRenewOK
)

// brokenProxy stands for a broken daemon in front of a real one: the
// negative controls of the lease kinds' models.
type brokenProxy struct {
	*httptest.Server
	target string
	how    int
	hc     *http.Client

	mu     sync.Mutex
	twins  map[string]bool   // lease ids granted on a twin
	leader []byte            // the first leader read's answer
	reads  int               // leader reads answered
	checks map[string][]byte // check request -> first answer
	status map[string]int
	leases map[string][]byte // lease id -> its last answer (brokenRenewOK)
}

func newBrokenProxy(target string, how int) *brokenProxy {
	p := &brokenProxy{target: target, how: how, hc: &http.Client{Timeout: 30 * time.Second},
		twins: map[string]bool{}, checks: map[string][]byte{}, status: map[string]int{}, leases: map[string][]byte{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

func (p *brokenProxy) forward(req *http.Request, path string, body []byte) (int, []byte) {
	out, err := http.NewRequestWithContext(req.Context(), req.Method, p.target+path, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadGateway, nil
	}
	out.Header = req.Header.Clone()
	resp, err := p.hc.Do(out)
	if err != nil {
		return http.StatusBadGateway, []byte(`{"code":"unavailable","error":"proxy: ` + strings.ReplaceAll(err.Error(), `"`, `'`) + `"}`)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// twinPath is path's name with "-twin" appended: /v1/locks/x/acquire ->
// /v1/locks/x-twin/acquire.
func twinPath(path string) string {
	i := strings.LastIndex(path, "/")
	return path[:i] + "-twin" + path[i:]
}

// pathName is the name in a path of the API: /v1/locks/x/y/acquire -> x/y.
func pathName(path string) string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(path, "/v1/"), "/")
	if i := strings.LastIndex(rest, "/"); i >= 0 {
		return rest[:i]
	}
	return rest
}

// renamed is a lease answer with its name set back to name.
func renamed(b []byte, name string) []byte {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	m["name"] = name
	out, _ := json.Marshal(m)
	return out
}

func (p *brokenProxy) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	path := req.URL.RequestURI()
	var lr struct {
		LeaseID string `json:"lease_id"`
		Token   uint64 `json:"token"`
	}
	json.Unmarshal(body, &lr)
	action := path[strings.LastIndex(path, "/")+1:]
	name := pathName(path)
	switch {
	case p.how&brokenNoDelay != 0 && action == "acquire":
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			delete(m, "lock_delay")
			body, _ = json.Marshal(m)
		}
	case p.how&brokenFakeBreak != 0 && req.Method == http.MethodPost && action == "break":
		b, _ := json.Marshal(map[string]any{"broken": true, "token": lr.Token, "reason": "faked", "holder": map[string]any{}})
		writeRaw(w, http.StatusOK, b)
		return
	case p.how&brokenTwin != 0 && (action == "renew" || action == "release" || action == "resign"):
		p.mu.Lock()
		twin := p.twins[lr.LeaseID]
		p.mu.Unlock()
		if twin {
			status, b := p.forward(req, twinPath(path), body)
			if status == http.StatusOK && action == "renew" {
				b = renamed(b, name)
			}
			writeRaw(w, status, b)
			return
		}
	case p.how&brokenCachedCheck != 0 && path == "/v1/check":
		p.mu.Lock()
		b, seen := p.checks[string(body)]
		st := p.status[string(body)]
		p.mu.Unlock()
		if seen {
			writeRaw(w, st, b)
			return
		}
		status, b := p.forward(req, path, body)
		if status == http.StatusOK || status == http.StatusConflict {
			p.mu.Lock()
			p.checks[string(body)], p.status[string(body)] = b, status
			p.mu.Unlock()
		}
		writeRaw(w, status, b)
		return
	case p.how&brokenStaleLeader != 0 && req.Method == http.MethodGet && strings.HasPrefix(path, "/v1/elections/"):
		status, b := p.forward(req, path, body)
		p.mu.Lock()
		if status == http.StatusOK && p.leader == nil && bytes.Contains(b, []byte(`"term"`)) {
			p.leader = b
		}
		p.reads++
		if p.leader != nil && p.reads%2 == 0 {
			b = p.leader
		}
		p.mu.Unlock()
		writeRaw(w, status, b)
		return
	}
	status, b := p.forward(req, path, body)
	if p.how&brokenRenewOK != 0 && (action == "acquire" || action == "renew") {
		p.mu.Lock()
		if status == http.StatusOK {
			p.leases[lr.LeaseID] = b
		} else if last, ok := p.leases[lr.LeaseID]; ok && action == "renew" {
			status, b = http.StatusOK, last
		}
		p.mu.Unlock()
	}
	if p.how&brokenTwin != 0 && status == http.StatusConflict && (action == "acquire" || action == "campaign") {
		if ts, tb := p.forward(req, twinPath(path), body); ts == http.StatusOK {
			p.mu.Lock()
			p.twins[lr.LeaseID] = true
			p.mu.Unlock()
			status, b = ts, renamed(tb, name)
		}
	}
	writeRaw(w, status, b)
}
