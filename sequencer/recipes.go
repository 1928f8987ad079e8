package sequencer

import "github.com/seqd/seqd/zklock"

// recipes names the zklock recipes on a session, for reads, under the
// daemon's roots and token mode.
type recipes struct {
	locks, semaphores, elections string // the roots
	mode                         zklock.TokenMode
}

// mutex names the lock name on sess for a read.
func (r recipes) mutex(sess *zklock.Session, name string) (*zklock.Mutex, error) {
	mu, err := zklock.NewMutex(sess, name, zklock.WithRoot(r.locks), zklock.WithTokenMode(r.mode))
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return mu, nil
}

// election names the election name on sess for a read.
func (r recipes) election(sess *zklock.Session, name string) (*zklock.Election, error) {
	e, err := zklock.NewElection(sess, name, zklock.WithRoot(r.elections), zklock.WithTokenMode(r.mode))
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return e, nil
}

// semaphore names the semaphore name on sess for a read (its limit does not
// matter to reads).
func (r recipes) semaphore(sess *zklock.Session, name string) (*zklock.Semaphore, error) {
	sem, err := zklock.NewSemaphore(sess, name, 1, zklock.WithRoot(r.semaphores))
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return sem, nil
}
