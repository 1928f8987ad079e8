package policy_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/sequencer/policy"
)

func certNamed(cn string) *x509.Certificate {
	return &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
}

// The admin token, named tokens and certificate names are separate
// namespaces: a certificate that names admin, anonymous or a named
// token's identity is refused with a sentence, and a tokens file reloaded
// with a new name refuses the certificates that bear it from then on.
func TestIdentifyKeepsNamespacesApart(t *testing.T) {
	dir := t.TempDir()
	tfile := dir + "/tokens"
	writeFile(t, tfile, "oncall 0123456789abcdef-oncall\n")
	toks, err := policy.WatchTokens(tfile)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.ParsePolicy("p", []byte("allow * * * *\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := policy.NewAuthority(policy.AuthorityOptions{AdminToken: "admin-token-0123456789", Tokens: toks, Policy: policy.Fixed("policy", pol), CertIdentities: true})
	for _, c := range []struct {
		what, bearer, cert string
		id                 string
		via                policy.Via
		refused            string
	}{
		{"the admin token", "admin-token-0123456789", "", policy.Admin, policy.ViaAdmin, ""},
		{"the admin token beside a certificate", "admin-token-0123456789", "team-a", policy.Admin, policy.ViaAdmin, ""},
		{"a named token", "0123456789abcdef-oncall", "", "oncall", policy.ViaToken, ""},
		{"a named token beside a certificate", "0123456789abcdef-oncall", "team-a", "oncall", policy.ViaToken, ""},
		{"a certificate", "", "team-a", "team-a", policy.ViaCertificate, ""},
		{"a certificate with an unknown bearer", "the-api-token-0123456789", "team-a", "team-a", policy.ViaCertificate, ""},
		{"nothing", "", "", policy.Anonymous, policy.ViaNone, ""},
		{"a certificate named admin", "the-api-token-0123456789", "admin", "", 0, "admin token's identity"},
		{"a certificate named anonymous", "", "anonymous", "", 0, "callers nothing names"},
		{"a certificate named like a token", "the-api-token-0123456789", "oncall", "", 0, "an identity of the tokens file"},
		{"a certificate with a space", "", "seqd client", "", 0, "no identity a policy can name"},
	} {
		var cert *x509.Certificate
		if c.cert != "" {
			cert = certNamed(c.cert)
		}
		got, err := a.Identify(c.bearer, cert)
		switch {
		case c.refused != "":
			var pe *policy.Error
			if !errors.As(err, &pe) || !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: %+v %v, want a 403 saying %q", c.what, got, err, c.refused)
			}
		case err != nil || got.ID != c.id || got.Via != c.via:
			t.Errorf("%s: %+v %v, want %s via %d", c.what, got, err, c.id, c.via)
		}
	}
	// A reload that names team-a in the tokens file refuses its
	// certificate from then on.
	writeFile(t, tfile, "oncall 0123456789abcdef-oncall\nteam-a 0123456789abcdef-team-a\n")
	if _, err := toks.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Identify("", certNamed("team-a")); err == nil {
		t.Fatalf("after the reload, a team-a certificate is %+v, want refused", got)
	}
	// Without a policy a certificate whose name no policy could name is
	// anonymous, as before; one named admin is refused all the same.
	open := policy.NewAuthority(policy.AuthorityOptions{CertIdentities: true})
	if got, err := open.Identify("", certNamed("seqd client")); err != nil || got.ID != policy.Anonymous {
		t.Fatalf("no policy, a certificate with a space: %+v %v, want anonymous", got, err)
	}
	if _, err := open.Identify("", certNamed("admin")); err == nil {
		t.Fatal("no policy, a certificate named admin was let through")
	}
	// Where certificates name nobody, they are ignored.
	if got, err := policy.NewAuthority(policy.AuthorityOptions{}).Identify("", certNamed("admin")); err != nil || got.ID != policy.Anonymous {
		t.Fatalf("certificates not trusted: %+v %v, want anonymous", got, err)
	}
}

// A context that names nobody is the anonymous caller, never the admin.
func TestCallerOfNothingIsAnonymous(t *testing.T) {
	if c := policy.CallerOf(context.Background()); c.ID != policy.Anonymous || c.Via != policy.ViaNone {
		t.Fatalf("CallerOf(nothing) = %+v, want anonymous", c)
	}
	if c := policy.CallerOf(policy.WithCaller(context.Background(), policy.Caller{})); c.ID != policy.Anonymous {
		t.Fatalf("CallerOf(an empty caller) = %+v, want anonymous", c)
	}
	var nobody *policy.Authority
	if c, err := nobody.Identify("x", certNamed("admin")); err != nil || c.ID != policy.Anonymous {
		t.Fatalf("a nil Authority names %+v %v, want anonymous", c, err)
	}
}
