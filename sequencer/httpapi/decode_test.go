package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seqd/seqd/sequencer"

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

// decodeAllTheWay is decodeBytes without its shortcut for well-formed
// objects: every body is decoded into a tree first.
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
	if err := exactKeys(body, reflect.TypeOf(v).Elem(), ""); err != nil {
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
// it does without its shortcut for well-formed objects.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		`{"owner":"a","ttl":"15s","wait":"0s","lease_id":"0123456789abcdef0123456789abcdef","mode":"shared","lock_delay":"1s"}`,
		`{"owner":"a","owner":"b"}`,
		`{"OWNER":"a"}`,
		`{"leases":[{"name":"a","lease_id":"x","token":1,"token":2}]}`,
		`{"leases":[{"name":"a","lease_id":"0123456789abcdef0123456789abcdef","token":1}],"ttl":"5s"}`,
		`{"owner":"a"}}`, `{"owner":"a"}]`, `{"owner":"a"} ]`,
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
			var re *sequencer.RequestError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("%T: %q refused with %v, not a 400", v, body, err)
			}
		}
	})
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
