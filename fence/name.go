package fence

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxLockNameLen is the longest lock name, in bytes.
const maxLockNameLen = 256

// checkLockName checks the syntax of a lock name: a relative path of
// segments made of [A-Za-z0-9._-], joined by '/', with no empty, "." or ".."
// segment, at most maxLockNameLen bytes. The daemon's lock library refuses
// more (segments shaped like lock contenders, which only matter to
// ZooKeeper); a resource only needs to know that the name is well-formed.
// It does not allocate: sequencers are parsed on every fenced request.
func checkLockName(name string) error {
	switch {
	case name == "":
		return errors.New("the lock name is empty")
	case len(name) > maxLockNameLen:
		return fmt.Errorf("the lock name is %d bytes, longer than %d", len(name), maxLockNameLen)
	}
	start := 0 // first byte of the current segment
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '/' {
			if c := name[i]; !nameByte(c) {
				return fmt.Errorf("lock name %q has the character %q at byte %d; use letters, digits, '.', '_', '-' and '/'", name, firstRune(name[i:]), i)
			}
			continue
		}
		switch seg := name[start:i]; seg {
		case "":
			if start == 0 {
				return fmt.Errorf("lock name %q must be relative (no leading '/')", name)
			}
			return fmt.Errorf("lock name %q has an empty path segment", name)
		case ".", "..":
			return fmt.Errorf("lock name %q has a %q segment", name, seg)
		}
		start = i + 1
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// firstRune is the character s starts with, as its error names it: a
// byte of a multi-byte character is shown as the character, not as the
// Latin-1 letter its first byte would be alone.
func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}
