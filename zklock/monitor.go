package zklock

// How a grant learns that what it holds has changed. A session has one
// monitor for all its grants: a grant that holds, and whose watch has not
// fired, costs no goroutine. It is parked by the path its watch is on (the
// lock's children, or a semaphore lease's own node) until ZooKeeper
// reports a change there, the session falls silent past its deadline, or
// the session ends. A change starts a look: a goroutine of the grant's own,
// for as long as it reads what the grant watches (at most every
// lookEvery), sets the watch again and parks the grant, or ends it as
// lost. So a daemon holding many leases costs memory per lease, not a
// goroutine.
//
// A change is seen through go-zookeeper's event callback, which runs on the
// connection's receive loop before it delivers the event to the watch's
// channel. An event that fired between a watch being set and its grant
// being parked is found on the channel: a parked grant's channel is polled
// until the receive loop has certainly gone past every event that came
// before the park (a later event was seen, or a request sent after it was
// answered); until then the session is not heard from either, and its
// silence ends the grant.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// monitor is a session's one loss monitor (Session.mon).
type monitor struct {
	mu     sync.Mutex
	parked map[string]*Grant // by the path watched: the first, linked by monState.next
	woken  []wakeUp          // for the loop to start their looks
	recent []parking         // parked, their channel still polled
	closed bool              // the session ended: nothing parks
	wake   chan struct{}     // capacity 1: the loop has work
	// events counts the node events the callback has seen; each is sent
	// by the receive loop, after everything before it was delivered.
	events atomic.Uint64
}

// Where a grant is, as the monitor sees it (Grant.mon, under monitor.mu).
type grantState uint8

const (
	unwatched grantState = iota // new, halted or ended
	parked                      // holds; its watch is set and has not fired
	looking                     // a look runs, or the monitor is ending it
)

// monState is the monitor's part of a Grant, guarded by monitor.mu.
type monState struct {
	state  grantState
	halted bool            // Release has begun: nothing parks it again
	ch     <-chan zk.Event // the watch, while parked
	done   chan struct{}   // closed when the look (or ending) is over
	next   *Grant          // the next grant parked on the same path
}

type wakeUp struct {
	g  *Grant
	ev zk.Event
}

// parking is a grant's park, kept while an event from before it may still
// be on its way to the channel.
type parking struct {
	g      *Grant
	ch     <-chan zk.Event
	events uint64    // monitor.events at the park
	at     time.Time // the session clock at the park
}

func (mon *monitor) init() {
	mon.parked = map[string]*Grant{}
	mon.wake = make(chan struct{}, 1)
}

func (mon *monitor) poke() {
	select {
	case mon.wake <- struct{}{}:
	default:
	}
}

// watchedPath is the path whose events concern g.
func (g *Grant) watchedPath() string {
	if g.m.leaseSet {
		return g.Path
	}
	return g.m.path
}

// event runs on go-zookeeper's receive loop for every node event (and for
// the watches it ends when the session does): it wakes the grants parked on
// the event's path. It must not block.
func (mon *monitor) event(ev zk.Event) {
	if ev.Type != zk.EventNotWatching {
		mon.events.Add(1)
	}
	mon.mu.Lock()
	for g := mon.parked[ev.Path]; g != nil; {
		next := g.mon.next
		mon.wakeLocked(g, ev)
		g = next
	}
	mon.mu.Unlock()
}

// wakeLocked unparks g and queues its look.
func (mon *monitor) wakeLocked(g *Grant, ev zk.Event) {
	mon.unparkLocked(g)
	g.mon.state, g.mon.done = looking, make(chan struct{})
	mon.woken = append(mon.woken, wakeUp{g, ev})
	mon.poke()
}

func (mon *monitor) unparkLocked(g *Grant) {
	if g.mon.state != parked {
		return
	}
	p := g.watchedPath()
	switch head := mon.parked[p]; {
	case head == g && g.mon.next == nil:
		delete(mon.parked, p)
	case head == g:
		mon.parked[p] = g.mon.next
	default:
		for h := head; h != nil; h = h.mon.next {
			if h.mon.next == g {
				h.mon.next = g.mon.next
				break
			}
		}
	}
	g.mon.state, g.mon.ch, g.mon.next = unwatched, nil, nil
}

// park parks g, which holds with its watch ch set: a new grant, or one
// whose look is over (which park then ends). It is false, and changes
// nothing, once the session has ended.
func (s *Session) park(g *Grant, ch <-chan zk.Event) bool {
	mon := &s.mon
	mon.mu.Lock()
	if mon.closed {
		mon.mu.Unlock()
		return false
	}
	done := g.mon.done
	g.mon.done = nil
	switch {
	case g.mon.halted || g.Err() != nil:
		g.mon.state = unwatched
	default:
		p := g.watchedPath()
		g.mon.state, g.mon.ch, g.mon.next = parked, ch, mon.parked[p]
		mon.parked[p] = g
		mon.recent = append(mon.recent, parking{g: g, ch: ch, events: mon.events.Load(), at: s.clock.Now()})
		if len(mon.recent) == 1 {
			mon.poke() // the loop starts polling
		}
	}
	mon.mu.Unlock()
	if done != nil {
		close(done)
	}
	return true
}

// startLook starts the look of g, which is looking; ev is the event that
// woke it (nil for a new grant with no watch yet). Once the session has
// begun to close it ends g instead, and is false.
func (s *Session) startLook(g *Grant, ev *zk.Event) bool {
	if s.spawn(func() { g.look(ev) }) {
		return true
	}
	g.lose(g.sessionLoss())
	s.lookOver(g)
	return false
}

// lookOver marks g's look over without parking it.
func (s *Session) lookOver(g *Grant) {
	s.mon.mu.Lock()
	done := g.mon.done
	g.mon.state, g.mon.done = unwatched, nil
	s.mon.mu.Unlock()
	if done != nil {
		close(done)
	}
}

// stopWatching is for a grant being released: it is unparked, never parked
// again, and a look under way is waited for (it may yet end the grant as
// lost).
func (g *Grant) stopWatching() {
	mon := &g.m.s.mon
	mon.mu.Lock()
	g.mon.halted = true
	mon.unparkLocked(g)
	done := g.mon.done
	mon.mu.Unlock()
	if done != nil {
		<-done
	}
}

// forget unparks a grant that has ended (Grant.end).
func (g *Grant) forget() {
	mon := &g.m.s.mon
	mon.mu.Lock()
	mon.unparkLocked(g)
	mon.mu.Unlock()
}

// runMonitor is the session's monitor loop: it starts the looks of woken
// grants, polls the channels of grants parked a moment ago, ends every
// parked grant when the session falls silent past its deadline, and every
// one when the session ends.
func (s *Session) runMonitor() {
	mon := &s.mon
	overdue := false // the silence was acted on; polled until heard again
	for {
		mon.mu.Lock()
		woken := mon.woken
		mon.woken = nil
		mon.mu.Unlock()
		for _, w := range woken {
			s.startLook(w.g, &w.ev)
		}
		polling := s.pollRecent()
		var tick <-chan time.Time
		var t *time.Timer
		switch {
		case overdue:
			t = time.NewTimer(100 * time.Millisecond) // real time: it spaces checks, overdue decides
			tick = t.C
		case polling:
			t = time.NewTimer(s.lookEvery)
			tick = t.C
		}
		silent := s.silent()
		if overdue {
			silent = nil
		}
		select {
		case <-s.done:
			if t != nil {
				t.Stop()
			}
			s.endParked(true)
			return
		case <-silent:
		case <-mon.wake:
		case <-tick:
		}
		if t != nil {
			t.Stop()
		}
		if overdue = s.overdue(s.clock.Now()); overdue {
			s.endParked(false)
		}
	}
}

// pollRecent polls the channels of the grants parked recently, waking
// those whose watch has fired, and drops the parks that no event from
// before them can still reach. It reports whether any are left.
func (s *Session) pollRecent() bool {
	mon := &s.mon
	// Read before the channels are: whatever these show had passed, its
	// events were on the channels by then.
	events, heard := mon.events.Load(), s.LastHeard()
	mon.mu.Lock()
	defer mon.mu.Unlock()
	keep := mon.recent[:0]
	for _, p := range mon.recent {
		if p.g.mon.state != parked || p.g.mon.ch != p.ch {
			continue
		}
		select {
		case ev := <-p.ch:
			mon.wakeLocked(p.g, ev)
			continue
		default:
		}
		if events > p.events || heard.After(p.at) {
			continue
		}
		keep = append(keep, p)
	}
	clear(mon.recent[len(keep):])
	mon.recent = keep
	return len(keep) > 0
}

// endParked ends every parked grant: the session ended (closed; then the
// woken ones too, and nothing parks again), or it is silent past its
// deadline.
func (s *Session) endParked(closed bool) {
	mon := &s.mon
	mon.mu.Lock()
	if closed {
		mon.closed = true
	}
	var gs []*Grant
	for _, head := range mon.parked {
		for g := head; g != nil; g = g.mon.next {
			gs = append(gs, g)
		}
	}
	for _, g := range gs {
		mon.unparkLocked(g)
		g.mon.state, g.mon.done = looking, make(chan struct{})
	}
	mon.recent = nil
	if closed {
		// Woken but not looked at: no look starts any more.
		for _, w := range mon.woken {
			gs = append(gs, w.g)
		}
		mon.woken = nil
	}
	mon.mu.Unlock()
	for _, g := range gs {
		if closed {
			g.lose(g.sessionLoss())
		} else {
			g.lose(s.silenceLoss())
		}
		s.lookOver(g)
	}
}

func (s *Session) silenceLoss() *loss {
	return &loss{
		err: fmt.Errorf("%w: zookeeper not heard from since %s (session timeout %v): the session may have expired",
			ErrLockLost, s.LastHeard().Format("15:04:05.000"), s.Timeout()),
		reason: "zookeeper silent",
		orphan: true,
	}
}

// admit starts watching a new grant: parked on kids, the watch set while
// acquiring, or looked at first when there is none or it has fired. It is
// false once the session has ended.
func (s *Session) admit(g *Grant, kids <-chan zk.Event) bool {
	if kids != nil {
		select {
		case ev := <-kids:
			s.mon.mu.Lock()
			g.mon.state, g.mon.done = looking, make(chan struct{})
			s.mon.mu.Unlock()
			return s.startLook(g, &ev)
		default:
			return s.park(g, kids)
		}
	}
	s.mon.mu.Lock()
	g.mon.state, g.mon.done = looking, make(chan struct{})
	s.mon.mu.Unlock()
	return s.startLook(g, nil)
}

// look runs while a grant is looking: it finds what changed (ev, nil when
// the grant has no watch yet), then parks the grant with a new watch, or
// ends it as lost, or stops because it was released.
func (g *Grant) look(ev *zk.Event) {
	s := g.m.s
	l, ch := g.lookAt(ev)
	if ch != nil {
		if s.park(g, ch) {
			return
		}
		l = g.sessionLoss()
	}
	if l != nil {
		g.lose(l)
	}
	s.lookOver(g)
}

// lookAt reads what the grant watches until it has a watch set that has not
// fired (ch), or the grant is lost (l), released or ended (neither). A
// lock's grant watches the lock's children: our contender deleted, or one
// appearing below it, ends the grant, at most lookEvery after the change
// (and a look costs one read). A semaphore's lease, whose neighbours do not
// matter, watches its own node.
func (g *Grant) lookAt(ev *zk.Event) (l *loss, ch <-chan zk.Event) {
	s := g.m.s
	for {
		if ev != nil && ev.Type == zk.EventNotWatching {
			if s.Err() != nil {
				// go-zookeeper ends the watches right after it reports
				// the expiry: say the real reason.
				return g.sessionLoss(), nil
			}
			reason := fmt.Sprintf("watch ended: %v", ev.Err)
			return &loss{err: fmt.Errorf("%w: %s", ErrLockLost, reason), reason: reason}, nil
		}
		ev = nil
		if s.overdue(s.clock.Now()) {
			return s.silenceLoss(), nil
		}
		if l, done := g.pace(g.looked); done {
			return l, nil
		}
		g.looked = sinceStart()
		ch, l := g.arm()
		if l != nil || g.Err() != nil {
			return l, nil // lost; nil when ended by overtaken
		}
		if ch == nil {
			// ZooKeeper did not answer: the deadline and the session
			// decide, until the watch is set again.
			if l, done := g.pause(); done {
				return l, nil
			}
			continue
		}
		select {
		case e := <-ch: // changed already: look again
			ev = &e
			continue
		default:
		}
		return nil, ch
	}
}

// arm sets the grant's watch again and looks at what it watches, bounded by
// the session deadline so that a look keeps checking it. It returns the new
// watch; or a loss if the contender is gone; or, when a contender below
// ours took the lock, neither with the grant ended; or neither if
// ZooKeeper did not answer.
func (g *Grant) arm() (<-chan zk.Event, *loss) {
	s := g.m.s
	// The deadline is on the session's clock, the context's on the wall
	// clock: what is left of the one bounds the other.
	ctx, cancel := context.WithTimeout(context.Background(), s.Deadline().Sub(s.clock.Now()))
	defer cancel()
	var ch <-chan zk.Event
	if g.m.leaseSet {
		var (
			ok bool
			st *zk.Stat
		)
		e, err := callCtx(ctx, s, s.existsWOp(g.Path))
		ok, st, ch = e.ok, e.stat, e.ch
		switch {
		case err == nil && ok:
			if l := g.notOwn(st); l != nil {
				return nil, l
			}
			return ch, nil
		case err == nil || errors.Is(err, zk.ErrNoNode):
			return nil, contenderDeleted()
		}
		return nil, nil
	}
	var children []string
	l, err := callCtx(ctx, s, s.childrenWOp(g.m.path))
	children, ch = l.names, l.ch
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, contenderDeleted()
	case err != nil:
		return nil, nil
	}
	lower, ok := g.below(sortContenders(children))
	switch {
	case !ok:
		return nil, contenderDeleted()
	case lower != "":
		g.overtaken(context.Background(), lower)
		return nil, nil
	}
	return ch, nil
}

// lookEvery is the least time between two reads of what a grant watches
// (Session.lookEvery, which tests change).
// On a hot lock every waiter that joins changes the lock's children and
// fires the holder's watch, and a holder that read them again each time
// would cost ZooKeeper a read per cycle, and one more when it is granted
// by a hand-over without a look (awaitTurn); paced, a grant released
// within lookEvery reads nothing. What the read looks for (our contender
// gone, one planted below it) is then seen up to lookEvery later. Real
// time: it spaces requests, it decides nothing.
const lookEvery = 10 * time.Millisecond

// pace waits until lookEvery has passed since looked; done means the watch
// is over (released, ended, or the session is), with l nil on release.
func (g *Grant) pace(looked time.Duration) (l *loss, done bool) {
	wait := looked + g.m.s.lookEvery - sinceStart()
	if wait <= 0 {
		return nil, false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, false
	case <-g.quit:
		return nil, true
	case <-g.m.s.done:
		return g.sessionLoss(), true
	}
}

// pause waits a moment before the watch is set again; done means the watch
// is over, with l nil on release.
func (g *Grant) pause() (l *loss, done bool) {
	s := g.m.s
	tc, t := s.clock.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-tc:
		return nil, false
	case <-g.quit:
		return nil, true
	case <-s.done:
		return g.sessionLoss(), true
	}
}

func (g *Grant) sessionLoss() *loss {
	err := g.m.s.Err()
	return &loss{err: fmt.Errorf("%w: %w", ErrLockLost, err), reason: err.Error()}
}

func contenderDeleted() *loss {
	return &loss{err: fmt.Errorf("%w: contender deleted", ErrLockLost), reason: "contender deleted"}
}
