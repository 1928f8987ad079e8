package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/cmd/seqd/internal/serving"
	"github.com/seqd/seqd/internal/httpserve"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/sequencer/httpapi"
	"github.com/seqd/seqd/sequencer/policy"
	"github.com/seqd/seqd/testenv"
)

func serveFlags(zkRequired bool) []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7070", Usage: "HTTP listen address (loopback by default)", EnvVars: []string{"SEQD_LISTEN"}},
		&cli.StringSliceFlag{Name: "host", Usage: "a `NAME` clients reach the daemon by, besides loopback names and addresses and the address they connect to (repeatable); /v1/ refuses any other Host, as a page rebinding its name to the daemon would send", EnvVars: []string{"SEQD_HOST"}},
		rootFlag(),
		semaphoreRootFlag(),
		electionRootFlag(),
		sessionTimeoutFlag(),
		tokenModeFlag(),
		tokenFloorFlag(),
		floorFileFlag(),
		logFormatFlag(),
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "least level logged: debug (also every grant and release), info, warn or error", EnvVars: []string{"SEQD_LOG_LEVEL"}},
		&cli.IntFlag{Name: "max-lock-labels", Value: metrics.DefaultMaxLockLabels, Usage: "lock names with metric series of their own (others count as _other; 0: none, for names that must not leave the daemon)", EnvVars: []string{"SEQD_MAX_LOCK_LABELS"}},
		&cli.IntFlag{Name: "max-blocking-reads", Usage: "blocking reads (GET with ?index) that may wait at once; one more is answered 503 at once (default: half the connection cap, at most 1024)", EnvVars: []string{"SEQD_MAX_BLOCKING_READS"}},
		signingKeyFlag(),
		&cli.StringFlag{Name: "verify-keys-file", Usage: "public keys check accepts signed sequencers from (default: the signing key's own)", EnvVars: []string{"SEQD_VERIFY_KEYS_FILE"}},
		campaignFlag(),
		lockDelayFlag("after a lease ends uncleanly (expired, session lost), nobody gets its lock for this long, on any daemon (up to 1m; an acquire may name its own lock_delay)"),
		&cli.DurationFlag{Name: "shutdown-timeout", Value: 15 * time.Second, Usage: "how long SIGTERM waits for in-flight requests", EnvVars: []string{"SEQD_SHUTDOWN_TIMEOUT"}},
		&cli.StringFlag{Name: "admin-token-file", Usage: "file holding the admin token that breaks holders (POST …/break, seqd break; mode 600, at least 16 bytes); without it breaks are refused", EnvVars: []string{"SEQD_ADMIN_TOKEN_FILE"}},
		&cli.StringFlag{Name: "tokens-file", Usage: "named bearer tokens, one `NAME TOKEN` a line (mode 600): each is accepted like the API token and names its caller for --policy-file; read again when it changes", EnvVars: []string{"SEQD_TOKENS_FILE"}},
		&cli.StringFlag{Name: "policy-file", Usage: "who may acquire, read, break and check which names, and each identity's quotas (see docs/security.md); read again when it changes, a bad change keeps the old policy", EnvVars: []string{"SEQD_POLICY_FILE"}},
		&cli.StringFlag{Name: "audit-log", Usage: "append one JSON line per grant, release, expiry, loss, break, term and resignation to this `FILE` (- for standard output)", EnvVars: []string{"SEQD_AUDIT_LOG"}},
		&cli.StringFlag{Name: "cpu-profile", Usage: "write a CPU profile of the daemon, from start to exit, to `FILE` (read it with go tool pprof); none by default", EnvVars: []string{"SEQD_CPU_PROFILE"}},
	}
	fs = append(fs, serverSecurityFlags()...)
	fs = append(fs, zkSecurityFlags()...)
	if zkRequired {
		fs = append([]cli.Flag{zkFlag(false)}, fs...)
	}
	return fs
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:   "serve",
		Usage:  "run the sequencer daemon: the HTTP API over ZooKeeper",
		Flags:  serveFlags(true),
		Before: noArguments,
		Action: func(c *cli.Context) error {
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

// defaultDevZKPort is the port `seqd dev` gives ZooKeeper when it is free:
// the one every ZooKeeper client tries first.
const defaultDevZKPort = 2181

func devCommand() *cli.Command {
	return &cli.Command{
		Name:  "dev",
		Usage: "start a throwaway local ZooKeeper and serve on it (for trying seqd out)",
		Flags: append(append(serveFlags(false),
			&cli.IntFlag{Name: "zk-port", Value: defaultDevZKPort, EnvVars: []string{"SEQD_ZK_PORT"},
				Usage: "ZooKeeper's client port on 127.0.0.1 (0: any free port; the default falls back to a free one when taken)"}),
			devSecureFlags()...),
		Before: noArguments,
		Action: func(c *cli.Context) error {
			stopOnClosedStderr(c)
			secure, err := prepareDevSecure(c)
			if err != nil {
				return err
			}
			defer secure.Cleanup()
			port, err := devZKPort(c)
			if err != nil {
				return err
			}
			zk, err := testenv.Start(c.Context, secure.ZKOptions(port))
			if err != nil {
				if c.Context.Err() != nil {
					return nil // stopped before ZooKeeper served: nothing to report
				}
				if errors.Is(err, testenv.ErrPortInUse) {
					return withCode(ExitUnavailable, fmt.Errorf("ZooKeeper's port %d is taken: give another with --zk-port (0 for any free port)", port))
				}
				return withCode(ExitUnavailable, fmt.Errorf("start ZooKeeper: %w", err))
			}
			defer zk.Stop()
			w := c.App.ErrWriter
			fmt.Fprintf(w, "ZooKeeper (throwaway, standalone) on %s\n", zk.ConnectString())
			if secure != nil {
				servers, err := applyDevSecure(c, secure, zk)
				if err != nil {
					return err
				}
				return stderrClosed(c, serve(c, servers, func(addr string) { secure.WriteReady(w, addr) }))
			}
			return stderrClosed(c, serve(c, zk.Servers(), func(addr string) { plainDev(c, zk.ConnectString()).WriteReady(w, addr) }))
		},
	}
}

// devZKPort picks ZooKeeper's port for `seqd dev`: --zk-port if given, else
// 2181 when free, else any free port (with a note saying so).
func devZKPort(c *cli.Context) (int, error) {
	port := c.Int("zk-port")
	if port < 0 || port > 65535 {
		return 0, usageErrorf("--zk-port %d is not a port: give 1..65535, or 0 for any free port", port)
	}
	if port != 0 && !c.IsSet("zk-port") && !testenv.PortFree(port) {
		fmt.Fprintf(c.App.ErrWriter, "port %d is taken (another ZooKeeper?): ZooKeeper gets a free port instead; --zk-port chooses one\n", port)
		return 0, nil
	}
	return port, nil
}

// serve runs the daemon until the command's context ends (SIGINT/SIGTERM):
// then it stops accepting, releases held leases, closes the session,
// finishes in-flight requests and returns nil.
func serve(c *cli.Context, servers []string, ready func(addr string)) error {
	ctx := c.Context
	level, err := logLevel(c.String("log-level"))
	if err != nil {
		return err
	}
	logger, err := newLogger(c.App.ErrWriter, c.String("log-format"), level)
	if err != nil {
		return err
	}
	mode, err := tokenMode(c)
	if err != nil {
		return err
	}
	st, err := durationFlag(c, "session-timeout", minSessionTimeout, maxSessionTimeout)
	if err != nil {
		return err
	}
	shutdownTimeout, err := durationFlag(c, "shutdown-timeout", 0, 0)
	if err != nil {
		return err
	}
	lockDelay, err := durationFlag(c, "lock-delay", 0, api.MaxLockDelay)
	if err != nil {
		return err
	}
	if err := checkRoots(c, "root", "semaphore-root", "election-root"); err != nil {
		return err
	}
	listen := c.String("listen")
	sec, err := serverSecurity(c, listen, logger)
	if err != nil {
		return err
	}
	blockingReads, err := maxBlockingReads(c, sec)
	if err != nil {
		return err
	}
	labels := c.Int("max-lock-labels")
	switch {
	case labels < 0:
		return usageErrorf("--max-lock-labels must be 0 or more")
	case labels == 0:
		labels = -1 // no lock names in the metrics
	}
	sign, err := signer(c)
	if err != nil {
		return err
	}
	verify, err := verifier(c)
	if err != nil {
		return err
	}

	campaigns, err := parseCampaigns(c.StringSlice("campaign"))
	if err != nil {
		return err
	}
	zkSec, err := parseZKSecurity(c)
	if err != nil {
		return err
	}
	if c.Command.Name != "dev" { // dev's ZooKeeper is its own, on loopback
		zkSec.warnIfOpen(logger)
	}

	admin, err := adminToken(c, sec.token)
	if err != nil {
		return err
	}
	ids, err := loadIdentityFiles(c)
	if err != nil {
		return err
	}
	audit, closeAudit, err := openAuditLog(c)
	if err != nil {
		return err
	}
	defer closeAudit()

	stopProfile, err := serving.StartCPUProfile(c.String("cpu-profile"))
	if err != nil {
		return usageErrorf("--cpu-profile: %v", err)
	}
	defer stopProfile()
	paceCtx, stopPace := context.WithCancel(ctx)
	defer stopPace()
	go serving.PaceHeapEvery(paceCtx, time.Second, logger)

	tokenFloor, floors, err := tokenFloors(c)
	if err != nil {
		return err
	}
	tracer, stopTracing, err := serving.StartTracing(ctx, os.Getenv, c.App.Writer, shutdownTimeout, logger)
	if err != nil {
		return usageErrorf("%v", err)
	}
	defer stopTracing()
	reg := metrics.NewRegistry()
	m := metrics.New(reg, metrics.Options{MaxLockLabels: labels, Version: readBuildInfo().Version})
	svc := sequencer.New(sequencer.Config{
		Tracer:           tracer,
		MaxBlockingReads: blockingReads,

		Servers:        servers,
		Root:           c.String("root"),
		SemaphoreRoot:  c.String("semaphore-root"),
		ElectionRoot:   c.String("election-root"),
		SessionTimeout: st,
		TokenMode:      mode,
		TokenFloor:     tokenFloor,
		Floors:         floors,
		Logger:         logger,
		Metrics:        m,
		Signer:         sign,
		Verifier:       verify,
		Campaigns:      campaigns,
		ZKAuth:         zkSec.auth,
		ZKACL:          zkSec.acl,
		ZKTLS:          zkSec.tls,
		LockDelay:      lockDelay,
		Audit:          audit,
		Authority: policy.NewAuthority(policy.AuthorityOptions{AdminToken: admin, Tokens: ids.Tokens, Policy: ids.Policy,
			CertIdentities: c.String("tls-client-ca-file") != ""}),
	})
	if err := svc.Start(ctx); err != nil {
		return startError(err, strings.Join(servers, ","), c.String("root"), zkSec)
	}
	h := httpapi.NewHandler(svc, httpapi.HandlerOptions{APIToken: sec.token, AllowedHosts: c.StringSlice("host"), Gatherer: reg, Logger: logger})
	stopReloads := ids.Poll(ctx, logger, m)
	defer stopReloads()
	// An acquire may wait client.MaxWait for its answer.
	srv, ln, served, err := serving.Start(listen, h, sec.tls, httpserve.Options{
		MaxConnections: sec.max,
		WriteTimeout:   api.MaxWait + 30*time.Second,
		// Renewals and releases are served ahead of everything else.
		Priority: httpapi.LeaseUpkeep,
		Keep:     httpapi.ProvesLease,
	}, logger)
	if err != nil {
		svc.Close(context.Background())
		return listenError(err, listen)
	}
	addr := ln.Addr().String()
	logger.Info("listening", "addr", addr, "tls", sec.tls != nil, "signed", sign != nil, "breaks", admin != "", "audit_log", c.String("audit-log"), "zk", servers, "token_mode", mode.String(), "root", c.String("root"), "campaigns", describeCampaigns(campaigns))
	if ready != nil {
		ready(addr)
	}

	return serving.RunDaemon(ctx, svc, srv, served, shutdownTimeout, logger)
}

// maxBlockingReads is --max-blocking-reads, or serving's default for the
// connection cap.
func maxBlockingReads(c *cli.Context, sec server) (int, error) {
	switch n := c.Int("max-blocking-reads"); {
	case n < 0:
		return 0, usageErrorf("--max-blocking-reads must be positive")
	case n > 0:
		return n, nil
	}
	return serving.BlockingReads(sec.max), nil
}
