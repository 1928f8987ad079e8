package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A 403 says what named the caller: the token sent, or the client
// certificate, or nothing at all; never a token flag that was not given.
func TestForbiddenNamesHowTheCallerWasNamed(t *testing.T) {
	addr, _ := policyDaemon(t, "nobody-may")
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	writeSecret(t, tok, "0123456789abcdef-a-named-token\n")
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		cmd     string
		args    []string
		says    []string
		saysNot []string
	}{
		{"token", "acquire", []string{"--api-token-file", tok}, []string{"--api-token-file " + tok}, []string{"--cert"}},
		{"admin token", "break", []string{"--reason", "x", "--token", "7", "--admin-token-file", tok}, []string{"--admin-token-file " + tok}, []string{"--api-token-file", "--cert"}},
		{"nothing", "acquire", nil, []string{"anonymous", "--api-token-file", "--cert"}, []string{"(none given)"}},
	} {
		code, _, errs := runCLI(ctx, append(append([]string{tc.cmd, "--addr", addr}, tc.args...), "jobs/a")...)
		if code != ExitAuth {
			t.Errorf("%s: exit %d %q, want 77", tc.name, code, errs)
		}
		for _, s := range tc.says {
			if !strings.Contains(errs, s) {
				t.Errorf("%s: %q does not say %q", tc.name, errs, s)
			}
		}
		for _, s := range tc.saysNot {
			if strings.Contains(errs, s) {
				t.Errorf("%s: %q says %q", tc.name, errs, s)
			}
		}
	}
}
