package sequencer

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The hand-written JSON path of fastjson.go against encoding/json and the
// strict decoder: for any body, the same acceptance, the same 400 and its
// sentence, and the same value; for any reply, the same bytes.

// requestBodies start the fuzzers of the request decoders: the shapes
// clients send and the ways a body can go wrong.
var requestBodies = []string{
	``,
	` `,
	"\v",
	`{}`,
	` { } `,
	`{"owner":"host:42"}`,
	`{"owner":"host:42","ttl":"15s"}`,
	`{"owner":"bench-3","ttl":"15s","wait":"1m"}`,
	`{"owner":"a","lease_id":"0123456789abcdef0123456789abcdef","ttl":"30s","wait":"0s","lock_delay":"2s","mode":"shared"}`,
	`{"owner":"a","mode":"exclusive"}` + "\n",
	`{"owner":"a","mode":"bogus"}`,
	"{\n\t\"owner\" : \"a\" ,\r\n \"ttl\":\"1h0m0s\"\n}\n",
	`{"owner":"a","owner":"b"}`,
	`{"OWNER":"a"}`,
	`{"Owner":"a"}`,
	`{"owner":"a","extra":1}`,
	`{"owner":"a\"b"}`,
	`{"owner":"a\u00e9"}`,
	`{"owner":"héllo"}`,
	"{\"owner\":\"\xff\"}",
	"{\"owner\":\"a\x01\"}",
	`{"owner":null}`,
	`{"owner":1}`,
	`{"owner":"a","ttl":null}`,
	`{"owner":"a","ttl":15}`,
	`{"owner":"a","ttl":"15"}`,
	`{"owner":"a","ttl":"-1s"}`,
	`{"owner":"a","ttl":"1.5s"}`,
	`{"owner":"a","ttl":"9999999999h"}`,
	`{"owner":"a"}}`,
	`{"owner":"a"}]`,
	`{"owner":"a"} {}`,
	`{"owner":"a"} x`,
	`{"owner":"a",}`,
	`{"owner":"a"`,
	`{"owner"`,
	`{`,
	`[]`,
	`null`,
	`"owner"`,
	`{"lease_id":"0123456789abcdef0123456789abcdef","token":42}`,
	`{"lease_id":"x","token":42,"ttl":"20s"}`,
	`{"lease_id":"x","token":0}`,
	`{"lease_id":"x","token":-1}`,
	`{"lease_id":"x","token":01}`,
	`{"lease_id":"x","token":1.0}`,
	`{"lease_id":"x","token":1e3}`,
	`{"lease_id":"x","token":18446744073709551615}`,
	`{"lease_id":"x","token":18446744073709551616}`,
	`{"lease_id":"x","token":99999999999999999999}`,
	`{"lease_id":"x","token":"42"}`,
	`{"lease_id":"x","token":42x}`,
	`{"lease_id":"x","token":4 2}`,
	`{"lease_id":"x","token":42,"token":43}`,
	`{"lease_id":"x","Token":42}`,
	`{"lease_id":"x","token":true}`,
}

// decodeBoth decodes body with the strict decoder and through fast, and
// fails t if they differ in acceptance, in the answer or in the value.
func decodeBoth[T any](t *testing.T, body []byte, fast func(http.ResponseWriter, *http.Request, *T) bool) {
	t.Helper()
	run := func(dec func(http.ResponseWriter, *http.Request, *T) bool) (bool, T, int, string) {
		var v T
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/locks/x/acquire", bytes.NewReader(body))
		ok := dec(w, r, &v)
		return ok, v, w.Code, w.Body.String()
	}
	strictOK, strictV, strictCode, strictBody := run(func(w http.ResponseWriter, r *http.Request, v *T) bool { return decode(w, r, v) })
	fastOK, fastV, fastCode, fastBody := run(fast)
	if strictOK != fastOK || strictCode != fastCode || strictBody != fastBody {
		t.Fatalf("body %q: strict %v %d %q, fast path %v %d %q", body, strictOK, strictCode, strictBody, fastOK, fastCode, fastBody)
	}
	if strictOK && !reflect.DeepEqual(strictV, fastV) {
		t.Fatalf("body %q: strict %+v, fast path %+v", body, strictV, fastV)
	}
}

func FuzzDecodeAcquire(f *testing.F) {
	for _, b := range requestBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeBoth(t, body, decodeAcquire)
		// What the hand-written decoder takes, encoding/json takes alike.
		var v AcquireRequest
		if fastAcquire(body, &v) {
			var want AcquireRequest
			if err := json.Unmarshal(body, &want); err != nil || !reflect.DeepEqual(v, want) {
				t.Fatalf("body %q: fast path %+v, json %+v (%v)", body, v, want, err)
			}
		}
	})
}

func FuzzDecodeLease(f *testing.F) {
	for _, b := range requestBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeBoth(t, body, decodeLease)
		var v LeaseRequest
		if fastLease(body, &v) {
			var want LeaseRequest
			if err := json.Unmarshal(body, &want); err != nil || !reflect.DeepEqual(v, want) {
				t.Fatalf("body %q: fast path %+v, json %+v (%v)", body, v, want, err)
			}
		}
	})
}

// The hand-written decoders do take the bodies the Client sends: the fast
// path is the one taken.
func TestFastDecodeTakesClientBodies(t *testing.T) {
	for _, in := range []any{
		AcquireRequest{Owner: "bench-1", TTL: durationPtr(15 * time.Second)},
		AcquireRequest{Owner: "h:1", LeaseID: newLeaseID().String(), TTL: durationPtr(time.Minute), Wait: durationPtr(time.Second), LockDelay: durationPtr(0), Mode: ModeShared},
		LeaseRequest{LeaseID: newLeaseID().String(), Token: 1 << 40},
		LeaseRequest{LeaseID: newLeaseID().String(), Token: 7, TTL: durationPtr(90 * time.Second)},
	} {
		body, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var ok bool
		switch in.(type) {
		case AcquireRequest:
			ok = fastAcquire(body, new(AcquireRequest))
		case LeaseRequest:
			ok = fastLease(body, new(LeaseRequest))
		}
		if !ok {
			t.Errorf("the fast path gives up on %s", body)
		}
	}
}

// A body over MaxBodyBytes is the same 400 on either path.
func TestFastDecodeOversize(t *testing.T) {
	big := []byte(`{"owner":"` + strings.Repeat("a", MaxBodyBytes) + `"}`)
	decodeBoth(t, big, decodeAcquire)
	decodeBoth(t, big, decodeLease)
	decodeBoth(t, big[:MaxBodyBytes], decodeAcquire)
}

// encodeBoth fails t unless appendLease writes json.Encoder's bytes, or
// gives up where json.Encoder fails.
func encodeLeaseBoth(t *testing.T, l Lease) {
	t.Helper()
	var want bytes.Buffer
	err := json.NewEncoder(&want).Encode(l)
	got, ok := appendLease(nil, &l)
	if !ok {
		if err == nil {
			t.Fatalf("%+v: the fast path gives up, json writes %s", l, want.Bytes())
		}
		return
	}
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%+v:\nfast path %s\njson      %s (%v)", l, got, want.Bytes(), err)
	}
	var back Lease
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	// RFC 3339 has no seconds in a zone offset: only whole minutes come back.
	if _, off := l.ExpiresAt.Zone(); off%60 == 0 && !back.ExpiresAt.Equal(l.ExpiresAt) {
		t.Fatalf("%s: expires_at %v, want %v", got, back.ExpiresAt, l.ExpiresAt)
	}
	back.ExpiresAt = l.ExpiresAt
	if valid := utf8.ValidString(l.Name + l.Sequencer + l.LeaseID + l.Owner + l.Mode); valid && !reflect.DeepEqual(back, l) {
		t.Fatalf("%s decodes to %+v, want %+v", got, back, l)
	}
}

func FuzzEncodeLease(f *testing.F) {
	f.Add("own/3", uint64(42), "own/3@42", "0123456789abcdef0123456789abcdef", "bench-3", int64(15*time.Second), int64(1_800_000_000_123_456_789), 0, uint64(0), 0, "")
	f.Add("a/b", uint64(1), "a/b@1.sig", "", "<h&s>", int64(90*time.Second), int64(0), 3600, uint64(1), 3, "shared")
	f.Add("x", uint64(math.MaxUint64), "\u2028\u2029", "\"\\", "\x00\x1f\b\f\n\r\t\x7f", int64(time.Hour), int64(-1), -19800, uint64(7), -1, "\xff\xfe")
	f.Add("é", uint64(0), "", "", "", int64(1500*time.Millisecond), int64(math.MaxInt64), 86399, uint64(0), 0, "")
	f.Add("", uint64(0), "", "", "", int64(-3*time.Second), int64(math.MinInt64), -86400, uint64(0), 0, "")
	f.Add("", uint64(0), "", "", "", int64(0), int64(253402300799_999_999_999/1000), 90061, uint64(0), 0, "")
	f.Add("", uint64(0), "", "", "", int64(100*time.Hour+time.Second), int64(0), 5, uint64(0), 0, "")
	f.Fuzz(func(t *testing.T, name string, token uint64, seq, leaseID, owner string, ttl, unixNano int64, zone int, term uint64, limit int, mode string) {
		at := time.Unix(0, unixNano).In(time.FixedZone("z", zone))
		if zone == 0 {
			at = at.UTC()
		}
		encodeLeaseBoth(t, Lease{Name: name, Token: token, Sequencer: seq, LeaseID: leaseID, Owner: owner, TTL: Duration(ttl), ExpiresAt: at, Term: term, Limit: limit, Mode: mode})
		// Years beyond 9999 and before 0, which MarshalJSON refuses.
		encodeLeaseBoth(t, Lease{Name: name, ExpiresAt: time.Date(int(unixNano%30000), 1, 1, 0, 0, 0, 0, time.FixedZone("z", zone))})
	})
}

func FuzzEncodeErrorBody(f *testing.F) {
	f.Add("lock own/1 is held", "held", uint64(3), true)
	f.Add("bad <name> & \"more\"\n\u2028\xff", "bad_request", uint64(0), false)
	f.Fuzz(func(t *testing.T, msg, code string, cur uint64, hasCur bool) {
		e := ErrorBody{Error: msg, Code: code}
		if hasCur {
			e.CurrentToken = &cur
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(e); err != nil {
			t.Fatal(err)
		}
		if got := appendErrorBody(nil, &e); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%+v:\nfast path %s\njson      %s", e, got, want.Bytes())
		}
	})
}

// The replies of the handler are byte for byte those of encoding/json, on
// either path, status and headers included.
func TestFastRepliesAsStrict(t *testing.T) {
	l := Lease{Name: "a", Token: 9, Sequencer: "a@9", LeaseID: newLeaseID().String(), Owner: "o", TTL: Duration(15 * time.Second), ExpiresAt: time.Now().UTC()}
	cur := uint64(8)
	replies := map[string]func(w http.ResponseWriter){
		"lease":    func(w http.ResponseWriter) { writeLease(w, http.StatusOK, &l) },
		"released": writeReleased,
		"error":    func(w http.ResponseWriter) { writeError(w, http.StatusConflict, CodeHeld, "held <by> someone", &cur) },
	}
	for name, reply := range replies {
		var got [2]*httptest.ResponseRecorder
		for i, strict := range []bool{false, true} {
			strictJSONOnly.Store(strict)
			got[i] = httptest.NewRecorder()
			reply(got[i])
		}
		strictJSONOnly.Store(false)
		if got[0].Code != got[1].Code || got[0].Body.String() != got[1].Body.String() || !reflect.DeepEqual(got[0].Header(), got[1].Header()) {
			t.Errorf("%s: fast path %d %v %q, strict %d %v %q", name, got[0].Code, got[0].Header(), got[0].Body, got[1].Code, got[1].Header(), got[1].Body)
		}
	}
}

// The Client's bodies are json.Marshal's bytes, and a lock name it does
// not escape needs no escaping.
func FuzzEncodeRequests(f *testing.F) {
	f.Add("bench-3", "", int64(15*time.Second), int64(0), int64(-1), "", uint64(42), "own/3")
	f.Add("h<&>:1\u2028\xff", "0123456789abcdef0123456789abcdef", int64(1500*time.Millisecond), int64(time.Minute), int64(2*time.Second), "shared", uint64(math.MaxUint64), "a b/c%2F")
	f.Fuzz(func(t *testing.T, owner, leaseID string, ttl, wait, delay int64, mode string, token uint64, name string) {
		opt := func(d int64) *Duration {
			if d == -1 {
				return nil
			}
			x := Duration(d)
			return &x
		}
		acq := AcquireRequest{Owner: owner, LeaseID: leaseID, TTL: opt(ttl), Wait: opt(wait), LockDelay: opt(delay), Mode: mode}
		want, err := json.Marshal(&acq)
		if got := appendAcquireRequest(nil, &acq); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\nfast path %s\njson      %s (%v)", acq, got, want, err)
		}
		lr := LeaseRequest{LeaseID: leaseID, Token: token, TTL: opt(wait)}
		want, err = json.Marshal(&lr)
		if got := appendLeaseRequest(nil, &lr); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\nfast path %s\njson      %s (%v)", lr, got, want, err)
		}
		if plainName(name) {
			for _, seg := range strings.Split(name, "/") {
				if url.PathEscape(seg) != seg {
					t.Fatalf("%q: segment %q escapes to %q", name, seg, url.PathEscape(seg))
				}
			}
		}
	})
}

// What the Client's reply decoder takes, json.Unmarshal takes alike, into
// a Lease that already has values.
func FuzzDecodeLeaseReply(f *testing.F) {
	for _, l := range []Lease{
		{Name: "own/3", Token: 42, Sequencer: "own/3@42", LeaseID: "0123456789abcdef0123456789abcdef", Owner: "bench-3", TTL: Duration(15 * time.Second), ExpiresAt: time.Date(2026, 11, 30, 19, 0, 0, 123456789, time.UTC)},
		{Name: "e", Token: 7, Sequencer: "e@7", Owner: "o", TTL: Duration(time.Minute), ExpiresAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600)), Term: 7, Limit: 3, Mode: "shared"},
	} {
		b, err := json.Marshal(l)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range []string{
		`{}`, `{"name":"a","Name":"b"}`, `{"name":"a","name":"b"}`, `{"extra":1}`, `{"limit":-1}`, `{"limit":1e2}`,
		`{"expires_at":"2026-13-01T00:00:00Z"}`, `{"expires_at":null}`, `{"expires_at":"2026-01-01T00:00:00.5+01:00"}`,
		`{"ttl":"15s"} x`, `{"ttl":"15"}`, `{"token":18446744073709551616}`, `{"mode":"\u0041"}`, "{\"owner\":\"\xff\"}",
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		prior := Lease{Name: "prior", Token: 1, Owner: "p", TTL: Duration(time.Second), Limit: 9}
		got := prior
		if !fastLeaseReply(body, &got) {
			if !reflect.DeepEqual(got, prior) {
				t.Fatalf("body %q: the fast path gave up but changed the lease to %+v", body, got)
			}
			return
		}
		want := prior
		if err := json.Unmarshal(body, &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q: fast path %+v, json %+v (%v)", body, got, want, err)
		}
	})
}

// A contender node's data is json.Marshal's bytes: other daemons and
// tools read it.
func FuzzMarshalContender(f *testing.F) {
	f.Add("host:1", "", "")
	f.Add("a<b>&\"c\"\n\xff\u2028", "seqd-1", "sleep 5")
	f.Fuzz(func(t *testing.T, owner, daemon, command string) {
		c := contenderData{Owner: owner, Daemon: daemon, Command: command}
		want, err := json.Marshal(c)
		if got := marshalContender(c); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\nfast path %s\njson      %s (%v)", c, got, want, err)
		}
	})
}
