// Package dbcases runs the database fences' shared cases
// (fence/testdata/dbcases.json) against a Go fence helper: a Target is one
// fence (or one control) on one database, and Run checks every case
// against it. The same file is read by the Python, Java and JavaScript
// suites.
package dbcases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/fence"
)

// File is the shared cases file.
type File struct {
	Schema   int      `json:"schema"`
	Controls []string `json:"controls"`
	Cases    []Case   `json:"cases"`
}

// Case is one case.
type Case struct {
	Name       string   `json:"name"`
	About      string   `json:"about"`
	Durable    bool     `json:"durable"`
	FailsUnder []string `json:"fails_under"`
	MayFail    []string `json:"may_fail_under"`
	Steps      []Step   `json:"steps"`
}

// Step is one step of a case.
type Step struct {
	Op         string  `json:"op"`
	Key        string  `json:"key"`
	Token      string  `json:"token"`
	Value      *string `json:"value"`
	Expect     string  `json:"expect"`
	Writers    int     `json:"writers"`
	Rounds     int     `json:"rounds"`
	FirstToken string  `json:"first_token"`
}

// Path is where the cases file is.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "dbcases.json")
}

// Load reads the cases file.
func Load(t testing.TB) File {
	t.Helper()
	b, err := os.ReadFile(Path())
	if err != nil {
		t.Fatal(err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", Path(), err)
	}
	if f.Schema != 1 {
		t.Fatalf("%s: schema %d, want 1", Path(), f.Schema)
	}
	return f
}

// Target is a fence on a database, or a control in its place. Tokens come
// as the case spells them: the target parses them with fence.ParseToken
// (a refused one is an error matching fence.ErrInvalidSequencer) or, as a
// control, as it pleases. A stale token is an error matching
// fence.ErrStaleToken.
type Target interface {
	Write(ctx context.Context, key, token, value string) error
	Read(ctx context.Context, key, token string) (*string, error)
	// Delete deletes key's row (or value) in a transaction fenced by
	// token: nil when it is gone, an error matching ErrRowKept when the
	// fence refused because the row holds the key's max.
	Delete(ctx context.Context, key, token string) error
	// Value reads key's value without the fence.
	Value(ctx context.Context, key string) (*string, error)
	// Max is the fence's max for key (controls: anything).
	Max(ctx context.Context, key string) (uint64, error)
	// Restart kills the database with SIGKILL, starts it again and
	// reconnects.
	Restart(ctx context.Context) error
}

// ErrRowKept is what a Target's Delete answers when the fence refused to
// delete a row that holds the key's max.
var ErrRowKept = errors.New("the row holds the fence max and was kept")

// Suite says how to make targets.
type Suite struct {
	// New makes a target with nothing in it for one case (fresh tables or
	// keys); control is "" for the fence itself.
	New func(t *testing.T, c Case, control string) Target
	// Durable: the database keeps acknowledged writes across a SIGKILL,
	// so the durable cases run (and must pass under the fence).
	Durable bool
	// Controls are the controls this suite implements (at least "none").
	Controls []string
}

// Run runs every case under the fence (each must pass) and under each of
// s.Controls (each case whose fails_under names the control must fail,
// and each that names it nowhere must pass).
func Run(t *testing.T, s Suite) {
	f := Load(t)
	if !slices.Contains(s.Controls, "none") {
		t.Fatal("a suite must run the control without a fence (none)")
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if c.Durable && !s.Durable {
				t.Logf("the database keeps no writes across a kill: %s runs only as a control below", c.Name)
			} else if err := RunCase(context.Background(), s.New(t, c, ""), c, ""); err != nil {
				t.Errorf("fenced: %v", err)
			}
			for _, ctl := range s.Controls {
				err := RunCase(context.Background(), s.New(t, c, ctl), c, ctl)
				switch must := slices.Contains(c.FailsUnder, ctl); {
				case must && err == nil:
					t.Errorf("control %s passes %s, which must fail without a proper fence", ctl, c.Name)
				case must:
					t.Logf("control %s fails, as it must: %v", ctl, err)
				case err != nil && !slices.Contains(c.MayFail, ctl):
					t.Errorf("control %s fails %s, which names it nowhere: %v", ctl, c.Name, err)
				}
			}
		})
	}
}

// Outcome names an error as the cases do: ok, stale, invalid, or the
// error's text.
func Outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, fence.ErrStaleToken):
		return "stale"
	case errors.Is(err, fence.ErrInvalidSequencer):
		return "invalid"
	}
	return err.Error()
}

func show(v *string) string {
	if v == nil {
		return "null"
	}
	return strconv.Quote(*v)
}

// RunCase runs one case and returns the first expectation not met.
func RunCase(ctx context.Context, tg Target, c Case, control string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i, st := range c.Steps {
		key := st.Key
		if key == "" {
			key = "k"
		}
		switch st.Op {
		case "write":
			if got := Outcome(tg.Write(ctx, key, st.Token, *st.Value)); got != st.Expect {
				return fmt.Errorf("step %d: write %s with token %q: %s, want %s", i, key, st.Token, got, st.Expect)
			}
		case "read":
			v, err := tg.Read(ctx, key, st.Token)
			if got := Outcome(err); got != st.Expect {
				return fmt.Errorf("step %d: read %s with token %q: %s, want %s", i, key, st.Token, got, st.Expect)
			}
			if err == nil && show(v) != show(st.Value) {
				return fmt.Errorf("step %d: read %s: %s, want %s", i, key, show(v), show(st.Value))
			}
		case "value":
			v, err := tg.Value(ctx, key)
			if err != nil {
				return fmt.Errorf("step %d: value of %s: %w", i, key, err)
			}
			if show(v) != show(st.Value) {
				return fmt.Errorf("step %d: %s holds %s, want %s", i, key, show(v), show(st.Value))
			}
		case "max":
			if control != "" {
				continue
			}
			want, err := fence.ParseToken(st.Token)
			if err != nil {
				return fmt.Errorf("step %d: max %q: %v", i, st.Token, err)
			}
			got, err := tg.Max(ctx, key)
			if err != nil {
				return fmt.Errorf("step %d: max of %s: %w", i, key, err)
			}
			if got != want {
				return fmt.Errorf("step %d: max of %s is %d, want %d", i, key, got, want)
			}
		case "delete":
			if err := tg.Delete(ctx, key, st.Token); err != nil && !errors.Is(err, ErrRowKept) {
				return fmt.Errorf("step %d: delete %s with token %q: %w", i, key, st.Token, err)
			}
		case "restart":
			if err := tg.Restart(ctx); err != nil {
				return fmt.Errorf("step %d: restart: %w", i, err)
			}
		case "race":
			if err := race(ctx, tg, key, st); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		default:
			return fmt.Errorf("step %d: unknown op %q", i, st.Op)
		}
	}
	return nil
}

func race(ctx context.Context, tg Target, key string, st Step) error {
	first, err := strconv.ParseUint(st.FirstToken, 10, 64)
	if err != nil || st.Writers < 2 || st.Rounds < 1 {
		return fmt.Errorf("race: first_token %q, writers %d, rounds %d", st.FirstToken, st.Writers, st.Rounds)
	}
	for r := 0; r < st.Rounds; r++ {
		results := make([]string, st.Writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := st.Writers - 1; i >= 0; i-- {
			tok := strconv.FormatUint(first+uint64(r*st.Writers+i), 10)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i] = Outcome(tg.Write(ctx, key, tok, "race-"+tok))
			}()
		}
		close(start)
		wg.Wait()
		top := strconv.FormatUint(first+uint64(r*st.Writers+st.Writers-1), 10)
		for i, res := range results {
			if res != "ok" && res != "stale" {
				return fmt.Errorf("race round %d: writer of token %d: %s", r, first+uint64(r*st.Writers+i), res)
			}
		}
		if results[st.Writers-1] != "ok" {
			return fmt.Errorf("race round %d: the writer of the highest token %s got %s", r, top, results[st.Writers-1])
		}
		v, err := tg.Value(ctx, key)
		if err != nil {
			return err
		}
		if show(v) != strconv.Quote("race-"+top) {
			return fmt.Errorf("race round %d: %s holds %s, want %q: an older writer landed after a newer one", r, key, show(v), "race-"+top)
		}
	}
	return nil
}

// Vector is one signed-sequencer vector: a fence of Kind and Lock given
// Sequencer must answer Expect (ok with Token, wrong_kind, wrong_name,
// bad_signature, unsigned or invalid).
type Vector struct {
	Sequencer, Kind, Lock, Expect, Token string
}

// Sequencers is the file's signed-sequencer vectors and the verify keys
// file that checks them.
type Sequencers struct {
	VerifyKeys string   `json:"verify_keys"`
	Vectors    []Vector `json:"vectors"`
}

// LoadSequencers reads the sequencer vectors of the cases file.
func LoadSequencers(t testing.TB) Sequencers {
	t.Helper()
	b, err := os.ReadFile(Path())
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Sequencers Sequencers `json:"sequencers"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", Path(), err)
	}
	if len(f.Sequencers.Vectors) == 0 {
		t.Fatalf("%s: no sequencer vectors", Path())
	}
	return f.Sequencers
}

// Accept is the fence.Accept of a vector, with verifier v.
func (vec Vector) Accept(t testing.TB, v *fence.Verifier) fence.Accept {
	t.Helper()
	kind := vec.Kind
	if kind == "lock" {
		kind = ""
	}
	k, err := fence.ParseKind(kind)
	if err != nil {
		t.Fatalf("vector kind %q: %v", vec.Kind, err)
	}
	return fence.Accept{Kind: k, Name: vec.Lock, Verifier: v}
}

// SequencerOutcome names an error of a sequencer check as the vectors do.
func SequencerOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, fence.ErrWrongLock):
		return "wrong_lock"
	case errors.Is(err, fence.ErrUnsigned):
		return "unsigned"
	case errors.Is(err, fence.ErrBadSignature):
		return "bad_signature"
	case errors.Is(err, fence.ErrInvalidSequencer):
		return "invalid"
	}
	return err.Error()
}

// Verifier is the verifier of the vectors' keys.
func (s Sequencers) Verifier(t testing.TB) *fence.Verifier {
	t.Helper()
	keys, err := fence.ParseVerifyKeys([]byte(s.VerifyKeys))
	if err != nil {
		t.Fatal(err)
	}
	v, err := fence.NewVerifier(keys)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Want is the outcome SequencerOutcome gives for the vector (wrong_kind
// and wrong_name are both ErrWrongLock).
func (vec Vector) Want() string {
	if vec.Expect == "wrong_kind" || vec.Expect == "wrong_name" {
		return "wrong_lock"
	}
	return vec.Expect
}

// RedisFile is the Redis fences' cases file (fence/testdata/rediscases.json).
type RedisFile struct {
	Schema   int         `json:"schema"`
	Controls []string    `json:"controls"`
	Cases    []RedisCase `json:"cases"`
}

// RedisCase is one case of the Redis cases file.
type RedisCase struct {
	Name       string      `json:"name"`
	About      string      `json:"about"`
	FailsUnder []string    `json:"fails_under"`
	Steps      []RedisStep `json:"steps"`
}

// RedisStep is one step of a Redis case.
type RedisStep struct {
	Op     string            `json:"op"`
	Token  string            `json:"token"`
	Value  *string           `json:"value"`
	Expect string            `json:"expect"`
	Argv   []string          `json:"argv"`
	Keys   int               `json:"keys"`
	Set    map[string]string `json:"set"`
	Has    bool              `json:"has"`
}

// RedisPath is where the Redis cases file is.
func RedisPath() string { return filepath.Join(filepath.Dir(Path()), "rediscases.json") }

// UnguardedScriptPath is the control script of the Redis cases: the fence
// script before its guards.
func UnguardedScriptPath() string { return filepath.Join(filepath.Dir(Path()), "redis_unguarded.lua") }

// LoadRedis reads the Redis cases file.
func LoadRedis(t testing.TB) RedisFile {
	t.Helper()
	b, err := os.ReadFile(RedisPath())
	if err != nil {
		t.Fatal(err)
	}
	var f RedisFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", RedisPath(), err)
	}
	if f.Schema != 1 || len(f.Cases) == 0 {
		t.Fatalf("%s: schema %d with %d cases, want schema 1 and cases", RedisPath(), f.Schema, len(f.Cases))
	}
	return f
}

// Show is a value as the cases print it: null or a quoted string.
func Show(v *string) string { return show(v) }
