package testenv

import (
	"os"
	"testing"
	"time"
)

// ProcCPU reads the CPU this process has used: it grows while the process
// computes, and a process that does not exist is an error.
func TestProcCPU(t *testing.T) {
	before, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		x++
	}
	after, err := ProcCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU %v after 100ms of computing (%d loops), %v before: it did not grow", after, x, before)
	}
	if _, err := ProcCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
