package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

func startEtcd(t *testing.T) *Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := StartEtcd(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

// The harness measures etcd's Mutex on own locks and on one hot lock:
// cycles finish, no two clients hold one lock at once, and etcd's CPU per
// cycle is read. The control: cycles that skip the lock are caught by the
// harness's own check of the holders.
func TestMutexCases(t *testing.T) {
	e := startEtcd(t)
	ctx := context.Background()
	for _, locks := range []string{LocksOwn, LocksHot} {
		res, err := Run(ctx, Case{Endpoints: e.Endpoints, Clients: 4, Locks: locks, Duration: 300 * time.Millisecond,
			Prefix: "/test-" + locks, ServerPID: e.PID})
		if err != nil {
			t.Fatalf("%s locks: %v", locks, err)
		}
		t.Logf("%s locks: %d cycles, %.0f/s, p50 %.2fms, p99 %.2fms", locks, res.Cycles, res.CyclesPerS, res.P50ms, res.P99ms)
		if res.Cycles == 0 || res.CyclesPerS <= 0 || res.P50ms <= 0 || res.P99ms < res.P50ms {
			t.Errorf("%s locks: implausible result %+v", locks, res)
		}
		if res.MostInside != 1 {
			t.Errorf("%s locks: at most %d holders of a lock at once, want 1", locks, res.MostInside)
		}
		if res.ServerCPUms == nil || res.ClientCPUms == nil {
			t.Errorf("%s locks: the CPU per cycle was not read", locks)
		}
	}
	_, err := Run(ctx, Case{Endpoints: e.Endpoints, Clients: 8, Locks: LocksHot, Duration: 100 * time.Millisecond,
		Prefix: "/test-control", unlocked: true})
	if !errors.Is(err, ErrOverlap) {
		t.Errorf("control: cycles without the lock gave %v, want %v", err, ErrOverlap)
	}
}

// make bench-etcd, as the documentation gives it, runs seqd bench and the
// etcd cases side by side and reports every group with every figure.
func TestMakeBenchEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", "bench-etcd", "ETCD_FLAGS=--clients 2 --duration 200ms --rounds 1")
	cmd.Dir = "../.." // seqd's checkout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("make bench-etcd: %v\n%s", err, stderr.String())
	}
	out := string(stdout)
	t.Logf("\n%s", out)
	for _, row := range []string{`1\s+own`, `2\s+own`, `2\s+hot`} {
		if n := len(regexp.MustCompile(`(?m)^\s*`+row+`\s`).FindAllString(out, -1)); n != 2 {
			t.Errorf("%d rows %q in the tables, want 2 (throughput and CPU)", n, row)
		}
	}
	if strings.Contains(out, "—") {
		t.Errorf("a figure is missing (—) from the tables")
	}
}

// Bad flags are usage errors (exit 64) and start nothing.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"compare", "--rounds", "0"},
		{"compare", "--clients", "0"},
		{"compare", "--clients", "16,x"},
		{"compare", "--duration", "1ns"},
		{"compare", "--rtt", "2s"},
		{"compare", "--seqd", "/nonexistent/seqd"},
		{"compare", "extra"},
		{"run"},
		{"run", "--endpoints", "http://127.0.0.1:1", "--locks", "warm"},
		{"run", "--endpoints", "http://127.0.0.1:1", "--clients", "5000"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
			continue
		}
		if stdout.Len() > 0 {
			t.Errorf("%q printed %q", args, stdout.String())
		}
	}
}

// table prints a saved report as compare would have: medians, and the
// ratio of the medians with the range of the rounds' own ratios; input
// that is not such a report is a usage error.
func TestTable(t *testing.T) {
	rep := `{"duration_s": 5, "rounds": 3, "cells": [{"clients": 16, "locks": "own", "rounds": {
		"http": [{"cycles_per_s": 300, "p50_ms": 1, "p99_ms": 2}, {"cycles_per_s": 100, "p50_ms": 1, "p99_ms": 2}, {"cycles_per_s": 200, "p50_ms": 1, "p99_ms": 2}],
		"etcd": [{"cycles_per_s": 100, "p50_ms": 1, "p99_ms": 2}, {"cycles_per_s": 100, "p50_ms": 1, "p99_ms": 2}, {"cycles_per_s": 400, "p50_ms": 1, "p99_ms": 2}],
		"gozk": [{"cycles_per_s": 50, "p50_ms": 1, "p99_ms": 2}],
		"session": [{"cycles_per_s": 600, "p50_ms": 1, "p99_ms": 2}, {"cycles_per_s": 300, "p50_ms": 1, "p99_ms": 2}, {"cycles_per_s": 400, "p50_ms": 1, "p99_ms": 2}],
		"raw": [{"cycles_per_s": 50, "p50_ms": 0.5, "p99_ms": 2}]}}]}`
	var stdout, stderr bytes.Buffer
	if err := tableCmd(nil, strings.NewReader(rep), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	t.Logf("\n%s", out)
	// Medians 200 and 100: 2.00; the rounds' own ratios 3.00, 1.00, 0.50.
	// The session case's median 400 over etcd's 100: 4.00, rounds 6.00,
	// 3.00 and 1.00.
	for _, want := range []string{"3 rounds of 5s", "200", "2.00 [0.50–3.00]", "4.00 [6.00–6.00]", "0.50ms", "4.00 [1.00–6.00]"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the table", want)
		}
	}
	for _, bad := range []string{"", "not json", `{"cells": []}`, `{"cels": []}`} {
		err := tableCmd(nil, strings.NewReader(bad), &stdout, &stderr)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}
