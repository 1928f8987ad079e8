package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// A --listen address that another program holds is exit 69 with a
// sentence that says so and names the flag to pick another port, and its
// variable, which is how make run takes it.
func TestListenAddressInUseSaysWhichFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"dev", "--zk-port", "0", "--listen", taken},
		{"store", "--dir", t.TempDir(), "--listen", taken},
	} {
		code, _, errs := runCLI(ctx, args...)
		if code != ExitUnavailable {
			t.Errorf("seqd %s on a taken port: exit %d %q, want %d", args[0], code, errs, ExitUnavailable)
		}
		for _, want := range []string{taken + " is already in use", "--listen", "SEQD_LISTEN"} {
			if !strings.Contains(errs, want) {
				t.Errorf("seqd %s on a taken port: %q does not say %q", args[0], errs, want)
			}
		}
	}
}
