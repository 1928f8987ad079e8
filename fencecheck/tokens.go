package fencecheck

import (
	"context"
	"fmt"
	"strconv"
)

// tokenPairs are case 7's tokens, each pair (higher, lower) on a key of its
// own: a resource that compares tokens as text admits 9999 after 10000;
// one that keeps them as doubles (a JavaScript number, a Lua number, a
// JSON parser's float) admits 2^53 after 2^53+1 and 2^63-1 after 2^63;
// one that keeps them as signed 64-bit integers cannot take 2^63 at all.
var tokenPairs = [][2]uint64{
	{10000, 9999},
	{1<<53 + 1, 1 << 53},
	{1 << 63, 1<<63 - 1},
	{10_000_000_000_000_000_000, 9_999_999_999_999_999_999},
}

// madeUp is a grant that fence-check makes up for case c: a token of its
// choosing on the case's lock, with a plain sequencer. The daemon never
// granted it, so a resource that admits only signed sequencers refuses it.
func (k *checker) madeUp(c int, token uint64) *Grant {
	return &Grant{Lock: k.lock(c), Token: token, Sequencer: k.lock(c) + "@" + strconv.FormatUint(token, 10)}
}

// tokenBoundaries is case 7: tokens compared as unsigned 64-bit integers.
// On each pair's key the higher token writes, then the lower one must be
// refused. The tokens are made up (no daemon grants 2^63), on keys no
// holder uses: a resource that will not take a token the daemon did not
// grant (a signed sequencer) skips the case.
func (k *checker) tokenBoundaries(ctx context.Context) (Case, error) {
	const name = "tokens compared as integers"
	var steps []Step
	for i, p := range tokenPairs {
		key := fmt.Sprintf("%s-%d", k.key(7), i+1)
		hi, lo := k.madeUp(7, p[0]), k.madeUp(7, p[1])
		o := k.res.doWrite(ctx, key, hi, k.value(7, 1, fmt.Sprintf("p%02d", i+1)))
		if i == 0 && o.refused() {
			return skipped(7, name, fmt.Sprintf("the resource refused token %d, which the check made up (does it admit only signed sequencers?): %s", p[0], o.detail())), nil
		}
		steps = append(steps,
			expect(fmt.Sprintf("token %d writes", p[0]), true, o),
			expect(fmt.Sprintf("token %d writes after %d", p[1], p[0]), false, k.res.doWrite(ctx, key, lo, k.value(7, 2, fmt.Sprintf("p%02d", i+1)))))
	}
	return stepsResult(7, name, steps...), nil
}

// deletes is case 8: a delete is fenced like a write, and a fenced delete
// keeps the key's max. A writes; B writes; A deletes (refused); B deletes
// (admitted); A writes (refused: the max outlived the value); B writes.
func (k *checker) deletes(ctx context.Context) (Case, error) {
	const name = "deletes fenced, max kept"
	if k.res.del.URL == "" {
		return skipped(8, name, "no delete URL"), nil
	}
	key := k.key(8)
	a, err := k.acquire(ctx, 8, 1)
	if err != nil {
		return Case{}, err
	}
	s1 := expect("the old holder writes", true, k.res.doWrite(ctx, key, a, k.value(8, 1, "w01")))
	b, err := k.handOver(ctx, a, 8, 2)
	if err != nil {
		return Case{}, err
	}
	s2 := expect("the new holder writes", true, k.res.doWrite(ctx, key, b, k.value(8, 2, "w01")))
	s3 := expect(fmt.Sprintf("the old holder (token %d) deletes after the new one (token %d) wrote", a.Token, b.Token), false, k.res.doDelete(ctx, key, a))
	s4 := expect("the new holder deletes", true, k.res.doDelete(ctx, key, b))
	s5 := expect(fmt.Sprintf("the old holder (token %d) writes after the new one deleted the key", a.Token), false, k.res.doWrite(ctx, key, a, k.value(8, 1, "w02")))
	s6 := expect("the new holder writes again", true, k.res.doWrite(ctx, key, b, k.value(8, 2, "w02")))
	return stepsResult(8, name, s1, s2, s3, s4, s5, s6), k.release(ctx, b)
}
