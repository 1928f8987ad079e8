// Package serving runs the HTTP servers that seqd's commands start (serve,
// dev and store): listening with TLS and a connection cap, a shutdown that
// reports what serving returned, the reload of serve's tokens and policy
// files while it runs, and the whole run of `seqd store`.
//
// The handlers are the daemon's and the store's own; the flags that
// configure a server are the command's.
package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/internal/httpserve"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/policy"
)

// Start listens on listen and serves h in the background, over TLS when
// tlsConfig is set; the returned channel gets Serve's result. A listen that
// fails is exit.Unavailable.
func Start(listen string, h http.Handler, tlsConfig *tls.Config, opts httpserve.Options, logger *slog.Logger) (*httpserve.Server, net.Listener, <-chan error, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, nil, exit.With(exit.Unavailable, fmt.Errorf("listen: %w", err))
	}
	srv := httpserve.New(h, opts)
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelDebug)
	served := make(chan error, 1)
	if tlsConfig != nil {
		srv.TLSConfig = tlsConfig
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}
	return srv, ln, served, nil
}

// Shutdown stops srv within ctx and reports what Serve returned, nil for a
// clean stop.
func Shutdown(ctx context.Context, srv *httpserve.Server, served <-chan error) error {
	err := srv.Shutdown(ctx)
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// reloadEvery is how often serve looks at --tokens-file and --policy-file
// for a change.
const reloadEvery = time.Second

// BlockingReads is how many blocking reads the daemon lets wait at once
// when not told: half the connection cap (0: httpserve's default), so that
// blocking reads alone never fill it, and at most
// sequencer.DefaultMaxBlockingReads.
func BlockingReads(maxConnections int) int {
	if maxConnections == 0 {
		maxConnections = httpserve.DefaultMaxConnections()
	}
	return max(1, min(maxConnections/2, sequencer.DefaultMaxBlockingReads))
}

// Identities are serve's named tokens and policy, each nil when its file
// is not given.
type Identities struct {
	Tokens *policy.Watched[policy.Tokens]
	Policy *policy.Watched[policy.Policy]
}

// Poll reloads the files given when they change, until ctx ends or stop
// is called (which waits for it). With none it does nothing.
func (ids Identities) Poll(ctx context.Context, log *slog.Logger, m *metrics.Metrics) (stop func()) {
	var files []policy.Reloadable
	if ids.Tokens != nil {
		files = append(files, ids.Tokens)
	}
	if ids.Policy != nil {
		files = append(files, ids.Policy)
	}
	if len(files) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	t := time.NewTicker(reloadEvery)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		policy.Poll(ctx, t.C, log.With("component", "reload"), m, files...)
	}()
	return func() {
		cancel()
		wg.Wait()
		t.Stop()
	}
}

// RunDaemon serves the daemon until ctx ends (SIGINT/SIGTERM) or serving
// fails: then it stops accepting at once, releases held leases and ends
// waiting acquires (svc.Close), lets in-flight requests finish, all within
// shutdownTimeout, and returns nil for a clean stop.
func RunDaemon(ctx context.Context, svc *sequencer.Service, srv *httpserve.Server, served <-chan error, shutdownTimeout time.Duration, logger *slog.Logger) error {
	select {
	case <-ctx.Done():
	case err := <-served:
		svc.Close(context.Background())
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("shutting down: releasing leases")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- Shutdown(sctx, srv, served) }() // stops accepting at once
	svc.Close(sctx)                                     // releases leases; waiting acquires end
	if err := <-shut; err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// StartCPUProfile profiles the process into file until stop is called;
// with no file it does nothing.
func StartCPUProfile(file string) (stop func(), err error) {
	if file == "" {
		return func() {}, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// ServerTLS is the TLS of a server that serves cert and key (and requires
// client certificates of ca, if set), or nil without cert: the files are
// read again when they change, and logger says when, and when new files do
// not load.
func ServerTLS(cert, key, ca string, logger *slog.Logger) (*tls.Config, error) {
	reloaded := func(err error) {
		if err != nil {
			logger.Error("TLS: "+err.Error(), "tls_cert_file", cert, "tls_key_file", key, "tls_client_ca_file", ca)
			return
		}
		logger.Info("TLS files reloaded", "tls_cert_file", cert, "tls_key_file", key, "tls_client_ca_file", ca)
	}
	return security.ServerTLS(cert, key, ca, security.OnReload(reloaded))
}

// Loopback reports whether a listen address binds only to loopback.
func Loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%q is not host:port", addr)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
