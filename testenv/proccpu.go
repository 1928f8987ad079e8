package testenv

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux).
const userHZ = 100

// ProcCPU is the user and system CPU time process pid has used so far,
// from /proc/<pid>/stat.
func ProcCPU(pid int) (time.Duration, error) {
	f, err := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// utime and stime are fields 14 and 15.
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("testenv: /proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// statFields reads a /proc stat file and returns its fields from the third
// (the state) on, so that f[0] is field 3.
func statFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// The command name (field 2) may hold spaces: count from the ')'
	// that closes it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("testenv: malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return nil, errors.New("testenv: malformed /proc stat")
	}
	return f, nil
}
