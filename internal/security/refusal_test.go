package security

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClientTransportTellsRefusals: each wrong TLS setting of a client is
// told apart from the others, on every try (a missing or refused client
// certificate shows under TLS 1.3 only after the handshake, in several
// guises), and a good one or a server that merely drops the connection
// is not taken for a refusal.
func TestClientTransportTellsRefusals(t *testing.T) {
	dir := t.TempDir()
	ca, other := newTestCA(t), newTestCA(t)
	c, k := serverPair(t, ca)
	srvPair := writePair(t, dir, "server", c, k)
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, ca.CertPEM, 0o644)
	cc, ck, _ := ca.IssueClient("client", time.Hour)
	good := writePair(t, dir, "client", cc, ck)
	sc, sk, _ := other.IssueClient("stranger", time.Hour)
	stranger := writePair(t, dir, "stranger", sc, sk)

	cfg, err := ServerTLS(srvPair.cert, srvPair.key, caFile)
	if err != nil {
		t.Fatal(err)
	}
	mtls := serveTLS(t, cfg)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer plain.Close()
	// A TLS server that asks for no certificate and hangs up after the
	// handshake: a dropped connection, not a refusal of the client.
	tlsOnly, _ := ServerTLS(srvPair.cert, srvPair.key, "")
	dropper, err := tls.Listen("tcp", "127.0.0.1:0", tlsOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer dropper.Close()
	go func() {
		for {
			conn, err := dropper.Accept()
			if err != nil {
				return
			}
			conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()

	body := strings.Repeat("x", 64<<10) // large enough for the write to meet the server's close
	cases := []struct {
		name          string
		url           string
		ca, cert, key string
		want          RefusalKind // 0: no refusal
		wantErr       bool
	}{
		{"good", mtls, caFile, good.cert, good.key, 0, false},
		{"unknown CA", mtls, "", good.cert, good.key, ServerNotTrusted, true},
		{"no client certificate", mtls, caFile, "", "", ClientCertMissing, true},
		{"another CA's client certificate", mtls, caFile, stranger.cert, stranger.key, ClientCertRefused, true},
		{"https to plain HTTP", strings.Replace(plain.URL, "http:", "https:", 1), caFile, good.cert, good.key, PlainServer, true},
		{"http to HTTPS", strings.Replace(mtls, "https:", "http:", 1), caFile, good.cert, good.key, TLSServer, true},
		{"dropped after the handshake", "https://" + dropper.Addr().String(), caFile, "", "", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 20; i++ {
				rt, err := ClientTransport(tc.ca, tc.cert, tc.key)
				if err != nil {
					t.Fatal(err)
				}
				req, _ := http.NewRequest("POST", tc.url+"/v1/x", strings.NewReader(body))
				if tc.want == TLSServer {
					req, _ = http.NewRequest("GET", tc.url+"/v1/x", nil)
				}
				resp, err := rt.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				var r *Refusal
				switch {
				case tc.wantErr != (err != nil):
					t.Fatalf("try %d: error %v, want an error: %v", i, err, tc.wantErr)
				case tc.want == 0 && errors.As(err, &r):
					t.Fatalf("try %d: %v taken for a refusal (kind %d)", i, err, r.Kind)
				case tc.want != 0 && (!errors.As(err, &r) || r.Kind != tc.want):
					t.Fatalf("try %d: %v (%#v), want refusal kind %d", i, err, r, tc.want)
				}
			}
		})
	}
}
