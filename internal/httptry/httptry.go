// Package httptry sends one HTTP request for a test and hands back the
// status and the whole body, failing the test if no answer came. Only
// tests import it.
package httptry

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Do sends method url with body and headers ("Host" sets the request's
// Host rather than a header) and returns the status and the body, within
// 30 s.
func Do(t testing.TB, method, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp.StatusCode, string(b)
}
