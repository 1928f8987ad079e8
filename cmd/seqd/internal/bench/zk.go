package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seqd/seqd/zklock"
)

// ErrUnavailable matches the errors of a run that could not reach
// ZooKeeper or start the daemon (errors.Is).
var ErrUnavailable = errors.New("unavailable")

// unavailable is an error that is ErrUnavailable and reads as its own
// message.
type unavailable struct{ error }

func (unavailable) Is(target error) bool { return target == ErrUnavailable }
func (u unavailable) Unwrap() error      { return u.error }

func unavailablef(format string, args ...any) error {
	return unavailable{fmt.Errorf(format, args...)}
}

// quietLogger drops go-zookeeper's log lines, which would go to stderr
// between the progress lines.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// connect opens a plain go-zookeeper connection, waits for its session and
// adds the digest identity, if any, before anything else uses it.
func (r *runner) connect(ctx context.Context) (*zk.Conn, error) {
	dialer := zk.Dialer(net.DialTimeout)
	if r.cfg.TLS != nil {
		dialer = zklock.TLSDialer(r.cfg.TLS)
	}
	conn, events, err := zk.Connect(r.cfg.Servers, r.cfg.SessionTimeout,
		zk.WithLogger(quietLogger{}), zk.WithLogInfo(false), zk.WithDialer(dialer))
	if err != nil {
		return nil, unavailablef("ZooKeeper %s: %v", strings.Join(r.cfg.Servers, ","), err)
	}
	timeout := time.NewTimer(r.cfg.ConnectTimeout)
	defer timeout.Stop()
	for established := false; !established; {
		select {
		case ev := <-events:
			if ev.State == zk.StateAuthFailed {
				conn.Close()
				return nil, unavailablef("ZooKeeper %s refused the TLS or SASL handshake", strings.Join(r.cfg.Servers, ","))
			}
			established = ev.State == zk.StateHasSession
		case <-timeout.C:
			conn.Close()
			return nil, unavailablef("no ZooKeeper session with %s within %v", strings.Join(r.cfg.Servers, ","), r.cfg.ConnectTimeout)
		case <-ctx.Done():
			conn.Close()
			return nil, ctx.Err()
		}
	}
	if a := r.cfg.Auth; a != nil {
		if err := conn.AddAuth("digest", []byte(a.User+":"+a.Password)); err != nil {
			conn.Close()
			return nil, unavailablef("ZooKeeper digest auth as %q: %v", a.User, err)
		}
	}
	return conn, nil
}

// aclFor is the ACL of the nodes the baselines create, the one zklock
// gives its own nodes under the same policy and identity.
func aclFor(p zklock.ACLPolicy, auth *zklock.DigestAuth) []zk.ACL {
	if p == zklock.ACLDefault {
		p = zklock.ACLOpen
		if auth != nil {
			p = zklock.ACLCreator
		}
	}
	if p == zklock.ACLCreator && auth != nil {
		return append(zk.DigestACL(zk.PermAll, auth.User, auth.Password), zk.WorldACL(zk.PermRead)...)
	}
	return zk.WorldACL(zk.PermAll)
}

// mkdirs creates p and its missing ancestors.
func mkdirs(conn *zk.Conn, p string, acl []zk.ACL) error {
	cur := ""
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur += "/" + part
		if _, err := conn.Create(cur, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	return nil
}

// removeTree deletes p and everything under it, deepest first; a node
// already gone is no error.
func removeTree(conn *zk.Conn, p string) error {
	children, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", p, err)
	}
	for _, c := range children {
		if err := removeTree(conn, path.Join(p, c)); err != nil {
			return err
		}
	}
	if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return nil
}

// removeIfEmpty deletes p if it has no children (another run may still be
// using it).
func removeIfEmpty(conn *zk.Conn, p string) {
	if children, _, err := conn.Children(p); err == nil && len(children) == 0 {
		_ = conn.Delete(p, -1)
	}
}

// warmZK sends ZooKeeper the requests the cases send (creates, multis,
// children and stat reads, deletes, watches) from a few sessions for
// ZKWarmup.
func (r *runner) warmZK(ctx context.Context) error {
	r.progress("warming ZooKeeper up")
	parent := r.root + "/warmup"
	if err := mkdirs(r.admin, parent, r.acl); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.ZKWarmup)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range errs {
		conn, err := r.connect(ctx)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for wctx.Err() == nil {
				if errs[w] = warmCycle(conn, parent, r.acl); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.progressDone(fmt.Sprintf("warmed ZooKeeper up for %v", r.cfg.ZKWarmup))
	return errors.Join(errs...)
}

// warmCycle is one round of the requests a lock cycle sends.
func warmCycle(conn *zk.Conn, parent string, acl []zk.ACL) error {
	res, err := conn.Multi(
		&zk.CreateRequest{Path: parent + "/c-", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence},
		&zk.SetDataRequest{Path: parent, Version: -1},
	)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	node := res[0].String
	if _, _, _, err := conn.ChildrenW(parent); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, _, _, err := conn.ExistsW(node); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, _, err := conn.Get(node); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return conn.Delete(node, -1)
}
