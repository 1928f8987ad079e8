package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// --log-level: grant and release lines are at debug, so that a busy daemon
// does not format two lines per lease at the default info.
func TestLogLevel(t *testing.T) {
	for _, c := range []struct {
		flag        string
		debug, info bool
	}{
		{"debug", true, true},
		{"info", false, true},
		{"", false, true},
		{"warn", false, false},
		{"error", false, false},
	} {
		level, err := logLevel(c.flag)
		if err != nil {
			t.Fatalf("--log-level %q: %v", c.flag, err)
		}
		var out bytes.Buffer
		logger, err := newLogger(&out, "json", level)
		if err != nil {
			t.Fatal(err)
		}
		if got := logger.Enabled(context.Background(), slog.LevelDebug); got != c.debug {
			t.Errorf("--log-level %q: debug logged = %v, want %v", c.flag, got, c.debug)
		}
		if got := logger.Enabled(context.Background(), slog.LevelInfo); got != c.info {
			t.Errorf("--log-level %q: info logged = %v, want %v", c.flag, got, c.info)
		}
	}
	_, err := logLevel("verbose")
	var ee *exitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "want debug, info, warn or error") {
		t.Errorf("--log-level verbose: %v, want a usage error", err)
	}
}

// --log-format is the same flag in serve, dev and store: text (also when
// empty) or json, anything else a usage error.
func TestLogFormat(t *testing.T) {
	for _, c := range []struct{ format, want string }{
		{"text", "level=INFO msg=hi"},
		{"", "level=INFO msg=hi"},
		{"json", `"level":"INFO","msg":"hi"`},
	} {
		var out bytes.Buffer
		logger, err := newLogger(&out, c.format, slog.LevelInfo)
		if err != nil {
			t.Fatalf("--log-format %q: %v", c.format, err)
		}
		logger.Info("hi")
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("--log-format %q: logged %q, want %q in it", c.format, out.String(), c.want)
		}
	}
	_, err := newLogger(&bytes.Buffer{}, "xml", slog.LevelInfo)
	var ee *exitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), "want text or json") {
		t.Errorf("--log-format xml: %v, want a usage error", err)
	}
}
