package clients_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
