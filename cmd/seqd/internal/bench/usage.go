package bench

import (
	"bufio"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seqd/seqd/testenv"
)

// What a case costs besides time: the CPU of ZooKeeper, of the daemon and of
// the bench's own process (the clients), and the requests ZooKeeper
// received, each read before and after the measured window.

// usage is one reading of the counters; a field is -1 when it could not be
// read.
type usage struct {
	zkCPU, daemonCPU, clientCPU time.Duration
	zkPackets                   int64
}

// procCPU is the user and system CPU time pid has used so far.
func procCPU(pid int) (time.Duration, error) { return testenv.ProcCPU(pid) }

// selfCPU is the CPU time this process has used so far (to the
// microsecond, finer than /proc's ticks).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// zkPackets is the sum of the packets that the servers at addrs have
// received (srvr's "Received"), or -1 if one did not say.
func zkPackets(addrs []string) int64 {
	if len(addrs) == 0 {
		return -1
	}
	var total int64
	for _, a := range addrs {
		out, err := testenv.FourLetter(a, "srvr", 2*time.Second)
		if err != nil {
			return -1
		}
		n, ok := received(out)
		if !ok {
			return -1
		}
		total += n
	}
	return total
}

// received reads the "Received: N" line of a srvr answer.
func received(srvr string) (int64, bool) {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Received: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// read takes a reading: ZooKeeper's processes (ZKPIDs) and its counters
// (ZKStats), the daemon's process if it runs apart, and this process.
func (r *runner) read() usage {
	u := usage{zkCPU: -1, daemonCPU: -1, clientCPU: selfCPU(), zkPackets: zkPackets(r.cfg.ZKStats)}
	if len(r.cfg.ZKPIDs) > 0 {
		u.zkCPU = 0
		for _, pid := range r.cfg.ZKPIDs {
			d, err := procCPU(pid)
			if err != nil {
				u.zkCPU = -1
				break
			}
			u.zkCPU += d
		}
	}
	if r.daemonPID != 0 {
		if d, err := procCPU(r.daemonPID); err == nil {
			u.daemonCPU = d
		}
	}
	return u
}

// PerCycle is what one cycle of a case cost on average; a zero field was
// not measured (the daemon's CPU for a case without one, or in process,
// where it is part of the client's).
type PerCycle struct {
	ZKRequests float64       // requests ZooKeeper received (heartbeats included)
	ZKCPU      time.Duration // ZooKeeper's CPU
	DaemonCPU  time.Duration // a separate daemon's CPU
	ClientCPU  time.Duration // the bench's process: the clients (and an in-process daemon)
}

// perCycle divides what was used between two readings by cycles; daemon
// says whether the case used the daemon.
func perCycle(before, after usage, cycles int64, daemon bool) PerCycle {
	var pc PerCycle
	if cycles <= 0 {
		return pc
	}
	per := func(b, a time.Duration) time.Duration {
		if b < 0 || a < 0 || a < b {
			return 0
		}
		return max((a-b)/time.Duration(cycles), 1)
	}
	pc.ZKCPU = per(before.zkCPU, after.zkCPU)
	pc.ClientCPU = per(before.clientCPU, after.clientCPU)
	if daemon {
		pc.DaemonCPU = per(before.daemonCPU, after.daemonCPU)
	}
	if before.zkPackets >= 0 && after.zkPackets >= before.zkPackets {
		pc.ZKRequests = float64(after.zkPackets-before.zkPackets) / float64(cycles)
	}
	return pc
}
