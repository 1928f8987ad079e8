// Command etcdbench measures etcd's concurrency.Mutex the way seqd bench
// measures seqd, and runs the two side by side.
//
//	etcdbench compare --seqd bin/seqd [--clients 16,64,256] [--duration 5s] [--rounds 3] [--rtt 1ms]
//	etcdbench run --endpoints http://127.0.0.1:2379 [--clients 16] [--locks own|hot] [--duration 5s]
//	etcdbench table < report.json
//
// compare starts etcd (Debian's etcd-server) on loopback, then runs rounds
// of `seqd bench --dev` and of the same clients on etcd, interleaved, and
// prints the medians and the ratios (--json: every round's results, which
// table prints as compare would have). run measures one group of clients
// on a running etcd. It is a module of its own, so that etcd's client and
// gRPC stay out of seqd's.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Exit codes, as seqd's: 64 a usage error, 69 etcd or seqd unavailable.
const (
	exitUsage       = 64
	exitUnavailable = 69
)

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "etcdbench: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		os.Exit(exitUsage)
	}
	os.Exit(exitUnavailable)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("give a command: compare, run or table")
	}
	switch args[0] {
	case "compare":
		return compareCmd(ctx, args[1:], stdout, stderr)
	case "run":
		return runCmd(ctx, args[1:], stdout, stderr)
	case "table":
		return tableCmd(args[1:], os.Stdin, stdout, stderr)
	}
	return usagef("unknown command %q: give compare, run or table", args[0])
}

// flags is a flag set whose errors are usage errors, not exits.
func flags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s takes no arguments, got %q", fs.Name(), fs.Args())
	}
	return nil
}

// Bounds of the flags.
const (
	maxClients  = 1000
	minDuration = 10 * time.Millisecond
	maxDuration = time.Hour
	maxRounds   = 100
	maxRTT      = time.Second
)

func checkDuration(d time.Duration) error {
	if d < minDuration || d > maxDuration {
		return usagef("--duration %v is out of range: give %v..%v", d, minDuration, maxDuration)
	}
	return nil
}

// clientCounts parses --clients: a comma-separated list of 1..maxClients.
func clientCounts(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxClients {
			return nil, usagef("--clients %q: give client counts 1..%d, comma-separated (e.g. 16,64,256)", s, maxClients)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("compare", stderr)
	seqd := fs.String("seqd", "bin/seqd", "the seqd binary whose bench runs")
	clients := fs.String("clients", "16", "client counts, comma-separated; each also measures one client")
	duration := fs.Duration("duration", 5*time.Second, "measure each case for this long, after a warm-up of a fifth of it (at most 1s)")
	rounds := fs.Int("rounds", 3, "rounds of each side, interleaved")
	rtt := fs.Duration("rtt", 0, "a delay proxy adding this round trip in front of ZooKeeper and of etcd (e.g. 1ms)")
	asJSON := fs.Bool("json", false, "print every round's results as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	ns, err := clientCounts(*clients)
	if err != nil {
		return err
	}
	if err := checkDuration(*duration); err != nil {
		return err
	}
	if *rounds < 1 || *rounds > maxRounds {
		return usagef("--rounds %d is out of range: give 1..%d", *rounds, maxRounds)
	}
	if *rtt < 0 || *rtt > maxRTT {
		return usagef("--rtt %v is out of range: give 0..%v", *rtt, maxRTT)
	}
	if fi, err := os.Stat(*seqd); err != nil || fi.IsDir() {
		return usagef("--seqd %q: not a seqd binary (build it with make build)", *seqd)
	}
	if _, err := etcdBinary(); err != nil {
		return err
	}
	etcd, err := StartEtcd(ctx, *rtt)
	if err != nil {
		return err
	}
	defer etcd.Stop()
	if etcd.RTTMeasured > 0 {
		fmt.Fprintf(stderr, "a delay proxy adds %v of round trip to etcd (measured: %v)\n", *rtt, etcd.RTTMeasured.Round(10*time.Microsecond))
	}
	c := Compare{Seqd: *seqd, Clients: ns, Duration: *duration, Rounds: *rounds, RTT: *rtt, Progress: stderr}
	rep, err := c.Run(ctx, etcd)
	if err != nil {
		return err
	}
	if *asJSON {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteTable(stdout)
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("run", stderr)
	endpoints := fs.String("endpoints", "", "etcd's client URLs, comma-separated")
	clients := fs.Int("clients", 16, "clients side by side, each with a client and a session of its own")
	locks := fs.String("locks", LocksOwn, "own (each client its own lock) or hot (all one lock)")
	duration := fs.Duration("duration", 5*time.Second, "measure for this long, after a warm-up of a fifth of it (at most 1s)")
	pid := fs.Int("etcd-pid", 0, "etcd's process id, to read its CPU per cycle (0: not read)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *endpoints == "" {
		return usagef("run needs --endpoints: etcd's client URLs")
	}
	if *clients < 1 || *clients > maxClients {
		return usagef("--clients %d is out of range: give 1..%d", *clients, maxClients)
	}
	if *locks != LocksOwn && *locks != LocksHot {
		return usagef("--locks %q: want own or hot", *locks)
	}
	if err := checkDuration(*duration); err != nil {
		return err
	}
	res, err := Run(ctx, Case{Endpoints: strings.Split(*endpoints, ","), Clients: *clients, Locks: *locks,
		Duration: *duration, Prefix: fmt.Sprintf("/etcdbench/%d", time.Now().UnixNano()), ServerPID: *pid})
	if err != nil {
		return err
	}
	return (&CompareReport{DurationS: duration.Seconds(), RoundsCount: 1,
		Cells: []*Cell{{Clients: res.Clients, Locks: res.Locks, Rounds: map[string][]Result{"etcd": {*res}}}}}).WriteJSON(stdout)
}

// tableCmd prints the tables of a report that compare --json printed.
func tableCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flags("table", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	var rep CompareReport
	dec := json.NewDecoder(stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return usagef("table: standard input is not a report of compare --json: %v", err)
	}
	if len(rep.Cells) == 0 {
		return usagef("table: the report has no results")
	}
	return rep.WriteTable(stdout)
}
