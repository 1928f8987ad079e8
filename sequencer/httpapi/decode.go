package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
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
func exactKeys(raw []byte, t reflect.Type, at string) error {
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
			if err := exactKeys(it, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
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
	fields := jsonFields(t)
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
			if err := exactKeys(val, ft, where); err != nil {
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
