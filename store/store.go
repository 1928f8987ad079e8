// Package store is `seqd store`: a small key-value store that enforces
// fencing tokens, a resource guarded by seqd's locks. It exists for demos, tests
// and the chaos suite, and as a worked example of the durability rule: a
// key's max token is written in the same log record as the data it guards,
// with one write and one fsync per acknowledged operation (several
// concurrent operations may share that fsync), never in a second write.
//
// The log trusts nothing it did not write: its batches are numbered and
// chained to one another and to the store's identity, and store.meta
// records the last batch written, so that a batch removed, repeated, moved,
// taken from another store's log, or cut off the end is refused at Open
// rather than replayed (docs/store.md says what stays undetectable).
//
// It is not a database: the whole state lives in memory, values are at most
// MaxValueBytes, and the log is one file compacted by rewriting.
package store

import (
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
)

// FenceMode says how the store uses fencing tokens.
type FenceMode string

const (
	// FenceFull checks every token: writes and deletes need one, and a read
	// that carries one raises the key's max like a write.
	FenceFull FenceMode = "full"
	// FenceWrites checks writes and deletes only; reads ignore their token.
	// It exists to show the read-modify-write race it lets through.
	FenceWrites FenceMode = "writes"
	// FenceOff checks nothing: a plain key-value store, for negative controls
	// and benchmarks. Tokens are optional and still recorded.
	FenceOff FenceMode = "off"
)

// ParseFenceMode parses "full", "writes" or "off".
func ParseFenceMode(s string) (FenceMode, error) {
	switch m := FenceMode(s); m {
	case FenceFull, FenceWrites, FenceOff:
		return m, nil
	}
	return "", fmt.Errorf("store: fence mode %q is not one of full, writes, off", s)
}

// DefaultCompactBytes is the log size past which the log is compacted.
const DefaultCompactBytes = 64 << 20

const (
	logName     = "store.log"
	compactName = "store.log.compact"
	lockName    = "LOCK"
)

var (
	// ErrNotFound is returned by Get for a key without a value.
	ErrNotFound = errors.New("store: key not found")
	// ErrTokenRequired is returned by writes without a token on a fenced store.
	ErrTokenRequired = errors.New("store: this store is fenced: the operation needs a fencing token")
	// ErrValueTooLarge is returned by Put for a value over MaxValueBytes.
	ErrValueTooLarge = errors.New("store: the value is too large")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("store: closed")
)

// Options configures Open.
type Options struct {
	Dir   string    // created if missing
	Fence FenceMode // empty means FenceFull
	// CompactBytes: compact when the log passes max(CompactBytes, twice the
	// size of the live state). 0 means DefaultCompactBytes.
	CompactBytes int64
	// StoreMetrics counts operations, log writes and refused stale tokens;
	// nil counts nothing.
	StoreMetrics *metrics.StoreMetrics
	Logger       *slog.Logger // nil discards
	// Repair lets Open start on a log that is damaged before its last
	// batch (see CorruptionError) or ends before the last batch the store
	// wrote (see TruncatedError): every readable record is kept, the
	// damaged file is linked to a side name, and a new log is written. When
	// records are known to be lost, every key's max is raised to the highest
	// max the store is known to have reached, so that no max goes down.
	Repair bool

	fs fileSystem // nil: the real one; tests replay power losses through another
	// marks is how store.meta follows the batches; only benchmarks that
	// price the mark set it.
	marks markPolicy
}

// markPolicy is when store.meta is written and fsynced.
type markPolicy int

const (
	// markLazy writes the mark after every batch and fsyncs it at most
	// once per markSyncEvery: the store's way.
	markLazy markPolicy = iota
	// markEveryBatch fsyncs the mark after every batch too.
	markEveryBatch
	// markNever does not write it (a benchmark's baseline: the store
	// without the check against a cut log).
	markNever
)

// markSyncEvery is how often, at most, store.meta is fsynced while batches
// are written: the longest a power loss can leave it behind the log (see
// meta.go).
const markSyncEvery = time.Second

// Entry is what Get returns.
type Entry struct {
	Value []byte // shared with the store: do not modify
	Token uint64 // the token of the write that stored Value (0 if unfenced)
	Max   uint64 // the key's max token
}

type entry struct {
	value []byte
	token uint64
	live  bool
	seq   uint64 // the last log record touching this key
}

// Store is an open store. Its methods are safe for concurrent use.
//
// Every change is applied in memory in log order under mu and appended to a
// pending buffer; the caller then waits until a flusher has written and
// fsynced the buffer. Whoever finds no flush running becomes the flusher and
// takes everything pending (group commit). Anything that answers from state
// another operation changed (a read, a rejection) also waits until that
// operation's record is durable, so no answer depends on state a crash could
// still take back.
type Store struct {
	dir   string
	mode  FenceMode
	fence *fence.Fence
	sm    *metrics.StoreMetrics
	log   *slog.Logger
	lock  *os.File // flock on dir/LOCK, held while open
	fs    fileSystem
	id    [storeIDBytes]byte

	meta      file // store.meta, for the mark of each batch
	marks     markPolicy
	stopMarks chan struct{}
	marksDone chan struct{}

	mu        sync.Mutex
	cond      *sync.Cond // signalled when a flush ends
	entries   map[string]*entry
	liveKeys  int
	f         file  // the log, opened for append
	size      int64 // bytes of the log on disk
	threshold int64
	compactAt int64
	pending   []byte
	spare     []byte
	nPending  int
	appended  uint64 // seq of the last record appended to pending
	durable   uint64 // seq of the last record on disk
	flushing  bool
	batch     uint64 // the number of the last batch in the log
	link      uint32 // the CRC field of its seal
	ceiling   uint64 // the highest max of any key, with what is pending
	floor     uint64 // every key's max is at least this (see header)
	markDirty bool   // store.meta was written since its last fsync
	err       error  // sticky: set by a failed write, fsync or compaction, or Close

	// flushIOHook, if set (tests only), runs while a flush has mu released.
	flushIOHook func()
}

// Open opens or creates the store in opts.Dir, replays its log and truncates
// a last batch that a crash tore. Damage anywhere else is corruption: Open
// returns a *CorruptionError unless opts.Repair is set. Only one process may
// open a directory at a time.
func Open(opts Options) (*Store, error) {
	mode := opts.Fence
	if mode == "" {
		mode = FenceFull
	}
	if _, err := ParseFenceMode(string(mode)); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	threshold := opts.CompactBytes
	if threshold <= 0 {
		threshold = DefaultCompactBytes
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(opts.Dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("store: %s is in use by another process: %w", opts.Dir, err)
	}
	fs := opts.fs
	if fs == nil {
		fs = osFS{}
	}
	s := &Store{
		fs:        fs,
		dir:       opts.Dir,
		mode:      mode,
		fence:     newFence(opts.StoreMetrics),
		sm:        opts.StoreMetrics,
		log:       logger,
		lock:      lock,
		entries:   map[string]*entry{},
		threshold: threshold,
		marks:     opts.marks,
		stopMarks: make(chan struct{}),
		marksDone: make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	if err := s.recover(opts.Repair); err != nil {
		if s.f != nil {
			s.f.Close()
		}
		if s.meta != nil {
			s.meta.Close()
		}
		lock.Close()
		return nil, err
	}
	go s.syncMarks()
	return s, nil
}

// newFence returns the store's Fence, which counts refused tokens on sm.
func newFence(sm *metrics.StoreMetrics) *fence.Fence {
	if sm == nil {
		return fence.New(nil)
	}
	return fence.New(sm.StaleRejected)
}

// apply replays one durable record into memory.
func (s *Store) apply(r *record) {
	s.ceiling = max(s.ceiling, r.max)
	e := s.entry(r.key)
	switch r.kind {
	case kindPut:
		if !e.live {
			s.liveKeys++
		}
		e.value, e.token, e.live = r.value, r.token, true
	case kindDelete:
		if e.live {
			s.liveKeys--
		}
		e.value, e.token, e.live = nil, 0, false
	}
	s.fence.Restore(r.key, r.max)
}

func (s *Store) entry(key string) *entry {
	e := s.entries[key]
	if e == nil {
		e = &entry{}
		s.entries[key] = e
	}
	return e
}

// Put stores value under key with token and returns once it is durable. The
// store keeps value: the caller must not modify it afterwards.
func (s *Store) Put(key string, value []byte, token uint64) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if len(value) > MaxValueBytes {
		return fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrValueTooLarge, len(value), MaxValueBytes)
	}
	return s.write(kindPut, key, value, token)
}

// Delete removes key's value; its max token stays, so that a stale holder
// cannot recreate the key. Deleting a missing key is not an error.
func (s *Store) Delete(key string, token uint64) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	return s.write(kindDelete, key, nil, token)
}

func (s *Store) write(kind byte, key string, value []byte, token uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if err := s.admitLocked(key, token, s.mode != FenceOff); err != nil {
		return err
	}
	e := s.entry(key)
	r := record{kind: kind, key: key, max: s.fence.Max(key)}
	switch kind {
	case kindPut:
		r.value, r.token = value, token
		if !e.live {
			s.liveKeys++
		}
		e.value, e.token, e.live = value, token, true
	case kindDelete:
		if e.live {
			s.liveKeys--
		}
		e.value, e.token, e.live = nil, 0, false
	}
	e.seq = s.appendLocked(&r)
	s.sm.SetKeys(s.liveKeys)
	return s.waitDurableLocked(e.seq)
}

// admitLocked runs the fence for an operation on key. With check false the
// token is only recorded (FenceOff still raises the max, so that the log has
// the same shape in every mode). A rejection waits for the record that set
// the max it reports, so that it never cites a max a crash could undo.
func (s *Store) admitLocked(key string, token uint64, check bool) error {
	if s.floor > 0 {
		s.fence.Restore(key, s.floor) // durable in the log's header
	}
	if !check {
		if token > 0 {
			s.fence.Restore(key, token)
		}
		return nil
	}
	if token == 0 {
		return ErrTokenRequired
	}
	if err := s.fence.Admit(key, token); err != nil {
		if e := s.entries[key]; e != nil {
			if werr := s.waitDurableLocked(e.seq); werr != nil {
				return werr
			}
		}
		return err
	}
	return nil
}

// Get returns key's value. A token, if not 0, is fenced in FenceFull mode: a
// stale one is refused, a higher one raises the max with a durable
// fence-only record before the value is returned, so that after a restart an
// older holder's write still fails.
func (s *Store) Get(key string, token uint64) (Entry, error) {
	if err := ValidateKey(key); err != nil {
		return Entry{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return Entry{}, s.err
	}
	if token > 0 && s.mode == FenceFull {
		before := s.fence.Max(key)
		if err := s.admitLocked(key, token, true); err != nil {
			return Entry{}, err
		}
		if token > before {
			e := s.entry(key)
			e.seq = s.appendLocked(&record{kind: kindFence, key: key, max: token})
		}
	}
	// Snapshot what to answer before waiting: the wait releases mu, and a
	// later write to the key (not yet durable) must not leak into this
	// answer. Every change to a key's value or max appends a record and
	// sets e.seq in one locked section, so the snapshot is what record seq
	// made durable.
	e := s.entries[key]
	var (
		seq   uint64
		out   Entry
		found bool
	)
	if e != nil {
		seq = e.seq
		if e.live {
			out.Value, out.Token, found = e.value, e.token, true
		}
	}
	out.Max = s.maxLocked(key)
	if err := s.waitDurableLocked(seq); err != nil {
		return Entry{}, err
	}
	if !found {
		return Entry{Max: out.Max}, ErrNotFound
	}
	return out, nil
}

// Err returns why the store stopped serving (a failed write, fsync or
// compaction, or Close), or nil while it serves.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Max returns key's max token in memory, which may include a record not yet
// durable (for tests and metrics; answers to clients go through Get).
func (s *Store) Max(key string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxLocked(key)
}

func (s *Store) maxLocked(key string) uint64 { return max(s.fence.Max(key), s.floor) }

func (s *Store) appendLocked(r *record) uint64 {
	s.ceiling = max(s.ceiling, r.max)
	s.pending = appendRecord(s.pending, r)
	s.nPending++
	s.appended++
	return s.appended
}

// waitDurableLocked returns once record seq is on disk, flushing if no one
// else is. It is called and returns with mu held.
func (s *Store) waitDurableLocked(seq uint64) error {
	for s.durable < seq {
		if s.err != nil {
			return s.err
		}
		if s.flushing {
			s.cond.Wait()
			continue
		}
		s.flushLocked()
	}
	return nil
}

// flushLocked writes and fsyncs everything pending as the next batch, then
// records the batch in store.meta, with mu released during the I/O so that
// other operations queue up behind it for the next batch.
func (s *Store) flushLocked() {
	s.flushing = true
	m := mark{id: s.id, seq: s.batch + 1, ceiling: s.ceiling}
	buf, link := appendSeal(s.pending, 0, seal{seq: m.seq, start: uint64(s.size), link: s.link, ceiling: m.ceiling})
	m.link = link
	n, upto := s.nPending, s.appended
	s.pending, s.spare, s.nPending = s.spare[:0], nil, 0
	s.mu.Unlock()
	if s.flushIOHook != nil {
		s.flushIOHook()
	}
	start := time.Now()
	_, err := s.f.Write(buf)
	if err == nil {
		err = s.f.Sync()
	}
	// Only after the batch is durable: the mark never names a batch a
	// crash could still take back.
	if err == nil && s.marks != markNever {
		err = writeMark(s.meta, m)
	}
	if err == nil && s.marks == markEveryBatch {
		err = s.meta.Sync()
	}
	elapsed := time.Since(start)
	s.mu.Lock()
	s.flushing = false
	if cap(buf) <= 4<<20 {
		s.spare = buf[:0]
	}
	if err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages:
		// retrying could report success for data that is gone. Stop, and let
		// a restart recover from what the disk really has.
		s.err = fmt.Errorf("store: writing the log, the store stops: %w", err)
		s.log.Error("log write failed", "err", err)
		s.sm.Stopped()
	} else {
		s.durable = upto
		s.batch, s.link, s.markDirty = m.seq, m.link, s.marks == markLazy
		s.size += int64(len(buf))
		s.sm.LogWrite(n, elapsed.Seconds())
		s.sm.SetLogBytes(s.size)
		if s.size > s.compactAt {
			s.compactLocked()
		}
	}
	s.cond.Broadcast()
}

// compactLocked rewrites the log as one record per key: the value and its
// token for live keys, a tombstone for deleted keys (their max must survive),
// a fence record for keys only read. The new log is fsynced under a temporary
// name and renamed over the old one, so a crash at any point leaves one whole
// log. Records still pending are folded into the snapshot, since memory
// already reflects them; they become durable with the new log.
func (s *Store) compactLocked() {
	s.flushing = true
	recs := s.snapshot()
	upto := s.appended
	s.pending, s.nPending = s.pending[:0], 0
	h := header{id: s.id, base: s.batch, floor: s.floor}
	m := mark{id: s.id, seq: s.batch + 1, ceiling: max(s.ceiling, s.floor)}
	s.mu.Unlock()

	start := time.Now()
	f, size, link, err := s.writeCompacted(recs, h, m.ceiling)
	if err == nil {
		// A compaction is a checkpoint: its mark is made durable at once.
		m.link = link
		err = writeMark(s.meta, m)
		if err == nil {
			err = s.meta.Sync()
		}
		if err != nil {
			f.Close()
		}
	}
	elapsed := time.Since(start)

	s.mu.Lock()
	s.flushing = false
	if err != nil {
		// The pending records were folded into the lost snapshot; the old log
		// is intact on disk, so stopping keeps every acknowledged write.
		s.err = fmt.Errorf("store: compacting the log, the store stops: %w", err)
		s.log.Error("compaction failed", "err", err)
		s.sm.Stopped()
		return
	}
	old := s.f
	s.f, s.size, s.durable = f, size, upto
	s.batch, s.link = m.seq, m.link
	s.compactAt = max(s.threshold, 2*size)
	if err := old.Close(); err != nil {
		s.log.Warn("closing the old log", "err", err)
	}
	s.sm.Compacted()
	s.sm.SetLogBytes(size)
	s.log.Info("compacted the log", "keys", len(recs), "bytes", size, "took", elapsed)
}

// snapshot returns one record per key: the value and its token for live
// keys, a tombstone for deleted keys (their max must survive), a fence
// record for keys only read.
func (s *Store) snapshot() []record {
	recs := make([]record, 0, len(s.entries))
	for k, e := range s.entries {
		r := record{key: k, max: s.maxLocked(k)}
		switch {
		case e.live:
			r.kind, r.value, r.token = kindPut, e.value, e.token
		case r.max > 0:
			r.kind = kindDelete
		default:
			continue // deleted in FenceOff mode without a token: nothing to keep
		}
		recs = append(recs, r)
	}
	return recs
}

// writeCompacted writes a new log, h and recs as its one batch, under a
// temporary name, fsyncs it and renames it over the log. It returns the
// new log open for appending, its size and its seal's CRC field.
func (s *Store) writeCompacted(recs []record, h header, ceiling uint64) (file, int64, uint32, error) {
	slices.SortFunc(recs, func(a, b record) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	tmp := filepath.Join(s.dir, compactName)
	f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, 0, err
	}
	fail := func(err error) (file, int64, uint32, error) {
		f.Close()
		s.fs.Remove(tmp)
		return nil, 0, 0, err
	}
	buf := appendHeader(nil, h)
	link := crcField(buf)
	var size int64
	sum := uint32(0)
	from := len(buf) // where the records start in buf
	for i := 0; ; i++ {
		if i < len(recs) {
			buf = appendRecord(buf, &recs[i])
		}
		if i == len(recs) {
			// The whole file is one batch.
			sum = crc32.Update(sum, castagnoli, buf[from:])
			buf, link = appendSealSum(buf, seal{seq: h.base + 1, start: uint64(recordHeader + bodyFixed + headerValue),
				link: link, sum: sum, ceiling: ceiling})
		} else if len(buf) < 1<<20 {
			continue
		} else {
			sum = crc32.Update(sum, castagnoli, buf[from:])
		}
		if _, err := f.Write(buf); err != nil {
			return fail(err)
		}
		size += int64(len(buf))
		buf, from = buf[:0], 0
		if i == len(recs) {
			break
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := s.fs.Rename(tmp, filepath.Join(s.dir, logName)); err != nil {
		return fail(err)
	}
	// The rename is durable only once the directory is.
	if err := s.fs.SyncDir(s.dir); err != nil {
		f.Close()
		return nil, 0, 0, err
	}
	return f, size, link, nil
}

// Close flushes what is pending, makes the last mark durable, closes the
// log and releases the directory.
func (s *Store) Close() error {
	s.mu.Lock()
	err := s.waitDurableLocked(s.appended)
	for s.flushing {
		s.cond.Wait()
	}
	if errors.Is(s.err, ErrClosed) {
		s.mu.Unlock()
		return nil
	}
	s.err = ErrClosed
	s.cond.Broadcast()
	s.mu.Unlock()
	close(s.stopMarks)
	<-s.marksDone
	if s.markDirty { // no one else touches it once the syncer is gone
		if cerr := s.meta.Sync(); err == nil {
			err = cerr
		}
	}
	if cerr := s.meta.Close(); err == nil {
		err = cerr
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if cerr := s.lock.Close(); err == nil { // closing releases the flock
		err = cerr
	}
	return err
}

// syncMarks fsyncs store.meta at most once per markSyncEvery while batches
// are written, off the write path, until Close.
func (s *Store) syncMarks() {
	defer close(s.marksDone)
	t := time.NewTicker(markSyncEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stopMarks:
			return
		case <-t.C:
		}
		s.mu.Lock()
		dirty := s.markDirty && s.err == nil
		s.markDirty = false
		s.mu.Unlock()
		if !dirty {
			continue
		}
		if err := s.meta.Sync(); err != nil {
			// The log is intact; only the check against a cut log after a
			// power loss is weaker until the next sync succeeds.
			s.log.Warn("syncing store.meta", "err", err)
			s.mu.Lock()
			s.markDirty = true
			s.mu.Unlock()
		}
	}
}

// syncMark writes the mark of the last batch and makes it durable.
func (s *Store) syncMark() error {
	m := mark{id: s.id, seq: s.batch, link: s.link, ceiling: max(s.ceiling, s.floor)}
	if err := writeMark(s.meta, m); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := s.meta.Sync(); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
