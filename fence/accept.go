package fence

import "errors"

// ErrWrongLock: a sequencer of another kind or another name than the one a
// resource is guarded by. Tokens count per lock (and an election's terms,
// a semaphore's slots, per election and semaphore), so a token of another
// lock says nothing about this one's holders.
var ErrWrongLock = errors.New("fence: sequencer of another lock")

// Accept says which sequencers a resource takes: those of one lock, named
// by Kind and Name, and, when Verifier is set, only those signed by one of
// its keys. A resource that checks tokens of one lock with Accept before
// it fences a key cannot be raised to a stranger's token.
type Accept struct {
	Kind     Kind
	Name     string
	Verifier *Verifier
}

// Sequencer parses s (verifying its signature when a.Verifier is set) and
// returns it if it is of a's kind and name. A plain sequencer given to an
// Accept with a Verifier is ErrUnsigned; one of another lock ErrWrongLock;
// a malformed one ErrInvalidSequencer.
func (a Accept) Sequencer(s string) (Sequencer, error) {
	var seq Sequencer
	var err error
	if a.Verifier != nil {
		seq, err = a.Verifier.Verify(s)
	} else {
		seq, err = ParseSequencer(s)
	}
	if err != nil {
		return Sequencer{}, err
	}
	if seq.Kind != a.Kind || seq.Name != a.Name {
		return Sequencer{}, refused(ErrWrongLock, "%s %q's sequencer given to a resource of %s %q", seq.Kind, seq.Name, a.Kind, a.Name)
	}
	return seq, nil
}
