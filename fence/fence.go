// Package fence is the resource side of seqd's fencing tokens: Fence admits
// an operation only if its token is not below the highest one already seen
// for the key; Sequencer, ParseSequencer and ParseToken read and write the
// "[<kind>:]<name>@<token>" strings that holders pass to resources, and
// Verifier checks signed ones.
//
// It is meant to be imported by the resource (a store, a service, a job
// runner) and depends on the standard library only: no ZooKeeper client, no
// Prometheus. Getting a lock and its token is the business of packages
// zklock and sequencer.
package fence

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrStaleToken is matched by every *StaleTokenError:
// errors.Is(err, ErrStaleToken) reports a refused token whatever its fields.
var ErrStaleToken = errors.New("fence: stale token")

// StaleTokenError is returned when a token is below the highest one already
// seen for a key (a lock, a row, an object): its holder lost the lock, and a
// newer holder has acted since.
type StaleTokenError struct {
	Key   string
	Token uint64 // the token presented
	Max   uint64 // the highest token seen for Key
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("fence: stale token %d for %q: a newer holder already used token %d", e.Token, e.Key, e.Max)
}

// Is makes errors.Is(err, ErrStaleToken) true for every *StaleTokenError.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// Fence is the resource-side token check: per key, it remembers the highest
// token used and refuses lower ones. It is safe for concurrent use; keys do
// not share a lock, so admissions on different keys do not contend, and
// admissions on one key settle with a compare-and-swap.
//
// A Fence only remembers in memory. A resource that must survive a restart
// persists the max in the same write as the data it guards and calls Restore
// when it starts (package store does).
type Fence struct {
	onStale func(key string)
	maxes   sync.Map // string -> *atomic.Uint64
}

// New returns an empty Fence. onStale, if not nil, is called with the key
// of every refused operation, after the refusal is decided and before Admit
// returns: it is the hook for counting rejections (a metric, a log line). It
// runs on the caller's goroutine and may be called concurrently.
func New(onStale func(key string)) *Fence {
	return &Fence{onStale: onStale}
}

// Admit lets an operation carrying token proceed on key, or refuses it.
// A token lower than the key's max is refused with a *StaleTokenError and
// reported to New's onStale; otherwise the max becomes token. Equal tokens
// are admitted: a holder renews its lease with the same token and keeps
// writing.
//
// Reads must call Admit too: once the new holder has read with its token, an
// old holder's delayed write with a lower token has to fail, or it lands
// between the new holder's read and its write and is silently overwritten.
func (f *Fence) Admit(key string, token uint64) error {
	p := f.slot(key, token)
	for {
		cur := p.Load()
		if token < cur {
			if f.onStale != nil {
				f.onStale(key)
			}
			return &StaleTokenError{Key: key, Token: token, Max: cur}
		}
		if token == cur || p.CompareAndSwap(cur, token) {
			return nil
		}
	}
}

// Max returns the highest token admitted or restored for key, 0 if none.
func (f *Fence) Max(key string) uint64 {
	if v, ok := f.maxes.Load(key); ok {
		return v.(*atomic.Uint64).Load()
	}
	return 0
}

// Restore raises key's max to max, for a resource replaying its own durable
// record at start. It never lowers a max: lowering would let a stale holder
// back in, which is the one thing a fence must not do.
func (f *Fence) Restore(key string, max uint64) {
	p := f.slot(key, 0)
	for {
		cur := p.Load()
		if max <= cur || p.CompareAndSwap(cur, max) {
			return
		}
	}
}

// slot returns key's max, creating it on first use. The first use stores
// token directly, so that the common case of a new key costs one
// LoadOrStore and no CAS.
func (f *Fence) slot(key string, token uint64) *atomic.Uint64 {
	if v, ok := f.maxes.Load(key); ok {
		return v.(*atomic.Uint64)
	}
	p := new(atomic.Uint64)
	p.Store(token)
	v, _ := f.maxes.LoadOrStore(key, p)
	return v.(*atomic.Uint64)
}
