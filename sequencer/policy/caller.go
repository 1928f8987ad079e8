package policy

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"fmt"
)

// Via says how a caller was named.
type Via uint8

const (
	ViaNone        Via = iota // anonymous: no admin token, named token or certificate
	ViaAdmin                  // the admin token
	ViaToken                  // a named bearer token
	ViaCertificate            // a client certificate
)

// Caller is who sends a request, as a transport names it with an
// Authority and attaches it with WithCaller. The verbs of the lease
// service judge it; they never take a transport's word for more.
type Caller struct {
	ID  string
	Via Via
}

type callerKey struct{}

// WithCaller is ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf is the caller ctx carries; Anonymous when it carries none, so
// that an in-process call that names nobody is never the admin.
func CallerOf(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok && c.ID != "" {
		return c
	}
	return Caller{ID: Anonymous}
}

// Authority names callers from what they present, and holds the files
// that decide what they may do: the admin token, the named tokens, the
// policy. A nil *Authority names every caller Anonymous and has no policy.
type Authority struct {
	adminToken string
	tokens     *Watched[Tokens]
	policy     *Watched[Policy]
	certs      bool
}

// AuthorityOptions configures NewAuthority; every field is optional.
type AuthorityOptions struct {
	// AdminToken names its bearer Admin.
	AdminToken string
	// Tokens are the named bearer tokens, reloaded when their file changes.
	Tokens *Watched[Tokens]
	// Policy judges every request by its caller; none allows everything
	// (breaks aside, which need the admin).
	Policy *Watched[Policy]
	// CertIdentities names a caller by its client certificate. Set it only
	// when the TLS layer verifies client certificates against a CA.
	CertIdentities bool
}

// NewAuthority is an Authority over o.
func NewAuthority(o AuthorityOptions) *Authority {
	return &Authority{adminToken: o.AdminToken, tokens: o.Tokens, policy: o.Policy, certs: o.CertIdentities}
}

// Policy is the policy in force, nil for none.
func (a *Authority) Policy() *Policy {
	if a == nil {
		return nil
	}
	return a.policy.Load()
}

// Tokens are the named tokens in force, nil for none.
func (a *Authority) Tokens() *Tokens {
	if a == nil {
		return nil
	}
	return a.tokens.Load()
}

// HasAdmin reports whether an admin token is configured.
func (a *Authority) HasAdmin() bool { return a != nil && a.adminToken != "" }

// HasTokens reports whether named tokens are configured.
func (a *Authority) HasTokens() bool { return a != nil && a.tokens != nil }

// IsAdminToken reports, in constant time, whether bearer is the admin
// token.
func (a *Authority) IsAdminToken(bearer string) bool {
	if !a.HasAdmin() {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(bearer), []byte(a.adminToken)) == 1
}

// Identify names the caller that presents bearer (a bearer token, "" for
// none) and cert (its verified client certificate, nil for none): the
// admin token, else a named token, else the certificate (when the
// Authority names callers by certificate), else Anonymous. A named token
// names its caller on a connection with a certificate too: there the
// certificate opens the connection, the token says who calls.
//
// A certificate that names Admin, Anonymous or an identity of the tokens
// file in force is refused (a 403): the three namespaces never meet. One
// whose name is not a valid identity is refused under a policy, and is
// Anonymous without one.
func (a *Authority) Identify(bearer string, cert *x509.Certificate) (Caller, error) {
	if a == nil {
		return Caller{ID: Anonymous}, nil
	}
	if a.IsAdminToken(bearer) {
		return Caller{ID: Admin, Via: ViaAdmin}, nil
	}
	if name, ok := a.Tokens().Lookup(bearer); ok {
		return Caller{ID: name, Via: ViaToken}, nil
	}
	if !a.certs || cert == nil {
		return Caller{ID: Anonymous}, nil
	}
	name := CertIdentity(cert)
	if why := ValidIdentity(name); why != "" {
		if a.Policy() != nil {
			return Caller{}, &Error{Msg: "the client certificate names no identity a policy can name: " + why}
		}
		return Caller{ID: Anonymous}, nil
	}
	if err := a.certName(name); err != nil {
		return Caller{}, err
	}
	return Caller{ID: name, Via: ViaCertificate}, nil
}

// Reserved says why no certificate may name identity name ("" when one
// may, as far as the names fixed in code go: a tokens file may hold more).
func Reserved(name string) string {
	switch name {
	case Admin:
		return fmt.Sprintf("%q is the admin token's identity: a certificate cannot make its caller the operator", name)
	case Anonymous:
		return fmt.Sprintf("%q is the identity of callers nothing names", name)
	}
	return ""
}

// certName refuses a certificate's name that another namespace holds.
func (a *Authority) certName(name string) error {
	switch {
	case Reserved(name) != "":
		return &Error{Msg: "the client certificate names " + Reserved(name) + "; issue it under another name"}
	case a.Tokens().Has(name):
		return &Error{Msg: fmt.Sprintf("the client certificate names %q, an identity of the tokens file: a certificate cannot take a named token's rights; issue it under another name, or send that token", name)}
	}
	return nil
}
