package api

import (
	"crypto/rand"
	"encoding/hex"
)

// LeaseIDLen is the length of a lease id on the wire: 32 lowercase hex
// digits, 128 random bits.
const LeaseIDLen = 32

// ValidLeaseID tells whether id has the wire form of a lease id: exactly
// LeaseIDLen lowercase hex digits. The daemon refuses any other (400), and
// a client refuses an answer that carries one.
func ValidLeaseID(id string) bool {
	if len(id) != LeaseIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// NewLeaseID returns a new random lease id, for a grant's lease_id: a grant
// retried with it after a lost answer finds its lease.
func NewLeaseID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
