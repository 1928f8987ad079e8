package httptry

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDoSendsHeadersAndHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte(r.Method + " " + r.Host + " " + r.Header.Get("X-A")))
	}))
	defer srv.Close()
	status, body := Do(t, "POST", srv.URL, "x", map[string]string{"Host": "h:1", "X-A": "b"})
	if status != http.StatusTeapot || body != "POST h:1 b" {
		t.Fatalf("got %d %q, want 418 %q", status, body, "POST h:1 b")
	}
}
