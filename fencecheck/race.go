package fencecheck

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"sync"
)

// raceTally counts the requests of the racing-writers case.
type raceTally struct {
	writes, writesOK    int // the holders' own writes; admitted
	late, lateRefused   int // late writes of holders older than the last writer; refused
	racing, racingFirst int // late writes of the last writer, racing its successor; admitted (they came first)
	reads, readsNewest  int // read-backs; showing the newest holder's value
	fail                string
	readBackUnsupported bool
}

func (t *raceTally) failed(format string, args ...any) {
	if t.fail == "" {
		t.fail = fmt.Sprintf(format, args...)
	}
}

// racingWriters is case 5: holders take the lock in turn; each one's write
// races a late write of every older holder. A late write of the holder just
// before may land first (its token was the max), any other is refused, and
// a read after each round shows the newest holder's value: no late write
// lands after a newer one. A last wave of late writes from every old holder
// must all be refused.
func (k *checker) racingWriters(ctx context.Context) (Case, error) {
	key := k.key(5)
	var hs []*Grant
	t := raceTally{readBackUnsupported: k.res.read.URL == ""}
	for i := range k.holders {
		var prev *Grant
		if i > 0 {
			prev = hs[i-1]
		}
		g, err := k.handOver(ctx, prev, 5, i+1)
		if err != nil {
			return Case{}, err
		}
		hs = append(hs, g)
		k.raceRound(ctx, key, hs, &t)
		k.readBack(ctx, key, hs, &t)
	}
	k.lateWave(ctx, key, hs, &t)
	k.readBack(ctx, key, hs, &t)
	return t.result(k.holders), k.release(ctx, hs[len(hs)-1])
}

// raceRound fires the newest holder's write and one late write of each
// older holder at once.
func (k *checker) raceRound(ctx context.Context, key string, hs []*Grant, t *raceTally) {
	i := len(hs) - 1
	tag := func(j int) string {
		if j == i {
			return fmt.Sprintf("w%02d", i+1)
		}
		return fmt.Sprintf("l%02d", i+1)
	}
	outs := k.fire(ctx, key, hs, tag)
	for j, o := range outs {
		switch {
		case j == i:
			t.writes++
			if o.admitted() {
				t.writesOK++
			} else {
				t.failed("holder %d's write (token %d), expected admitted, got %s", j+1, hs[j].Token, o.detail())
			}
		case j == i-1:
			t.racing++
			if o.admitted() {
				t.racingFirst++
			} else if !o.refused() {
				t.failed("holder %d's late write (token %d) racing holder %d's, expected admitted or refused, got %s", j+1, hs[j].Token, i+1, o.detail())
			}
		default:
			t.lateWrite(j, hs, o)
		}
	}
}

// lateWave fires a late write of every holder but the newest at once, after
// the newest has written: each must be refused.
func (k *checker) lateWave(ctx context.Context, key string, hs []*Grant, t *raceTally) {
	old := hs[:len(hs)-1]
	outs := k.fire(ctx, key, old, func(int) string { return fmt.Sprintf("l%02d", len(hs)+1) })
	for j, o := range outs {
		t.lateWrite(j, hs, o)
	}
}

// lateWrite counts the late write of holder j, which must be refused.
func (t *raceTally) lateWrite(j int, hs []*Grant, o outcome) {
	t.late++
	if o.refused() {
		t.lateRefused++
		return
	}
	t.failed("holder %d's late write (token %d) after a newer holder's (token %d) was admitted, expected refused, got %s",
		j+1, hs[j].Token, hs[len(hs)-1].Token, o.detail())
}

// fire sends a write of each holder of gs at once (holder j+1 writes the
// value tagged tag(j)) and returns the outcomes in the order of gs.
func (k *checker) fire(ctx context.Context, key string, gs []*Grant, tag func(j int) string) []outcome {
	outs := make([]outcome, len(gs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for j, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			outs[j] = k.res.doWrite(ctx, key, g, k.value(5, j+1, tag(j)))
		}()
	}
	close(start)
	wg.Wait()
	return outs
}

// readBack reads key as the newest holder: the answer must show that
// holder's own write.
func (k *checker) readBack(ctx context.Context, key string, hs []*Grant, t *raceTally) {
	if t.readBackUnsupported {
		return
	}
	i := len(hs) - 1
	want := k.value(5, i+1, fmt.Sprintf("w%02d", i+1))
	o := k.res.doRead(ctx, key, hs[i])
	t.reads++
	switch {
	case o.admitted() && bytes.Contains(o.body, []byte(want)):
		t.readsNewest++
	case o.admitted():
		t.failed("holder %d's read after its write shows %s, expected its own value %s: a late write landed after a newer one",
			i+1, k.describeValue(o.body), want)
	default:
		t.failed("holder %d's read after its write, expected admitted, got %s", i+1, o.detail())
	}
}

// describeValue names the write of case 5 whose value body holds.
func (k *checker) describeValue(body []byte) string {
	re := regexp.MustCompile(`fc-` + k.id + `-c5-h(\d\d)-([wl])(\d\d)`)
	m := re.FindSubmatch(body)
	switch {
	case m == nil:
		return "no value of this case"
	case m[2][0] == 'l':
		return fmt.Sprintf("holder %s's late write of round %s", trimZero(m[1]), trimZero(m[3]))
	}
	return fmt.Sprintf("holder %s's write", trimZero(m[1]))
}

func trimZero(b []byte) string { return string(bytes.TrimLeft(b, "0")) }

// result is the case's row.
func (t *raceTally) result(holders int) Case {
	r := Case{
		Case:     5,
		Name:     fmt.Sprintf("%d holders in turn, late writes racing", holders),
		Expected: "writes 2xx, late writes refused, reads newest",
		Verdict:  Holds,
	}
	reads := fmt.Sprintf("reads %d/%d newest", t.readsNewest, t.reads)
	if t.readBackUnsupported {
		reads = "no reads (no read URL)"
	}
	r.Observed = fmt.Sprintf("writes %d/%d 2xx, late %d/%d refused (+%d racing, %d first), %s",
		t.writesOK, t.writes, t.lateRefused, t.late, t.racing, t.racingFirst, reads)
	if t.fail != "" {
		r.Verdict, r.Detail = Fails, t.fail
	}
	return r
}
