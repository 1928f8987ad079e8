// Package clockstep notices, in a test process, when the machine's clocks
// jump: the wall clock moving on by more than the monotonic clock (a host
// that paused the machine and set its clock on resuming, or a clock set by
// hand or by NTP), or neither clock letting the process run for seconds (a
// machine stalled or paused).
//
// A ZooKeeper session counts silence on both clocks and takes the larger,
// so after such a jump it rightly declares its grants lost, and a test that
// held one across it fails with "not heard from since". Those failures are
// the code working as it should on a machine that stood still. Watch
// records every jump, on standard error and, when $SEQD_CLOCK_STEPS names a
// file, as a line appended to it; scripts/gotest.sh runs a package that
// failed once more only when that file has a line, so any other failure
// stays a failure.
package clockstep

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// EnvFile names the file that jumps are appended to.
const EnvFile = "SEQD_CLOCK_STEPS"

const (
	// tick is how often the clocks are read.
	tick = 100 * time.Millisecond
	// maxSkew is how far the wall clock may move apart from the monotonic
	// clock between two readings before it counts as a jump.
	maxSkew = 500 * time.Millisecond
	// maxGap is how long the monotonic clock may move between two readings
	// a tick apart before the process counts as having stood still.
	maxGap = 2 * time.Second
)

// A Reading is the two clocks read at one moment: the monotonic clock as
// time since the watch began, the wall clock as a time without a monotonic
// reading.
type Reading struct {
	Mono time.Duration
	Wall time.Time
}

// A Jump is the gap between two readings that the clocks disagree about by
// more than maxSkew, or that is longer than maxGap on the monotonic clock.
type Jump struct {
	At   time.Time     // the wall time of the later reading
	Mono time.Duration // the gap on the monotonic clock
	Wall time.Duration // the gap on the wall clock
}

func (j Jump) String() string {
	return fmt.Sprintf("%s: between two readings due %v apart, the monotonic clock moved %v and the wall clock %v",
		j.At.Format("15:04:05.000"), tick, j.Mono.Round(time.Millisecond), j.Wall.Round(time.Millisecond))
}

// Judge returns the jump between readings prev and next, if there is one.
func Judge(prev, next Reading) (Jump, bool) {
	j := Jump{At: next.Wall, Mono: next.Mono - prev.Mono, Wall: next.Wall.Sub(prev.Wall)}
	skew := j.Wall - j.Mono
	if skew > maxSkew || skew < -maxSkew || j.Mono > maxGap {
		return j, true
	}
	return Jump{}, false
}

var once sync.Once

// Watch starts, once per process, a goroutine that reads the clocks every
// tick until the process exits and records each jump it finds.
func Watch() {
	once.Do(func() { go watch(os.Getenv(EnvFile)) })
}

func watch(file string) {
	start := time.Now()
	read := func() Reading {
		now := time.Now()
		return Reading{Mono: now.Sub(start), Wall: now.Round(0)}
	}
	prev := read()
	t := time.NewTicker(tick)
	for range t.C {
		next := read()
		if j, ok := Judge(prev, next); ok {
			record(file, j)
		}
		prev = next
	}
}

func record(file string, j Jump) {
	line := fmt.Sprintf("clockstep: pid %d: %v\n", os.Getpid(), j)
	os.Stderr.WriteString(line)
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "clockstep: %v\n", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		fmt.Fprintf(os.Stderr, "clockstep: %v\n", err)
	}
}
