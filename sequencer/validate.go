package sequencer

import (
	"errors"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/zklock"
)

// What every kind's request checks alike: a name, a TTL.

// validateName checks a name of family f: a lock name, and for a
// semaphore no segment that reaches its own nodes.
func validateName(f api.Family, name string) error {
	check := zklock.ValidateName
	if f == api.Semaphores {
		check = zklock.ValidateSemaphoreName
	}
	var ne *zklock.NameError
	if err := check(name); errors.As(err, &ne) {
		return badRequest("invalid name: %s", ne.Reason)
	} else if err != nil {
		return badRequest("invalid name: %v", err)
	}
	return nil
}

// optionalTTL reads an optional TTL: 0 when absent.
func optionalTTL(d *api.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	return time.Duration(*d), validateTTL(time.Duration(*d))
}

func validateTTL(ttl time.Duration) error {
	if ttl < api.MinTTL || ttl > api.MaxTTL {
		return badRequest("ttl %v is out of range: it must be between %v and %v", ttl, api.MinTTL, api.MaxTTL)
	}
	return nil
}
