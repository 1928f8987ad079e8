package fence

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// Signed sequencers. A resource that takes any number as a token can be
// poisoned: one request carrying 18446744073709551615 raises a key's max for
// ever and no legitimate holder is admitted again. A resource that checks a
// signature admits only tokens that seqd granted. The signed form is
//
//	[<kind>:]<name>@<token>.<kid>.<sig>
//
// where sig is the unpadded base64url Ed25519 signature of the bytes
// "seqd-sequencer-v2:[<kind>:]<name>@<token>" and kid ([A-Za-z0-9_-], 1 to
// 32 bytes) names the key, so that keys can be rotated. The signature
// covers the kind: an election's term or a semaphore's token never passes
// for a lock's of the same name. Only the canonical encoding verifies (one
// spelling of the token, no unused bits set in the signature's last
// character), so that a verified sequencer can be compared as text. A
// resource holds public keys only: it can check sequencers, never mint
// them.

// signContext is signed before the sequencer, so that a signature made for
// anything else, an unkinded sequencer of the first version included, never
// passes for a sequencer's.
const signContext = "seqd-sequencer-v2:"

// MaxKeyIDLen is the longest key id.
const MaxKeyIDLen = 32

var (
	// ErrUnsigned: a verifying resource was given a plain sequencer (or a
	// bare token).
	ErrUnsigned = errors.New("fence: the sequencer is not signed")
	// ErrBadSignature: the signature does not check, or its key id is not
	// one of the verifying keys.
	ErrBadSignature = errors.New("fence: bad sequencer signature")
)

// b64 decodes strictly: a last character with unused bits set is refused,
// so that each signature has one spelling.
var b64 = base64.RawURLEncoding.Strict()

// sigLen is the length of an encoded signature.
var sigLen = b64.EncodedLen(ed25519.SignatureSize)

// Signer signs sequencers with one private key.
type Signer struct {
	kid string
	key ed25519.PrivateKey
}

// NewSigner returns a signer for key under key id kid.
func NewSigner(kid string, key ed25519.PrivateKey) (*Signer, error) {
	if err := checkKeyID(kid); err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("fence: a signing key is %d bytes, not %d", ed25519.PrivateKeySize, len(key))
	}
	return &Signer{kid: kid, key: key}, nil
}

// KeyID is the signer's key id.
func (s *Signer) KeyID() string { return s.kid }

// Public is the signer's public key.
func (s *Signer) Public() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign returns the signed form of seq.
func (s *Signer) Sign(seq Sequencer) string {
	plain := seq.String()
	sig := ed25519.Sign(s.key, []byte(signContext+plain))
	return plain + "." + s.kid + "." + b64.EncodeToString(sig)
}

// Verifier checks signed sequencers against a set of public keys, by key
// id. It remembers the sequencers it has verified (a bounded number), so a
// holder's repeated sequencer costs a map lookup, not a signature check. It
// is safe for concurrent use.
type Verifier struct {
	keys map[string]ed25519.PublicKey

	mu    sync.RWMutex
	cur   map[string]Sequencer
	older map[string]Sequencer
}

// verifiedCache is how many verified sequencers a Verifier remembers, at
// most (two generations of half each).
const verifiedCache = 1 << 14

// NewVerifier returns a verifier for keys (key id → public key).
func NewVerifier(keys map[string]ed25519.PublicKey) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("fence: a verifier needs at least one key")
	}
	for kid, k := range keys {
		if err := checkKeyID(kid); err != nil {
			return nil, fmt.Errorf("fence: %w", err)
		}
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("fence: key %q is %d bytes, not %d", kid, len(k), ed25519.PublicKeySize)
		}
	}
	return &Verifier{keys: keys, cur: map[string]Sequencer{}}, nil
}

// Verify returns the sequencer of a signed sequencer whose signature checks
// with one of the verifier's keys. A plain sequencer is ErrUnsigned; a
// signature that does not check, or an unknown key id, ErrBadSignature; a
// malformed one ErrInvalidSequencer.
func (v *Verifier) Verify(s string) (Sequencer, error) {
	v.mu.RLock()
	r, ok := v.cur[s]
	v.mu.RUnlock()
	if ok {
		return r, nil
	}
	plain, kid, sig, err := splitSigned(s)
	if err != nil {
		return Sequencer{}, err
	}
	if kid == "" {
		return Sequencer{}, refused(ErrUnsigned, "%.300q has no signature", s)
	}
	seq, err := parsePlain(plain)
	if err != nil {
		return Sequencer{}, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if r, ok := v.older[s]; ok {
		v.rememberLocked(s, r)
		return r, nil
	}
	key, ok := v.keys[kid]
	if !ok {
		return Sequencer{}, refused(ErrBadSignature, "unknown key id %q", kid)
	}
	raw, err := b64.DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize || !ed25519.Verify(key, []byte(signContext+plain), raw) {
		return Sequencer{}, refused(ErrBadSignature, "the signature of %.300q does not check with key %q", plain, kid)
	}
	v.rememberLocked(s, seq)
	return seq, nil
}

func (v *Verifier) rememberLocked(s string, seq Sequencer) {
	if len(v.cur) >= verifiedCache/2 {
		v.older, v.cur = v.cur, make(map[string]Sequencer, verifiedCache/2)
	}
	v.cur[s] = seq
}

// splitSigned splits "[<kind>:]<name>@<token>.<kid>.<sig>" into the plain sequencer,
// the key id and the signature, checking only their syntax. A plain
// sequencer comes back whole with an empty kid.
func splitSigned(s string) (plain, kid, sig string, err error) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s, "", "", nil // ParseSequencer says what is wrong
	}
	dot := strings.IndexByte(s[at:], '.')
	if dot < 0 {
		return s, "", "", nil
	}
	plain, rest := s[:at+dot], s[at+dot+1:]
	kid, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return "", "", "", refused(ErrInvalidSequencer, "%.300q: a signed sequencer is [<kind>:]<name>@<token>.<kid>.<sig>", s)
	}
	if err := checkKeyID(kid); err != nil {
		return "", "", "", refused(ErrInvalidSequencer, "%s", reason(err))
	}
	if len(sig) != sigLen {
		return "", "", "", refused(ErrInvalidSequencer, "the signature is %d characters, not %d", len(sig), sigLen)
	}
	return plain, kid, sig, nil
}

// checkKeyID checks a key id; its error is a sentence without the
// package's prefix, which callers add.
func checkKeyID(kid string) error {
	if kid == "" || len(kid) > MaxKeyIDLen {
		return fmt.Errorf("key id %.40q must be 1 to %d characters", kid, MaxKeyIDLen)
	}
	for i := 0; i < len(kid); i++ {
		c := kid[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("key id %q has the character %q; use letters, digits, '_' and '-'", kid, firstRune(kid[i:]))
		}
	}
	return nil
}

// Key files. A signing key file holds one line "<kid> <base64 seed>" (the
// 32-byte Ed25519 seed, standard base64) and must be readable by its owner
// only. A verify keys file holds one line "<kid> <base64 public key>" per
// key; blank lines and lines starting with '#' are skipped. Several lines
// let a resource accept the old and the new key while signing keys rotate.

// GenerateKey returns a new key pair under kid as the contents of a signing
// key file and the line of a verify keys file.
func GenerateKey(kid string) (signing, verify []byte, err error) {
	if err := checkKeyID(kid); err != nil {
		return nil, nil, fmt.Errorf("fence: %w", err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("fence: generating a key: %w", err)
	}
	signing = fmt.Appendf(nil, "%s %s\n", kid, base64.StdEncoding.EncodeToString(priv.Seed()))
	verify = fmt.Appendf(nil, "%s %s\n", kid, base64.StdEncoding.EncodeToString(pub))
	return signing, verify, nil
}

// ParseSigningKey reads the contents of a signing key file.
func ParseSigningKey(b []byte) (*Signer, error) {
	keys, err := parseKeyLines(b, ed25519.SeedSize, "seed")
	if err != nil {
		return nil, err
	}
	if len(keys) != 1 {
		return nil, fmt.Errorf("fence: a signing key file holds one key, not %d", len(keys))
	}
	for kid, seed := range keys {
		return NewSigner(kid, ed25519.NewKeyFromSeed(seed))
	}
	panic("unreachable")
}

// ParseVerifyKeys reads the contents of a verify keys file.
func ParseVerifyKeys(b []byte) (map[string]ed25519.PublicKey, error) {
	keys, err := parseKeyLines(b, ed25519.PublicKeySize, "public key")
	if err != nil {
		return nil, err
	}
	out := make(map[string]ed25519.PublicKey, len(keys))
	for kid, k := range keys {
		out[kid] = ed25519.PublicKey(k)
	}
	return out, nil
}

func parseKeyLines(b []byte, size int, what string) (map[string][]byte, error) {
	keys := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("fence: line %d: want \"<kid> <base64 %s>\"", n, what)
		}
		if err := checkKeyID(f[0]); err != nil {
			return nil, fmt.Errorf("fence: line %d: %w", n, err)
		}
		k, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil || len(k) != size {
			return nil, fmt.Errorf("fence: line %d: the %s of %q is not %d bytes of base64", n, what, f[0], size)
		}
		if _, dup := keys[f[0]]; dup {
			return nil, fmt.Errorf("fence: line %d: key id %q appears twice", n, f[0])
		}
		keys[f[0]] = k
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("fence: no key found")
	}
	return keys, nil
}

// LoadSigningKey reads a signing key file, refusing one that anyone can
// read: whoever reads it can mint tokens. (Its group may, for a Kubernetes
// secret mounted with fsGroup.)
func LoadSigningKey(path string) (*Signer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	if st.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("fence: signing key %s is readable by anyone (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	s, err := ParseSigningKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// LoadVerifyKeys reads a verify keys file and returns a Verifier for it.
func LoadVerifyKeys(path string) (*Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fence: %w", err)
	}
	keys, err := ParseVerifyKeys(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return NewVerifier(keys)
}
