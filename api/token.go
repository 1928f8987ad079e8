package api

import (
	"math"

	"github.com/seqd/seqd/fence"
)

// A fencing token is an unsigned 64-bit integer, MinToken..MaxToken,
// written in JSON as a number (parse it exactly: above 2^53 a float loses
// it) and in a sequencer or a header as base-10 digits without sign or
// leading zero. 0 is no token.
const (
	MinToken = 1
	MaxToken = math.MaxUint64
)

// ParseToken reads a token in its text form (a sequencer's or a
// Fencing-Token header's): base-10 digits, no sign, no leading zero,
// MinToken..MaxToken. Anything else is an error matching
// fence.ErrInvalidSequencer.
func ParseToken(s string) (uint64, error) { return fence.ParseToken(s) }
