package serving

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/httpserve"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/store"
)

// storeShutdownGrace bounds how long in-flight requests may take to finish
// after SIGTERM before the log is closed under them.
const storeShutdownGrace = 10 * time.Second

// Store is a checked `seqd store` command line.
type Store struct {
	Log            store.Options // Dir, Fence, CompactBytes, Repair; RunStore sets the rest
	Listen         string
	AddrFile       string // where to write the address listened on; "" for nowhere
	TLS            *tls.Config
	MaxConnections int
	APIToken       string          // required as a bearer token, if set
	Verify         *fence.Verifier // admit only signed sequencers, if set
	Guards         []store.Guard
	Logger         *slog.Logger
	// BareTokenWarning is logged at start by a store that fences without
	// Verify, with the attribute flag=BareTokenFlag.
	BareTokenWarning, BareTokenFlag string
	// Tracer, if set, makes each key operation a span (see traceStore).
	Tracer trace.TracerProvider
}

// RunStore opens the store's log and serves it until ctx ends; then it
// finishes the requests in flight (each waits for its fsync) before the
// log is closed, so that nothing is acknowledged after Close. A log Open
// refuses is an error that matches store.ErrDamaged.
func RunStore(ctx context.Context, cfg Store) error {
	logger := cfg.Logger
	reg := metrics.NewRegistry()
	sm := metrics.NewStore(reg)
	opts := cfg.Log
	opts.StoreMetrics, opts.Logger = sm, logger
	st, err := store.Open(opts)
	if err != nil {
		return err
	}
	defer st.Close()

	h := store.NewHandler(st, reg, sm, logger)
	if cfg.Verify != nil {
		h.RequireSigned(cfg.Verify, cfg.Guards)
	}
	if cfg.APIToken != "" {
		h.RequireBearer(cfg.APIToken)
	}
	srv, ln, served, err := Start(cfg.Listen, traceStore(cfg.Tracer, h), cfg.TLS, httpserve.Options{WriteTimeout: 30 * time.Second, MaxConnections: cfg.MaxConnections}, logger)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	if cfg.AddrFile != "" {
		if err := writeAddr(cfg.AddrFile, addr); err != nil {
			srv.Close()
			return err
		}
	}
	logger.Info("listening on "+addr, "addr", addr, "dir", opts.Dir, "fence", string(opts.Fence), "tls", cfg.TLS != nil, "signed_only", cfg.Verify != nil)
	if cfg.Verify == nil && opts.Fence != store.FenceOff && cfg.BareTokenWarning != "" {
		logger.Warn(cfg.BareTokenWarning, "flag", cfg.BareTokenFlag)
	}

	select {
	case err := <-served:
		return fmt.Errorf("store: serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeShutdownGrace)
	defer cancel()
	if err := Shutdown(sctx, srv, served); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	if err := st.Close(); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// AddrFileError is an address file that could not be written.
type AddrFileError struct{ Err error }

func (e *AddrFileError) Error() string { return "store: the address file: " + e.Err.Error() }

func (e *AddrFileError) Unwrap() error { return e.Err }

// writeAddr writes the address atomically, so a script polling for the
// file never reads half of it.
func writeAddr(path, addr string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return &AddrFileError{err}
	}
	if err := os.Rename(tmp, path); err != nil {
		return &AddrFileError{err}
	}
	return nil
}
