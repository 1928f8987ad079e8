package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/seqd/seqd/api"
)

// keysOnce reports whether no object in the JSON text b repeats a key, at
// any depth.
func keysOnce(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var walk func() bool
	walk = func() bool {
		t, err := dec.Token()
		if err != nil {
			return true // not the strictness under test
		}
		switch t {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return true
				}
				ks, _ := k.(string)
				if seen[ks] {
					return false
				}
				seen[ks] = true
				if !walk() {
					return false
				}
			}
			dec.Token()
		case json.Delim('['):
			for dec.More() {
				if !walk() {
					return false
				}
			}
			dec.Token()
		}
		return true
	}
	return walk()
}

// decodeAllTheWay is decodeBytes without its shortcuts: every body is
// decoded into a tree first, and its keys are read token by token rather
// than scanned in place.
func decodeAllTheWay(body []byte, v any) error {
	if !utf8.Valid(body) {
		return badRequest("the request body is not valid UTF-8 (at byte %d)", invalidUTF8At(body))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return badRequest("%s", jsonSentence(err))
	}
	if trailing(body, dec) {
		return badRequest("the request body has data after the JSON object")
	}
	if _, ok := tree.(map[string]any); !ok {
		return badRequest("the request body must be a JSON object")
	}
	if err := exactKeysByToken(body, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	dec = json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("%s", jsonSentence(err))
	}
	return nil
}

// FuzzDecodeBody: whatever the body, the strict decoder never panics; what
// it accepts repeats no key at any depth, spells every key as the wire type
// does, and decodes to what its re-encoding decodes to; and it answers as
// it does without its shortcuts (word for word when it refuses).
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"owner":"a","ttl":"15s","wait":"0s","lease_id":"0123456789abcdef0123456789abcdef","mode":"shared","lock_delay":"1s"}`,
		`{"owner":"a","owner":"b"}`,
		`{"OWNER":"a"}`,
		`{"leases":[{"name":"a","lease_id":"x","token":1,"token":2}]}`,
		`{"leases":[{"name":"a","lease_id":"0123456789abcdef0123456789abcdef","token":1}],"ttl":"5s"}`,
		`{"owner":"a","own\u0065r":"b"}`, `{"leases":[{"name":"a","tok\u0065n":1,"token":2}]}`, `{"owner":"a"}}`, `{"owner":"a"}]`, `{"owner":"a"} ]`,
		`{"leases":[{"name":"a"},{"name":"b","Name":"c"}]}`, `{"leases":null}`, `{"leases":[1,"x",[{}]]}`, `{"owner":"\"}\\"}`,
		` { "owner" : "a" , "ttl" : "1s" } `, `{"":1}`, `{"leases":[{"name":"a"} , {"name":"b","name":"b"}]}`,
		``, `{}`, `[]`, `{"owner":`, `{"owner":"a"} {}`, ` {"owner":"a"} `, `"x"`, `{"owner":1}`, `{"ttl":"15s","x":1}`, "0\v", "{}\v", "{\"owner\":\"a\xff\"}", "{\"\xc3\":1}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&api.AcquireRequest{}, &api.RenewManyRequest{}, &api.CampaignRequest{}} {
			err := decodeBytes(body, v)
			ref := reflect.New(reflect.TypeOf(v).Elem()).Interface()
			if rerr := decodeAllTheWay(body, ref); (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() || err == nil && !reflect.DeepEqual(v, ref) {
				t.Fatalf("%T: %q decoded to %+v, %v; without the shortcut %+v, %v", v, body, v, err, ref, rerr)
			}
			if err == nil && len(bytes.TrimSpace(body)) > 0 {
				if !keysOnce(body) {
					t.Fatalf("%T accepted %q, which repeats a key", v, body)
				}
				again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
				b, _ := json.Marshal(v)
				if err := decodeBytes(b, again); err != nil || !reflect.DeepEqual(v, again) {
					t.Fatalf("%T: %q decoded to %+v; its encoding %s to %+v, %v", v, body, v, b, again, err)
				}
			}
			var re *api.RequestError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("%T: %q refused with %v, not a 400", v, body, err)
			}
		}
	})
}

// Bodies that are refused, each with the sentence that says why; and
// bodies the in-place key scan must read as the token reader does.
func TestDecodeRefuses(t *testing.T) {
	for _, c := range []struct {
		body string
		v    any
		want string // "" for accepted
	}{
		{`{"owner":"a"}`, &api.AcquireRequest{}, ""},
		{` { "owner" : "a\"}" , "ttl" : "1s" } `, &api.AcquireRequest{}, ""},
		{`{"owner":"a","owner":"b"}`, &api.AcquireRequest{}, `the key "owner" appears twice in the request body`},
		{`{"owner":"a","own\u0065r":"b"}`, &api.AcquireRequest{}, `the key "owner" appears twice in the request body`},
		{`{"OWNER":"a"}`, &api.AcquireRequest{}, `the key "OWNER" must be spelt "owner"`},
		{`{"owner":"a"}}`, &api.AcquireRequest{}, "the request body has data after the JSON object"},
		{`{"owner":"a"}]`, &api.AcquireRequest{}, "the request body has data after the JSON object"},
		{`{"owner":"a"} {}`, &api.AcquireRequest{}, "the request body has data after the JSON object"},
		{`{"leases":[{"name":"a","lease_id":"x","token":1},{"name":"b","token":1,"token":2}]}`, &api.RenewManyRequest{}, `the key "leases[1].token" appears twice in the request body`},
		{`{"leases":[{"name":"a","tok\u0065n":1,"token":2}]}`, &api.RenewManyRequest{}, `the key "leases[0].token" appears twice in the request body`},
		{`{"leases":[{"Name":"a"}]}`, &api.RenewManyRequest{}, `the key "leases[0].Name" must be spelt "leases[0].name"`},
	} {
		err := decodeBytes([]byte(c.body), c.v)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) || (c.want == "") != (err == nil) {
			t.Errorf("%s: got %q, want %q", c.body, got, c.want)
		}
		ref := reflect.New(reflect.TypeOf(c.v).Elem()).Interface()
		if rerr := decodeAllTheWay([]byte(c.body), ref); (rerr == nil) != (err == nil) || err != nil && rerr.Error() != err.Error() {
			t.Errorf("%s: %v, but read token by token %v", c.body, err, rerr)
		}
	}
}

// BenchmarkDecodeBody: an acquire's body and a renewal of 500 leases,
// decoded strictly with the keys scanned in place and read token by token
// (the baseline, in the same run); ratio is the scan's time over the
// token reader's.
func BenchmarkDecodeBody(b *testing.B) {
	var many strings.Builder
	many.WriteString(`{"ttl":"30s","leases":[`)
	for i := range 500 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"name":"lock-%d","lease_id":"0123456789abcdef0123456789abcdef","token":%d}`, i, 1000+i)
	}
	many.WriteString(`]}`)
	for _, c := range []struct {
		name string
		body []byte
		v    func() any
	}{
		{"acquire", []byte(`{"owner":"worker-7","ttl":"15s","wait":"5s"}`), func() any { return &api.AcquireRequest{} }},
		{"renew-500", []byte(many.String()), func() any { return &api.RenewManyRequest{} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			run := func(keys func([]byte, reflect.Type, string) error) time.Duration {
				start := time.Now()
				for range 200 {
					v := c.v()
					if err := keys(c.body, reflect.TypeOf(v).Elem(), ""); err != nil {
						b.Fatal(err)
					}
					if err := json.Unmarshal(c.body, v); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(start)
			}
			var scan, token time.Duration
			for b.Loop() {
				scan += run(exactKeys)
				token += run(exactKeysByToken)
			}
			b.ReportMetric(float64(scan)/float64(token), "ratio")
			b.ReportMetric(float64(scan.Microseconds())/float64(b.N*200), "scan-µs/op")
			b.ReportMetric(float64(token.Microseconds())/float64(b.N*200), "token-µs/op")
		})
	}
}

// A body with a bracket after its object is refused, as one with any other
// data after it is; JSON whitespace after it is not data.
func TestDecodeRefusesTrailingData(t *testing.T) {
	for body, refused := range map[string]bool{
		`{"owner":"a"}}`:           true,
		`{"owner":"a"}]`:           true,
		`{"owner":"a"} }`:          true,
		`{"owner":"a"} {}`:         true,
		"{\"owner\":\"a\"}\v":      true,
		"{\"owner\":\"a\"} \r\n\t": false,
	} {
		var v api.AcquireRequest
		err := decodeBytes([]byte(body), &v)
		if got := err != nil && strings.Contains(err.Error(), "data after the JSON object"); got != refused {
			t.Errorf("%q: %v, want refused %v", body, err, refused)
		}
	}
}
