// Package runlock supervises a command that runs under a lock: it starts the
// command in its own process group, forwards signals to that group, and when
// the lock is lost sends a kill signal to the whole group and SIGKILL after a
// grace period measured on an injected clock. It passes the command's exit
// status through the way a shell reports it (128+N when signal N ended it).
//
// It knows nothing of ZooKeeper, flags or exit codes: the lock is a channel
// that closes when the lock can no longer be trusted (zklock.Grant.Lost).
// `seqd lock` is its user.
package runlock

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seqd/seqd/zklock"
)

// Options configures Run.
type Options struct {
	// Lost closes when the lock can no longer be trusted. Nil: never.
	Lost <-chan struct{}
	// Signals are forwarded to the command's process group as they arrive.
	Signals <-chan os.Signal
	// KillSignal is sent to the whole group when Lost closes, and to the
	// members left behind when the command itself exits. Default SIGTERM.
	KillSignal syscall.Signal
	// KillGrace is how long after KillSignal the group gets SIGKILL. Zero
	// sends SIGKILL right away.
	KillGrace time.Duration
	// Clock measures KillGrace; default the wall clock.
	Clock zklock.Clock
	// OnLost, if set, is called once, just after KillSignal was sent to the
	// group because Lost closed.
	OnLost func(pgid int)
	// Logger receives forwarded signals and escalations; default discards.
	Logger *slog.Logger
	// Terminal, if set, is the command's stdin and a terminal whose
	// foreground group is ours (see ForegroundTerminal): the command's group
	// is made the foreground group, so that it can read and configure the
	// terminal, and ours is made it again when the command exits.
	Terminal *os.File
}

// Result is how a supervised command ended.
type Result struct {
	// Status is the command's exit status: its exit code, or 128+N when
	// signal N ended it.
	Status int
	// Lost: Lost closed while the group ran, and the group was sent
	// KillSignal.
	Lost bool
	// LostAt is the clock time KillSignal was sent because of the loss.
	LostAt time.Time
	// Stragglers: members of the group outlived the command and were sent
	// KillSignal, so that nothing keeps running once the lock is released.
	Stragglers bool
	// Killed: the group was sent SIGKILL.
	Killed bool
}

// groupPoll is how often Run looks whether the members left behind by the
// command have gone. It is an observation interval, not a deadline: the
// deadline (KillGrace) runs on the injected clock.
const groupPoll = 20 * time.Millisecond

// Run starts cmd in a new process group (it sets SysProcAttr.Setpgid, and
// Pdeathsig so that the command is killed if this process dies) and
// supervises it until the command has exited and the rest of its group has
// gone too: a member left behind is sent KillSignal when the command exits,
// and SIGKILL after KillGrace. An error means the command could not be
// started; then nothing runs.
func Run(cmd *exec.Cmd, opts Options) (Result, error) {
	opts = opts.withDefaults()
	prepare(cmd, opts.Terminal != nil)
	exited, err := startCmd(cmd)
	if err != nil {
		return Result{}, err
	}
	// Start returns after the exec, which comes after setpgid: the group
	// exists now, and its id is the command's pid.
	sv := &supervisor{opts: opts, cmd: cmd, pgid: cmd.Process.Pid, lost: opts.Lost, done: exited}
	sv.log = opts.Logger.With("pgid", sv.pgid)
	defer sv.stopTimers()
	return sv.loop(), nil
}

func (o Options) withDefaults() Options {
	if o.KillSignal == 0 {
		o.KillSignal = syscall.SIGTERM
	}
	if o.Clock == nil {
		o.Clock = zklock.WallClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// prepare puts the command in a process group of its own (in the
// terminal's foreground, with terminal) that the kernel kills should this
// process die.
func prepare(cmd *exec.Cmd, terminal bool) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	if terminal {
		// Ctty is a descriptor in the child: the terminal is its stdin.
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, 0
	}
	// Should this process die without a chance to act (SIGKILL, the OOM
	// killer), the command must not run on unwatched: the kernel kills it.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// startCmd starts cmd and returns a channel closed once it has exited (its
// status is then in cmd.ProcessState). The goroutine that waits for it is
// done when the channel closes.
func startCmd(cmd *exec.Cmd) (<-chan struct{}, error) {
	started, exited := make(chan error, 1), make(chan struct{})
	go func() {
		// Pdeathsig fires when the thread that forked the child ends, not
		// the process: hold this goroutine to its thread (which then lives
		// on) until the command has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait() // the status is read from cmd.ProcessState
		close(exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}

// supervisor watches one running command and its process group.
type supervisor struct {
	opts     Options
	cmd      *exec.Cmd
	pgid     int
	log      *slog.Logger
	res      Result
	lost     <-chan struct{}
	done     <-chan struct{} // nil once the command has exited
	leftover bool            // the command exited; members of its group remain
	graceC   <-chan time.Time
	graceT   zklock.Timer
	poll     *time.Ticker
	pollC    <-chan time.Time
}

func (sv *supervisor) loop() Result {
	for {
		select {
		case <-sv.done:
			if sv.exited() {
				return sv.res
			}
		case <-sv.pollC:
			if !groupAlive(sv.pgid) || sv.res.Killed {
				return sv.res
			}
		case <-sv.lost:
			sv.lost = nil
			// Signal first: every moment counts before ZooKeeper can expire
			// the session. Report afterwards.
			sv.terminate()
			sv.res.Lost, sv.res.LostAt = true, sv.opts.Clock.Now()
			if sv.opts.OnLost != nil {
				sv.opts.OnLost(sv.pgid)
			}
		case sig := <-sv.opts.Signals:
			if s, ok := sig.(syscall.Signal); ok {
				signalGroup(sv.pgid, s)
				signalGroup(sv.pgid, syscall.SIGCONT) // a stopped group would not act on it
				sv.log.Info("forwarded a signal to the process group", "signal", SignalName(s))
			}
		case <-sv.graceC:
			sv.graceC, sv.graceT = nil, nil
			sv.kill()
			if sv.leftover {
				return sv.res
			}
		}
	}
}

// exited handles the command's exit and reports whether supervision is
// over: it is not while members of its group remain.
func (sv *supervisor) exited() bool {
	sv.done = nil
	sv.res.Status = Status(sv.cmd.ProcessState)
	if sv.opts.Terminal != nil {
		if err := takeTerminalBack(sv.opts.Terminal); err != nil {
			sv.log.Warn("could not take the terminal back", "err", err)
		}
	}
	if sv.lost != nil {
		// Lost and the exit may have come together: the select picks
		// either. The command may have run its last moments without the
		// lock, so say so.
		select {
		case <-sv.lost:
			sv.lost = nil
			sv.res.Lost, sv.res.LostAt = true, sv.opts.Clock.Now()
		default:
		}
	}
	if !groupAlive(sv.pgid) || sv.res.Killed {
		// Whatever is left got SIGKILL and runs no more code; it is waiting
		// for a parent to reap it.
		return true
	}
	sv.leftover = true
	if !sv.res.Lost {
		sv.res.Stragglers = true
		sv.log.Info("the command exited; terminating what it left in its process group", "signal", SignalName(sv.opts.KillSignal))
	}
	sv.terminate()
	sv.poll = time.NewTicker(groupPoll)
	sv.pollC = sv.poll.C
	return false
}

func (sv *supervisor) kill() {
	signalGroup(sv.pgid, syscall.SIGKILL)
	sv.res.Killed = true
	sv.log.Info("sent SIGKILL to the process group")
}

// terminate sends KillSignal to the group once and arms the grace.
func (sv *supervisor) terminate() {
	if sv.graceC != nil || sv.res.Killed {
		return
	}
	signalGroup(sv.pgid, sv.opts.KillSignal)
	signalGroup(sv.pgid, syscall.SIGCONT) // a stopped group would not act on it
	if sv.opts.KillGrace <= 0 {
		sv.kill()
		return
	}
	sv.graceC, sv.graceT = sv.opts.Clock.NewTimer(sv.opts.KillGrace)
}

func (sv *supervisor) stopTimers() {
	if sv.graceT != nil {
		sv.graceT.Stop()
	}
	if sv.poll != nil {
		sv.poll.Stop()
	}
}

// signalGroup sends sig to every process of the group. ESRCH (the group is
// gone) is not an error worth reporting.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// groupAlive reports whether any process of the group remains. A group id
// stays reserved while any member lives, so it cannot name another group.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Status is the exit status a shell reports for a finished process: its exit
// code, or 128+N when signal N ended it.
func Status(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signals are the names ParseSignal accepts, without their SIG prefix.
var signals = []struct {
	name string
	sig  syscall.Signal
}{
	{"HUP", syscall.SIGHUP}, {"INT", syscall.SIGINT}, {"QUIT", syscall.SIGQUIT},
	{"ILL", syscall.SIGILL}, {"TRAP", syscall.SIGTRAP}, {"ABRT", syscall.SIGABRT},
	{"BUS", syscall.SIGBUS}, {"FPE", syscall.SIGFPE}, {"KILL", syscall.SIGKILL},
	{"USR1", syscall.SIGUSR1}, {"SEGV", syscall.SIGSEGV}, {"USR2", syscall.SIGUSR2},
	{"PIPE", syscall.SIGPIPE}, {"ALRM", syscall.SIGALRM}, {"TERM", syscall.SIGTERM},
	{"CHLD", syscall.SIGCHLD}, {"CONT", syscall.SIGCONT}, {"STOP", syscall.SIGSTOP},
	{"TSTP", syscall.SIGTSTP}, {"TTIN", syscall.SIGTTIN}, {"TTOU", syscall.SIGTTOU},
	{"URG", syscall.SIGURG}, {"XCPU", syscall.SIGXCPU}, {"XFSZ", syscall.SIGXFSZ},
	{"VTALRM", syscall.SIGVTALRM}, {"PROF", syscall.SIGPROF}, {"WINCH", syscall.SIGWINCH},
	{"IO", syscall.SIGIO}, {"SYS", syscall.SIGSYS},
}

// ParseSignal parses a signal name with or without its SIG prefix, in any
// case ("TERM", "SIGTERM", "term"), or its number ("15").
func ParseSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return 0, errors.New("runlock: empty signal name")
	}
	n, err := strconv.Atoi(s)
	numeric := err == nil
	for _, e := range signals {
		if numeric && int(e.sig) == n {
			return e.sig, nil
		}
		if !numeric && (strings.EqualFold(s, e.name) || strings.EqualFold(s, "SIG"+e.name)) {
			return e.sig, nil
		}
	}
	if numeric {
		return 0, fmt.Errorf("runlock: %q is not a signal number this program knows; use a name like TERM", s)
	}
	return 0, fmt.Errorf("runlock: %q is not a signal name; use one like TERM, SIGINT or 15", s)
}

// SignalName is the signal's name with its SIG prefix ("SIGTERM").
func SignalName(sig syscall.Signal) string {
	for _, e := range signals {
		if e.sig == sig {
			return "SIG" + e.name
		}
	}
	return fmt.Sprintf("signal %d", int(sig))
}
