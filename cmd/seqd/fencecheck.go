package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/fencecheck"
	"github.com/seqd/seqd/zklock"
)

func fenceCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "fence-check",
		Usage:     "check that your HTTP resource honours fencing tokens, with real grants from the daemon (exit 0: every case holds; 1: one fails)",
		ArgsUsage: " ",
		Description: "Writes (and reads, and deletes) keys of the resource with the tokens of real grants and checks that it admits the\n" +
			"holder's writes, refuses older holders' writes, reads and deletes, keeps its max across a restart, and compares\n" +
			"tokens as 64-bit integers (across a power of ten, above 2^53 and 2^63). See docs/fencing.md.",
		Flags:  fenceCheckFlags(),
		Before: noArguments,
		Action: fenceCheckAction,
	}
}

func fenceCheckFlags() []cli.Flag {
	fs := []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: "http://127.0.0.1:7070", Usage: "the daemon's base URL (https:// with TLS)", EnvVars: []string{"SEQD_ADDR"}},
		&cli.StringFlag{Name: "write-url", Usage: "`URL` template of a write, with {key} (and optionally {token}, {sequencer}); required", EnvVars: []string{"SEQD_WRITE_URL"}},
		&cli.StringFlag{Name: "write-method", Value: http.MethodPut, Usage: "HTTP method of a write", EnvVars: []string{"SEQD_WRITE_METHOD"}},
		&cli.StringFlag{Name: "write-body", Value: "{value}", Usage: "body template of a write: {value}, {token}, {sequencer}, {key}", EnvVars: []string{"SEQD_WRITE_BODY"}},
		&cli.StringFlag{Name: "read-url", Usage: "`URL` template of a fenced read, with {key}; without it the read cases are not run", EnvVars: []string{"SEQD_READ_URL"}},
		&cli.StringFlag{Name: "read-method", Value: http.MethodGet, Usage: "HTTP method of a read", EnvVars: []string{"SEQD_READ_METHOD"}},
		&cli.StringFlag{Name: "read-body", Usage: "body template of a read (default: none)", EnvVars: []string{"SEQD_READ_BODY"}},
		&cli.StringFlag{Name: "delete-url", Usage: "`URL` template of a fenced delete, with {key}; without it the delete case is not run", EnvVars: []string{"SEQD_DELETE_URL"}},
		&cli.StringFlag{Name: "delete-method", Value: http.MethodDelete, Usage: "HTTP method of a delete", EnvVars: []string{"SEQD_DELETE_METHOD"}},
		&cli.StringFlag{Name: "delete-body", Usage: "body template of a delete (default: none)", EnvVars: []string{"SEQD_DELETE_BODY"}},
		&cli.StringFlag{Name: "token-header", Usage: "send the token in this header (e.g. Fencing-Token)", EnvVars: []string{"SEQD_TOKEN_HEADER"}},
		&cli.StringFlag{Name: "sequencer-header", Usage: "send the sequencer, [kind:]name@token (signed if the daemon signs), in this header (e.g. Fencing-Sequencer)", EnvVars: []string{"SEQD_SEQUENCER_HEADER"}},
		&cli.StringSliceFlag{Name: "header", Usage: "a `HEADER` sent with every request to the resource, written NAME: VALUE (repeatable), e.g. its Authorization", EnvVars: []string{"SEQD_HEADER"}},
		&cli.IntFlag{Name: "refuse-status", Usage: "the HTTP status with which the resource refuses a stale token; 0: any 4xx", DefaultText: "any 4xx", EnvVars: []string{"SEQD_REFUSE_STATUS"}},
		&cli.StringFlag{Name: "restart-cmd", Usage: "shell command that restarts the resource, for the restart case (not run without it)", EnvVars: []string{"SEQD_RESTART_CMD"}},
		&cli.DurationFlag{Name: "restart-timeout", Value: fencecheck.DefaultRestartTimeout, Usage: "how long --restart-cmd and the resource's return may take", EnvVars: []string{"SEQD_RESTART_TIMEOUT"}},
		&cli.IntFlag{Name: "holders", Value: fencecheck.DefaultHolders, Usage: fmt.Sprintf("holders in turn in the racing-writers case, %d..%d", fencecheck.MinHolders, fencecheck.MaxHolders), EnvVars: []string{"SEQD_HOLDERS"}},
		&cli.DurationFlag{Name: "request-timeout", Value: fencecheck.DefaultTimeout, Usage: "bound on each request to the resource and to the daemon", EnvVars: []string{"SEQD_REQUEST_TIMEOUT"}},
		&cli.StringFlag{Name: "lock-prefix", Value: "fence-check", Usage: "the run's locks are PREFIX/RUN/cN, RUN random per run", EnvVars: []string{"SEQD_LOCK_PREFIX"}},
		&cli.StringFlag{Name: "key-prefix", Value: "fence-check-", Usage: "the run's keys are PREFIXRUN-cN", EnvVars: []string{"SEQD_KEY_PREFIX"}},
		&cli.BoolFlag{Name: "json", Usage: "print the report as JSON instead of a table", EnvVars: []string{"SEQD_JSON"}},
	}
	return append(fs, clientSecurityFlags()...)
}

// fenceCheckAction reads the flags into a fencecheck.Config, runs it and
// prints the report.
func fenceCheckAction(c *cli.Context) error {
	cfg, err := fenceCheckConfig(c)
	if err != nil {
		return err
	}
	if err := cfg.Check(); err != nil {
		return fenceCheckError(c, err)
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	cfg.Grants = fencecheck.Daemon(cl)
	rep, err := fencecheck.Run(c.Context, cfg)
	switch {
	case c.Context.Err() != nil:
		return interrupted(c.Context, "fence-check")
	case err != nil:
		return fenceCheckError(c, err)
	}
	for i := range rep.Cases {
		rep.Cases[i].Detail = withFlags.Replace(rep.Cases[i].Detail)
		rep.Cases[i].Observed = withFlags.Replace(rep.Cases[i].Observed)
	}
	if c.Bool("json") {
		err = rep.WriteJSON(c.App.Writer)
	} else {
		err = rep.WriteTable(c.App.Writer)
	}
	if err != nil {
		return err
	}
	if !rep.Holds {
		return &exitError{Code: ExitConflict, Err: errors.New("fence-check: a case fails"), Quiet: true}
	}
	return nil
}

// fenceCheckConfig reads every flag but the daemon's; bad input is a usage
// error before anything is sent. Grants is left for the caller.
func fenceCheckConfig(c *cli.Context) (fencecheck.Config, error) {
	cfg := fencecheck.Config{
		Write:           fencecheck.Request{Method: c.String("write-method"), URL: c.String("write-url"), Body: c.String("write-body")},
		Read:            fencecheck.Request{Method: c.String("read-method"), URL: c.String("read-url"), Body: c.String("read-body")},
		Delete:          fencecheck.Request{Method: c.String("delete-method"), URL: c.String("delete-url"), Body: c.String("delete-body")},
		TokenHeader:     c.String("token-header"),
		SequencerHeader: c.String("sequencer-header"),
		RefuseStatus:    c.Int("refuse-status"),
		Holders:         c.Int("holders"),
		LockPrefix:      c.String("lock-prefix"),
		KeyPrefix:       c.String("key-prefix"),
		Log:             c.App.ErrWriter,
	}
	var err error
	if cfg.Timeout, err = durationFlag(c, "request-timeout", time.Millisecond, 10*time.Minute); err != nil {
		return cfg, err
	}
	if cfg.Header, err = parseHeaders(c.StringSlice("header")); err != nil {
		return cfg, err
	}
	for _, kind := range []string{"read", "delete"} {
		if c.String(kind+"-url") == "" && (c.IsSet(kind+"-body") || c.IsSet(kind+"-method")) {
			return cfg, usageErrorf("--%s-body and --%s-method describe the %s of --%s-url, which is not given", kind, kind, kind, kind)
		}
	}
	if err := zklock.ValidateName(cfg.LockPrefix + "/run/c1"); err != nil {
		return cfg, usageErrorf("--lock-prefix %q: %v", cfg.LockPrefix, userMessage(err))
	}
	if cmd := c.String("restart-cmd"); cmd != "" {
		if cfg.RestartTimeout, err = durationFlag(c, "restart-timeout", time.Second, time.Hour); err != nil {
			return cfg, err
		}
		cfg.Restart = fencecheck.ShellRestart(cmd, c.App.ErrWriter)
	}
	return cfg, nil
}

// withFlags names the flag behind each reason a case was not run.
var withFlags = strings.NewReplacer("no read URL", "no --read-url", "no delete URL", "no --delete-url", "no restart", "no --restart-cmd")

// fenceCheckFlag is the flag of each Config field a ConfigError can name.
var fenceCheckFlag = map[string]string{
	"Write.URL": "write-url", "Write.Method": "write-method", "Write.Body": "write-body",
	"Read.URL": "read-url", "Read.Method": "read-method", "Read.Body": "read-body",
	"Delete.URL": "delete-url", "Delete.Method": "delete-method", "Delete.Body": "delete-body",
	"TokenHeader": "token-header", "SequencerHeader": "sequencer-header",
	"RefuseStatus": "refuse-status", "Holders": "holders",
	"LockPrefix": "lock-prefix", "KeyPrefix": "key-prefix", "Header": "header",
}

// fenceCheckError maps an error that stopped the run to an exit status,
// and a Config that cannot run to the flag to change.
func fenceCheckError(c *cli.Context, err error) error {
	var ru *fencecheck.UnreachableError
	var ce *fencecheck.ConfigError
	switch {
	case errors.As(err, &ru):
		return withCode(ExitUnavailable, err)
	case errors.Is(err, fencecheck.ErrNoToken):
		errors.As(err, &ce)
		kind := strings.ToLower(ce.Field)
		if kind == "write" {
			return usageErrorf("fence-check needs to know where the token goes: --token-header NAME, --sequencer-header NAME, or {token} or {sequencer} in --write-body or --write-url")
		}
		return usageErrorf("a %s must carry the token to be fenced: give --token-header or --sequencer-header, or {token} or {sequencer} in --%s-body or --%s-url", kind, kind, kind)
	case errors.As(err, &ce):
		if ce.Field == "Write.URL" && ce.Value == "" {
			return usageErrorf("fence-check needs --write-url, a URL template with {key}, e.g. http://127.0.0.1:7071/v1/kv/{key}")
		}
		flag, ok := fenceCheckFlag[ce.Field]
		if !ok {
			return usageErrorf("fence-check: %s", userMessage(err))
		}
		switch {
		case ce.Value == "":
			return usageErrorf("--%s %s", flag, ce.Problem)
		case ce.Field == "Holders" || ce.Field == "RefuseStatus":
			return usageErrorf("--%s %s %s", flag, ce.Value, ce.Problem)
		}
		return usageErrorf("--%s %q %s", flag, ce.Value, ce.Problem)
	}
	return clientError(c, err)
}

// parseHeaders reads the --header values, NAME: VALUE each.
func parseHeaders(hs []string) (http.Header, error) {
	h := http.Header{}
	for _, s := range hs {
		name, value, ok := strings.Cut(s, ":")
		if !ok || !fencecheck.HeaderName(name) {
			return nil, usageErrorf("--header %q: write it as NAME: VALUE", s)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}
