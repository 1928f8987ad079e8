package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/zklock"
)

func serveFlags(zkRequired bool) []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7070", Usage: "HTTP listen address (loopback by default)", EnvVars: []string{"SEQD_LISTEN"}},
		rootFlag(),
		sessionTimeoutFlag(),
		tokenModeFlag(),
		&cli.StringFlag{Name: "api-token-file", Usage: "file holding a bearer token required on every /v1/ call", EnvVars: []string{"SEQD_API_TOKEN_FILE"}},
		&cli.BoolFlag{Name: "insecure-listen", Usage: "allow a non-loopback --listen without --api-token-file", EnvVars: []string{"SEQD_INSECURE_LISTEN"}},
		logFormatFlag(),
		&cli.IntFlag{Name: "max-lock-labels", Value: metrics.DefaultMaxLockLabels, Usage: "distinct lock names in metric labels before further ones count as _other", EnvVars: []string{"SEQD_MAX_LOCK_LABELS"}},
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "how long SIGTERM waits for in-flight requests", EnvVars: []string{"SEQD_SHUTDOWN_TIMEOUT"}},
	}
	fs = append(fs, zkSecurityFlags()...)
	if zkRequired {
		fs = append([]cli.Flag{zkFlag(false)}, fs...)
	}
	return fs
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the sequencer daemon: the HTTP API over ZooKeeper",
		Flags: serveFlags(true),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("serve takes no arguments, got %q", c.Args().Slice())
			}
			if c.String("zk") == "" {
				return usageErrorf("serve needs --zk host:port[,host:port…] (or SEQD_ZK)")
			}
			servers, err := splitServers(c.String("zk"))
			if err != nil {
				return err
			}
			return serve(c, servers, nil)
		},
	}
}

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "start a throwaway local ZooKeeper and serve on it (for trying seqd out)",
		Flags: serveFlags(false),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErrorf("dev takes no arguments, got %q", c.Args().Slice())
			}
			zk, err := testenv.Start(c.Context, testenv.Options{})
			if err != nil {
				return withCode(ExitUnavailable, fmt.Errorf("start ZooKeeper: %w", err))
			}
			defer zk.Stop()
			fmt.Fprintf(c.App.ErrWriter, "ZooKeeper (throwaway, standalone) on %s\n", zk.ConnectString())
			return serve(c, zk.Servers(), func(addr string) {
				fmt.Fprintf(c.App.ErrWriter, `seqd API on http://%[1]s — try:
  curl -s -X POST http://%[1]s/v1/locks/demo/acquire -d '{"owner":"me","ttl":"30s"}'
  curl -s http://%[1]s/v1/locks/demo
  curl -s http://%[1]s/metrics | grep seqd_
Ctrl-C stops seqd and ZooKeeper.
`, addr)
			})
		},
	}
}

// serve runs the daemon until the command's context ends (SIGINT/SIGTERM):
// then it stops accepting, releases held leases, closes the session,
// finishes in-flight requests and returns nil.
func serve(c *cli.Context, servers []string, ready func(addr string)) error {
	ctx := c.Context
	logger, err := newLogger(c.App.ErrWriter, c.String("log-format"))
	if err != nil {
		return err
	}
	mode, err := zklock.ParseTokenMode(c.String("token"))
	if err != nil {
		return usageErrorf("--token %q: want zxid or version", c.String("token"))
	}
	st := c.Duration("session-timeout")
	if st < time.Second || st > 10*time.Minute {
		return usageErrorf("--session-timeout %v is out of range: 1s..10m", st)
	}
	apiToken, err := readTokenFile(c.String("api-token-file"))
	if err != nil {
		return err
	}
	listen := c.String("listen")
	loop, err := isLoopback(listen)
	if err != nil {
		return usageErrorf("--listen: %v", err)
	}
	if !loop && apiToken == "" && !c.Bool("insecure-listen") {
		return usageErrorf("--listen %s is not a loopback address: give --api-token-file, or --insecure-listen to serve without one", listen)
	}
	if c.Int("max-lock-labels") < 1 {
		return usageErrorf("--max-lock-labels must be at least 1")
	}
	zkSec, err := parseZKSecurity(c)
	if err != nil {
		return err
	}
	zkSec.warnIfOpen(logger)

	reg := metrics.NewRegistry()
	m := metrics.New(reg, metrics.Options{MaxLockLabels: c.Int("max-lock-labels")})
	svc := sequencer.New(sequencer.Config{
		Servers:        servers,
		Root:           c.String("root"),
		SessionTimeout: st,
		TokenMode:      mode,
		Logger:         logger,
		Metrics:        m,
		ZKAuth:         zkSec.auth,
		ZKACL:          zkSec.acl,
		ZKTLS:          zkSec.tls,
	})
	if err := svc.Start(ctx); err != nil {
		return withCode(ExitUnavailable, err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		svc.Close(context.Background())
		return withCode(ExitUnavailable, fmt.Errorf("listen: %w", err))
	}
	srv := &http.Server{
		Handler:           sequencer.NewHandler(svc, sequencer.HandlerOptions{APIToken: apiToken, Gatherer: reg, Logger: logger}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	logger.Info("listening", "addr", addr, "zk", servers, "token_mode", mode.String(), "root", c.String("root"))
	if ready != nil {
		ready(addr)
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		svc.Close(context.Background())
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("shutting down: releasing leases")
	sctx, cancel := context.WithTimeout(context.Background(), c.Duration("shutdown-timeout"))
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }() // stops accepting at once
	svc.Close(sctx)                            // releases leases; waiting acquires end
	if err := <-shut; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}
