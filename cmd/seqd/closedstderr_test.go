package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestClosedStderrLeavesNoTempDir: seqd bench --dev and seqd dev whose
// stderr is closed after the first line (`2>&1 | head -1`) stop and remove
// their throwaway ZooKeeper's directory, rather than die of SIGPIPE and
// leave it in $TMPDIR.
func TestClosedStderrLeavesNoTempDir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper")
	}
	bin := lockTestBinary(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"bench --dev", []string{"bench", "--dev", "--duration", "1s", "--cases", "raw", "--clients", "2"}},
		{"dev", []string{"dev", "--zk-port", "0", "--listen", "127.0.0.1:0"}},
		{"dev --secure", []string{"dev", "--secure", "--zk-port", "0", "--listen", "127.0.0.1:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = lockEnv("TMPDIR=" + tmp)
			cmd.Stderr = w
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill() })
			line, err := bufio.NewReader(r).ReadString('\n')
			r.Close() // what head -1 does
			if err != nil {
				t.Fatalf("no first line: %v", err)
			}
			t.Logf("first line: %s", line)
			select {
			case err := <-done:
				t.Logf("exit: %v", err)
				if code := cmd.ProcessState.ExitCode(); tc.name != "bench --dev" && code != 128+13 {
					t.Errorf("seqd %s stopped by its closed stderr: exit %d, want 141 (128+SIGPIPE)", tc.name, code)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("seqd %s still running two minutes after its stderr closed", tc.name)
			}
			left, _ := filepath.Glob(filepath.Join(tmp, "seqd-*"))
			if len(left) > 0 {
				t.Errorf("seqd %s left %v behind in $TMPDIR", tc.name, left)
			}
		})
	}
}
