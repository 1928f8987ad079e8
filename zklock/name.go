package zklock

import (
	"errors"
	"fmt"
	"strings"
)

// MaxNameLen is the longest lock name accepted, in bytes.
const MaxNameLen = 256

// ErrInvalidName is wrapped by every name validation error.
var ErrInvalidName = errors.New("zklock: invalid lock name")

// ValidateName checks a lock name: a relative path of segments made of
// [A-Za-z0-9._-], joined by "/", with no empty, "." or ".." segment, at most
// MaxNameLen bytes. The error is a sentence a user can act on.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: the name is empty", ErrInvalidName)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: %d bytes is longer than %d", ErrInvalidName, len(name), MaxNameLen)
	}
	if name[0] == '/' {
		return fmt.Errorf("%w: %q must be relative (no leading slash)", ErrInvalidName, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return fmt.Errorf("%w: %q has the character %q at byte %d; use letters, digits, '.', '_', '-' and '/'", ErrInvalidName, name, rune(c), i)
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty path segment", ErrInvalidName, name)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidName, name, seg)
		}
		// A lock node is a child of its parent lock's node: a segment named
		// like a contender would pass for one there and block that lock.
		if _, ok := parseContender(seg); ok {
			return fmt.Errorf("%w: %q has a segment %q named like a lock contender (…-lock- or …__lock__ and 10 digits)", ErrInvalidName, name, seg)
		}
	}
	return nil
}
