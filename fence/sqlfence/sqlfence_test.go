package sqlfence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/sqlfence"
)

// TestNewRefusesBadNames: a table or column name that is not a plain
// identifier is refused with a sentence (it would be spliced into SQL).
func TestNewRefusesBadNames(t *testing.T) {
	for _, o := range []sqlfence.Options{
		{Table: "seqd_fence; DROP TABLE users"},
		{KeyColumn: "key column"},
		{TokenColumn: `"max"`},
		{Table: strings.Repeat("t", 64)},
	} {
		if _, err := sqlfence.New(nil, sqlfence.Postgres, o); err == nil || !strings.Contains(err.Error(), "not a plain SQL identifier") {
			t.Errorf("New(%+v) = %v, want a refusal of the name", o, err)
		}
	}
	if _, err := sqlfence.New(nil, sqlfence.Dialect(9), sqlfence.Options{}); err == nil {
		t.Error("New with an unknown dialect: no error")
	}
	if _, err := sqlfence.New(nil, sqlfence.MySQL, sqlfence.Options{Table: "orders", KeyColumn: "id", TokenColumn: "fence_token"}); err != nil {
		t.Errorf("New with plain names: %v", err)
	}
}

// TestDoRefusesTokenZero: 0 is no token; nothing is sent.
func TestDoRefusesTokenZero(t *testing.T) {
	f, err := sqlfence.New(nil, sqlfence.Postgres, sqlfence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Do(context.Background(), "k", 0, nil); !errors.Is(err, fence.ErrInvalidSequencer) {
		t.Errorf("Do with token 0 = %v, want ErrInvalidSequencer", err)
	}
}

type stateErr string

func (e stateErr) Error() string    { return "state " + string(e) }
func (e stateErr) SQLState() string { return string(e) }

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{stateErr("40001"), true},
		{fmt.Errorf("sqlfence: fence %q: %w", "k", stateErr("40P01")), true},
		{stateErr("23505"), false},
		{errors.New("Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"), true},
		{errors.New("Error 1205 (HY000): Lock wait timeout exceeded; try restarting transaction"), true},
		{errors.New("Error 1062 (23000): Duplicate entry"), false},
		{&fence.StaleTokenError{Key: "k", Token: 1, Max: 2}, false},
	} {
		if got := sqlfence.Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
