package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// Run interactively (stdin a terminal, seqd in the foreground), the command
// gets the terminal: it can read it, where a command left in a background
// process group would be stopped by SIGTTIN and hold the lock for ever.
// util-linux script(1) provides the pseudo-terminal.
func TestLockInteractiveTerminal(t *testing.T) {
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) from util-linux is not installed: no pseudo-terminal to run seqd in")
	}
	c := zktest.StartT(t, testenv.Options{})
	bin := lockTestBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inner := fmt.Sprintf(`%s lock --zk %s tty -- sh -c 'read x; echo "got:$x"; exit 3'`, bin, c.ConnectString())
	cmd := exec.CommandContext(ctx, scriptPath, "-qec", inner, "/dev/null")
	cmd.Env = lockEnv()
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("seqd lock under a terminal hung (the command stopped on SIGTTIN?); output:\n%s", out)
	}
	if !strings.Contains(string(out), "got:hello") {
		t.Fatalf("the command did not read the terminal; output:\n%s", out)
	}
	var ee *exec.ExitError
	if code := 0; err != nil {
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
		if code != 3 {
			t.Fatalf("exit status %d, want the command's 3; output:\n%s", code, out)
		}
	} else {
		t.Fatalf("exit status 0, want the command's 3; output:\n%s", out)
	}
	conn := zkConn(t, c)
	waitContenders(t, conn, "tty", 0, 10*time.Second)
}
