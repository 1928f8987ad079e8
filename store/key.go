package store

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes is the longest key accepted.
const MaxKeyBytes = 512

// MaxValueBytes is the largest value accepted, 1 MiB: the store is for
// coordination state and demos, not blobs, and a bound keeps one request from
// holding the log's group commit for long.
const MaxValueBytes = 1 << 20

// ErrInvalidKey is wrapped by every key validation error.
var ErrInvalidKey = errors.New("store: invalid key")

// ValidateKey checks a key: like a lock name, segments of [A-Za-z0-9._-]
// joined by "/", no empty, "." or ".." segment, at most MaxKeyBytes. The set
// is small so that a key is the same string in a URL, a shell and the log.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: %d bytes is longer than %d", ErrInvalidKey, len(key), MaxKeyBytes)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return fmt.Errorf("%w: %q has the character %q at byte %d; use letters, digits, '.', '_', '-' and '/'", ErrInvalidKey, key, firstRune(key[i:]), i)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty path segment", ErrInvalidKey, key)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, key, seg)
		}
	}
	return nil
}

// firstRune is the character s starts with, as its error names it: a
// byte of a multi-byte character is shown as the character, not as the
// Latin-1 letter its first byte would be alone.
func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}
