package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// SIGSTOP returns before the process has stopped: the kernel stops each of
// its threads as that thread next runs, and on a loaded machine a thread
// can answer a request in between. Pause waits for every thread to show
// as stopped, so that a paused server answers nobody once Pause returns.

// stopWait is how long a pause waits for the threads to stop.
const stopWait = 10 * time.Second

// allStopped reports whether every thread of process pid is stopped (or
// gone). A process that has exited counts as stopped.
func allStopped(pid int) (bool, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil {
		return false, err
	}
	for _, t := range tasks {
		f, err := statFields(t)
		if os.IsNotExist(err) {
			continue // the thread exited
		}
		if err != nil {
			return false, err
		}
		switch f[0] {
		case "T", "t", "Z", "X":
		default:
			return false, nil
		}
	}
	return true, nil
}

// groupPIDs lists the processes whose process group is pgid.
func groupPIDs(pgid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, s := range stats {
		f, err := statFields(s)
		if err != nil {
			continue // the process exited, or is not ours to read
		}
		// The process group is field 5.
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			if err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// waitStopped waits until every thread of every process in pids is stopped.
func waitStopped(pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running := 0
		for _, pid := range pids {
			ok, err := allStopped(pid)
			if err != nil {
				return err
			}
			if !ok {
				running = pid
				break
			}
		}
		if running == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: process %d still runs %v after SIGSTOP", running, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}
