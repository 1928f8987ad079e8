package policy_test

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/sequencer/policy"
)

// A bad line is refused with a sentence naming file and line.
func TestParsePolicyRefusesBadLines(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"allow a lock x", "p:1: a rule is allow IDENTITY KINDS NAMES ACTIONS (five words), this one has 4"},
		{"# ok\n\npermit a lock x read", `p:3: a line starts with allow, deny or quota, not "permit"`},
		{"allow a locks x read", `p:1: unknown kind "locks": want lock, shared, semaphore, election, multi or *`},
		{"deny a lock x write", `p:1: unknown action "write": want acquire, read, break, check or *`},
		{"quota a", "p:1: a quota is quota IDENTITY followed by at least one of"},
		{"quota a leases", `p:1: "leases" is not KEY=VALUE`},
		{"quota a leases=0", "p:1: leases=0: want a whole number from 1 to 1000000"},
		{"quota a max_ttl=2h", "p:1: max_ttl=2h: want a duration from 1s to 1h0m0s"},
		{"quota a holders=2", `p:1: unknown quota "holders"`},
		{"quota a names=2 names=3", "p:1: names is given twice"},
	} {
		_, err := policy.ParsePolicy("p", []byte(c.text))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParsePolicy(%q) = %v, want an error starting %q", c.text, err, c.want)
		}
	}
}

// The first matching line decides; none matching refuses; the admin and a
// nil policy pass everything.
func TestPolicyDecides(t *testing.T) {
	p, err := policy.ParsePolicy("p", []byte(`
deny  *       *            secret/*  *
allow team-*  lock,shared  team/*    acquire,read
allow *       *            *         read
quota team-a  leases=1
quota team-*  leases=5
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id, kind, action, name string
		allowed                bool
		says                   string
	}{
		{"team-a", "lock", "acquire", "team/x", true, ""},
		{"team-a", "shared", "acquire", "team/x/y", true, ""},
		{"team-a", "semaphore", "acquire", "team/x", false, "no rule of p lets team-a acquire semaphore"},
		{"team-a", "lock", "break", "team/x", false, "no rule of p"},
		{"other", "election", "read", "anything", true, ""},
		{"team-a", "lock", "read", "secret/k", false, "p:2 (deny * * secret/* *) refuses team-a to read lock \"secret/k\""},
		{"admin", "lock", "break", "secret/k", true, ""},
	} {
		e := p.Decide(c.id, c.kind, c.action, c.name)
		if (e == nil) != c.allowed || e != nil && !strings.Contains(e.Msg, c.says) {
			t.Errorf("decide(%s %s %s %s) = %v, want allowed=%v saying %q", c.id, c.kind, c.action, c.name, e, c.allowed, c.says)
		}
	}
	if q := p.QuotaOf("team-a"); q == nil || q.Leases != 1 || q.At != "p:5" {
		t.Errorf("team-a's quota = %+v, want the line p:5", q)
	}
	if q := p.QuotaOf("team-b"); q == nil || q.Leases != 5 {
		t.Errorf("team-b's quota = %+v, want the pattern's", q)
	}
	if q := p.QuotaOf("admin"); q != nil {
		t.Errorf("the admin has quota %+v", q)
	}
	var none *policy.Policy
	if e := none.Decide("x", "lock", "break", "y"); e != nil {
		t.Errorf("no policy refused: %v", e)
	}
	if !p.Named("team-a") || p.Named("team-*") || p.Named("team-b") {
		t.Error("Named must be the identities the file names without a pattern")
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{
		{"a", "a", true}, {"a", "ab", false}, {"*", "", true}, {"a*", "a/b/c", true},
		{"*c", "a/b/c", true}, {"a*c", "ac", true}, {"a*c", "abc", true}, {"ab*bc", "abc", false},
		{"a*b*c", "axxbyyc", true}, {"a*b*c", "axxcyyb", false}, {"spiffe://x/*", "spiffe://x/ns/a", true},
	} {
		if got := policy.GlobMatches(c.pat, c.s); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

func TestParseTokens(t *testing.T) {
	tok, err := policy.ParseTokens("t", []byte("# named tokens\nops  0123456789abcdef0\n\nci 0123456789abcdef1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := tok.Lookup("0123456789abcdef1"); !ok || id != "ci" {
		t.Errorf("lookup = %q %v, want ci", id, ok)
	}
	if _, ok := tok.Lookup("0123456789abcdef2"); ok {
		t.Error("an unknown token named someone")
	}
	for _, c := range []struct{ text, want string }{
		{"ops", "t:1: a line is NAME TOKEN (two words), this one has 1"},
		{"ops short", `t:1: the token of "ops" is 5 bytes`},
		{"admin 0123456789abcdef0", `t:1: "admin" is reserved`},
		{"a 0123456789abcdef0\nb 0123456789abcdef0", `t:2: the token of "b" is the token of line 1`},
		{"a 0123456789abcdef0\na 0123456789abcdef1", `t:2: "a" has a token already, at line 1`},
		{"a\x01b 0123456789abcdef0", "t:1: identity"},
	} {
		if _, err := policy.ParseTokens("t", []byte(c.text)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseTokens(%q) = %v, want an error starting %q", c.text, err, c.want)
		}
	}
}

func TestCertIdentity(t *testing.T) {
	u, _ := url.Parse("spiffe://example.org/team-a")
	for _, c := range []struct {
		cert *x509.Certificate
		want string
	}{
		{&x509.Certificate{URIs: []*url.URL{u}, DNSNames: []string{"d"}, Subject: pkix.Name{CommonName: "cn"}}, "spiffe://example.org/team-a"},
		{&x509.Certificate{DNSNames: []string{"d.example"}, Subject: pkix.Name{CommonName: "cn"}}, "d.example"},
		{&x509.Certificate{Subject: pkix.Name{CommonName: "cn"}}, "cn"},
	} {
		if got := policy.CertIdentity(c.cert); got != c.want {
			t.Errorf("CertIdentity = %q, want %q", got, c.want)
		}
	}
}

// A reload keeps the old contents when the new ones do not parse, says so
// once, and comes back when the file does.
func TestWatchedKeepsTheOldOnABadChange(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/p"
	writeFile(t, path, "allow a * * *\n")
	w, err := policy.WatchPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	old := w.Load()
	if changed, err := w.Reload(); changed || err != nil {
		t.Fatalf("an unchanged file: %v %v", changed, err)
	}
	writeFile(t, path, "allow a * *\n")
	if _, err := w.Reload(); err == nil || w.Load() != old {
		t.Fatalf("a bad change: err %v, policy replaced %v", err, w.Load() != old)
	}
	if changed, err := w.Reload(); changed || err != nil {
		t.Fatalf("the same bad change again must say nothing new: %v %v", changed, err)
	}
	writeFile(t, path, "allow b * * *\n")
	if changed, err := w.Reload(); !changed || err != nil || w.Load() == old {
		t.Fatalf("a good change: %v %v", changed, err)
	}
	if _, err := policy.WatchPolicy(dir + "/missing"); err == nil {
		t.Fatal("a missing policy file loaded")
	}
}

// Tokens files others can read are refused, like --api-token-file.
func TestTokensFileMustBePrivate(t *testing.T) {
	path := t.TempDir() + "/tokens"
	writeFile(t, path, "ops 0123456789abcdef0\n")
	if _, err := policy.WatchTokens(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.WatchTokens(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable tokens file: %v", err)
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add("allow team-* lock,shared team/* acquire,read\ndeny * * secret/* *\nquota team-a leases=1\n")
	f.Add("quota a max_ttl=1m leases=2\nallow * * * *")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := policy.ParsePolicy("f", []byte(text))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f:") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		p.Decide("a", "lock", "read", "x")
		if q := p.QuotaOf("a"); q != nil && q.MaxTTL != 0 && q.MaxTTL < time.Second {
			t.Fatalf("max_ttl %v below 1s", q.MaxTTL)
		}
	})
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
