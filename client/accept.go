package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seqd/seqd/api"
)

// ErrProtocol is matched by every *ProtocolError: the daemon's answer
// broke the protocol, and nothing of it is trusted.
var ErrProtocol = errors.New("seqd: the daemon's answer broke the protocol")

// quoteLen is how much of a bad answer a ProtocolError quotes.
const quoteLen = 200

// ProtocolError is a 2xx answer the client refuses: not application/json,
// not JSON of the documented shape, cut short, for another name or lease
// id, or with a token outside 1..MaxToken or other than the lease's (a
// lease's token never changes). Something other than seqd answered (a
// proxy, a wrong port) or the daemon is broken. A Held lease that gets one
// on renewal is lost at once.
type ProtocolError struct {
	Addr        string // the daemon's base URL
	Request     string // "POST /v1/locks/x/acquire"
	Problem     string // what is wrong with the answer
	Status      int
	ContentType string
	Sent        string // the answer's first 200 bytes, the API token taken out
}

func (e *ProtocolError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "(no Content-Type)"
	}
	return fmt.Sprintf("seqd: the daemon at %s broke the protocol answering %s: %s; it sent %d %s: %q",
		e.Addr, e.Request, e.Problem, e.Status, ct, e.Sent)
}

// Is makes a *ProtocolError match ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// protocolError quotes raw, without the API token.
func (c *Client) protocolError(request, problem string, status int, contentType string, raw []byte) *ProtocolError {
	sent := c.redact(string(raw))
	if len(sent) > quoteLen {
		sent = sent[:quoteLen]
	}
	return &ProtocolError{Addr: c.base, Request: request, Problem: problem, Status: status, ContentType: contentType, Sent: sent}
}

// redact takes the API token out of a text that quotes what a daemon sent.
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, c.token, "[redacted]")
}

// leaseProblem says what is wrong with a lease the daemon answered for
// name, or "": the rules every seqd client applies to a grant or a renewal
// (docs/clients.md). leaseID is the one the request sent; token, on a
// renewal, the lease's (it never changes), else 0. Lease ids are never
// quoted: they are secrets. Tokens that are not base-10 integers in
// 0..2^64-1 fail to decode before this.
func leaseProblem(l api.Lease, name, leaseID string, token uint64) string {
	switch {
	case l.Name == "":
		return "the lease has no name"
	case l.Name != name:
		return fmt.Sprintf("the lease is for the name %q, not the requested %q", l.Name, name)
	case l.Token == 0:
		return "the lease has no token, or token 0, out of the range 1..2^64-1"
	case token != 0 && l.Token != token:
		return fmt.Sprintf("the token changed from %d to %d: a lease's token never changes", token, l.Token)
	case !api.ValidLeaseID(l.LeaseID):
		return "the lease id is not 32 lowercase hex digits"
	case leaseID != "" && l.LeaseID != leaseID:
		return "the lease id is not the one the request sent"
	case l.Sequencer == "":
		return "the lease has no sequencer"
	case l.TTL <= 0:
		return "the lease has no positive ttl"
	}
	return ""
}

// multiLeaseProblem is leaseProblem for a multi-lock lease: one lock per
// name asked for, in that order; on a renewal (refs not nil), each with
// its token.
func multiLeaseProblem(l api.MultiLease, names []string, leaseID string, refs []api.LockRef) string {
	switch {
	case !api.ValidLeaseID(l.LeaseID):
		return "the lease id is not 32 lowercase hex digits"
	case leaseID != "" && l.LeaseID != leaseID:
		return "the lease id is not the one the request sent"
	case len(l.Locks) != len(names):
		return fmt.Sprintf("the lease has %d locks, not the %d asked for", len(l.Locks), len(names))
	case l.TTL <= 0:
		return "the lease has no positive ttl"
	}
	for i, lk := range l.Locks {
		switch {
		case lk.Name != names[i]:
			return fmt.Sprintf("lock %d of the lease is %q, not the requested %q", i, lk.Name, names[i])
		case lk.Token == 0:
			return fmt.Sprintf("the lock %q has no token, or token 0, out of the range 1..2^64-1", lk.Name)
		case refs != nil && lk.Token != refs[i].Token:
			return fmt.Sprintf("the token of %q changed from %d to %d: a lease's token never changes", lk.Name, refs[i].Token, lk.Token)
		}
	}
	return ""
}
