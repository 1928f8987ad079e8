package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// spliceBatches is the number of batches of writes in spliceLog.
const spliceBatches = 24

// spliceLog is a store's log of spliceBatches acknowledged puts, one batch
// each, cycling over keys a, b and c with tokens 1, 2 …, and its
// store.meta.
type spliceLog struct {
	data, meta []byte
	head       []byte
	batches    []span
}

func spliceKey(i int) string { return string(rune('a' + i%3)) }

var (
	spliceOnce          sync.Once
	spliceOurs, spliceX spliceLog
	spliceErr           error
)

func loadSplice(t testing.TB) (ours, foreign spliceLog) {
	t.Helper()
	spliceOnce.Do(func() {
		for _, l := range []struct {
			to     *spliceLog
			prefix string
		}{{&spliceOurs, ""}, {&spliceX, "x-"}} {
			dir, err := os.MkdirTemp("", "seqd-store-splice")
			if err != nil {
				spliceErr = err
				return
			}
			defer os.RemoveAll(dir)
			s, err := Open(Options{Dir: dir})
			if err != nil {
				spliceErr = err
				return
			}
			for i := range spliceBatches {
				if err := s.Put(spliceKey(i), []byte(fmt.Sprintf("%s%s-%d", l.prefix, spliceKey(i), i+1)), uint64(i+1)); err != nil {
					spliceErr = err
					return
				}
			}
			if err := s.Close(); err != nil {
				spliceErr = err
				return
			}
			if l.to.data, err = os.ReadFile(filepath.Join(dir, logName)); err != nil {
				spliceErr = err
				return
			}
			if l.to.meta, err = os.ReadFile(filepath.Join(dir, metaName)); err != nil {
				spliceErr = err
				return
			}
			l.to.head, l.to.batches = batchesOf(l.to.data)
		}
	})
	if spliceErr != nil {
		t.Fatal(spliceErr)
	}
	if len(spliceOurs.batches) != spliceBatches || len(spliceX.batches) != spliceBatches {
		t.Fatalf("splice logs have %d and %d batches, want %d", len(spliceOurs.batches), len(spliceX.batches), spliceBatches)
	}
	return spliceOurs, spliceX
}

// piece is a batch of our log (foreign false) or of the other store's.
type piece struct {
	i       int
	foreign bool
}

// FuzzRecoverRefusesSplicedBatches rearranges whole, well-formed batches of
// a log: removes a run of them, repeats one somewhere, moves one, puts
// another store's batch in place of one, or cuts the log at a batch
// boundary. Open must refuse any change (a *CorruptionError or a
// *TruncatedError) and start on the log as written. With Repair it must
// start; no key's max may be below the highest token written to it; each
// key's value must be one written to it; and unless another store's batch
// came in, it must be the value of the highest-numbered batch of that key
// still in the log (a repeated old batch rolls nothing back).
func FuzzRecoverRefusesSplicedBatches(f *testing.F) {
	f.Add(uint8(0), uint8(5), uint8(5))  // remove batch 5
	f.Add(uint8(0), uint8(3), uint8(20)) // remove batches 3 to 20
	f.Add(uint8(1), uint8(2), uint8(23)) // repeat batch 2 at the end
	f.Add(uint8(1), uint8(7), uint8(7))  // repeat batch 7 in place
	f.Add(uint8(2), uint8(9), uint8(12)) // move batch 9 after 12
	f.Add(uint8(3), uint8(4), uint8(4))  // the other store's batch 4 for ours
	f.Add(uint8(3), uint8(10), uint8(2)) // the other store's batch 2 for our 10
	f.Add(uint8(4), uint8(17), uint8(0)) // cut after batch 17
	f.Fuzz(func(t *testing.T, op, x, y uint8) {
		ours, foreign := loadSplice(t)
		i, j := int(x)%spliceBatches, int(y)%spliceBatches
		var pieces []piece
		for k := range spliceBatches {
			pieces = append(pieces, piece{i: k})
		}
		switch op % 5 {
		case 0:
			pieces = slices.Delete(pieces, min(i, j), max(i, j)+1)
		case 1:
			pieces = slices.Insert(pieces, j+1, piece{i: i})
		case 2:
			p := pieces[i]
			pieces = slices.Insert(slices.Delete(pieces, i, i+1), min(j, spliceBatches-1), p)
		case 3:
			pieces[i] = piece{i: j, foreign: true}
		case 4:
			pieces = pieces[:i]
		}
		data := bytes.Clone(ours.head)
		for _, p := range pieces {
			l := ours
			if p.foreign {
				l = foreign
			}
			b := l.batches[p.i]
			data = append(data, l.data[b.off:b.off+b.n]...)
		}
		s, dir, err := openDamaged(t, data, ours.meta, false)
		unchanged := bytes.Equal(data, ours.data)
		var ce *CorruptionError
		var te *TruncatedError
		switch {
		case unchanged && err != nil:
			t.Fatalf("the log as written was refused: %v", err)
		case unchanged:
			s.Close()
			return
		case err == nil:
			e, _ := s.Get("a", 0)
			t.Fatalf("Open accepted batches %v (a = %q)", pieces, e.Value)
		case !errors.As(err, &ce) && !errors.As(err, &te):
			t.Fatalf("Open = %v, want a *CorruptionError or a *TruncatedError", err)
		}

		s, err = Open(Options{Dir: dir, Repair: true})
		if err != nil {
			t.Fatalf("Open with Repair of batches %v = %v", pieces, err)
		}
		defer s.Close()
		spliced := slices.ContainsFunc(pieces, func(p piece) bool { return p.foreign })
		for k := range 3 {
			key := spliceKey(k)
			top := spliceBatches - 3 + k + 1 // the highest token written to key
			if m := s.Max(key); m < uint64(top) {
				t.Errorf("after repair of batches %v, Max(%s) = %d, below its token %d", pieces, key, m, top)
			}
			e, err := s.Get(key, 0)
			last := -1
			for _, p := range pieces {
				if !p.foreign && spliceKey(p.i) == key {
					last = max(last, p.i)
				}
			}
			switch {
			case spliced:
				if err == nil && !bytes.HasSuffix(e.Value, []byte(fmt.Sprintf("%s-%d", key, e.Token))) {
					t.Errorf("after repair of batches %v, %s = %q with token %d, a value never written", pieces, key, e.Value, e.Token)
				}
			case last < 0:
				if err == nil {
					t.Errorf("after repair of batches %v, %s = %q, though none of its batches is left", pieces, key, e.Value)
				}
			default:
				want := fmt.Sprintf("%s-%d", key, last+1)
				if err != nil || string(e.Value) != want {
					t.Errorf("after repair of batches %v, %s = %q (%v), want %q", pieces, key, e.Value, err, want)
				}
			}
		}
	})
}
