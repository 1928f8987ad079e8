package sequencer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/seqd/seqd/zklock"
)

// The watch session: blocking reads watch ZooKeeper on a session of their
// own, apart from the session that holds the leases, because watches
// cannot be taken back. ZooKeeper keeps a watch until it fires or its
// session ends, and the ZooKeeper client has no way to remove one: a name
// whose readers left keeps its watches on the server. The hub counts
// the names it stopped watching on the current session and, once they are
// at least recycleMin and as many as the names still watched, replaces the
// session: it dials a new one, the watched names move to it (one read
// each), and the old one is closed, which drops every watch it had. Moving
// the names costs no more reads than names were left behind, so churn
// costs a constant per name; and with no name watched at all the session
// is closed. The server's watch count is thus at most about three per
// watched name (children, data, first contender) plus three per name left
// behind, and falls back to the watched names' own once readers leave.
//
// The state the watches keep must be vouched for, too. A reader is answered only while ZooKeeper
// has answered the watch session within the last quantum (an eighth of the
// session timeout): while readers wait, the hub pings ZooKeeper every half
// quantum, and wakes every reader when the quantum passes without an answer,
// so that a frozen ZooKeeper gets them a 503 within a quarter of the
// session timeout rather than an old state when it thaws. A reader that
// arrives while ZooKeeper is silent waits at most one quantum for the
// session to prove itself, and none once a ping has gone unanswered for
// half that long.

// errNoWatchSession is the distrust of a watch session not dialled yet (or
// ended): nothing is known wrong with ZooKeeper, so a reader whose wait
// ends meanwhile is answered with a plain read on the leases' session.
var errNoWatchSession = unavailable("no zookeeper session to watch the state on", nil)

// recycleMin is the fewest names left behind on the watch session for
// which it is replaced.
const recycleMin = 64

// watchSession is the hub's session and what it knows of it; its fields
// are under hub.mu.
type watchSession struct {
	sess    *zklock.Session
	changed chan struct{} // closed and replaced when sess changes or is trusted or distrusted
	kick    chan struct{} // wakes the keeper
	left    int           // names no longer watched whose watches may remain on sess
	dialing bool
	retryAt time.Time // no dial before (after a failed one)
	backoff time.Duration

	trusted    bool      // as the keeper last found it
	pinging    bool      // a ping is out
	pingedAt   time.Time // when the last ping was sent
	unanswered time.Time // when the oldest ping not answered since the last answered one was sent
}

func (ws *watchSession) init() {
	ws.changed = make(chan struct{})
	ws.kick = make(chan struct{}, 1)
}

// changedLocked wakes whoever waits on the session or its trust.
func (ws *watchSession) changedLocked() {
	close(ws.changed)
	ws.changed = make(chan struct{})
}

// leftBehind counts a name no longer watched whose watches were set on on,
// and wakes the keeper when the session should be replaced or closed.
// watched is how many names are still watched.
func (ws *watchSession) leftBehind(on *zklock.Session, watched int) {
	if on != nil && on == ws.sess {
		ws.left++
	}
	if watched == 0 || ws.left >= max(recycleMin, watched) {
		poke(ws.kick)
	}
}

// startLocked starts the keeper, once.
func (h *hub) startLocked() {
	if h.stopKeep != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stopKeep = cancel
	h.wg.Add(1)
	go h.keep(ctx)
}

// session is the watch session to observe on, or nil and a channel that
// closes when there is a new one.
func (h *hub) session() (*zklock.Session, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.ws.sess; s != nil && s.Err() == nil {
		return s, nil
	}
	poke(h.ws.kick)
	return nil, h.ws.changed
}

// quantum is how long the watch session may go unanswered before its
// state is no longer vouched for: an eighth of the session timeout, so
// that a reader learns of a frozen ZooKeeper within a quarter of it with
// room to spare, while a ping every half quantum keeps a healthy session
// far from it.
func (h *hub) quantum() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.quantumLocked()
}

func (h *hub) quantumLocked() time.Duration {
	if s := h.ws.sess; s != nil {
		return s.Timeout() / 8
	}
	return h.cfg.SessionTimeout / 8
}

// distrustLocked says why the watch session's state cannot be vouched for
// at now; nil when it can.
func (h *hub) distrustLocked(now time.Time) error {
	s := h.ws.sess
	switch {
	case s == nil || s.Err() != nil:
		return errNoWatchSession
	case !s.Connected():
		return unavailable("disconnected from zookeeper", nil)
	}
	if silent := now.Sub(s.LastHeard()); silent >= h.quantumLocked() {
		return unavailable(fmt.Sprintf("zookeeper has not answered for %v: the state cannot be vouched for", silent.Round(time.Millisecond)), nil)
	}
	return nil
}

// vouch says whether a reader that began at start may be answered now: nil
// if so; else why not, with hold set while it should still wait for the
// session to prove itself. changed closes when that may have changed.
func (h *hub) vouch(start time.Time) (hold bool, changed <-chan struct{}, distrust error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.cfg.Clock.Now()
	if distrust = h.distrustLocked(now); distrust == nil {
		return false, h.ws.changed, nil
	}
	poke(h.ws.kick) // ping, or dial, now
	q := h.quantumLocked()
	// ZooKeeper was asked half a quantum ago, and nothing sent since has
	// been answered: healthy, it answers in far less.
	u := h.ws.unanswered
	known := !u.IsZero() && h.ws.sess != nil && h.ws.sess.LastHeard().Before(u) && now.Sub(u) >= q/2
	return !known && now.Before(start.Add(q)), h.ws.changed, distrust
}

// keep is the keeper: it dials, replaces and closes the watch session,
// pings ZooKeeper while readers wait, and wakes the readers when the
// session's trust changes. It runs until ctx ends.
func (h *hub) keep(ctx context.Context) {
	defer h.wg.Done()
	for {
		tc, t := h.cfg.Clock.TimerAt(h.tend(ctx))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-h.ws.kick:
		case <-tc:
		}
		t.Stop()
	}
}

// tend does what the watch session needs now and returns when it next
// needs looking at.
func (h *hub) tend(ctx context.Context) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := &h.ws
	now := h.cfg.Clock.Now()
	next := now.Add(time.Hour) // until kicked
	s := ws.sess
	switch {
	case h.closed:
		return next
	case len(h.names) == 0 && s != nil:
		ws.sess, ws.left = nil, 0
		h.closeLater(s, "no name is watched")
		ws.changedLocked()
		s = nil
	case len(h.names) > 0 && !ws.dialing && (s == nil || s.Err() != nil || ws.left >= max(recycleMin, len(h.names))):
		if now.Before(ws.retryAt) {
			next = ws.retryAt
			break
		}
		ws.dialing = true
		h.wg.Add(1)
		go h.dial(ctx)
	}
	if s == nil || s.Err() != nil || h.readers == 0 {
		return next
	}
	q := h.quantumLocked()
	heard := s.LastHeard()
	if !ws.pinging && now.Sub(heard) >= q/2 && now.Sub(ws.pingedAt) >= q/4 {
		ws.pinging, ws.pingedAt = true, now
		if ws.unanswered.IsZero() {
			ws.unanswered = now
		}
		h.wg.Add(1)
		go h.ping(ctx, s)
	}
	trusted := h.distrustLocked(now) == nil
	if trusted != ws.trusted {
		ws.trusted = trusted
		ws.changedLocked()
	}
	switch {
	case now.Before(heard.Add(q / 2)):
		next = heard.Add(q / 2) // the next ping
	case now.Before(heard.Add(q)):
		next = heard.Add(q) // silent: distrusted from then on
	default:
		next = now.Add(q / 4) // distrusted: ping again then
	}
	return next
}

// ping asks ZooKeeper for an answer on s.
func (h *hub) ping(ctx context.Context, s *zklock.Session) {
	defer h.wg.Done()
	err := s.Ping(ctx)
	h.mu.Lock()
	h.ws.pinging = false
	if err == nil {
		h.ws.unanswered = time.Time{}
	}
	h.mu.Unlock()
	poke(h.ws.kick)
}

// dial establishes a new watch session and puts it in place of the old
// one, which it then closes.
func (h *hub) dial(ctx context.Context) {
	defer h.wg.Done()
	opts := h.cfg.zkOptions(h.guard)
	// Not the leases' session: its connection is not the daemon's health,
	// it creates nothing, and a replacement is routine.
	opts.Observer = nil
	opts.Logger = slog.New(atLeast{h.cfg.Logger.Handler(), slog.LevelWarn}).With("session", "blocking reads")
	dctx, cancel := context.WithTimeout(ctx, h.cfg.DialTimeout)
	sess, err := zklock.Dial(dctx, h.cfg.Servers, opts)
	cancel()
	h.mu.Lock()
	ws := &h.ws
	ws.dialing = false
	if err != nil {
		ws.backoff = min(max(2*ws.backoff, 100*time.Millisecond), h.cfg.SessionTimeout)
		ws.retryAt = h.cfg.Clock.Now().Add(ws.backoff)
		h.mu.Unlock()
		h.log.Debug("dial zookeeper for blocking reads", "err", err, "retry_in", ws.backoff)
		poke(ws.kick)
		return
	}
	ws.backoff = 0
	if h.closed || len(h.names) == 0 {
		h.mu.Unlock()
		sess.Close()
		poke(ws.kick)
		return
	}
	old, left := ws.sess, ws.left
	ws.sess, ws.left, ws.unanswered, ws.trusted = sess, 0, time.Time{}, true
	ws.changedLocked()
	if old != nil {
		h.closeLater(old, "replaced")
		h.log.Debug("replaced the watch session of blocking reads", "names_left_behind", left, "names_watched", len(h.names))
	}
	h.mu.Unlock()
	poke(ws.kick)
}

// closeLater closes s in the background (Close waits for its goroutines).
func (h *hub) closeLater(s *zklock.Session, why string) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		s.Close()
		h.log.Debug("closed a watch session of blocking reads", "why", why)
	}()
}

// atLeast passes on the records of level at least min: the watch session's
// routine events (established, closed) stay out of the daemon's log.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (a atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= a.min && a.Handler.Enabled(ctx, l)
}

func (a atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{a.Handler.WithAttrs(attrs), a.min}
}

func (a atLeast) WithGroup(name string) slog.Handler {
	return atLeast{a.Handler.WithGroup(name), a.min}
}
