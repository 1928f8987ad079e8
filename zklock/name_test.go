package zklock

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNamesRejectedBeforeZooKeeper(t *testing.T) {
	for _, name := range []string{"", "/abs", "a//b", "a/./b", "../x", "a/..", "sp ace", "ünï", "a\x00b", string(make([]byte, 257)), "foo/x-lock-0000000000", "foo/ab__lock__0000000001"} {
		if _, err := NewMutex(nil, name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("NewMutex(%q) = %v, want ErrInvalidName", name, err)
		}
	}
	for _, name := range []string{"a", "jobs/nightly-report", "A.b_c-9", string(repeat('x', 256))} {
		if err := ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", name, err)
		}
	}
}

func repeat(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

func TestParseContender(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		seq  int64
		guid string
	}{
		{"_c_1b4e28ba-2fa1-41d2-883f-0016d3cca427-lock-0000000007", true, 7, "1b4e28ba-2fa1-41d2-883f-0016d3cca427"},
		{"_c_0123456789abcdef0123456789abcdef-lock-0000000012", true, 12, "0123456789abcdef0123456789abcdef"}, // zk.Lock
		{"x-lock-0000000003", true, 3, ""},                                           // Curator unprotected
		{"5d7a3c2e9f__lock__0000000004", true, 4, ""},                                // kazoo
		{"5d7a3c2e9f__rlock__0000000004", true, 4, ""},                               // kazoo ReadLock: a reader
		{"_c_1b4e28ba-2fa1-41d2-883f-0016d3cca427-__READ__0000000009", true, 9, ""},  // Curator's and seqd's reader
		{"_c_1b4e28ba-2fa1-41d2-883f-0016d3cca427-__WRIT__0000000010", true, 10, ""}, // Curator's writer
		{"lock-0000000001", false, 0, ""},
		{"_c_abc-lock-00000001", false, 0, ""},
		{"_c_abc-lock-000000000x", false, 0, ""},
		{"leader", false, 0, ""},
	} {
		c, ok := parseContender(tc.name)
		reader := strings.Contains(tc.name, "__READ__") || strings.Contains(tc.name, "__rlock__")
		if ok != tc.ok || c.seq != tc.seq || c.guid != tc.guid || ok && c.reader != reader {
			t.Errorf("parseContender(%q) = %+v, %v; want seq %d guid %q ok %v", tc.name, c, ok, tc.seq, tc.guid, tc.ok)
		}
	}
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "a//b", "", "ü", "a/./b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateName(name)
		if err != nil {
			return
		}
		if len(name) > MaxNameLen || name == "" {
			t.Fatalf("accepted %q", name)
		}
		for _, seg := range splitSlash(name) {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", name, seg)
			}
		}
	})
}

func splitSlash(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '/' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func FuzzParseContender(f *testing.F) {
	for _, s := range []string{"_c_1b4e28ba-2fa1-41d2-883f-0016d3cca427-lock-0000000007", "x__lock__0000000001", "lock-", "-lock-0000000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		c, ok := parseContender(name)
		if !ok {
			return
		}
		if c.seq < 0 || fmt.Sprintf("%010d", c.seq) != name[len(name)-10:] {
			t.Fatalf("%q parsed to seq %d", name, c.seq)
		}
	})
}
