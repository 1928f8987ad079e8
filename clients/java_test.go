package clients_test

import (
	"testing"
	"time"
)

// TestJavaClient runs the Java client's JUnit suite (clients/java, built
// with javac alone by build.sh) against the harness's daemons.
func TestJavaClient(t *testing.T) {
	e := newEnv(t)
	e.run("java", 5*time.Minute, "bash", "build.sh", "test")
}
