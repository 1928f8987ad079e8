package fence_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/fence/internal/dbcases"
)

// The database fences' shared cases (testdata/dbcases.json) are run here
// against the in-memory Fence, the reference that every database fence
// agrees with, and under the controls the file names, each of which must
// fail the cases it lists. This keeps the data honest: a case that the
// reference fails, or that a control passes where it should not, is a
// mistake in the data, not in a database fence.

// refStore is what a fenced database holds: values and, unless it is a
// control, the fence's max per key.
type refStore struct {
	control string // "" for the real fence
	mu      sync.Mutex
	f       *fence.Fence
	values  map[string]string
	textMax map[string]string  // control "string"
	dblMax  map[string]float64 // control "double"
}

var errInvalid = errors.New("invalid token")

// admit is the check before a fenced write or read.
func (s *refStore) admitLocked(key, token string) error {
	switch s.control {
	case "":
		n, err := fence.ParseToken(token)
		if err != nil {
			return errInvalid
		}
		return s.f.Admit(key, n)
	case "none":
		return nil
	case "string":
		if m, ok := s.textMax[key]; ok && token < m {
			return fence.ErrStaleToken
		}
		s.textMax[key] = token
		return nil
	case "double":
		d, err := strconv.ParseFloat(token, 64)
		if err != nil {
			return errInvalid
		}
		if m, ok := s.dblMax[key]; ok && d < m {
			return fence.ErrStaleToken
		}
		s.dblMax[key] = d
		return nil
	}
	panic("unknown control " + s.control)
}

func (s *refStore) write(key, token, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitLocked(key, token); err != nil {
		return err
	}
	s.values[key] = value
	return nil
}

func (s *refStore) read(key, token string) (*string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitLocked(key, token); err != nil {
		return nil, err
	}
	if v, ok := s.values[key]; ok {
		return &v, nil
	}
	return nil, nil
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, fence.ErrStaleToken):
		return "stale"
	case errors.Is(err, errInvalid):
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

// runRefCase runs a case and returns the first expectation not met.
func runRefCase(c dbcases.Case, control string) error {
	s := &refStore{control: control, f: fence.New(nil), values: map[string]string{}, textMax: map[string]string{}, dblMax: map[string]float64{}}
	for i, st := range c.Steps {
		key := st.Key
		if key == "" {
			key = "k"
		}
		switch st.Op {
		case "write":
			if got := outcome(s.write(key, st.Token, *st.Value)); got != st.Expect {
				return fmt.Errorf("step %d: write %s with token %q: %s, want %s", i, key, st.Token, got, st.Expect)
			}
		case "read":
			v, err := s.read(key, st.Token)
			if got := outcome(err); got != st.Expect {
				return fmt.Errorf("step %d: read %s with token %q: %s, want %s", i, key, st.Token, got, st.Expect)
			}
			if err == nil && show(v) != show(st.Value) {
				return fmt.Errorf("step %d: read %s: %s, want %s", i, key, show(v), show(st.Value))
			}
		case "value":
			s.mu.Lock()
			v, ok := s.values[key]
			s.mu.Unlock()
			got := show(nil)
			if ok {
				got = show(&v)
			}
			if got != show(st.Value) {
				return fmt.Errorf("step %d: %s holds %s, want %s", i, key, got, show(st.Value))
			}
		case "max":
			if control != "" {
				continue
			}
			want, err := fence.ParseToken(st.Token)
			if err != nil {
				return fmt.Errorf("step %d: max %q: %v", i, st.Token, err)
			}
			if got := s.f.Max(key); got != want {
				return fmt.Errorf("step %d: max of %s is %d, want %d", i, key, got, want)
			}
		case "delete":
			s.mu.Lock()
			err := s.admitLocked(key, st.Token)
			if err == nil {
				delete(s.values, key)
			}
			s.mu.Unlock()
			if err != nil {
				return fmt.Errorf("step %d: delete %s with token %q: %v", i, key, st.Token, err)
			}
		case "restart":
			// The reference keeps its state, as a durable database does.
		case "race":
			if err := refRace(s, key, st); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		default:
			return fmt.Errorf("step %d: unknown op %q", i, st.Op)
		}
	}
	return nil
}

func refRace(s *refStore, key string, st dbcases.Step) error {
	first, err := strconv.ParseUint(st.FirstToken, 10, 64)
	if err != nil || st.Writers < 2 || st.Rounds < 1 {
		return fmt.Errorf("race: first_token %q, writers %d, rounds %d", st.FirstToken, st.Writers, st.Rounds)
	}
	for r := 0; r < st.Rounds; r++ {
		results := make([]string, st.Writers)
		var wg sync.WaitGroup
		for i := st.Writers - 1; i >= 0; i-- {
			tok := strconv.FormatUint(first+uint64(r*st.Writers+i), 10)
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = outcome(s.write(key, tok, "race-"+tok))
			}()
		}
		wg.Wait()
		top := strconv.FormatUint(first+uint64(r*st.Writers+st.Writers-1), 10)
		if results[st.Writers-1] != "ok" {
			return fmt.Errorf("race round %d: the writer of the highest token %s got %s", r, top, results[st.Writers-1])
		}
		s.mu.Lock()
		v := s.values[key]
		s.mu.Unlock()
		if v != "race-"+top {
			return fmt.Errorf("race round %d: %s holds %q, want %q", r, key, v, "race-"+top)
		}
	}
	return nil
}

// TestDBCasesReference: the in-memory Fence passes every shared case, and
// each control fails the cases that list it in fails_under and passes those
// that name it nowhere (a control failing one more would mean the case
// tests more than it says).
func TestDBCasesReference(t *testing.T) {
	cs := dbcases.Load(t)
	if len(cs.Cases) == 0 {
		t.Fatal("no cases")
	}
	names := map[string]bool{}
	for _, c := range cs.Cases {
		if names[c.Name] {
			t.Errorf("case %q twice", c.Name)
		}
		names[c.Name] = true
		for _, ctl := range append(c.FailsUnder, c.MayFail...) {
			if !slices.Contains(cs.Controls, ctl) {
				t.Errorf("%s: fails_under names %q, not a control", c.Name, ctl)
			}
		}
		hasRestart := slices.ContainsFunc(c.Steps, func(s dbcases.Step) bool { return s.Op == "restart" })
		if hasRestart != c.Durable {
			t.Errorf("%s: durable %v but restart step %v", c.Name, c.Durable, hasRestart)
		}
		t.Run(c.Name, func(t *testing.T) {
			if err := runRefCase(c, ""); err != nil {
				t.Errorf("the fence fails %s: %v", c.Name, err)
			}
			for _, ctl := range cs.Controls {
				err := runRefCase(c, ctl)
				if must := slices.Contains(c.FailsUnder, ctl); must && err == nil {
					t.Errorf("control %s passes %s, which must fail under it", ctl, c.Name)
				} else if must {
					t.Logf("control %s fails, as it must: %v", ctl, err)
				} else if err != nil && !slices.Contains(c.MayFail, ctl) {
					t.Errorf("control %s fails %s, whose fails_under does not name it: %v", ctl, c.Name, err)
				}
			}
		})
	}
	if !names["old_holder_refused"] {
		t.Error("no case old_holder_refused")
	}
}

// TestDBCasesTokens: every token in the cases that a fence must admit or
// refuse as stale is a uint64 spelled once; the invalid ones are not.
func TestDBCasesTokens(t *testing.T) {
	max := new(big.Int).SetUint64(^uint64(0))
	for _, c := range dbcases.Load(t).Cases {
		for i, st := range c.Steps {
			if st.Token == "" && st.Op != "write" {
				continue
			}
			_, err := fence.ParseToken(st.Token)
			if (st.Expect == "invalid") != (err != nil) {
				t.Errorf("%s step %d: token %q expect %s, ParseToken: %v", c.Name, i, st.Token, st.Expect, err)
			}
			if n, ok := new(big.Int).SetString(st.Token, 10); ok && st.Expect != "invalid" && n.Cmp(max) > 0 {
				t.Errorf("%s step %d: token %q above 2^64-1", c.Name, i, st.Token)
			}
		}
	}
}

// TestDBCasesSequencers: the shared signed-sequencer vectors give, through
// the Verifier and a check of kind and name, the outcome each names; the
// control, a fence that checks neither kind nor name, admits the vectors
// that must be refused as wrong_kind or wrong_name.
func TestDBCasesSequencers(t *testing.T) {
	b, err := os.ReadFile("testdata/dbcases.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Sequencers struct {
			VerifyKeys string `json:"verify_keys"`
			Vectors    []struct {
				Sequencer, Kind, Lock, Expect, Token string
			} `json:"vectors"`
		} `json:"sequencers"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	keys, err := fence.ParseVerifyKeys([]byte(file.Sequencers.VerifyKeys))
	if err != nil {
		t.Fatal(err)
	}
	v, err := fence.NewVerifier(keys)
	if err != nil {
		t.Fatal(err)
	}
	check := func(s, kind, lock string, checkKindName bool) (string, uint64) {
		seq, err := v.Verify(s)
		switch {
		case errors.Is(err, fence.ErrUnsigned):
			return "unsigned", 0
		case errors.Is(err, fence.ErrBadSignature):
			return "bad_signature", 0
		case errors.Is(err, fence.ErrInvalidSequencer):
			return "invalid", 0
		case err != nil:
			return err.Error(), 0
		}
		if checkKindName && seq.Kind.String() != kind {
			return "wrong_kind", 0
		}
		if checkKindName && seq.Name != lock {
			return "wrong_name", 0
		}
		return "ok", seq.Token
	}
	outcomes := map[string]bool{}
	for i, vec := range file.Sequencers.Vectors {
		outcomes[vec.Expect] = true
		got, tok := check(vec.Sequencer, vec.Kind, vec.Lock, true)
		if got != vec.Expect {
			t.Errorf("vector %d %.40q for %s %s: %s, want %s", i, vec.Sequencer, vec.Kind, vec.Lock, got, vec.Expect)
		}
		if got == "ok" && strconv.FormatUint(tok, 10) != vec.Token {
			t.Errorf("vector %d: token %d, want %s", i, tok, vec.Token)
		}
		if vec.Expect == "wrong_kind" || vec.Expect == "wrong_name" {
			if got, _ := check(vec.Sequencer, vec.Kind, vec.Lock, false); got != "ok" {
				t.Errorf("vector %d: the control without a kind and name check gives %s, want ok (the vector must differ only in kind or name)", i, got)
			}
		}
	}
	for _, o := range []string{"ok", "wrong_kind", "wrong_name", "bad_signature", "unsigned", "invalid"} {
		if !outcomes[o] {
			t.Errorf("no vector expects %s", o)
		}
	}
}
