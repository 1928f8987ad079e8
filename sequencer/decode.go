package sequencer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// Reading request bodies strictly: at most MaxBodyBytes, one JSON object,
// no unknown, repeated or differently-cased keys, and errors said as
// sentences.

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	bp := getBuf()
	body, ok := readBody(w, r, (*bp)[:0])
	defer putBuf(bp, body)
	return ok && decodeBytes(w, body, v)
}

// readBody reads the request body, appending it to buf, or answers 400
// itself and reports false.
func readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, bool) {
	// The content type is not checked: `curl -d` sends a form type, and the
	// body is JSON whatever it says.
	rd := r.Body
	if r.ContentLength < 0 || r.ContentLength > MaxBodyBytes {
		// A body of a declared length within the limit cannot go past it:
		// the server reads no more than the length (and fails a shorter
		// body alike either way).
		rd = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	}
	body, err := readAll(rd, buf)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("the request body is larger than %d KiB", MaxBodyBytes>>10), nil)
		} else {
			writeError(w, http.StatusBadRequest, CodeBadRequest, "could not read the request body: "+err.Error(), nil)
		}
		return body, false
	}
	return body, true
}

// readAll is io.ReadAll appending to b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
	}
}

// decodeBytes decodes a body read whole into v strictly, or answers 400
// itself and reports false.
func decodeBytes(w http.ResponseWriter, body []byte, v any) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := exactKeys(body, v); err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error(), nil)
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, jsonSentence(err), nil)
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "the request body has data after the JSON object", nil)
		return false
	}
	return true
}

// exactKeys refuses a body whose top-level object repeats a key or spells
// one in another case than v's JSON names: encoding/json would take the last
// of two "owner" keys and match "OWNER" too, while a proxy or log in front
// of seqd may read the first, or not see it as the owner at all.
func exactKeys(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: Decode says what is wrong
	}
	names := jsonNames(reflect.TypeOf(v).Elem())
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		if seen[key] {
			return fmt.Errorf("the key %q appears twice in the request body", key)
		}
		seen[key] = true
		if !names[key] {
			for n := range names {
				if strings.EqualFold(n, key) {
					return fmt.Errorf("the key %q must be spelt %q", key, n)
				}
			}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// jsonNames returns the JSON names of a struct type's fields.
func jsonNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	if t.Kind() != reflect.Struct {
		return names
	}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
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
	return "invalid request body: " + err.Error()
}

func jsonKind(goType string) string {
	switch goType {
	case "uint64":
		return "positive integer"
	case "string":
		return "string"
	}
	return goType
}
