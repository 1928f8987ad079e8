package security

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// RefusalKind says why a TLS connection to a server did not carry a
// request.
type RefusalKind int

const (
	// ServerNotTrusted: the server's certificate did not verify (an
	// unknown CA, another host name, expired); Verify says how.
	ServerNotTrusted RefusalKind = iota + 1
	// ClientCertMissing: the server asked for a client certificate and the
	// client had none.
	ClientCertMissing
	// ClientCertRefused: the client sent its certificate and the server
	// ended the connection (with an alert, or by closing it).
	ClientCertRefused
	// PlainServer: an https URL, and the server answered in plain HTTP.
	PlainServer
	// TLSServer: an http URL, and the server speaks only HTTPS.
	TLSServer
)

// A Refusal is a request that failed for a reason in the client's TLS
// settings, each of which names the setting to fix.
type Refusal struct {
	Kind RefusalKind
	// Verify is the server certificate's verification error, with
	// ServerNotTrusted.
	Verify *tls.CertificateVerificationError
	Err    error // what the HTTP client returned
}

func (r *Refusal) Error() string {
	if r.Err == nil {
		return "the daemon speaks only HTTPS"
	}
	return r.Err.Error()
}

func (r *Refusal) Unwrap() error { return r.Err }

// httpsOnlyAnswer is what net/http's server answers to a plain HTTP request
// on its TLS port.
var httpsOnlyAnswer = []byte("Client sent an HTTP request to an HTTPS server.")

// ClientTransport is an HTTP/1.1 transport with ClientTLS's configuration
// whose errors say, as a *Refusal, when the TLS settings are what failed.
//
// The difficulty is mutual TLS: under TLS 1.3 the client finishes its
// handshake before the server has looked at its certificate, so a server
// that refuses it (or finds none) is seen by the client only at the first
// read, as an alert ("remote error: tls: certificate required"), or, when
// the server's close overtakes it, as a broken pipe, a reset or an EOF; and
// HTTP/2 hides all of these behind "client conn could not be
// established". So the transport speaks HTTP/1.1, which keeps the cause,
// and records in the handshake whether the server asked for a client
// certificate (GetClientCertificate is called only then) and whether one
// was sent: an error after such a request is a refusal of the client's
// certificate, or of its absence, not an unreachable server.
func ClientTransport(caFile, certFile, keyFile string) (http.RoundTripper, error) {
	cfg, err := ClientTLS(caFile, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	p := &probe{}
	var own *tls.Certificate
	if len(cfg.Certificates) > 0 {
		own = &cfg.Certificates[0]
		cfg.Certificates = nil
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		p.asked.Store(true)
		if own == nil {
			return &tls.Certificate{}, nil // none: the server decides
		}
		p.sent.Store(true)
		return own, nil // sent whatever CAs it names: its refusal says more than silence
	}
	t := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	return &probingTransport{base: t, p: p}, nil
}

type probe struct{ asked, sent atomic.Bool }

type probingTransport struct {
	base *http.Transport
	p    *probe
}

func (t *probingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if r := t.p.refusal(err); r != nil {
			return nil, r
		}
		return nil, err
	}
	if req.URL.Scheme == "http" && resp.StatusCode == http.StatusBadRequest && resp.ContentLength < 256 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		resp.Body.Close()
		if bytes.HasPrefix(b, httpsOnlyAnswer) {
			return nil, &Refusal{Kind: TLSServer}
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	return resp, nil
}

// refusal classifies err, or returns nil when TLS is not what failed.
func (p *probe) refusal(err error) *Refusal {
	var cve *tls.CertificateVerificationError
	var rhe tls.RecordHeaderError
	switch {
	case errors.As(err, &cve):
		return &Refusal{Kind: ServerNotTrusted, Verify: cve, Err: err}
	case errors.As(err, &rhe):
		return &Refusal{Kind: PlainServer, Err: err}
	case !p.asked.Load() || !closedByPeer(err):
		return nil
	case p.sent.Load():
		return &Refusal{Kind: ClientCertRefused, Err: err}
	}
	return &Refusal{Kind: ClientCertMissing, Err: err}
}

// closedByPeer: the server sent an alert, or closed or reset the
// connection, after the handshake. net.ErrClosed is the write of a request
// body on a connection that net/http's reader already closed on seeing the
// server's alert or close.
func closedByPeer(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "remote error" {
		return true
	}
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
