package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// What the /v1/ checks (Host, origin, content type, transfer encoding)
// add to a request: a lease listing (answered from memory, no ZooKeeper
// round trip, the cheapest /v1/ request) and a check's decode and refusal
// path, each served through the handler with the checks and without them,
// interleaved in one run. Reports ns per request of both and their ratio.
func BenchmarkGuardCost(b *testing.B) {
	svc := &fakeService{}
	with := NewHandler(svc, HandlerOptions{}).(http.HandlerFunc)
	hh := &handler{s: svc, log: discard, families: routes(), guard: newGuard(nil)}
	bare := http.HandlerFunc(hh.v1) // the routes without the checks
	reqs := []func() *http.Request{
		func() *http.Request { return httptest.NewRequest("GET", "http://127.0.0.1:7070/v1/locks", nil) },
		func() *http.Request {
			r := httptest.NewRequest("POST", "http://127.0.0.1:7070/v1/check", strings.NewReader(`{"name":"x"}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Origin", "http://127.0.0.1:7070")
			return r
		},
	}
	var tWith, tBare time.Duration
	n := 0
	for b.Loop() {
		for _, mk := range reqs {
			r := mk()
			t0 := time.Now()
			with.ServeHTTP(httptest.NewRecorder(), r)
			tWith += time.Since(t0)
			r = mk()
			t0 = time.Now()
			bare.ServeHTTP(httptest.NewRecorder(), r)
			tBare += time.Since(t0)
			n++
		}
	}
	b.ReportMetric(float64(tWith.Nanoseconds())/float64(n), "ns/req-checked")
	b.ReportMetric(float64(tBare.Nanoseconds())/float64(n), "ns/req-unchecked")
	b.ReportMetric(float64(tWith)/float64(tBare), "ratio")
}
