package sequencer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seqd/seqd/zklock"
)

// Session keeping: the Service runs on one ZooKeeper session at a time and
// dials a new one when ZooKeeper expires it.

// dial establishes a session within the dial timeout and makes it the
// current one.
func (s *Service) dial(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	sess, err := zklock.Dial(dctx, s.cfg.Servers, s.cfg.zkOptions(s.guard))
	if err != nil {
		return unavailable("cannot reach zookeeper", err)
	}
	if err := s.claimRoots(dctx, sess); err != nil {
		sess.Close()
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.Close()
		return unavailable("shutting down", nil)
	}
	s.sess = sess
	s.wg.Add(1) // under s.mu, like every Add: Close sets closed before it waits
	s.mu.Unlock()
	go s.notifyEnd(sess)
	return nil
}

// claimRoots records (or checks) the token mode of every root: a root
// records one mode, and a daemon of the other mode must not run on it (its
// tokens could go below those already issued). Semaphore tokens are always
// czxids. Under the creator ACL it also refuses a root that others may
// write. A refusal is a *zklock.TokenModeError, *zklock.OpenRootError or
// *zklock.FloorError (a root with no mark where the daemon issued tokens).
func (s *Service) claimRoots(ctx context.Context, sess *zklock.Session) error {
	modes := []zklock.TokenMode{s.cfg.TokenMode, zklock.TokenZxid, s.cfg.TokenMode}
	for i, r := range s.cfg.roots() {
		err := sess.ClaimTokenMode(ctx, r.Path, modes[i])
		switch {
		case errors.Is(err, zklock.ErrTokenModeMismatch), errors.Is(err, zklock.ErrOpenRoot), errors.Is(err, zklock.ErrBelowFloor):
			return err
		case err != nil:
			return unavailable("cannot check "+r.What+" "+r.Path, err)
		}
	}
	return nil
}

// notifyEnd wakes keepSession when sess ends.
func (s *Service) notifyEnd(sess *zklock.Session) {
	defer s.wg.Done()
	select {
	case <-sess.Done():
		poke(s.wake)
	case <-s.stop:
	}
}

// keepSession dials a new session whenever the current one has expired.
func (s *Service) keepSession() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		s.log.Warn("zookeeper session ended; every lease on it is lost; dialling a new session")
		if !s.redial() {
			return
		}
	}
}

// redial dials until a session is established, backing off up to the
// session timeout between attempts. It reports false when the Service
// stopped first.
func (s *Service) redial() bool {
	backoff := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := s.dial(ctx)
		cancel()
		if err == nil {
			return true
		}
		s.log.Error("dial zookeeper", "err", err, "retry_in", backoff)
		select {
		case <-s.stop:
			return false
		case <-time.After(backoff): // real time: a retry pace, not logic
		}
		backoff = min(2*backoff, s.cfg.SessionTimeout)
	}
}

// session returns the live session, or ErrUnavailable.
func (s *Service) session() (*zklock.Session, error) {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil || sess.Err() != nil {
		return nil, unavailable("no zookeeper session", nil)
	}
	return sess, nil
}

// ready reports whether the ZooKeeper session is connected.
func (s *Service) ready() bool {
	sess, err := s.session()
	return err == nil && sess.Connected()
}

// FloorAdvice says, in a sentence for operators, why a root is refused for
// its floor and to what it must be raised.
func FloorAdvice(fe *zklock.FloorError) string {
	what := fmt.Sprintf("%s has no token mark, but this daemon issued tokens up to %d on it: ZooKeeper was rebuilt empty or replaced", fe.Root, fe.Issued.Token)
	if !fe.Unmarked {
		what = fmt.Sprintf("%s is behind the history this daemon issued tokens in (up to %d; zxid %d, seen up to %d): ZooKeeper was restored from an older copy", fe.Root, fe.Issued.Token, fe.Zxid, fe.Issued.Zxid)
	}
	if fe.File != "" {
		what += " (floor file " + fe.File + ")"
	}
	return what + fmt.Sprintf("; its tokens would go back, so nothing is granted there until its floor is raised to %d (or to the highest floor file of every daemon)", fe.Issued.Token)
}

// liveSession is the session, if it can be trusted now.
func (s *Service) liveSession() (*zklock.Session, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	if !sess.Connected() || !sess.Live() {
		return nil, unavailable("disconnected from zookeeper", nil)
	}
	return sess, nil
}

// readError is the answer to a read that ZooKeeper did not answer: the
// caller's own cancellation, or unavailable.
func (s *Service) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return unavailable("zookeeper did not answer", err)
}
