package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// Flags shared by the commands that talk to ZooKeeper.

// zkFlag is --zk; with a default, or (serve) without one: the action then
// insists on it, since urfave/cli's own "Required" error is not a usage error.
func zkFlag(withDefault bool) *cli.StringFlag {
	f := &cli.StringFlag{Name: "zk", Usage: "ZooKeeper servers, host:port[,host:port…]", EnvVars: []string{"SEQD_ZK"}}
	if withDefault {
		f.Value = "127.0.0.1:2181"
	}
	return f
}

func rootFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "root", Value: "/seqd/locks", Usage: "znode under which lock nodes live", EnvVars: []string{"SEQD_ROOT"}}
}

func sessionTimeoutFlag() *cli.DurationFlag {
	return &cli.DurationFlag{Name: "session-timeout", Value: 10e9, Usage: "ZooKeeper session timeout", EnvVars: []string{"SEQD_SESSION_TIMEOUT"}}
}

func tokenModeFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "token", Value: "zxid", Usage: "token mode: zxid (czxid of the contender) or version (dense per-lock counter)", EnvVars: []string{"SEQD_TOKEN_MODE"}}
}

func logFormatFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json", EnvVars: []string{"SEQD_LOG_FORMAT"}}
}

// splitServers parses the --zk list.
func splitServers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(p); err != nil {
			return nil, usageErrorf("--zk %q: %q is not host:port", s, p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, usageErrorf("--zk is empty: give host:port[,host:port…]")
	}
	return out, nil
}

// newLogger makes the process logger on w.
func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", format)
}

// readTokenFile reads a bearer token from a file (trimmed; empty refused).
func readTokenFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usageErrorf("--api-token-file: %v", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", usageErrorf("--api-token-file %s is empty", path)
	}
	return tok, nil
}

// isLoopback reports whether a listen address binds only to loopback.
func isLoopback(addr string) (bool, error) {
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
