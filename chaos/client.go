package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/seqd/seqd/api"
	seqdclient "github.com/seqd/seqd/client"
)

// clientEnv carries a ClientConfig (JSON) to a client process: the test
// binary re-executes itself with it set, and TestMain runs the client.
const clientEnv = "SEQD_CHAOS_CLIENT"

// ClientConfig is one client process of the lock-set workload.
type ClientConfig struct {
	ID          int           `json:"id"`
	Daemons     []string      `json:"daemons"`      // base URLs
	DaemonNames []string      `json:"daemon_names"` // for the history
	Store       string        `json:"store"`        // base URL
	Lock        string        `json:"lock"`
	Key         string        `json:"key"`
	TTL         time.Duration `json:"ttl"`
	Wait        time.Duration `json:"wait"`  // acquire wait
	Think       time.Duration `json:"think"` // upper bound of the sleep between read and write
	Timeout     time.Duration `json:"timeout"`
	Seed        uint64        `json:"seed"`
	History     string        `json:"history"` // JSON-lines file, appended to
	Until       int64         `json:"until"`   // UnixNano: start no iteration after it
	Final       bool          `json:"final"`   // one iteration per lock: acquire (waiting), read every key, release
	// Locks, when set, replaces Lock and Key: each round picks one of these
	// locks and one of the keys it guards. A key is guarded by one lock.
	Locks []LockKeys `json:"locks,omitempty"`
	// Renew renews the lease every third of the TTL while the client
	// sleeps between read and write, so that a sleep can outlast the TTL.
	Renew bool `json:"renew,omitempty"`
	// SQL, when set, keeps the sets in PostgreSQL in place of Store.
	SQL *SQLStore `json:"sql,omitempty"`
}

// LockKeys is a lock and the store keys written under it.
type LockKeys struct {
	Lock string   `json:"lock"`
	Keys []string `json:"keys"`
}

// clientMain runs a client process from its environment and returns its
// exit code.
func clientMain(raw string) int {
	var cfg ClientConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "chaos client: %s: %v\n", clientEnv, err)
		return 64
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := RunClient(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "chaos client %d: %v\n", cfg.ID, err)
		return 1
	}
	return 0
}

// RunClient loops the lock-set workload until cfg.Until or ctx ends:
// acquire a lock through a daemon picked at random, read a set it guards
// from the store with the token, sleep (renewing the lease if cfg.Renew),
// write the set plus a new element with the token, release. It goes on with
// a lease that may be lost, whatever a renewal answered (an answer can be
// stale by the time the write lands: only the store's fence decides), and
// records every operation to cfg.History.
func RunClient(ctx context.Context, cfg ClientConfig) error {
	f, err := os.OpenFile(cfg.History, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	c := &client{cfg: cfg, rec: NewRecorder(f, cfg.ID), r: rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID))),
		http: &http.Client{Transport: &http.Transport{DisableKeepAlives: false, MaxIdleConnsPerHost: 4}}}
	if cfg.Timeout <= 0 {
		c.cfg.Timeout = 4 * time.Second
	}
	if len(cfg.Locks) == 0 {
		c.cfg.Locks = []LockKeys{{Lock: cfg.Lock, Keys: []string{cfg.Key}}}
	}
	if cfg.SQL != nil {
		if c.sql, err = openSQLStore(*cfg.SQL); err != nil {
			return err
		}
		defer c.sql.db.Close()
	}
	if cfg.Final {
		deadline := time.Now().Add(2 * time.Minute)
		for i, lk := range c.cfg.Locks {
			for !c.round(ctx, i+1, lk, lk.Keys) {
				if ctx.Err() != nil || time.Now().After(deadline) {
					return fmt.Errorf("no final read of %v within 2 minutes", lk.Keys)
				}
				c.sleep(ctx, 200*time.Millisecond)
			}
		}
		return c.rec.Err()
	}
	for iter := 1; ctx.Err() == nil && time.Now().UnixNano() < cfg.Until; iter++ {
		if !c.iteration(ctx, iter) {
			c.sleep(ctx, time.Duration(20+c.r.IntN(80))*time.Millisecond)
		}
	}
	return c.rec.Err()
}

type client struct {
	cfg  ClientConfig
	rec  *Recorder
	r    *rand.Rand
	http *http.Client
	sql  *sqlStore // nil: the sets are in Store
}

func now() int64 { return time.Now().UnixNano() }

func (c *client) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// iteration runs one round on a lock and key picked at random and reports
// whether the read answered ok.
func (c *client) iteration(ctx context.Context, iter int) bool {
	lk := c.cfg.Locks[0]
	if len(c.cfg.Locks) > 1 {
		lk = c.cfg.Locks[c.r.IntN(len(c.cfg.Locks))]
	}
	key := lk.Keys[0]
	if len(lk.Keys) > 1 {
		key = lk.Keys[c.r.IntN(len(lk.Keys))]
	}
	return c.round(ctx, iter, lk, []string{key})
}

// round runs one acquire-read-write-release round on lk and reports whether
// every read answered ok. It reads each of keys; a final round stops there,
// another writes the (one) key it read.
func (c *client) round(ctx context.Context, iter int, lk LockKeys, keys []string) bool {
	d := c.r.IntN(len(c.cfg.Daemons))
	dc, err := seqdclient.New(c.cfg.Daemons[d], seqdclient.WithoutEnv(), seqdclient.WithHTTPClient(c.http))
	if err != nil {
		panic(err) // the daemons' addresses are the suite's own
	}
	owner := fmt.Sprintf("c%d-%d", c.cfg.ID, iter)
	wait := c.cfg.Wait
	if c.cfg.Final {
		wait = 30 * time.Second
	}
	op := c.rec.Invoke(Op{Kind: KindAcquire, Lock: lk.Lock, Daemon: c.cfg.DaemonNames[d], Invoke: now()})
	actx, cancel := context.WithTimeout(ctx, wait+c.cfg.Timeout)
	lease, err := dc.Acquire(actx, lk.Lock, seqdclient.Owner(owner), seqdclient.TTL(c.cfg.TTL), seqdclient.Wait(wait))
	cancel()
	op.Complete = now()
	op.Result, op.Err = classifyDaemon(err)
	if err == nil {
		op.Token, op.Grant = lease.Token, lease.LeaseID
	}
	c.rec.Complete(op)
	if err != nil {
		return false
	}
	ok := true
	var set []int
	for _, key := range keys {
		var rok bool
		set, rok = c.read(ctx, lk.Lock, key, lease)
		ok = ok && rok
	}
	if ok && !c.cfg.Final {
		c.think(ctx, dc, c.cfg.DaemonNames[d], lk.Lock, lease, time.Duration(c.r.Int64N(int64(c.cfg.Think)+1)))
		x := (c.cfg.ID+1)*1_000_000 + iter
		c.write(ctx, lk.Lock, keys[0], lease, append(set, x), x)
	}
	rel := c.rec.Invoke(Op{Kind: KindRelease, Lock: lk.Lock, Daemon: c.cfg.DaemonNames[d], Token: lease.Token, Grant: lease.LeaseID, Invoke: now()})
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
	err = dc.Release(rctx, lease)
	cancel()
	rel.Complete = now()
	rel.Result, rel.Err = classifyDaemon(err)
	c.rec.Complete(rel)
	return ok
}

// think sleeps d between read and write; with cfg.Renew it renews the lease
// every third of the TTL meanwhile, and records each renewal.
func (c *client) think(ctx context.Context, dc *seqdclient.Client, daemon, lock string, l api.Lease, d time.Duration) {
	if !c.cfg.Renew {
		c.sleep(ctx, d)
		return
	}
	for step := c.cfg.TTL / 3; d > 0 && ctx.Err() == nil; d -= step {
		c.sleep(ctx, min(step, d))
		op := c.rec.Invoke(Op{Kind: KindRenew, Lock: lock, Daemon: daemon, Token: l.Token, Grant: l.LeaseID, Invoke: now()})
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
		_, err := dc.Renew(rctx, l, c.cfg.TTL)
		cancel()
		op.Complete = now()
		op.Result, op.Err = classifyDaemon(err)
		c.rec.Complete(op)
	}
}

// classifyDaemon maps a daemon call's error to a result: an answer of the
// daemon is definite, a call that got none is unknown.
func classifyDaemon(err error) (string, string) {
	var ae *api.APIError
	switch {
	case err == nil:
		return ResultOK, ""
	case errors.As(err, &ae) && ae.Code == api.CodeStaleToken:
		return ResultStale, ae.Code
	case errors.As(err, &ae):
		return ResultFail, ae.Code
	case errors.Is(err, syscall.ECONNREFUSED):
		return ResultFail, err.Error() // never delivered
	}
	return ResultInfo, err.Error()
}

func (c *client) storeURL(key string) string { return c.cfg.Store + "/v1/kv/" + key }

func (c *client) read(ctx context.Context, lock, key string, l api.Lease) ([]int, bool) {
	op := c.rec.Invoke(Op{Kind: KindRead, Lock: lock, Key: key, Token: l.Token, Grant: l.LeaseID, Final: c.cfg.Final, Invoke: now()})
	if c.sql != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
		set, err := c.sql.read(sctx, key, l.Token)
		cancel()
		op.Complete = now()
		if op.Result, op.Err = sqlResult(err); err == nil {
			op.Value = set
		}
		c.rec.Complete(op)
		return set, op.Result == ResultOK
	}
	status, body, err := c.do(ctx, http.MethodGet, key, l.Token, nil)
	op.Complete = now()
	var set []int
	switch {
	case err != nil:
		op.Result, op.Err = transportResult(err)
	case status == http.StatusOK:
		if jerr := json.Unmarshal(body, &set); jerr != nil {
			op.Result, op.Err = ResultInfo, "undecodable value: "+jerr.Error()
		} else {
			op.Result, op.Value = ResultOK, set
		}
	case status == http.StatusNotFound: // nothing written yet; the token was admitted
		op.Result, op.Value = ResultOK, []int{}
	default:
		op.Result, op.Err = storeResult(status, body)
	}
	c.rec.Complete(op)
	return set, op.Result == ResultOK
}

func (c *client) write(ctx context.Context, lock, key string, l api.Lease, set []int, x int) {
	b, _ := json.Marshal(set)
	op := c.rec.Invoke(Op{Kind: KindWrite, Lock: lock, Key: key, Token: l.Token, Grant: l.LeaseID, Value: set, Add: x, Invoke: now()})
	if c.sql != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
		err := c.sql.write(sctx, key, l.Token, set)
		cancel()
		op.Complete = now()
		op.Result, op.Err = sqlResult(err)
		c.rec.Complete(op)
		return
	}
	status, body, err := c.do(ctx, http.MethodPut, key, l.Token, b)
	op.Complete = now()
	switch {
	case err != nil:
		op.Result, op.Err = transportResult(err)
	case status == http.StatusOK:
		op.Result = ResultOK
	default:
		op.Result, op.Err = storeResult(status, body)
	}
	c.rec.Complete(op)
}

// transportResult: a refused connection never reached the store; any
// other failure may have come after the store acted.
func transportResult(err error) (string, string) {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return ResultFail, err.Error()
	}
	return ResultInfo, err.Error()
}

// storeResult: a 409 is a refusal, another 4xx had no effect, a 5xx may
// have come after the write (unknown).
func storeResult(status int, body []byte) (string, string) {
	msg := strconv.Itoa(status) + " " + string(bytes.TrimSpace(body))
	switch {
	case status == http.StatusConflict:
		return ResultStale, msg
	case status/100 == 4:
		return ResultFail, msg
	}
	return ResultInfo, msg
}

func (c *client) do(ctx context.Context, method, key string, token uint64, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.storeURL(key), rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Fencing-Token", strconv.FormatUint(token, 10))
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 2<<20))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}
