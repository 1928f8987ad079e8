package httpapi

import (
	"context"
	"net"
	"net/http"
	"testing"
)

// The address a connection arrived on is no rebinding: a page whose
// origin is that address came from the daemon itself.
func TestHostOfTheConnection(t *testing.T) {
	r, _ := http.NewRequest("GET", "http://10.1.2.3:7070/v1/locks", nil)
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 7070}))
	g := newGuard(nil)
	if err := g.host(r); err != nil {
		t.Fatalf("Host of the local address: %v, want served", err)
	}
	r.Host = "10.9.9.9:7070"
	if err := g.host(r); err == nil {
		t.Fatal("Host of another address: served, want refused")
	}
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.UnixAddr{Name: "/run/seqd.sock", Net: "unix"}))
	r.Host = "unix"
	if err := g.host(r); err != nil {
		t.Fatalf("a unix socket: %v, want served (no browser reaches it)", err)
	}
}
