package termtext

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Every rune a terminal acts on comes out as a visible escape; printable
// text, tabs of JSON aside, comes out as it went in.
func TestSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"jobs/nightly", "jobs/nightly"},
		{"ünïcode ok", "ünïcode ok"},
		{"a\x1b]52;c;x\x07b", `a\x1b]52;c;x\x07b`},
		{"row\n1\tforged\r", `row\n1\tforged\r`},
		{"\u202eevil", `\u202eevil`},
		{"c1\u009b", `c1\u009b`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"del\x7f", `del\x7f`},
	} {
		if got := Safe(tc.in); got != tc.want {
			t.Errorf("Safe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// JSON escapes what encoding/json leaves (DEL, C1, bidirectional runes)
// and the result decodes to the same value.
func TestJSONKeepsTheValue(t *testing.T) {
	v := map[string]string{"owner": "evil\x7f\u009b\u202e\x1b"}
	var b bytes.Buffer
	if err := json.NewEncoder(JSON{W: &b}).Encode(v); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(b.Bytes(), "\x7f\u009b\u202e\x1b") {
		t.Errorf("JSON wrote a rune a terminal acts on: %q", b.String())
	}
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["owner"] != v["owner"] {
		t.Errorf("decoded %q (%v), want %q", back["owner"], err, v["owner"])
	}
}

// A pseudo-terminal is a terminal; a pipe, a file and a buffer are not.
func TestIsTerminal(t *testing.T) {
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	defer pty.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name string
		w    any
		want bool
	}{
		{"pty", pty, true},
		{"pipe", w, false},
		{"file", file, false},
		{"buffer", &bytes.Buffer{}, false},
	} {
		if got := IsTerminal(tc.w); got != tc.want {
			t.Errorf("%s: IsTerminal %v, want %v", tc.name, got, tc.want)
		}
	}
}
