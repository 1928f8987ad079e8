package policy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seqd/seqd/api"
)

// The policy file: who may do what to which names, and how much of the
// daemon each identity may take. One rule or quota per line:
//
//	allow IDENTITY KINDS NAMES ACTIONS
//	deny  IDENTITY KINDS NAMES ACTIONS
//	quota IDENTITY [max_ttl=D] [leases=N] [waiters=N] [names=N]
//
// IDENTITY and NAMES are patterns where * stands for any run of
// characters, slashes included; KINDS is a comma list of lock, shared,
// semaphore, election, multi (or *); ACTIONS of acquire, read, break,
// check (or *). The first allow or deny line that matches a request
// decides it; a request no line matches is refused. The first quota line
// whose pattern matches an identity is its quota. "#" starts a comment.

// Actions a policy rule names.
const (
	ActAcquire = "acquire" // acquire, campaign, a multi-lock's acquire
	ActRead    = "read"    // status reads, listings, the overview (and so /ui/)
	ActBreak   = "break"   // break a holder
	ActCheck   = "check"   // POST /v1/check
)

// Kinds a policy rule names.
const (
	KindLockWord      = "lock"
	KindSharedWord    = "shared"
	KindSemaphoreWord = "semaphore"
	KindElectionWord  = "election"
	KindMultiWord     = "multi"
)

var (
	policyKinds   = []string{KindLockWord, KindSharedWord, KindSemaphoreWord, KindElectionWord, KindMultiWord}
	policyActions = []string{ActAcquire, ActRead, ActBreak, ActCheck}
)

// Policy is a parsed policy file. A nil *Policy allows everything: the
// daemon without --policy-file.
type Policy struct {
	file   string
	rules  []rule
	quotas []Quota
	// named are the identities the file names without a pattern: they get
	// metric series of their own.
	named map[string]bool
}

type rule struct {
	at      string // file:line
	text    string // the line, for the refusal's sentence
	allow   bool
	ident   glob
	names   glob
	kinds   uint8 // bits of policyKinds
	actions uint8 // bits of policyActions
}

// Quota is what an identity may take at once; 0 is no limit.
type Quota struct {
	At      string // file:line
	text    string
	ident   glob
	MaxTTL  time.Duration // the longest TTL a grant or renewal may ask
	Leases  int           // leases held (and being granted) at once
	Waiters int           // acquires in flight at once
	Names   int           // distinct names held (and being granted) at once
}

// ParsePolicy reads a policy file's text; file names it in errors and in
// refusals. A bad line is refused with a sentence naming file and line.
func ParsePolicy(file string, data []byte) (*Policy, error) {
	p := &Policy{file: file, named: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		at := fmt.Sprintf("%s:%d", file, n)
		text := strings.Join(f, " ")
		var err error
		switch f[0] {
		case "allow", "deny":
			var r rule
			if r, err = parseRule(f); err == nil {
				r.at, r.text, r.allow = at, text, f[0] == "allow"
				p.rules = append(p.rules, r)
			}
		case "quota":
			var q Quota
			if q, err = parseQuota(f); err == nil {
				q.At, q.text = at, text
				p.quotas = append(p.quotas, q)
			}
		default:
			err = fmt.Errorf("a line starts with allow, deny or quota, not %q", f[0])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", at, err)
		}
		if id := f[1]; !strings.Contains(id, "*") {
			p.named[id] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// LoadPolicy reads the policy file at path.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(path, data)
}

func parseRule(f []string) (rule, error) {
	if len(f) != 5 {
		return rule{}, fmt.Errorf("a rule is %s IDENTITY KINDS NAMES ACTIONS (five words), this one has %d", f[0], len(f))
	}
	var r rule
	var err error
	if r.ident, err = parseGlob("identity", f[1]); err != nil {
		return r, err
	}
	if r.kinds, err = parseSet("kind", f[2], policyKinds); err != nil {
		return r, err
	}
	if r.names, err = parseGlob("name", f[3]); err != nil {
		return r, err
	}
	if r.actions, err = parseSet("action", f[4], policyActions); err != nil {
		return r, err
	}
	return r, nil
}

func parseQuota(f []string) (Quota, error) {
	if len(f) < 3 {
		return Quota{}, fmt.Errorf("a quota is quota IDENTITY followed by at least one of max_ttl=D leases=N waiters=N names=N")
	}
	var q Quota
	var err error
	if q.ident, err = parseGlob("identity", f[1]); err != nil {
		return q, err
	}
	seen := map[string]bool{}
	for _, kv := range f[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return q, fmt.Errorf("%q is not KEY=VALUE (max_ttl=1m, leases=10, waiters=5, names=10)", kv)
		}
		if seen[k] {
			return q, fmt.Errorf("%s is given twice", k)
		}
		seen[k] = true
		if k == "max_ttl" {
			d, err := time.ParseDuration(v)
			if err != nil || d < api.MinTTL || d > api.MaxTTL {
				return q, fmt.Errorf("max_ttl=%s: want a duration from %v to %v", v, api.MinTTL, api.MaxTTL)
			}
			q.MaxTTL = d
			continue
		}
		var dst *int
		switch k {
		case "leases":
			dst = &q.Leases
		case "waiters":
			dst = &q.Waiters
		case "names":
			dst = &q.Names
		default:
			return q, fmt.Errorf("unknown quota %q: want max_ttl, leases, waiters or names", k)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			return q, fmt.Errorf("%s=%s: want a whole number from 1 to 1000000", k, v)
		}
		*dst = n
	}
	return q, nil
}

// parseSet reads a comma list of words of all (or *) as bits.
func parseSet(what, s string, all []string) (uint8, error) {
	if s == "*" {
		return 1<<len(all) - 1, nil
	}
	var bits uint8
	for _, w := range strings.Split(s, ",") {
		i := indexOf(all, w)
		if i < 0 {
			return 0, fmt.Errorf("unknown %s %q: want %s or *", what, w, strings.Join(all, ", "))
		}
		bits |= 1 << i
	}
	return bits, nil
}

func indexOf(all []string, w string) int {
	for i, a := range all {
		if a == w {
			return i
		}
	}
	return -1
}

// glob is a pattern where * stands for any run of characters.
type glob struct {
	parts []string // split at *; one part: no *
}

func parseGlob(what, s string) (glob, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return glob{}, fmt.Errorf("the %s pattern %q has a control or non-ASCII character", what, s)
		}
	}
	return glob{parts: strings.Split(s, "*")}, nil
}

func (g glob) match(s string) bool {
	p := g.parts
	if len(p) == 1 {
		return s == p[0]
	}
	first, last := p[0], p[len(p)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, mid := range p[1 : len(p)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return true
}

// Error is a request the policy refuses: a 403 forbidden, or a 429
// quota_exceeded when a quota refuses it. Msg names the rule (file:line).
type Error struct {
	Quota bool
	Msg   string
}

func (e *Error) Error() string { return e.Msg }

// Is matches api.ErrQuotaExceeded for a quota, api.ErrForbidden (and
// api.ErrUnauthorized, as every 403 does) for a rule.
func (e *Error) Is(target error) bool {
	if e.Quota {
		return target == api.ErrQuotaExceeded
	}
	return target == api.ErrForbidden || target == api.ErrUnauthorized
}

// Decide refuses identity id action on the name of kind (a policy word),
// or lets it through (nil).
func (p *Policy) Decide(id, kind, action, name string) *Error {
	return p.For(id).Decide(kind, action, name)
}

// Judge is a policy as one identity meets it: the rules whose identity
// pattern matches it, matched once however many names a request judges
// (a listing judges each). The zero Judge, and the admin's, allow
// everything.
type Judge struct {
	p     *Policy
	id    string
	rules []int
}

// For is p as identity id meets it.
func (p *Policy) For(id string) Judge {
	if p == nil || id == Admin {
		return Judge{id: id}
	}
	j := Judge{p: p, id: id}
	for i := range p.rules {
		if p.rules[i].ident.match(id) {
			j.rules = append(j.rules, i)
		}
	}
	return j
}

// Open reports whether the judge allows everything: no policy, or the
// admin.
func (j Judge) Open() bool { return j.p == nil }

// Decide refuses the judge's identity action on the name of kind (a
// policy word), or lets it through (nil).
func (j Judge) Decide(kind, action, name string) *Error {
	if j.p == nil {
		return nil
	}
	k, a := uint8(1)<<indexOf(policyKinds, kind), uint8(1)<<indexOf(policyActions, action)
	for _, i := range j.rules {
		r := &j.p.rules[i]
		if r.kinds&k == 0 || r.actions&a == 0 || !r.names.match(name) {
			continue
		}
		if r.allow {
			return nil
		}
		return &Error{Msg: fmt.Sprintf("%s (%s) refuses %s to %s %s %q", r.at, r.text, j.id, action, kind, name)}
	}
	return &Error{Msg: fmt.Sprintf("no rule of %s lets %s %s %s %q (a request that no line allows is refused)", j.p.file, j.id, action, kind, name)}
}

// QuotaOf is identity id's quota, nil for none.
func (p *Policy) QuotaOf(id string) *Quota {
	if p == nil || id == Admin {
		return nil
	}
	for i := range p.quotas {
		if p.quotas[i].ident.match(id) {
			return &p.quotas[i]
		}
	}
	return nil
}

// Named reports whether the file names identity id without a pattern.
func (p *Policy) Named(id string) bool { return p != nil && p.named[id] }

func (q *Quota) Refuse(format string, args ...any) *Error {
	return &Error{Quota: true, Msg: fmt.Sprintf("%s (%s): ", q.At, q.text) + fmt.Sprintf(format, args...)}
}

// CheckTTL refuses a TTL longer than the quota's max_ttl; a request with no
// TTL asks for api.DefaultTTL.
func (q *Quota) CheckTTL(id string, ttl *api.Duration) *Error {
	if q == nil || q.MaxTTL == 0 {
		return nil
	}
	t := api.DefaultTTL
	if ttl != nil {
		t = time.Duration(*ttl)
	}
	if t > q.MaxTTL {
		return q.Refuse("%s may ask a TTL of at most %v; this request asks %v", id, q.MaxTTL, t)
	}
	return nil
}
