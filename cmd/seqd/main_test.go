package main

import (
	"os"
	"strings"
	"testing"
)

// asSeqdEnv makes this test binary run as the seqd binary. It does not
// start with SEQD_, so that `seqd bench`, which clears the SEQD_ variables
// of the daemon it starts, passes it on.
const asSeqdEnv = "GO_TEST_RUN_AS_SEQD"

// TestMain lets this test binary stand in for seqd where a command runs
// seqd as a process of its own from os.Executable() (`seqd bench` starts
// `seqd serve` so): started with asSeqdEnv set and a command rather than
// test flags, the binary is seqd. Tests that run this binary as a helper
// of their own pass -test. flags, and get the tests.
func TestMain(m *testing.M) {
	if os.Getenv(asSeqdEnv) == "1" && len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
		main()
	}
	os.Setenv(asSeqdEnv, "1")
	os.Exit(m.Run())
}
