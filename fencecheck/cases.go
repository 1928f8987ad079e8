package fencecheck

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// checker runs the cases of one fence-check run against one resource.
type checker struct {
	res        *resource
	grants     Grantor
	id         string // random per run: names its locks, keys, owners and values
	lockPrefix string
	keyPrefix  string
	holders    int // in the racing-writers case
	timeout    time.Duration
	restart    func(context.Context) error // nil: the restart case is not run
	restartFor time.Duration
	log        io.Writer
	live       []*Grant // grants not released yet
}

// Verdicts of a case.
const (
	Holds   = "holds"
	Fails   = "fails"
	Skipped = "skipped"
)

// Case is one row of the report: what a case expected, what it observed,
// and its verdict (Holds, Fails or Skipped).
type Case struct {
	Case     int    `json:"case"`
	Name     string `json:"name"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	Verdict  string `json:"verdict"`
	// Detail says what failed (the request and the whole answer), or why
	// the case was skipped.
	Detail string `json:"detail,omitempty"`
	Steps  []Step `json:"steps,omitempty"`
}

// Step is one request of a case (or the restart), with what it should get.
type Step struct {
	What     string `json:"step"`
	Expected string `json:"expected"`
	Observed string `json:"observed"`
	OK       bool   `json:"ok"`
	detail   string
}

// expect is a step that wants o admitted (admit) or refused.
func expect(what string, admit bool, o outcome) Step {
	s := Step{What: what, Expected: o.refusal(), Observed: o.String(), detail: o.detail()}
	if admit {
		s.Expected = "2xx"
		s.OK = o.admitted()
	} else {
		s.OK = o.refused()
	}
	return s
}

// stepsResult is a case made of steps: it holds when each step does, and
// its detail is the first step that does not.
func stepsResult(n int, name string, steps ...Step) Case {
	r := Case{Case: n, Name: name, Verdict: Holds, Steps: steps}
	var exp, obs []string
	for _, s := range steps {
		exp = append(exp, s.Expected)
		obs = append(obs, s.Observed)
		if !s.OK && r.Verdict == Holds {
			r.Verdict = Fails
			r.Detail = fmt.Sprintf("%s: expected %s, got %s", s.What, s.Expected, s.detail)
		}
	}
	r.Expected, r.Observed = strings.Join(exp, ", "), strings.Join(obs, ", ")
	return r
}

func skipped(n int, name, why string) Case {
	return Case{Case: n, Name: name, Expected: "-", Observed: "not run", Verdict: Skipped, Detail: why}
}

func (k *checker) lock(c int) string { return fmt.Sprintf("%s/%s/c%d", k.lockPrefix, k.id, c) }
func (k *checker) key(c int) string  { return fmt.Sprintf("%s%s-c%d", k.keyPrefix, k.id, c) }

// value is what holder h writes in case c; tag says which write (w01,
// l03). All values have one length, so none is part of another.
func (k *checker) value(c, h int, tag string) string {
	return fmt.Sprintf("fc-%s-c%d-h%02d-%s", k.id, c, h, tag)
}

// acquire takes case c's lock for holder h.
func (k *checker) acquire(ctx context.Context, c, h int) (*Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	g, err := k.grants.Acquire(ctx, k.lock(c), fmt.Sprintf("fence-check %s holder %d", k.id, h))
	if err != nil {
		return nil, fmt.Errorf("acquire %s: %w", k.lock(c), err)
	}
	k.live = append(k.live, &g)
	return &g, nil
}

// release releases g and forgets it.
func (k *checker) release(ctx context.Context, g *Grant) error {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	if err := k.grants.Release(ctx, *g); err != nil {
		return fmt.Errorf("release %s: %w", g.Sequencer, err)
	}
	k.live = slices.DeleteFunc(k.live, func(x *Grant) bool { return x == g })
	return nil
}

// handOver releases old (if any) and grants case c's lock to holder h: the
// old holder's token is then stale, as a paused holder's is.
func (k *checker) handOver(ctx context.Context, old *Grant, c, h int) (*Grant, error) {
	if old != nil {
		if err := k.release(ctx, old); err != nil {
			return nil, err
		}
	}
	return k.acquire(ctx, c, h)
}

// runCases runs the cases in order; an error is the daemon's (or a
// resource that never answered), and stops the run.
func (k *checker) runCases(ctx context.Context) ([]Case, error) {
	out, err := k.holderWrites(ctx)
	if err != nil {
		return nil, err
	}
	for _, run := range []func(context.Context) (Case, error){k.newHolder, k.fencedReads, k.racingWriters, k.restartCase, k.tokenBoundaries, k.deletes} {
		r, err := run(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// holderWrites is cases 1 and 2: the holder's write is admitted, and so is
// its second write with the same token.
func (k *checker) holderWrites(ctx context.Context) ([]Case, error) {
	a, err := k.acquire(ctx, 1, 1)
	if err != nil {
		return nil, err
	}
	key := k.key(1)
	o := k.res.doWrite(ctx, key, a, k.value(1, 1, "w01"))
	if !k.res.answered.Load() {
		return nil, &UnreachableError{o.detail()}
	}
	first := expect("the holder writes", true, o)
	second := expect("the holder writes again with the same token", true, k.res.doWrite(ctx, key, a, k.value(1, 1, "w02")))
	return []Case{
		stepsResult(1, "holder writes", first),
		stepsResult(2, "holder writes again, same token", second),
	}, k.release(ctx, a)
}

// newHolder is case 3: a new holder's write is admitted, then the old
// holder's write is refused.
func (k *checker) newHolder(ctx context.Context) (Case, error) {
	key := k.key(3)
	a, err := k.acquire(ctx, 3, 1)
	if err != nil {
		return Case{}, err
	}
	s1 := expect("the old holder writes", true, k.res.doWrite(ctx, key, a, k.value(3, 1, "w01")))
	b, err := k.handOver(ctx, a, 3, 2)
	if err != nil {
		return Case{}, err
	}
	s2 := expect("the new holder writes", true, k.res.doWrite(ctx, key, b, k.value(3, 2, "w01")))
	s3 := expect(fmt.Sprintf("the old holder (token %d) writes after the new one (token %d)", a.Token, b.Token),
		false, k.res.doWrite(ctx, key, a, k.value(3, 1, "w02")))
	r := stepsResult(3, "new holder writes, then old holder", s1, s2, s3)
	return r, k.release(ctx, b)
}

// fencedReads is case 4: once a new holder has written, the old holder's
// read is refused; and once a newer holder has read, the previous holder's
// write is refused (reads advance the max).
func (k *checker) fencedReads(ctx context.Context) (Case, error) {
	const name = "old holder reads; write after newer read"
	if k.res.read.URL == "" {
		return skipped(4, name, "no read URL"), nil
	}
	key := k.key(4)
	a, err := k.acquire(ctx, 4, 1)
	if err != nil {
		return Case{}, err
	}
	s1 := expect("the old holder writes", true, k.res.doWrite(ctx, key, a, k.value(4, 1, "w01")))
	b, err := k.handOver(ctx, a, 4, 2)
	if err != nil {
		return Case{}, err
	}
	s2 := expect("the new holder writes", true, k.res.doWrite(ctx, key, b, k.value(4, 2, "w01")))
	s3 := expect(fmt.Sprintf("the old holder (token %d) reads after the new one (token %d) wrote", a.Token, b.Token), false, k.res.doRead(ctx, key, a))
	c, err := k.handOver(ctx, b, 4, 3)
	if err != nil {
		return Case{}, err
	}
	s4 := expect("a newer holder reads", true, k.res.doRead(ctx, key, c))
	s5 := expect(fmt.Sprintf("the previous holder (token %d) writes after the newer one (token %d) only read", b.Token, c.Token),
		false, k.res.doWrite(ctx, key, b, k.value(4, 2, "w02")))
	return stepsResult(4, name, s1, s2, s3, s4, s5), k.release(ctx, c)
}
