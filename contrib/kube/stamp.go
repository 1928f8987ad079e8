package kube

import (
	"errors"
	"net/http"
	"strconv"
)

// Header names of the term on a write, those that seqd store reads: the
// sequencer ("election:<name>@<term>", signed when the daemon signs) and the
// bare term.
const (
	HeaderSequencer = "Fencing-Sequencer"
	HeaderToken     = "Fencing-Token"
)

// ErrNoTerm: a request sent through Transport whose context carries no term.
var ErrNoTerm = errors.New("kube: the request's context carries no leadership term: send it with the context OnStartedLeading was given")

// Stamp sets t's sequencer on h (HeaderSequencer). A resource that reads a
// bare token takes t.Number instead, as a header of its own or a field of
// its row.
func Stamp(h http.Header, t Term) {
	h.Set(HeaderSequencer, t.Sequencer)
}

// StampToken sets t's number on h as HeaderToken, for a resource that reads
// only a bare token.
func StampToken(h http.Header, t Term) {
	h.Set(HeaderToken, strconv.FormatUint(t.Number, 10))
}

// Transport returns a RoundTripper that stamps every request with the term
// of its context (Stamp) and passes it to next (http.DefaultTransport if
// nil). A request whose context carries no term is not sent: its error
// matches ErrNoTerm, so that no write leaves unfenced.
func Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return stamping{next}
}

type stamping struct{ next http.RoundTripper }

func (s stamping) RoundTrip(r *http.Request) (*http.Response, error) {
	t, ok := TermFrom(r.Context())
	if !ok {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, ErrNoTerm
	}
	r = r.Clone(r.Context()) // a RoundTripper leaves the caller's request as it was
	Stamp(r.Header, t)
	return s.next.RoundTrip(r)
}
