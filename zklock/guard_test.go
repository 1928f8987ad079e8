package zklock

import (
	"errors"
	"fmt"
	"testing"
)

func TestGuardRefusesRegressions(t *testing.T) {
	g := NewGuard()
	for _, c := range []struct {
		name  string
		token uint64
		ok    bool
	}{
		{"a", 10, true}, {"a", 10, false}, {"a", 9, false}, {"a", 11, true},
		{"b", 3, true}, {"a", 4, false},
	} {
		err := g.Issue(c.name, c.token)
		if (err == nil) != c.ok {
			t.Errorf("Issue(%q, %d) = %v, want ok=%v", c.name, c.token, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrTokenRegression) {
			t.Errorf("Issue(%q, %d) = %v, want ErrTokenRegression", c.name, c.token, err)
		}
	}
}

// TestGuardIsBounded: ever new lock names do not grow the guard past its
// size, and a name issued within the last half of it is still guarded.
func TestGuardIsBounded(t *testing.T) {
	const size = 100
	g := NewGuardSize(size)
	for i := range 50 * size {
		if err := g.Issue(fmt.Sprintf("order/%d", i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
		if g.Len() > size {
			t.Fatalf("after %d names the guard holds %d, more than %d", i+1, g.Len(), size)
		}
		// A lock in steady use stays guarded however many names pass by.
		if err := g.Issue("hot", uint64(10*i+1)); err != nil {
			t.Fatal(err)
		}
	}
	last := 50*size - 1
	for i := last - size/2 + 2; i <= last; i++ {
		name := fmt.Sprintf("order/%d", i)
		if err := g.Issue(name, 1); !errors.Is(err, ErrTokenRegression) {
			t.Fatalf("a regression of recent %s = %v, want refused", name, err)
		}
	}
	if err := g.Issue("hot", 5); !errors.Is(err, ErrTokenRegression) {
		t.Fatalf("a regression of the hot lock = %v, want refused", err)
	}
}
