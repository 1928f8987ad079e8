package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request with both Content-Length and Transfer-Encoding is one that a
// proxy in front may read as another length than seqd does (request
// smuggling): 400, and the connection closed, so that nothing after it on
// the connection is read as a request. Go drops the Content-Length before
// a handler sees it, and no seqd client sends a chunked body, so every
// request body with a Transfer-Encoding is refused.
func TestChunkedWithLengthRefusedAndClosed(t *testing.T) {
	svc := &fakeService{}
	url := serve(t, svc, HandlerOptions{})
	body := `{"owner":"smuggled"}`
	for _, tc := range []struct{ name, headers string }{
		{"Content-Length and chunked", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"},
		{"chunked alone", "Transfer-Encoding: chunked\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			req := "POST /v1/locks/smuggle/acquire HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + tc.headers + "\r\n" +
				hexLen(body) + "\r\n" + body + "\r\n0\r\n\r\n" +
				"GET /v1/locks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "Transfer-Encoding") || !resp.Close {
				t.Fatalf("got %d (close %v) %s, want 400 naming Transfer-Encoding, connection closed", resp.StatusCode, resp.Close, b)
			}
			if next, err := http.ReadResponse(br, nil); err == nil {
				t.Fatalf("the request after it was answered too (%d): the connection was kept", next.StatusCode)
			}
		})
	}
	if v := svc.asked(); len(v) != 0 {
		t.Fatalf("the refused requests reached the service: %v", v)
	}
}

func hexLen(s string) string {
	const digits = "0123456789abcdef"
	n := len(s)
	out := ""
	for {
		out = string(digits[n%16]) + out
		n /= 16
		if n == 0 {
			return out
		}
	}
}
