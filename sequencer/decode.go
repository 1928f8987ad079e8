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
	// The content type is not checked: `curl -d` sends a form type, and the
	// body is JSON whatever it says.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("the request body is larger than %d KiB", MaxBodyBytes>>10), nil)
		} else {
			writeError(w, http.StatusBadRequest, CodeBadRequest, "could not read the request body: "+err.Error(), nil)
		}
		return false
	}
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
