package zklock

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Contender node names. seqd's own are Curator's protected
// InterProcessMutex names, _c_<uuid>-lock-<10 digits>; Curator's and
// go-zookeeper's zk.Lock end in "-lock-" + 10 digits as well, kazoo's in
// "__lock__" + 10 digits, the write side of Curator's
// InterProcessReadWriteLock in "__WRIT__". Readers (shared holders) end in
// "__READ__" (Curator's read lock, and seqd's ReadLock) or "__rlock__"
// (kazoo's ReadLock). All children of one parent share one sequence
// counter, so the suffixes of different recipes order them correctly.
const (
	protectedPrefix = "_c_"
	lockMarker      = "-lock-"
	kazooMarker     = "__lock__"
	curatorWriter   = "__WRIT__"
	readMarker      = "__READ__"
	kazooReader     = "__rlock__"
	seqDigits       = 10
	// multiMark ends the GUID of a multi-lock's contenders,
	// _c_<uuid>-multi-lock-<10 digits>. A set that must wait for one of its
	// locks says so in its contenders' data version (see MultiMutex.mark),
	// so that none of them shows as a holder meanwhile. Curator, kazoo and
	// go-zookeeper see an ordinary "-lock-" contender.
	multiMark = "-multi"
)

// contender is a parsed child of a lock node.
type contender struct {
	node   string // child name
	seq    int64
	guid   string // the _c_ GUID, when the name is protected
	reader bool   // a shared holder: it excludes writers only
	multi  bool   // a multi-lock's: it holds only once marked granted
}

// holds reports whether the contender, the lowest of its lock with stat st,
// holds it: a multi-lock's contender marked waiting waits for another lock
// of its set.
func (c contender) holds(st *zk.Stat) bool {
	return !c.multi || st.Version != multiWaiting
}

// rewritten reports whether the contender's data, as st shows it, was
// changed since its create by someone else: every version but the ones its
// own recipe writes.
func (c contender) rewritten(st *zk.Stat) bool {
	if c.multi {
		return st.Version > multiGranted
	}
	return st.Version != 0
}

// The data versions of a multi-lock's contenders: 0 as created (a set that
// is the lowest in every lock at once, or not yet known to wait), then,
// for a set that waits, multiWaiting until it is granted and multiGranted
// after. An uncontended set writes neither.
const (
	multiWaiting = 1
	multiGranted = 2
)

// parseContender recognises a contender child name; ok is false for anything
// that is not one (it is then ignored, neither blocking nor being blocked).
func parseContender(name string) (c contender, ok bool) {
	if len(name) < seqDigits {
		return contender{}, false
	}
	head, digits := name[:len(name)-seqDigits], name[len(name)-seqDigits:]
	reader := strings.HasSuffix(head, readMarker) || strings.HasSuffix(head, kazooReader)
	if !reader && !strings.HasSuffix(head, lockMarker) && !strings.HasSuffix(head, kazooMarker) && !strings.HasSuffix(head, curatorWriter) {
		return contender{}, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return contender{}, false
		}
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return contender{}, false
	}
	c = contender{node: name, seq: seq, reader: reader}
	if rest, ok := strings.CutPrefix(head, protectedPrefix); ok {
		if guid, ok := strings.CutSuffix(rest, lockMarker); ok {
			c.guid = guid
			c.multi = strings.HasSuffix(guid, multiMark)
		}
	}
	return c, true
}

// sortContenders keeps the recognised children, lowest sequence first.
func sortContenders(children []string) []contender {
	cs := make([]contender, 0, len(children))
	for _, ch := range children {
		if c, ok := parseContender(ch); ok {
			cs = append(cs, c)
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].seq < cs[j].seq })
	return cs
}

// newGUID is a random RFC 4122 version 4 UUID, as Curator uses in its
// protected names.
func newGUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("zklock: crypto/rand: %v", err)) // never fails on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// contenderPrefix is the name our create asks for; ZooKeeper appends the
// 10-digit sequence.
func contenderPrefix(guid string) string { return protectedPrefix + guid + lockMarker }
