package zklock

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest lock name accepted, in bytes.
const MaxNameLen = 256

// ErrInvalidName is matched by every name validation error (a *NameError).
var ErrInvalidName = errors.New("zklock: invalid lock name")

// NameError is a name that validation refused. Reason is a sentence a user
// can act on, without the package's prefix.
type NameError struct {
	Name   string
	Reason string
}

func (e *NameError) Error() string { return "zklock: invalid lock name: " + e.Reason }

// Is makes errors.Is(err, ErrInvalidName) true.
func (e *NameError) Is(target error) bool { return target == ErrInvalidName }

// ValidateName checks a lock name: a relative path of segments made of
// [A-Za-z0-9._-], joined by "/", with no empty, "." or ".." segment, at most
// MaxNameLen bytes. The error is a sentence a user can act on.
func ValidateName(name string) error {
	if name == "" {
		return &NameError{Name: name, Reason: "the name is empty"}
	}
	if len(name) > MaxNameLen {
		return &NameError{Name: name, Reason: fmt.Sprintf("the name is %d bytes, longer than %d", len(name), MaxNameLen)}
	}
	if name[0] == '/' {
		return &NameError{Name: name, Reason: fmt.Sprintf("%q must be relative (no leading slash)", name)}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return &NameError{Name: name, Reason: fmt.Sprintf("%q has the character %q at byte %d; use letters, digits, '.', '_', '-' and '/'", name, firstRune(name[i:]), i)}
		}
	}
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "":
			return &NameError{Name: name, Reason: fmt.Sprintf("%q has an empty path segment", name)}
		case ".", "..":
			return &NameError{Name: name, Reason: fmt.Sprintf("%q has a %q segment", name, seg)}
		}
		// A lock node is a child of its parent lock's node: a segment named
		// like a contender would pass for one there and block that lock.
		if _, ok := parseContender(seg); ok {
			return &NameError{Name: name, Reason: fmt.Sprintf("%q has a segment %q named like a lock contender (…-lock- or …__lock__ and 10 digits)", name, seg)}
		}
	}
	return nil
}

// Root is a root a program uses, with what it is for (for messages).
type Root struct {
	What string // e.g. "--root (locks)"
	Path string
}

// ErrNestedRoots: two roots nest, so that a name under one reaches the
// other's nodes.
var ErrNestedRoots = errors.New("zklock: roots nest")

// CheckRoots refuses roots that are not absolute znode paths, and roots of
// which one is, or lies inside, another or another's lock-delay markers
// (<root>.delay): with them, a name of one kind would reach the nodes of
// another (with --root /seqd, the lock "elections/x" would be the
// election "x").
func CheckRoots(roots ...Root) error {
	type span struct {
		owner      int // index in roots
		what, path string
	}
	var spans []span // every root and its marker directory
	for i, r := range roots {
		if r.Path == "" || r.Path[0] != '/' || strings.HasSuffix(r.Path, "/") || strings.Contains(r.Path, "//") {
			return fmt.Errorf("zklock: %s %q must be an absolute znode path such as /seqd/locks", r.What, r.Path)
		}
		spans = append(spans, span{i, r.What, r.Path}, span{i, r.What + "'s lock-delay markers", markerDirOf(r.Path)})
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.owner != b.owner && (within(a.path, b.path) || within(b.path, a.path)) {
				return fmt.Errorf("%w: %s %s and %s %s nest: a name under one would reach the other's nodes; give each kind a root of its own, such as /seqd/locks, /seqd/semaphores and /seqd/elections", ErrNestedRoots, a.what, a.path, b.what, b.path)
			}
		}
	}
	return nil
}

// within reports whether p is root or lies under it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// firstRune is the character s starts with, as its error names it: a
// byte of a multi-byte character is shown as the character, not as the
// Latin-1 letter its first byte would be alone.
func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}
