package zklock

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"
)

// Waiting for our turn. A contender's turn comes when it is the lowest of
// the lock's contenders and no lock-delay holds it back. Each round is one
// look (the requests that say where we stand, sent as one piece of work)
// and, unless the look found our turn, one wait: for the contender just
// ahead of ours to go (only it is watched, so that nobody else wakes: no
// herd, FIFO) or for a lock-delay to pass.

// view is what a look starts from: what the create, or the wait before it,
// already knows.
type view struct {
	children []string        // the lock's children just read; nil: read them
	kids     <-chan zk.Event // the watch that read set, if any
	marker   *readResult     // the lock-delay marker, read behind children
	// handedOver: our predecessor, granted on this session, has gone: we
	// are the lowest without a look at the children. A contender that was
	// once the lowest has nothing lower after it (sequence numbers only
	// grow): a hand-over inside one process costs one request less.
	handedOver bool
	// cleared: no lock-delay holds us back any more (one has passed, or
	// none held us): what is left is to make sure we are still the lowest,
	// reading the children again with a watch unless kids is still quiet.
	cleared bool
}

// turn is what a look found: our turn (ours, with the children watch the
// grant goes on from, nil after a hand-over), or what to wait for: the
// contender just ahead (pred, with an exists watch gone) or a lock-delay
// (until, on the local clock). With neither, the next look starts at once
// from next.
type turn struct {
	ours        bool
	kids        <-chan zk.Event
	pred        string
	gone        <-chan zk.Event
	predGranted bool // pred was granted on this session (see view.handedOver)
	until       time.Time
	next        view
}

// awaitTurn returns once our contender c is the lowest and no lock-delay
// holds it back, with a watch on the lock's children that has not fired
// since that was last seen: the grant's monitor goes on from it. The
// children and the marker read behind the create serve the first look.
// After a hand-over the grant is declared with no watch, and its monitor
// reads the children and sets the watch right after, off the path of the
// hand-over (a contender planted below ours meanwhile is seen then).
// Without wait it looks once: ErrHeld if anyone is ahead, ErrLockDelay
// within a lock-delay.
func (m *Mutex) awaitTurn(ctx context.Context, c created, guid string, wait bool) (<-chan zk.Event, error) {
	s := m.s
	own := ownNode{c.path, c.stat, c.at}
	v := view{children: c.children, kids: c.kids, marker: c.marker}
	for {
		look := func() (turn, error) { return m.look(own, guid, v, wait) }
		t, err := callCtx(ctx, s, look)
		switch {
		case err != nil:
			return nil, err
		case t.ours:
			return t.kids, nil
		case !wait && t.pred != "":
			return nil, fmt.Errorf("%w: %s", ErrHeld, m.name)
		case !wait && !t.until.IsZero():
			return nil, fmt.Errorf("%w: %s until %s", ErrLockDelay, m.name, t.until.Format("15:04:05.000"))
		case t.gone == nil && t.until.IsZero():
			v = t.next
			continue
		}
		var timer <-chan time.Time
		stop := func() bool { return false }
		if !t.until.IsZero() {
			s.log.Debug("lock-delay", "lock", m.name, "until", t.until)
			tc, tm := s.clock.TimerAt(t.until)
			timer, stop = tc, tm.Stop
		}
		select {
		case ev := <-t.gone:
			v = view{handedOver: ev.Type == zk.EventNodeDeleted && t.predGranted}
		case <-timer:
			v = t.next
		case <-ctx.Done():
			err = ctx.Err()
		case <-s.done:
			err = s.Err()
		}
		stop()
		if err != nil {
			return nil, err
		}
	}
}

// look is one look of awaitTurn from v: where our contender own stands
// (unless handed over) and, at the head, whether the children watch is
// still quiet and whether a lock-delay holds us back.
func (m *Mutex) look(own ownNode, guid string, v view, wait bool) (turn, error) {
	if v.cleared && (v.handedOver || v.kids != nil && !fired(v.kids)) {
		return turn{ours: true, kids: v.kids}, nil
	}
	if !v.handedOver {
		t, head, err := m.lookAhead(own.path, guid, &v, wait)
		if err != nil || !head {
			return t, err
		}
	}
	// At the head, the grant goes on from the children watch that showed
	// us there if it is still quiet, or from none after a hand-over;
	// otherwise the children are read again, watching, before the grant.
	quiet := v.handedOver
	if v.kids != nil {
		select {
		case <-v.kids:
		default:
			quiet = true
		}
	}
	ours := turn{ours: true, kids: v.kids}
	if !quiet {
		ours = turn{next: view{cleared: true}}
	}
	if v.cleared {
		return ours, nil
	}
	if v.marker == nil && m.markerAbsence().confirm(m.s) {
		// No marker can exist, as of an answer that showed us the lowest
		// (or after our predecessor's end).
		v.marker = &readResult{err: zk.ErrNoNode}
	}
	until, err := m.delayUntil(own, v.marker)
	switch {
	case err != nil:
		return turn{}, err
	case m.s.clock.Now().Before(until):
		return turn{until: until, next: view{kids: v.kids, handedOver: v.handedOver, cleared: true}}, nil
	}
	return ours, nil
}

// lookAhead finds the contender just ahead of own among v's children (read
// now unless given, with a watch once cleared), and sets an exists watch on
// it (when waiting). head says own is the lowest; then v.marker is the
// marker as of children that showed it so: the one read behind them, or
// nil (read it). A predecessor gone before its watch was set calls for a
// new look.
func (m *Mutex) lookAhead(own, guid string, v *view, wait bool) (t turn, head bool, err error) {
	s := m.s
	if v.children == nil {
		if v.children, v.kids, err = m.children(v.cleared); err != nil {
			return turn{}, false, err
		}
		v.marker = nil // read behind other children
	}
	pred, err := m.predecessor(own, guid, v.children)
	switch {
	case err != nil:
		return turn{}, false, err
	case pred == "":
		return turn{}, true, nil
	case !wait:
		return turn{pred: pred}, false, nil
	}
	var (
		exists bool
		st     *zk.Stat
		gone   <-chan zk.Event
	)
	if err := s.call(func() (err error) { exists, st, gone, err = s.conn.ExistsW(pred); return err }); err != nil {
		return turn{}, false, err
	}
	if !exists {
		return turn{}, false, nil
	}
	if st.EphemeralOwner == 0 {
		s.reportBlocked(m.name, pred, st.Czxid)
	}
	granted := !s.without.handOver && s.granted.has(pred)
	return turn{pred: pred, gone: gone, predGranted: granted}, false, nil
}

// predecessor returns the path of the contender just ahead of own among
// children, or "" when own is the lowest. A twin of ours (our GUID, from a
// create that committed after all) would block us forever: it is deleted.
func (m *Mutex) predecessor(own, guid string, children []string) (string, error) {
	s := m.s
	cs := sortContenders(children)
	ownNode, idx := path.Base(own), -1
	for i, c := range cs {
		if c.node == ownNode {
			idx = i
		} else if c.guid == guid {
			twin := m.path + "/" + c.node
			s.log.Warn("deleting a twin contender", "path", twin)
			if err := s.call(func() error { return s.conn.Delete(twin, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return "", err
			}
		}
	}
	switch idx {
	case -1:
		return "", fmt.Errorf("%w: contender %s vanished while acquiring", ErrLockLost, own)
	case 0:
		return "", nil
	}
	return m.path + "/" + cs[idx-1].node, nil
}

// children reads the lock's children, with a watch on them if watch, for a
// look (its caller bounds the wait).
func (m *Mutex) children(watch bool) ([]string, <-chan zk.Event, error) {
	s := m.s
	var (
		names []string
		ch    <-chan zk.Event
	)
	err := s.call(func() (err error) {
		if watch {
			names, _, ch, err = s.conn.ChildrenW(m.path)
		} else {
			names, _, err = s.conn.Children(m.path)
		}
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, fmt.Errorf("%w: lock node %s vanished while acquiring", ErrLockLost, m.path)
	case err != nil:
		return nil, nil, err
	}
	return names, ch, nil
}

// fired reports whether the watch ch has fired.
func fired(ch <-chan zk.Event) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// wasLowest reports whether own was the lowest of children.
func (m *Mutex) wasLowest(own string, children []string) bool {
	cs := sortContenders(children)
	return len(cs) > 0 && cs[0].node == path.Base(own)
}
