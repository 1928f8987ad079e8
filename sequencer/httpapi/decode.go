package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/seqd/seqd/api"
)

// Reading request bodies strictly, the same for every route and every
// entry of a batch: at most MaxBodyBytes, one JSON object, no unknown,
// repeated or differently-cased keys at any depth, and errors said as
// sentences.

// decode reads r's body into v strictly. A failure is a *RequestError.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	rd := r.Body
	if r.ContentLength < 0 || r.ContentLength > api.MaxBodyBytes {
		// A body of a declared length within the limit cannot go past it:
		// the server reads no more than the length.
		rd = http.MaxBytesReader(w, r.Body, api.MaxBodyBytes)
	}
	// The content type was checked before: a POST says application/json.
	body, err := io.ReadAll(rd)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return badRequest("the request body is larger than %d KiB", api.MaxBodyBytes>>10)
		}
		return badRequest("could not read the request body: %v", err)
	}
	return decodeBytes(body, v)
}

// decodeBytes decodes a body read whole into v strictly.
func decodeBytes(body []byte, v any) error {
	if !utf8.Valid(body) {
		// encoding/json would read each bad byte as U+FFFD: two different
		// owners, names or reasons would come out the same.
		return badRequest("the request body is not valid UTF-8 (at byte %d)", invalidUTF8At(body))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	// A well-formed object (the usual body) is told apart by json.Valid,
	// which allocates nothing; anything else is decoded for the sentence
	// that says what is wrong.
	if !json.Valid(body) || bytes.TrimLeft(body, " \t\r\n")[0] != '{' {
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
	}
	if err := exactKeys(body, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("%s", jsonSentence(err))
	}
	return nil
}

// trailing reports whether body has more than JSON whitespace after the
// value dec has read (a closing bracket too, which dec.More does not count).
func trailing(body []byte, dec *json.Decoder) bool {
	return len(bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n")) > 0
}

// invalidUTF8At is the offset of the first byte of b that is not UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// exactKeys walks the JSON value raw against the Go type t and refuses an
// object that repeats a key or spells one in another case than t's JSON
// names, at any depth (a batch's entries included): encoding/json would
// take the last of two "owner" keys and match "OWNER" too, while a proxy or
// log in front of seqd may read the first, or not see it at all. at is
// where raw sits in the body, for the message.
//
// It scans the bytes in place, allocating nothing for a body whose keys
// are plain; a key with an escape in it (which may spell another key), or
// anything that is not well-formed JSON, is left to exactKeysByToken,
// which reads the value token by token.
func exactKeys(raw []byte, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k := t.Kind()
	if k != reflect.Slice && k != reflect.Struct {
		return nil
	}
	sc := scanner{b: raw}
	sc.space()
	if k == reflect.Slice {
		if e := elemKind(t.Elem()); e != reflect.Struct && e != reflect.Slice {
			return nil // no keys inside: nothing to walk
		}
		if !sc.is('[') {
			return exactKeysByToken(raw, t, at)
		}
		sc.i++
		for n := 0; ; n++ {
			sc.space()
			if sc.is(']') {
				return nil
			}
			v, ok := sc.value()
			if !ok {
				return exactKeysByToken(raw, t, at)
			}
			if err := exactKeys(v, t.Elem(), at+"["+strconv.Itoa(n)+"]"); err != nil {
				return err
			}
			if !sc.next(']') {
				return exactKeysByToken(raw, t, at)
			}
		}
	}
	if !sc.is('{') {
		return exactKeysByToken(raw, t, at)
	}
	sc.i++
	fields := fieldsOf(t)
	var seenKeys [8][]byte
	seen := seenKeys[:0]
	for {
		sc.space()
		if sc.is('}') {
			return nil
		}
		key, plain, ok := sc.str()
		if !plain || !ok {
			return exactKeysByToken(raw, t, at)
		}
		for _, s := range seen {
			if bytes.Equal(s, key) {
				return badRequest("the key %q appears twice in the request body", strings.TrimPrefix(at+"."+string(key), "."))
			}
		}
		seen = append(seen, key)
		ft, known := fields[string(key)]
		if !known {
			for n := range fields {
				if strings.EqualFold(n, string(key)) {
					return badRequest("the key %q must be spelt %q", strings.TrimPrefix(at+"."+string(key), "."), strings.TrimPrefix(at+"."+n, "."))
				}
			}
		}
		sc.space()
		if !sc.is(':') {
			return exactKeysByToken(raw, t, at)
		}
		sc.i++
		sc.space()
		v, ok := sc.value()
		if !ok {
			return exactKeysByToken(raw, t, at)
		}
		if known {
			if e := elemKind(ft); e == reflect.Struct || e == reflect.Slice {
				if err := exactKeys(v, ft, strings.TrimPrefix(at+"."+string(key), ".")); err != nil {
					return err
				}
			}
		}
		if !sc.next('}') {
			return exactKeysByToken(raw, t, at)
		}
	}
}

// elemKind is t's kind under its pointers.
func elemKind(t reflect.Type) reflect.Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

// scanner reads JSON text in place for exactKeys. Each method reports
// whether it found what it reads; on text that is not well-formed it
// stops, never reading past the end.
type scanner struct {
	b []byte
	i int
}

func (sc *scanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

func (sc *scanner) is(c byte) bool { return sc.i < len(sc.b) && sc.b[sc.i] == c }

// next steps over the comma between two members or items, or stops at the
// closing bracket end (left for the caller's loop to find).
func (sc *scanner) next(end byte) bool {
	sc.space()
	if sc.is(',') {
		sc.i++
		return true
	}
	return sc.is(end)
}

// str reads a string, returning what is between its quotes; plain is false
// if it has an escape in it, ok false if it does not end.
func (sc *scanner) str() (s []byte, plain, ok bool) {
	if !sc.is('"') {
		return nil, false, false
	}
	start := sc.i + 1
	plain = true
	for sc.i = start; sc.i < len(sc.b); sc.i++ {
		switch sc.b[sc.i] {
		case '\\':
			plain = false
			sc.i++
		case '"':
			sc.i++
			return sc.b[start : sc.i-1], plain, true
		}
	}
	return nil, false, false
}

// value steps over one value, returning its text.
func (sc *scanner) value() ([]byte, bool) {
	start := sc.i
	if sc.is('"') {
		_, _, ok := sc.str()
		return sc.b[start:sc.i], ok
	}
	if !sc.is('{') && !sc.is('[') {
		for sc.i < len(sc.b) && !endsLiteral(sc.b[sc.i]) {
			sc.i++
		}
		return sc.b[start:sc.i], sc.i > start
	}
	depth := 0
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case '"':
			if _, _, ok := sc.str(); !ok {
				return nil, false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
		sc.i++
		if depth == 0 {
			return sc.b[start:sc.i], true
		}
	}
	return nil, false
}

// endsLiteral reports whether c ends a number, true, false or null.
func endsLiteral(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// fieldTypes caches jsonFields by struct type.
var fieldTypes sync.Map // reflect.Type -> map[string]reflect.Type

func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldTypes.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f := jsonFields(t)
	fieldTypes.Store(t, f)
	return f
}

// exactKeysByToken is exactKeys reading raw token by token, which decodes
// escapes in keys.
func exactKeysByToken(raw []byte, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil // Decode says what is wrong
		}
		for i, it := range items {
			if err := exactKeysByToken(it, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil // not an object: Decode says what is wrong
	}
	fields := fieldsOf(t)
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		where := strings.TrimPrefix(at+"."+key, ".")
		if seen[key] {
			return badRequest("the key %q appears twice in the request body", where)
		}
		seen[key] = true
		ft, known := fields[key]
		if !known {
			for n := range fields {
				if strings.EqualFold(n, key) {
					return badRequest("the key %q must be spelt %q", where, strings.TrimPrefix(at+"."+n, "."))
				}
			}
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil
		}
		if known {
			if err := exactKeysByToken(val, ft, where); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps a struct type's JSON names to their field types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			out[name] = f.Type
		}
	}
	return out
}

func jsonSentence(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be a %s, not a JSON %s", te.Field, jsonKind(te.Type.String()), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: the body ends too soon"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return "invalid request body: " + strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(goType string) string {
	switch goType {
	case "uint64":
		return "positive integer"
	case "int":
		return "whole number"
	case "string", "api.Duration":
		return "string"
	}
	return goType
}
