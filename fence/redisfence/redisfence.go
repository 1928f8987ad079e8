// Package redisfence fences Redis with seqd's tokens, over go-redis.
//
// One Lua script (fence.lua, the file every language's helper runs), run by
// EVALSHA, compares the token with the key's max, raises the max, and runs
// the caller's command, all atomically (Redis runs a script alone). Lua's
// numbers are doubles, exact only to 2^53, so the script never turns a
// token into a number: the max is stored and compared as a 20-digit
// zero-padded decimal string, whose order as text is the order of the
// integers over the whole uint64 range.
//
// Fence keys live under Prefix, and the script refuses a fenced command
// that names a key under it (as COMMAND GETKEYS reads the command), a write
// that names no key (FLUSHDB, FLUSHALL, SWAPDB) and a script: any of them
// could reset a max from inside the fence. The script also clears any TTL
// a fence key was given.
//
// The max is only as durable as Redis is. Without the append-only file a
// Redis that is killed or restarted forgets every max it held since its
// last snapshot, and the next stale holder is let in; with appendonly yes
// and appendfsync everysec a crash of the machine loses the last second;
// no loses what the kernel had not written; always loses nothing that was
// acknowledged. A maxmemory-policy of allkeys-* lets Redis evict a fence
// key when memory runs short, which forgets its max just as surely. New
// refuses a Redis that reports no append-only file (Options.AllowVolatile
// to take it anyway) or an allkeys-* policy, and warns when appendfsync is
// not always; a Fence reads both settings again every Options.Recheck
// (DefaultRecheck) before it admits, and refuses while either is unsafe.
//
// redisfence imports go-redis and package fence only.
package redisfence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/fence"
)

// ErrNotDurable: the Redis keeps no append-only file, so a restart forgets
// the maxes.
var ErrNotDurable = errors.New("redisfence: Redis runs without the append-only file (appendonly no): a restart would forget every max and let stale holders in")

// ErrEvictable: the Redis may evict keys that have no TTL (a
// maxmemory-policy of allkeys-*), the fence keys among them, and an
// evicted max lets stale holders in.
var ErrEvictable = errors.New("redisfence: Redis's maxmemory-policy can evict keys without a TTL (allkeys-*): an evicted fence key forgets its max and lets stale holders in; set maxmemory-policy noeviction or a volatile-* policy")

// ErrRefusedCommand: the script refused the fenced command, which could
// have reset a max (it names a fence key, writes without naming a key, or
// is a script). The error's text says which.
var ErrRefusedCommand = errors.New("redisfence: command refused")

// Script is the fencing script, fence.lua: KEYS[1] is the fence key (under
// Prefix), ARGV[1] the token as 20 zero-padded digits; ARGV[2], if given,
// a command, with KEYS[2..] its keys (first) and ARGV[3..] its other
// arguments. It answers {1, the command's reply} when admitted, {0, the
// max} when refused as stale and {2, a sentence} when the command is
// refused.
//
//go:embed fence.lua
var Script string

// Prefix is the prefix of every fence key: Do and Max put it in front of
// the key they are given, and the script refuses commands that name a key
// under it.
const Prefix = "seqd:fence:"

// DefaultRecheck is how often a Fence reads Redis's persistence and
// eviction settings again: a setting changed at run time (CONFIG SET) is
// seen within this long, and until then a fence key can be evicted or
// forgotten without the Fence knowing. Each read is two CONFIG GETs.
const DefaultRecheck = 10 * time.Second

// Options configures New.
type Options struct {
	// AllowVolatile takes a Redis without the append-only file (a cache, a
	// test): New then only warns.
	AllowVolatile bool
	// Logger gets the warnings; nil is slog.Default().
	Logger *slog.Logger
	// Recheck is how often the settings are read again; 0 is
	// DefaultRecheck.
	Recheck time.Duration
	// Now is the clock of the rechecks; nil is time.Now.
	Now func() time.Time
}

// Fence fences commands on one Redis (or one cluster shard: a command's
// keys and the fence key must then hash to one slot, e.g. with a {tag}).
type Fence struct {
	rdb    redis.Cmdable
	script *redis.Script
	opts   Options
	log    *slog.Logger

	mu        sync.Mutex
	checkedAt time.Time
	unsafe    error // the last check's refusal, nil when it passed
}

// New checks rdb's persistence and eviction policy and returns a Fence on
// it.
func New(ctx context.Context, rdb redis.Cmdable, opts Options) (*Fence, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &Fence{rdb: rdb, script: redis.NewScript(Script), opts: opts, log: opts.Logger.With("component", "redisfence")}
	if err := f.check(ctx, true); err != nil {
		return nil, err
	}
	return f, nil
}

// safe reads the settings again when Recheck has passed since the last
// read, or when the last read refused them.
func (f *Fence) safe(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsafe == nil && f.opts.Now().Sub(f.checkedAt) < f.opts.Recheck {
		return nil
	}
	return f.checkLocked(ctx, false)
}

func (f *Fence) check(ctx context.Context, warn bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checkLocked(ctx, warn)
}

func (f *Fence) checkLocked(ctx context.Context, warn bool) error {
	s, err := readSettings(ctx, f.rdb)
	if err != nil {
		return err
	}
	f.checkedAt = f.opts.Now()
	f.unsafe = nil
	switch {
	case strings.HasPrefix(s.policy, "allkeys-"):
		f.unsafe = fmt.Errorf("%w (it is %s)", ErrEvictable, s.policy)
	case !s.aof && !f.opts.AllowVolatile:
		f.unsafe = ErrNotDurable
	case !warn:
	case !s.aof:
		f.log.Warn("Redis keeps no append-only file: a restart forgets the fence maxes and admits stale holders")
	case s.fsync != "always" && s.fsync != "":
		f.log.Warn("Redis syncs its append-only file less than on every write: a crash of the machine can lose the fence maxes it acknowledged", "appendfsync", s.fsync)
	}
	return f.unsafe
}

type settings struct {
	aof           bool
	fsync, policy string
}

// readSettings reads appendonly, appendfsync and maxmemory-policy with
// CONFIG GET, or, where CONFIG is not allowed, aof_enabled from INFO
// persistence and maxmemory_policy from INFO memory.
func readSettings(ctx context.Context, rdb redis.Cmdable) (settings, error) {
	cfg, err := rdb.ConfigGet(ctx, "append*").Result()
	if err == nil && cfg["appendonly"] != "" {
		pol, perr := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
		if perr == nil && pol["maxmemory-policy"] != "" {
			return settings{aof: cfg["appendonly"] == "yes", fsync: cfg["appendfsync"], policy: pol["maxmemory-policy"]}, nil
		}
	}
	var s settings
	for section, field := range map[string]string{"persistence": "aof_enabled", "memory": "maxmemory_policy"} {
		info, ierr := rdb.Info(ctx, section).Result()
		if ierr != nil {
			return s, fmt.Errorf("redisfence: reading Redis's settings: %w", errors.Join(err, ierr))
		}
		v, ok := infoField(info, field)
		if !ok {
			return s, fmt.Errorf("redisfence: Redis's INFO %s has no %s", section, field)
		}
		if field == "aof_enabled" {
			s.aof = v == "1"
		} else {
			s.policy = v
		}
	}
	return s, nil
}

func infoField(info, field string) (string, bool) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}

// Pad is a token as the script compares it: 20 decimal digits.
func Pad(token uint64) string { return fmt.Sprintf("%020d", token) }

// Cmd is a command run under the fence: Name, then Keys, then Args (SET k
// v is Cmd{Name: "SET", Keys: []string{"k"}, Args: []any{"v"}}). Only
// commands whose keys come first fit.
type Cmd struct {
	Name string
	Keys []string
	Args []any
}

// Do admits token on fenceKey (kept in Redis as Prefix+fenceKey) and runs
// cmd, atomically, returning cmd's reply. A token below the key's max is a
// *fence.StaleTokenError and nothing runs; a command that could reset a
// max is ErrRefusedCommand and nothing runs. A zero cmd.Name only raises
// the max (a fenced read of nothing). When Recheck has passed since Redis's
// settings were last read, Do reads them again first, and refuses
// (ErrNotDurable, ErrEvictable) while they are unsafe.
func (f *Fence) Do(ctx context.Context, fenceKey string, token uint64, cmd Cmd) (any, error) {
	if token == 0 {
		return nil, fmt.Errorf("redisfence: %w", fence.ErrInvalidSequencer)
	}
	keys := append([]string{Prefix + fenceKey}, cmd.Keys...)
	args := []any{Pad(token)}
	if cmd.Name != "" {
		args = append(append(args, cmd.Name), cmd.Args...)
	} else if len(cmd.Keys) > 0 || len(cmd.Args) > 0 {
		return nil, errors.New("redisfence: a command with keys or arguments and no name")
	}
	if err := f.safe(ctx); err != nil {
		return nil, err
	}
	res, err := f.script.Run(ctx, f.rdb, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisfence: %s: %w", fenceKey, err)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("redisfence: %s: empty reply", fenceKey)
	}
	var reply any
	if len(res) > 1 {
		reply = res[1]
	}
	switch code, _ := res[0].(int64); code {
	case 1:
		return reply, nil
	case 2:
		why, _ := reply.(string)
		return nil, fmt.Errorf("%w: %s", ErrRefusedCommand, why)
	}
	s, _ := reply.(string)
	max, _ := strconv.ParseUint(s, 10, 64)
	return nil, &fence.StaleTokenError{Key: fenceKey, Token: token, Max: max}
}

// DoSequencer is Do for a sequencer string, accepted by a (its signature,
// kind and name checked) before its token fences fenceKey.
func (f *Fence) DoSequencer(ctx context.Context, fenceKey string, a fence.Accept, seq string, cmd Cmd) (any, error) {
	s, err := a.Sequencer(seq)
	if err != nil {
		return nil, err
	}
	return f.Do(ctx, fenceKey, s.Token, cmd)
}

// Max is fenceKey's max, 0 if it was never fenced.
func (f *Fence) Max(ctx context.Context, fenceKey string) (uint64, error) {
	s, err := f.rdb.Get(ctx, Prefix+fenceKey).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisfence: %s: %w", fenceKey, err)
	}
	return strconv.ParseUint(s, 10, 64)
}
