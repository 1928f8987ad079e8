package sequencer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Limits of DESIGN §4.
const (
	DefaultTTL = 15 * time.Second
	MinTTL     = time.Second
	MaxTTL     = time.Hour
	MaxWait    = 10 * time.Minute
)

// Errors of the Service. Handler maps them to status codes.
var (
	// ErrHeld: the lock was not granted within the wait.
	ErrHeld = errors.New("sequencer: lock held")
	// ErrLost: the lease ended (TTL passed, session lost or released) and
	// nobody has been granted the lock since.
	ErrLost = errors.New("sequencer: lease lost")
	// ErrUnavailable: ZooKeeper cannot be reached now; try again.
	ErrUnavailable = errors.New("sequencer: zookeeper unavailable")
	// ErrBadRequest wraps every validation error.
	ErrBadRequest = errors.New("sequencer: bad request")
	// ErrNotHeld: a check for a token that is not below the current one but
	// is not the current holder's either.
	ErrNotHeld = errors.New("sequencer: token does not hold the lock")
)

// ConflictError is a 409: a stale token, a lost lease, a held lock or a
// check that failed, with the lock's current token where one is known.
type ConflictError struct {
	Err          error  // ErrStaleToken, ErrLost, ErrHeld or ErrNotHeld
	Name         string // lock
	Token        uint64 // what the caller sent (0 for acquire)
	CurrentToken uint64 // 0 when unknown
}

func (e *ConflictError) Error() string {
	switch {
	case errors.Is(e.Err, ErrStaleToken):
		return fmt.Sprintf("token %d for %q is stale: the lock's current token is %d", e.Token, e.Name, e.CurrentToken)
	case errors.Is(e.Err, ErrHeld):
		return fmt.Sprintf("lock %q is held by another owner", e.Name)
	case errors.Is(e.Err, ErrNotHeld):
		return fmt.Sprintf("token %d does not hold %q", e.Token, e.Name)
	}
	return fmt.Sprintf("the lease on %q with token %d is lost", e.Name, e.Token)
}

func (e *ConflictError) Unwrap() error { return e.Err }

// Lease is a grant to an owner, as the API shows it.
type Lease struct {
	Name      string    `json:"name"`
	Token     uint64    `json:"token"`
	Sequencer string    `json:"sequencer"`
	LeaseID   string    `json:"lease_id"`
	Owner     string    `json:"owner"`
	TTL       Duration  `json:"ttl"`
	ExpiresAt time.Time `json:"expires_at"`
}

// LockStatus is what GET /v1/locks/{name} shows, read from ZooKeeper.
type LockStatus struct {
	Name      string     `json:"name"`
	Held      bool       `json:"held"`
	Token     uint64     `json:"token"`
	Owner     string     `json:"owner"`
	ExpiresAt *time.Time `json:"expires_at"` // known only for leases of this daemon
	Waiters   int        `json:"waiters"`
}

// Config configures a Service.
type Config struct {
	Servers        []string
	Root           string // default zklock.DefaultRoot
	SessionTimeout time.Duration
	TokenMode      zklock.TokenMode
	Logger         *slog.Logger
	Metrics        *metrics.Metrics
	Clock          zklock.Clock
	// DialTimeout bounds each attempt to establish a session; default the
	// session timeout.
	DialTimeout time.Duration
	// Identity is written into contender nodes next to the owner, so that
	// a status read on another daemon can tell where a holder is. Default
	// host:pid.
	Identity string
}

// Service holds leases over zklock on one ZooKeeper session at a time. When
// ZooKeeper expires the session, every lease is lost (and counted) and the
// Service dials a new session.
type Service struct {
	cfg   Config
	log   *slog.Logger
	m     *metrics.Metrics
	clock zklock.Clock
	guard *zklock.Guard

	mu     sync.Mutex
	sess   *zklock.Session
	leases map[string]*lease // by lease id: live ones only
	byName map[string]*lease // the live lease per lock name
	closed bool

	wake chan struct{} // session ended: redial
	stop chan struct{}
	wg   sync.WaitGroup
}

type leaseState int

const (
	live leaseState = iota
	released
	expired
	lost
)

type lease struct {
	id      string
	name    string
	owner   string
	ttl     time.Duration
	expires time.Time
	grant   *zklock.Grant
	state   leaseState
	renewed chan struct{} // poked when expires moves
	stop    chan struct{} // closed when released
}

// contenderData is stored in each contender node.
type contenderData struct {
	Owner  string `json:"owner"`
	Daemon string `json:"daemon,omitempty"`
}

// New makes a Service; Start connects it.
func New(cfg Config) *Service {
	if cfg.Root == "" {
		cfg.Root = zklock.DefaultRoot
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = zklock.DefaultSessionTimeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = cfg.SessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = zklock.WallClock()
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	return &Service{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "sequencer"),
		m:      cfg.Metrics,
		clock:  cfg.Clock,
		guard:  zklock.NewGuard(),
		leases: map[string]*lease{},
		byName: map[string]*lease{},
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
}

// Start establishes the first session (failing if ZooKeeper cannot be
// reached within the dial timeout) and keeps one afterwards.
func (s *Service) Start(ctx context.Context) error {
	if err := s.dial(ctx); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.keepSession()
	return nil
}

func (s *Service) dial(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	sess, err := zklock.Dial(dctx, s.cfg.Servers, zklock.Options{
		SessionTimeout: s.cfg.SessionTimeout,
		Logger:         s.cfg.Logger,
		Observer:       s.m,
		Clock:          s.clock,
		Guard:          s.guard,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sess.Close()
		return ErrUnavailable
	}
	s.sess = sess
	s.wg.Add(1) // under s.mu, like every Add: Close sets closed before it waits
	s.mu.Unlock()
	go func() { // tells keepSession when this session ends
		defer s.wg.Done()
		select {
		case <-sess.Done():
			select {
			case s.wake <- struct{}{}:
			default:
			}
		case <-s.stop:
		}
	}()
	return nil
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
				break
			}
			s.log.Error("dial zookeeper", "err", err, "retry_in", backoff)
			select {
			case <-s.stop:
				return
			case <-time.After(backoff): // real time: a retry pace, not logic
			}
			backoff = min(2*backoff, s.cfg.SessionTimeout)
		}
	}
}

// session returns the live session, or ErrUnavailable.
func (s *Service) session() (*zklock.Session, error) {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil || sess.Err() != nil {
		return nil, fmt.Errorf("%w: no zookeeper session", ErrUnavailable)
	}
	return sess, nil
}

// Ready reports whether the ZooKeeper session is connected.
func (s *Service) Ready() bool {
	sess, err := s.session()
	return err == nil && sess.Connected()
}

// Close releases every held lease (deleting the contenders so that waiters
// elsewhere proceed at once), closes the session and waits for the
// Service's goroutines.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var ls []*lease
	for _, l := range s.leases {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		s.end(ctx, l, released, metrics.ReasonReleased)
	}
	close(s.stop)
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
	s.wg.Wait()
	return nil
}

func validateTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return fmt.Errorf("%w: ttl %v is out of range: it must be between %v and %v", ErrBadRequest, ttl, MinTTL, MaxTTL)
	}
	return nil
}

func validateName(name string) error {
	if err := zklock.ValidateName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return nil
}

// Acquire grants name to owner for ttl, waiting up to wait (0 tries once).
// The same owner asking again while its lease is live gets the same lease
// and token, with the TTL extended. If ctx ends while waiting (the HTTP
// client went away), the contender is withdrawn.
func (s *Service) Acquire(ctx context.Context, name, owner string, ttl, wait time.Duration) (Lease, error) {
	if err := validateName(name); err != nil {
		return Lease{}, err
	}
	if owner == "" {
		return Lease{}, fmt.Errorf("%w: owner is required: name who is asking, e.g. host:pid", ErrBadRequest)
	}
	if len(owner) > 256 {
		return Lease{}, fmt.Errorf("%w: owner is %d bytes, longer than 256", ErrBadRequest, len(owner))
	}
	if err := validateTTL(ttl); err != nil {
		return Lease{}, err
	}
	if wait < 0 || wait > MaxWait {
		return Lease{}, fmt.Errorf("%w: wait %v is out of range: it must be between 0s and %v", ErrBadRequest, wait, MaxWait)
	}
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper", ErrUnavailable)
	}
	s.mu.Lock()
	if l := s.byName[name]; l != nil && l.owner == owner && l.state == live && l.grant.Err() == nil && s.clock.Now().Before(l.expires) {
		l.ttl = ttl
		l.expires = s.clock.Now().Add(ttl)
		out := l.view()
		s.mu.Unlock()
		poke(l.renewed)
		s.m.Renewal(name)
		return out, nil
	}
	s.mu.Unlock()

	data, _ := json.Marshal(contenderData{Owner: owner, Daemon: s.cfg.Identity})
	mu, err := zklock.NewMutex(sess, name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode), zklock.WithData(data))
	if err != nil {
		return Lease{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	var g *zklock.Grant
	if wait == 0 {
		g, err = mu.TryAcquire(ctx)
	} else {
		wctx, cancel := context.WithTimeout(ctx, wait)
		g, err = mu.Acquire(wctx)
		cancel()
	}
	if err != nil {
		switch {
		case errors.Is(err, zklock.ErrUnavailable), errors.Is(err, zklock.ErrSessionExpired), errors.Is(err, zklock.ErrClosed):
			return Lease{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		case errors.Is(err, zklock.ErrHeld), errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && sess.Connected():
			ce := &ConflictError{Err: ErrHeld, Name: name}
			if h, herr := mu.Holder(context.WithoutCancel(ctx)); herr == nil {
				ce.CurrentToken = h.Token
			}
			return Lease{}, ce
		case errors.Is(err, zklock.ErrTokenRegression):
			return Lease{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		case ctx.Err() != nil:
			return Lease{}, ctx.Err()
		}
		return Lease{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	l := &lease{
		id:      newLeaseID(),
		name:    name,
		owner:   owner,
		ttl:     ttl,
		expires: s.clock.Now().Add(ttl),
		grant:   g,
		renewed: make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		g.Release(context.WithoutCancel(ctx))
		return Lease{}, fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	s.leases[l.id] = l
	s.byName[name] = l
	out := l.view()
	s.wg.Add(1) // under s.mu: Close cannot be waiting yet (it sets closed first)
	go s.watch(l)
	s.mu.Unlock()
	s.log.Info("granted", "lock", name, "token", g.Token, "owner", owner, "ttl", ttl)
	return out, nil
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func newLeaseID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("sequencer: crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// view is the API form of l; s.mu must be held.
func (l *lease) view() Lease {
	return Lease{
		Name:      l.name,
		Token:     l.grant.Token,
		Sequencer: FormatSequencer(l.name, l.grant.Token),
		LeaseID:   l.id,
		Owner:     l.owner,
		TTL:       Duration(l.ttl),
		ExpiresAt: l.expires.UTC(),
	}
}

// watch ends the lease when its TTL passes or its grant is lost.
func (s *Service) watch(l *lease) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		expires := l.expires
		s.mu.Unlock()
		tc, t := s.clock.TimerAt(expires)
		select {
		case <-tc:
			// end decides under s.mu whether the TTL has really passed: a
			// renewal that got in first keeps the lease, one that comes after
			// finds it ended. Expiry deletes the contender so that the next
			// waiter proceeds.
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.SessionTimeout)
			ended := s.end(ctx, l, expired, metrics.ReasonExpired)
			cancel()
			if ended {
				return
			}
			s.mu.Lock()
			gone := l.state != live
			s.mu.Unlock()
			if gone {
				return
			}
		case <-l.renewed:
			t.Stop()
		case <-l.grant.Lost():
			t.Stop()
			s.end(context.Background(), l, lost, metrics.ReasonLost)
			return
		case <-l.stop:
			t.Stop()
			return
		}
	}
}

// end moves a live lease to state, counts and logs it, and releases its
// grant (a no-op for a grant already lost). It reports whether this call
// ended the lease.
func (s *Service) end(ctx context.Context, l *lease, state leaseState, reason string) bool {
	s.mu.Lock()
	if l.state != live || state == expired && s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return false
	}
	l.state = state
	delete(s.leases, l.id)
	if s.byName[l.name] == l {
		delete(s.byName, l.name)
	}
	s.mu.Unlock()
	if state == released {
		close(l.stop)
	}
	err := l.grant.Release(ctx)
	s.m.Release(l.name, reason)
	switch state {
	case expired:
		s.log.Warn("lease expired", "lock", l.name, "token", l.grant.Token, "owner", l.owner)
	case lost:
		s.log.Warn("lease lost", "lock", l.name, "token", l.grant.Token, "owner", l.owner, "err", l.grant.Err())
	default:
		s.log.Info("released", "lock", l.name, "token", l.grant.Token, "owner", l.owner)
	}
	if err != nil && !errors.Is(err, zklock.ErrLockLost) {
		s.log.Warn("release: contender left for the janitor", "lock", l.name, "err", err)
	}
	return true
}

// leaseFor finds the live lease for a renew or release. If there is none,
// it asks ZooKeeper for the lock's current token and answers 409:
// stale_token when the lock has moved on to a higher token, lost otherwise.
func (s *Service) leaseFor(ctx context.Context, name, leaseID string, token uint64, source string) (*lease, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	if leaseID == "" {
		return nil, fmt.Errorf("%w: lease_id is required", ErrBadRequest)
	}
	if token == 0 {
		return nil, fmt.Errorf("%w: token is required and must be a positive integer", ErrBadRequest)
	}
	s.mu.Lock()
	l := s.leases[leaseID]
	s.mu.Unlock()
	if l != nil && l.name != name {
		return nil, fmt.Errorf("%w: lease %s is for lock %q, not %q", ErrBadRequest, leaseID, l.name, name)
	}
	if l != nil && l.grant.Err() == nil && token == l.grant.Token {
		return l, nil
	}
	if l != nil && token > l.grant.Token {
		return nil, fmt.Errorf("%w: token %d was never issued to lease %s", ErrBadRequest, token, leaseID)
	}
	// The lease is gone (or the token is older than the lease's): what is
	// the lock's token now?
	cur, err := s.currentToken(ctx, name)
	if err != nil {
		return nil, err
	}
	if cur > token {
		s.m.StaleRejected(name, source)
		s.log.Warn("stale token rejected", "lock", name, "token", token, "current_token", cur, "source", source)
		return nil, &ConflictError{Err: &StaleTokenError{Key: name, Token: token, Max: cur}, Name: name, Token: token, CurrentToken: cur}
	}
	return nil, &ConflictError{Err: ErrLost, Name: name, Token: token, CurrentToken: cur}
}

// currentToken reads the lock's current token from ZooKeeper (0 if none is
// known: nobody holds it, in zxid mode).
func (s *Service) currentToken(ctx context.Context, name string) (uint64, error) {
	h, err := s.holder(ctx, name)
	if err != nil {
		return 0, err
	}
	return h.Token, nil
}

func (s *Service) holder(ctx context.Context, name string) (zklock.Holder, error) {
	sess, err := s.session()
	if err != nil {
		return zklock.Holder{}, err
	}
	mu, err := zklock.NewMutex(sess, name, zklock.WithRoot(s.cfg.Root), zklock.WithTokenMode(s.cfg.TokenMode))
	if err != nil {
		return zklock.Holder{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	h, err := mu.Holder(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return zklock.Holder{}, ctx.Err()
		}
		return zklock.Holder{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return h, nil
}

// Renew extends a live lease by its TTL (or ttl, if not zero) and keeps its
// token. While ZooKeeper is unreachable it answers ErrUnavailable: the
// lease cannot be vouched for.
func (s *Service) Renew(ctx context.Context, name, leaseID string, token uint64, ttl time.Duration) (Lease, error) {
	if ttl != 0 {
		if err := validateTTL(ttl); err != nil {
			return Lease{}, err
		}
	}
	l, err := s.leaseFor(ctx, name, leaseID, token, metrics.SourceRenew)
	if err != nil {
		return Lease{}, err
	}
	sess, err := s.session()
	if err != nil {
		return Lease{}, err
	}
	if !sess.Connected() || !sess.Live() {
		return Lease{}, fmt.Errorf("%w: disconnected from zookeeper; the lease cannot be renewed now", ErrUnavailable)
	}
	s.mu.Lock()
	// Not past its TTL (the expiry goroutine may not have run yet) and its
	// grant not lost: a renewal never revives a lease that has ended.
	if l.state != live || l.grant.Err() != nil || !s.clock.Now().Before(l.expires) {
		s.mu.Unlock()
		return Lease{}, &ConflictError{Err: ErrLost, Name: name, Token: token}
	}
	if ttl != 0 {
		l.ttl = ttl
	}
	l.expires = s.clock.Now().Add(l.ttl)
	out := l.view()
	s.mu.Unlock()
	poke(l.renewed)
	s.m.Renewal(name)
	return out, nil
}

// Release ends a live lease and deletes its contender.
func (s *Service) Release(ctx context.Context, name, leaseID string, token uint64) error {
	l, err := s.leaseFor(ctx, name, leaseID, token, metrics.SourceRelease)
	if err != nil {
		return err
	}
	if !s.end(ctx, l, released, metrics.ReasonReleased) {
		return &ConflictError{Err: ErrLost, Name: name, Token: token}
	}
	return nil
}

// Check answers whether token is the current holder's token of name,
// reading ZooKeeper (so it answers for holders on other daemons). It
// returns the current token, and a *ConflictError when the token is not it.
func (s *Service) Check(ctx context.Context, name string, token uint64) (uint64, error) {
	if err := validateName(name); err != nil {
		return 0, err
	}
	if token == 0 {
		return 0, fmt.Errorf("%w: token is required and must be a positive integer", ErrBadRequest)
	}
	h, err := s.holder(ctx, name)
	if err != nil {
		return 0, err
	}
	if h.Held && h.Token == token {
		return token, nil
	}
	if token < h.Token {
		s.m.StaleRejected(name, metrics.SourceCheck)
		s.log.Warn("stale token rejected", "lock", name, "token", token, "current_token", h.Token, "source", metrics.SourceCheck)
		return h.Token, &ConflictError{Err: &StaleTokenError{Key: name, Token: token, Max: h.Token}, Name: name, Token: token, CurrentToken: h.Token}
	}
	return h.Token, &ConflictError{Err: ErrNotHeld, Name: name, Token: token, CurrentToken: h.Token}
}

// Status reads a lock's state from ZooKeeper.
func (s *Service) Status(ctx context.Context, name string) (LockStatus, error) {
	if err := validateName(name); err != nil {
		return LockStatus{}, err
	}
	h, err := s.holder(ctx, name)
	if err != nil {
		return LockStatus{}, err
	}
	st := LockStatus{Name: name, Held: h.Held, Token: h.Token, Waiters: h.Waiters}
	if h.Held {
		var cd contenderData
		if json.Unmarshal(h.Data, &cd) == nil {
			st.Owner = cd.Owner
		}
		s.mu.Lock()
		if l := s.byName[name]; l != nil && l.grant.Token == h.Token {
			exp := l.expires.UTC()
			st.ExpiresAt = &exp
		}
		s.mu.Unlock()
	}
	return st, nil
}

// Leases lists the live leases of this daemon, by name.
func (s *Service) Leases() []Lease {
	s.mu.Lock()
	out := make([]Lease, 0, len(s.leases))
	for _, l := range s.leases {
		out = append(out, l.view())
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Duration is a time.Duration that marshals as a Go duration string.
type Duration time.Duration

// MarshalJSON writes "15s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string such as "15s" or "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"15s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"15s\"", s)
	}
	*d = Duration(v)
	return nil
}
