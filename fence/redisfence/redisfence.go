// Package redisfence fences Redis with seqd's tokens, over go-redis.
//
// One Lua script, run by EVALSHA, compares the token with the key's max,
// raises the max, and runs the caller's command, all atomically (Redis
// runs a script alone). Lua's numbers are doubles, exact only to 2^53, so
// the script never turns a token into a number: the max is stored and
// compared as a 20-digit zero-padded decimal string, whose order as text
// is the order of the integers over the whole uint64 range.
//
// The max is only as durable as Redis is. Without the append-only file a
// Redis that is killed or restarted forgets every max it held since its
// last snapshot, and the next stale holder is let in; with appendonly yes
// and appendfsync everysec a crash of the machine loses the last second;
// no loses what the kernel had not written; always loses nothing that was
// acknowledged. New refuses a Redis that reports no append-only file
// (Options.AllowVolatile to take it anyway) and warns when appendfsync is
// not always.
//
// redisfence imports go-redis and package fence only.
package redisfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seqd/seqd/fence"
)

// ErrNotDurable: the Redis keeps no append-only file, so a restart forgets
// the maxes.
var ErrNotDurable = errors.New("redisfence: Redis runs without the append-only file (appendonly no): a restart would forget every max and let stale holders in")

// Script is the fencing script. KEYS[1] is the fence key, ARGV[1] the
// token as 20 zero-padded digits; ARGV[2], if given, a command, with
// KEYS[2..] its keys (first) and ARGV[3..] its other arguments. It answers
// {1, the command's reply} when admitted and {0, the max} when refused. A
// caller who writes a script of their own can start it with the same
// check.
const Script = `
local max = redis.call('GET', KEYS[1])
if max then
  if string.len(max) ~= 20 or not string.match(max, '^%d+$') then
    return redis.error_reply('seqd fence: ' .. KEYS[1] .. ' holds no fence max')
  end
  if max > ARGV[1] then
    return {0, max}
  end
end
if max ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
end
if #ARGV < 2 then
  return {1}
end
local args = {ARGV[2]}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
return {1, redis.call(unpack(args))}
`

// Options configures New.
type Options struct {
	// AllowVolatile takes a Redis without the append-only file (a cache, a
	// test): New then only warns.
	AllowVolatile bool
	// Logger gets the warnings; nil is slog.Default().
	Logger *slog.Logger
}

// Fence fences commands on one Redis (or one cluster shard: a command's
// keys and the fence key must then hash to one slot, e.g. with a {tag}).
type Fence struct {
	rdb    redis.Cmdable
	script *redis.Script
}

// New checks rdb's persistence and returns a Fence on it.
func New(ctx context.Context, rdb redis.Cmdable, opts Options) (*Fence, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "redisfence")
	aof, fsync, err := persistence(ctx, rdb)
	if err != nil {
		return nil, err
	}
	switch {
	case !aof && !opts.AllowVolatile:
		return nil, ErrNotDurable
	case !aof:
		log.Warn("Redis keeps no append-only file: a restart forgets the fence maxes and admits stale holders")
	case fsync != "always" && fsync != "":
		log.Warn("Redis syncs its append-only file less than on every write: a crash of the machine can lose the fence maxes it acknowledged", "appendfsync", fsync)
	}
	return &Fence{rdb: rdb, script: redis.NewScript(Script)}, nil
}

// persistence reads appendonly and appendfsync with CONFIG GET, or, where
// CONFIG is not allowed, aof_enabled from INFO persistence.
func persistence(ctx context.Context, rdb redis.Cmdable) (aof bool, fsync string, err error) {
	cfg, err := rdb.ConfigGet(ctx, "append*").Result()
	if err == nil && cfg["appendonly"] != "" {
		return cfg["appendonly"] == "yes", cfg["appendfsync"], nil
	}
	info, ierr := rdb.Info(ctx, "persistence").Result()
	if ierr != nil {
		return false, "", fmt.Errorf("redisfence: reading Redis's persistence: %w", errors.Join(err, ierr))
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "aof_enabled:"); ok {
			return v == "1", "", nil
		}
	}
	return false, "", errors.New("redisfence: Redis's INFO persistence has no aof_enabled")
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

// Do admits token on fenceKey and runs cmd, atomically, returning cmd's
// reply. A token below the key's max is a *fence.StaleTokenError and
// nothing runs. A zero cmd.Name only raises the max (a fenced read of
// nothing).
func (f *Fence) Do(ctx context.Context, fenceKey string, token uint64, cmd Cmd) (any, error) {
	if token == 0 {
		return nil, fmt.Errorf("redisfence: %w", fence.ErrInvalidSequencer)
	}
	keys := append([]string{fenceKey}, cmd.Keys...)
	args := []any{Pad(token)}
	if cmd.Name != "" {
		args = append(append(args, cmd.Name), cmd.Args...)
	} else if len(cmd.Keys) > 0 || len(cmd.Args) > 0 {
		return nil, errors.New("redisfence: a command with keys or arguments and no name")
	}
	res, err := f.script.Run(ctx, f.rdb, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisfence: %s: %w", fenceKey, err)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("redisfence: %s: empty reply", fenceKey)
	}
	if ok, _ := res[0].(int64); ok == 1 {
		if len(res) > 1 {
			return res[1], nil
		}
		return nil, nil
	}
	max := uint64(0)
	if len(res) > 1 {
		s, _ := res[1].(string)
		max, _ = strconv.ParseUint(s, 10, 64)
	}
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
	s, err := f.rdb.Get(ctx, fenceKey).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redisfence: %s: %w", fenceKey, err)
	}
	return strconv.ParseUint(s, 10, 64)
}
