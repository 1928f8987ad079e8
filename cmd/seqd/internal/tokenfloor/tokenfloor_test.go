package tokenfloor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
	"github.com/seqd/seqd/zklock"
)

// A root without a mark is created with the target; a higher target
// raises the floor; an explicit lower one is refused and changes nothing.
func TestApplyRaisesNeverLowers(t *testing.T) {
	zkc := zktest.StartT(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := zklock.Dial(ctx, zkc.Servers(), zklock.Options{SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	r := Root{Path: "/tokenfloor-test", Mode: zklock.TokenZxid}
	step := func(target uint64) (string, error) {
		t.Helper()
		n := target
		targets, err := Targets([]Root{r}, &n, nil)
		if err != nil {
			t.Fatal(err)
		}
		return Apply(ctx, sess, r, targets, true)
	}
	if row, err := step(1000); err != nil || !strings.HasSuffix(row, "\t1000\tcreated with floor 1000") {
		t.Fatalf("first raise: %q, %v", row, err)
	}
	if row, err := step(5000); err != nil || !strings.HasSuffix(row, "\t5000\traised from 1000") {
		t.Fatalf("second raise: %q, %v", row, err)
	}
	var e *exit.Error
	if _, err := step(10); !errors.As(err, &e) || e.Code != exit.Usage || !strings.Contains(err.Error(), "never lowered") {
		t.Fatalf("lowering: %v, want a usage error", err)
	}
	if row, err := Apply(ctx, sess, r, nil, false); err != nil || !strings.HasSuffix(row, "\t5000\t-") {
		t.Fatalf("after the refused lowering: %q, %v; want floor 5000 unchanged", row, err)
	}

	// The table: a header, and the rows up to a refusal.
	other := Root{Path: "/tokenfloor-test-other", Mode: zklock.TokenVersion}
	var b strings.Builder
	if err := Show(ctx, &b, sess, []Root{r, other}, map[string]uint64{other.Path: 7}, true); err != nil {
		t.Fatal(err)
	}
	want := "ROOT                    MODE     FLOOR  CHANGE\n" +
		"/tokenfloor-test        zxid     5000   -\n" +
		"/tokenfloor-test-other  version  7      created with floor 7\n"
	if b.String() != want {
		t.Errorf("Show:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := Show(ctx, &b, sess, []Root{other, r}, map[string]uint64{r.Path: 10}, true); !errors.As(err, &e) || e.Code != exit.Usage {
		t.Errorf("Show lowering: %v, want a usage error", err)
	}
	if got := b.String(); !strings.Contains(got, "/tokenfloor-test-other  version  7      -\n") || strings.Contains(got, "zxid") {
		t.Errorf("Show up to a refusal wrote:\n%s\nwant the header and the first row only", got)
	}
}

// A target above the highest floor is a usage error before anything is
// touched, and a floor file that cannot be read is a FileError.
func TestTargetsRefuses(t *testing.T) {
	big := uint64(zklock.MaxTokenFloor) + 1
	var e *exit.Error
	if _, err := Targets([]Root{{Path: "/r"}}, &big, nil); !errors.As(err, &e) || e.Code != exit.Usage {
		t.Errorf("Targets(%d) = %v, want a usage error", big, err)
	}
	bad := filepath.Join(t.TempDir(), "floors.json")
	if err := os.WriteFile(bad, []byte("not a floor file"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fe *FileError
	if _, err := Targets([]Root{{Path: "/r"}}, nil, []string{bad}); !errors.As(err, &fe) || fe.Path != bad {
		t.Errorf("Targets with a damaged floor file = %v, want a FileError", err)
	}
}
