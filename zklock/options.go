package zklock

import "time"

// Options of the recipes. Each recipe has an option interface of its own
// (MutexOption, MultiMutexOption, ReadLockOption, SemaphoreOption,
// ElectionOption), and each
// option implements the interfaces of the recipes that can honour it: an
// option a recipe cannot honour (a lock-delay on a semaphore, a token mode
// on a read lock) does not compile, rather than failing at run time.
//
//	option          Mutex  MultiMutex  ReadLock  Semaphore  Election
//	WithRoot          ✓        ✓          ✓          ✓          ✓
//	WithData          ✓        ✓          ✓          ✓
//	WithTokenMode     ✓        ✓                                ✓
//	WithLockDelay     ✓        ✓
//
// A MultiMutex's options apply to every lock of its set.

// MutexOption configures NewMutex.
type MutexOption interface{ applyMutex(*Mutex) }

// MultiMutexOption configures NewMultiMutex: each option applies to every
// lock of the set.
type MultiMutexOption interface{ applyMultiMutex(*Mutex) }

// ReadLockOption configures NewReadLock.
type ReadLockOption interface{ applyReadLock(*Mutex) }

// SemaphoreOption configures NewSemaphore.
type SemaphoreOption interface{ applySemaphore(*Mutex) }

// ElectionOption configures NewElection.
type ElectionOption interface{ applyElection(*Mutex) }

// RootOption sets the znode under which a recipe's nodes live. Every
// recipe takes it.
type RootOption struct{ root string }

// WithRoot sets the znode under which the recipe's nodes live (default
// DefaultRoot for locks, DefaultSemaphoreRoot, DefaultElectionRoot). Each
// kind wants a root of its own: a root inside another kind's would make a
// name of one reach the nodes of the other.
func WithRoot(root string) RootOption { return RootOption{root} }

func (o RootOption) applyMutex(m *Mutex)     { m.root = o.root }
func (o RootOption) applyReadLock(m *Mutex)  { m.root = o.root }
func (o RootOption) applySemaphore(m *Mutex) { m.root = o.root }
func (o RootOption) applyElection(m *Mutex)  { m.root = o.root }

// DataOption sets the data stored in the contender node.
type DataOption struct{ data []byte }

// WithData sets the data stored in the contender (or semaphore lease) node:
// seqd stores the owner, so that other daemons can show who holds a lock.
// An election's candidate data is its value, given to Campaign instead.
func WithData(data []byte) DataOption { return DataOption{data} }

func (o DataOption) applyMutex(m *Mutex)     { m.data = o.data }
func (o DataOption) applyReadLock(m *Mutex)  { m.data = o.data }
func (o DataOption) applySemaphore(m *Mutex) { m.data = o.data }

// TokenModeOption sets a lock's or an election's token mode.
type TokenModeOption struct{ mode TokenMode }

// WithTokenMode sets the token mode (default TokenZxid). A read lock's and a
// semaphore's tokens are always czxids.
func WithTokenMode(mode TokenMode) TokenModeOption { return TokenModeOption{mode} }

func (o TokenModeOption) applyMutex(m *Mutex)    { m.mode = o.mode }
func (o TokenModeOption) applyElection(m *Mutex) { m.mode = o.mode }

// LockDelayOption sets a Mutex's lock-delay.
type LockDelayOption struct{ d time.Duration }

// WithLockDelay makes an unclean end of this Mutex's grants (lost session,
// node deleted by someone else, Abandon) keep the lock from being granted
// again, to anyone on any daemon, until d has passed; Release hands over at
// once. d is at most MaxLockDelay; 0 (the default) writes no marker.
func WithLockDelay(d time.Duration) LockDelayOption { return LockDelayOption{d} }

func (o LockDelayOption) applyMutex(m *Mutex) { m.delay = o.d }

// A MultiMutex takes what a Mutex takes, for each lock of its set.

func (o RootOption) applyMultiMutex(m *Mutex)      { m.root = o.root }
func (o DataOption) applyMultiMutex(m *Mutex)      { m.data = o.data }
func (o TokenModeOption) applyMultiMutex(m *Mutex) { m.mode = o.mode }
func (o LockDelayOption) applyMultiMutex(m *Mutex) { m.delay = o.d }
