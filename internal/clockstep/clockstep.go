// Package clockstep notices, in a test process, when the machine's clocks
// jump: the wall clock moving on by more than the monotonic clock (a host
// that paused the machine and set its clock on resuming, or a clock set by
// hand or by NTP), or neither clock letting the process run for seconds (a
// machine stalled or paused, or a process starved by load).
//
// A ZooKeeper session counts silence on both clocks and takes the larger,
// so after a paused machine or a clock step it rightly declares its grants
// lost, and a test that held one across it fails with "not heard from
// since". Those failures are the code working as it should on a machine
// that stood still. A process starved by the machine's own load is another
// matter: the machine ran, other processes had the CPUs, and a test that
// fails then has failed under load. The kernel tells the two apart: over
// the seconds the process did not run, /proc/stat counts the CPU time it
// gave to every process (busy), the time its CPUs idled, and the time the
// host took them away (steal); getrusage counts this process's own.
//
// Watch records every jump with that evidence and its verdict, on standard
// error and, when $SEQD_CLOCK_STEPS names a file, as a line appended to it;
// scripts/gotest.sh runs a failed test once more only when that file has
// a line whose verdict is a pause or a clock step, so any other failure
// stays a failure.
package clockstep

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// userHZ is the unit of /proc/stat's counters: USER_HZ, 100 on every Linux
// architecture Go runs on.
const userHZ = 100

// CPU is the kernel's account of its CPUs' time since boot, summed over
// the N CPUs (/proc/stat's "cpu" line).
type CPU struct {
	N     int           // CPUs counted
	Busy  time.Duration // user, nice, system, irq, softirq: running something
	Idle  time.Duration // idle and iowait: nothing to run
	Steal time.Duration // taken by the host: the CPU did not run at all
}

// A Reading is the two clocks read at one moment: the monotonic clock as
// time since the watch began, the wall clock as a time without a monotonic
// reading; with them the kernel's CPU account (N 0 when it could not be
// read) and the CPU time this process has used.
type Reading struct {
	Mono   time.Duration
	Wall   time.Time
	Kernel CPU
	Self   time.Duration
}

// A Kind is what a jump was, by the evidence.
type Kind int

const (
	// Step: the wall clock moved apart from the monotonic clock.
	Step Kind = iota
	// Pause: the process did not run and neither did the machine: the
	// host took the CPUs (steal), or the kernel counted far less CPU time
	// than the monotonic clock moved, or the CPUs idled through it.
	Pause
	// Starved: the process did not run while the machine's CPUs were busy
	// running other work.
	Starved
	// Unknown: the process did not run and the kernel's account could not
	// be read.
	Unknown
)

func (k Kind) String() string {
	switch k {
	case Step:
		return "clock step"
	case Pause:
		return "pause"
	case Starved:
		return "starved"
	}
	return "unknown"
}

// Rerun reports whether a failure across a jump of kind k may be run once
// more: only when the machine itself stood still or its clock was set.
func (k Kind) Rerun() bool { return k == Step || k == Pause }

// A Jump is the gap between two readings that the clocks disagree about by
// more than maxSkew, or that is longer than maxGap on the monotonic clock,
// with the kernel's and the process's CPU time over that gap, per CPU.
type Jump struct {
	Kind Kind
	At   time.Time     // the wall time of the later reading
	Mono time.Duration // the gap on the monotonic clock
	Wall time.Duration // the gap on the wall clock

	Kernel bool          // whether the kernel's account was read
	Busy   time.Duration // per CPU
	Idle   time.Duration // per CPU
	Steal  time.Duration // per CPU
	Self   time.Duration // this process, over all CPUs
}

func (j Jump) String() string {
	s := fmt.Sprintf("%v: %s: between two readings due %v apart, the monotonic clock moved %v and the wall clock %v",
		j.Kind, j.At.Format("15:04:05.000"), tick, j.Mono.Round(time.Millisecond), j.Wall.Round(time.Millisecond))
	if !j.Kernel {
		return s + "; the kernel's CPU account could not be read"
	}
	return s + fmt.Sprintf("; per CPU the kernel counted %v busy, %v idle, %v stolen by the host; this process ran %v",
		j.Busy.Round(10*time.Millisecond), j.Idle.Round(10*time.Millisecond), j.Steal.Round(10*time.Millisecond), j.Self.Round(time.Millisecond))
}

// Judge returns the jump between readings prev and next, if there is one.
func Judge(prev, next Reading) (Jump, bool) {
	j := Jump{At: next.Wall, Mono: next.Mono - prev.Mono, Wall: next.Wall.Sub(prev.Wall), Self: next.Self - prev.Self}
	skew := j.Wall - j.Mono
	if skew <= maxSkew && skew >= -maxSkew && j.Mono <= maxGap {
		return Jump{}, false
	}
	if n := next.Kernel.N; n > 0 && n == prev.Kernel.N {
		j.Kernel = true
		j.Busy = (next.Kernel.Busy - prev.Kernel.Busy) / time.Duration(n)
		j.Idle = (next.Kernel.Idle - prev.Kernel.Idle) / time.Duration(n)
		j.Steal = (next.Kernel.Steal - prev.Kernel.Steal) / time.Duration(n)
	}
	switch {
	case skew > maxSkew || skew < -maxSkew:
		j.Kind = Step
	case !j.Kernel:
		j.Kind = Unknown
	case 2*j.Steal >= j.Mono, 2*(j.Busy+j.Idle+j.Steal) < j.Mono, 2*j.Idle >= j.Mono:
		j.Kind = Pause
	default:
		j.Kind = Starved
	}
	return j, true
}

// parseStat reads the "cpu" lines of /proc/stat.
func parseStat(r io.Reader) (CPU, bool) {
	var c CPU
	total := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			c.N++
			continue
		}
		// user nice system idle iowait irq softirq steal [guest guest_nice],
		// guest time being counted in user already.
		if len(f) < 9 {
			return CPU{}, false
		}
		var v [8]time.Duration
		for i := range v {
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return CPU{}, false
			}
			v[i] = time.Duration(n) * time.Second / userHZ
		}
		c.Busy = v[0] + v[1] + v[2] + v[5] + v[6]
		c.Idle = v[3] + v[4]
		c.Steal = v[7]
		total = true
	}
	if !total || c.N == 0 {
		return CPU{}, false
	}
	return c, true
}

func readKernel() CPU {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CPU{}
	}
	defer f.Close()
	c, _ := parseStat(f)
	return c
}

func readSelf() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
		return Reading{Mono: now.Sub(start), Wall: now.Round(0), Kernel: readKernel(), Self: readSelf()}
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
