package underlock

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
)

// CMD is found on PATH, or joined for sh -c with --shell; one that cannot
// be run exits as a shell would: 127 not found, 126 not executable.
func TestProgram(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path, args, err := Program([]string{"echo", "a b", "c"}, true)
	if err != nil || path != "/bin/sh" || !slices.Equal(args, []string{"sh", "-c", "echo a b c"}) {
		t.Errorf("shell: %q %q %v, want /bin/sh [sh -c \"echo a b c\"]", path, args, err)
	}
	path, args, err = Program([]string{"sh", "-c", "true"}, false)
	if err != nil || !filepath.IsAbs(path) || filepath.Base(path) != "sh" || !slices.Equal(args, []string{"sh", "-c", "true"}) {
		t.Errorf("sh on PATH: %q %q %v, want an absolute path to sh and argv as given", path, args, err)
	}
	for _, tc := range []struct {
		argv0 string
		want  int
	}{
		{filepath.Join(dir, "missing"), 127},
		{"seqd-no-such-program", 127},
		{plain, 126},
	} {
		_, _, err := Program([]string{tc.argv0}, false)
		var e *exit.Error
		if !errors.As(err, &e) || e.Code != tc.want {
			t.Errorf("%s: %v, want exit %d", tc.argv0, err, tc.want)
		}
	}
}
