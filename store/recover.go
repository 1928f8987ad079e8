package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ErrDamaged is matched by every error with which Open refuses a log that
// is not what the store wrote (a *CorruptionError, *TruncatedError,
// *ForeignLogError or *MetaError): errors.Is(err, ErrDamaged).
var ErrDamaged = errors.New("store: the log is not what the store wrote")

// Is makes errors.Is(err, ErrDamaged) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrDamaged }

// Is makes errors.Is(err, ErrDamaged) true.
func (e *TruncatedError) Is(target error) bool { return target == ErrDamaged }

// Is makes errors.Is(err, ErrDamaged) true.
func (e *ForeignLogError) Is(target error) bool { return target == ErrDamaged }

// Is makes errors.Is(err, ErrDamaged) true.
func (e *MetaError) Is(target error) bool { return target == ErrDamaged }

// CorruptionError is returned by Open when the log (or store.meta) is
// damaged somewhere other than in a last batch that a crash could have
// torn: bytes that were synced, and so acknowledged, no longer read back,
// or whole batches were removed, repeated, moved or brought in from another
// log. Starting from it would silently drop acknowledged writes and lower
// the fence of every key they touched, so Open refuses; Options.Repair
// keeps every readable record instead and sets the damaged file aside.
type CorruptionError struct {
	Path       string
	Offset     int64  // where the first problem starts; -1 if not at one place
	Damaged    int64  // bytes that do not read as records, in all
	ValidAfter int    // readable records after Offset
	Reason     string // what is wrong, as a clause
}

func (e *CorruptionError) Error() string {
	where := ""
	if e.Offset >= 0 {
		where = fmt.Sprintf(" at byte %d", e.Offset)
	}
	return fmt.Sprintf("store: %s is damaged%s: %s; refusing to start, since starting from it would lose acknowledged writes "+
		"and lower the fence of the keys they touched; a repair (Options.Repair) keeps every readable record, "+
		"raises every key's max as far as what was lost may have reached, and sets the damaged file aside",
		e.Path, where, e.Reason)
}

// TruncatedError is returned by Open when the log is whole but ends before
// the last batch the store recorded writing (in store.meta): it was cut at
// a batch boundary, removed, or replaced by an older copy of itself.
type TruncatedError struct {
	Path    string
	Holds   uint64 // the last batch the log holds, 0 for none
	Wrote   uint64 // the last batch the store recorded writing
	Ceiling uint64 // the highest max of any key when it wrote it
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("store: %s ends at batch %d, but the store recorded in %s that it wrote batch %d: "+
		"%s missing (the log was cut, removed, or replaced by an older copy); refusing to start, "+
		"since the writes and fence tokens in them would be lost; a repair (Options.Repair) keeps what the log holds "+
		"and raises every key's max to %d, the highest token the store had seen",
		e.Path, e.Holds, metaName, e.Wrote, batches(e.Holds+1, e.Wrote), e.Ceiling)
}

// batches names the batches from a to b with their verb: "batch 3 is",
// "batches 3 to 5 are".
func batches(a, b uint64) string {
	if a == b {
		return fmt.Sprintf("batch %d is", a)
	}
	return fmt.Sprintf("batches %d to %d are", a, b)
}

// ForeignLogError is returned by Open when the log belongs to another store
// than the one whose directory it is in. Repair does not adopt it.
type ForeignLogError struct {
	Path     string
	LogStore string // the identity in the log's header
	DirStore string // the identity in store.meta
}

func (e *ForeignLogError) Error() string {
	return fmt.Sprintf("store: %s belongs to another store (%s) than this directory's (%s, in %s): refusing to start on "+
		"another store's writes and fence tokens; put this store's log back, or, to adopt that log deliberately, "+
		"move %s away and repair (Options.Repair)",
		e.Path, e.LogStore, e.DirStore, metaName, metaName)
}

// MetaError is returned by Open when store.meta is missing or unreadable
// next to a log that needs it: without it a cut or swapped log goes unseen.
type MetaError struct {
	Path   string
	Reason string
}

func (e *MetaError) Error() string {
	return fmt.Sprintf("store: %s %s, so the log cannot be checked against what the store wrote; refusing to start; "+
		"if the log is the right one (say, restored from a backup), a repair (Options.Repair) adopts it and writes a new %s",
		e.Path, e.Reason, metaName)
}

// scanned is a record found in the log, with where it lies.
type scanned struct {
	off, n int
	r      record
}

// span is a range of bytes of the log.
type span struct{ off, n int }

// logScan is what a log holds: every record that reads back whole, in file
// order, and the ranges between them that do not.
type logScan struct {
	recs   []scanned
	damage []span
}

// scanLog reads every record of data. After damage it looks for the next
// offset at which a whole record (length, CRC and sanity checks) starts and
// goes on from there, so that nothing readable is missed.
func scanLog(data []byte) logScan {
	var sc logScan
	off := 0
	for off < len(data) {
		r, n, err := decodeRecord(data[off:])
		if err == nil {
			sc.recs = append(sc.recs, scanned{off, n, r})
			off += n
			continue
		}
		next := off + 1
		for next < len(data) && !recordAt(data[next:]) {
			next++
		}
		sc.damage = append(sc.damage, span{off, next - off})
		off = next
	}
	return sc
}

func recordAt(b []byte) bool {
	if !plausibleAt(b) {
		return false
	}
	_, _, err := decodeRecord(b)
	return err == nil
}

// goodBatch is a batch that checked, with what the next one must name.
type goodBatch struct {
	seq     uint64
	link    uint32 // its seal's CRC field
	ceiling uint64
}

// verdict is what recovery makes of a scan.
type verdict struct {
	v2      bool
	hdr     header
	hdrOK   bool
	keep    []scanned   // the data records of the batches that checked
	good    []goodBatch // those batches (current format only)
	cut     int         // the end of the last batch that checked
	torn    bool        // the log ends in a batch that never completed
	problem *CorruptionError
}

// last returns the last batch that checked, or the header's base.
func (v *verdict) last() goodBatch {
	if len(v.good) == 0 {
		return goodBatch{seq: v.hdr.base}
	}
	return v.good[len(v.good)-1]
}

// judge decides what a scan means. A batch is one write followed by one
// fsync, ended by a seal (a commit record in the first format), and the
// next batch is written only after that fsync returned, so a crash can only
// leave the last batch incomplete. Batches are checked in file order: each
// must carry the next number, start where the previous one ended, name the
// previous one's seal and match its own checksum. At the first batch that
// does not, or the first damage:
//   - nothing readable ends a batch after it, or only that batch's own seal
//     does, as the last record: the last batch was torn by a crash; it was
//     never acknowledged and is cut;
//   - anything else (a later batch, a batch out of place): corruption.
func judge(data []byte, sc logScan, v2 bool) verdict {
	v := verdict{v2: v2}
	recs := sc.recs
	link := uint32(0)
	if v2 {
		if len(recs) == 0 || recs[0].off != 0 || recs[0].r.kind != kindHeader {
			v.problem = &CorruptionError{Reason: "its header, the first record, does not read back"}
			return v
		}
		v.hdr, v.hdrOK = parseHeader(&recs[0].r), true
		v.cut, link = recs[0].n, crcField(data)
		recs = recs[1:]
	}
	seq := v.hdr.base
	bad, why := -1, ""
	var pending []scanned
loop:
	for _, s := range recs {
		if d := damageIn(sc.damage, v.cut, s.off); d >= 0 {
			bad = d
			break
		}
		switch s.r.kind {
		case kindSeal, kindCommit, kindHeader:
			if why = checkEnd(data, s, v.cut, seq, link, v2, sc.recs); why != "" {
				bad = v.cut
				break loop
			}
			v.keep = append(v.keep, pending...)
			pending = nil
			v.cut = s.off + s.n
			if v2 {
				sl := parseSeal(&s.r)
				seq, link = sl.seq, crcField(data[s.off:])
				v.good = append(v.good, goodBatch{seq: seq, link: link, ceiling: sl.ceiling})
			}
		default:
			pending = append(pending, s)
		}
	}
	if bad < 0 {
		if d := damageIn(sc.damage, v.cut, len(data)); d >= 0 {
			bad = d
		} else if len(pending) > 0 {
			bad = v.cut
		}
	}
	if bad < 0 {
		return v
	}
	if tornTail(data, sc, v.cut, seq, link, v2) {
		v.torn = true
		if v2 && len(v.good) == 0 {
			v.problem = &CorruptionError{Offset: int64(v.cut), Reason: "its first batch, the snapshot written whole with the header " +
				"when the log was created or compacted, is cut short"}
		}
		return v
	}
	if why == "" {
		why = damageReason(sc, bad)
	}
	v.problem = &CorruptionError{Offset: int64(bad), Reason: why}
	return v
}

// damageIn returns the start of the first damaged range in [from, to), or -1.
func damageIn(damage []span, from, to int) int {
	for _, d := range damage {
		if d.off >= from && d.off < to {
			return d.off
		}
	}
	return -1
}

// checkEnd checks the record s that ends the batch starting at cut, after
// batch seq whose seal's CRC is link; it returns what is wrong, or "".
func checkEnd(data []byte, s scanned, cut int, seq uint64, link uint32, v2 bool, all []scanned) string {
	switch {
	case !v2 && s.r.kind != kindCommit:
		return fmt.Sprintf("a record of a newer log format lies at byte %d of an old-format log", s.off)
	case !v2 && s.r.token != uint64(cut):
		return fmt.Sprintf("the batch ending at byte %d was written at byte %d but lies at byte %d: "+
			"a batch was removed, repeated or moved", s.off+s.n, s.r.token, cut)
	case !v2:
		return ""
	case s.r.kind == kindHeader:
		return fmt.Sprintf("a second header lies at byte %d: another log was appended", s.off)
	case s.r.kind == kindCommit:
		return fmt.Sprintf("an old-format commit record lies at byte %d", s.off)
	}
	sl := parseSeal(&s.r)
	want := seq + 1
	switch {
	case sl.seq < want:
		return fmt.Sprintf("batch %d appears again after batch %d", sl.seq, seq)
	case sl.seq > want:
		for _, o := range all {
			if o.off > s.off && o.r.kind == kindSeal && o.r.max == want {
				return fmt.Sprintf("its batches are out of order: batch %d comes after batch %d, before batch %d", sl.seq, seq, want)
			}
		}
		return fmt.Sprintf("%s missing: batch %d follows batch %d", batches(want, sl.seq-1), sl.seq, seq)
	case sl.link != link:
		return fmt.Sprintf("batch %d does not name batch %d as the one before it: it comes from another log", sl.seq, seq)
	case sl.start != uint64(cut):
		return fmt.Sprintf("batch %d was written at byte %d but lies at byte %d: bytes were added or removed before it", sl.seq, sl.start, cut)
	case crc32.Checksum(data[cut:s.off], castagnoli) != sl.sum:
		return fmt.Sprintf("the records of batch %d do not match its checksum: a record was replaced", sl.seq)
	}
	return ""
}

// tornTail reports whether everything from cut on can be a batch a crash
// tore: no record ending a batch follows, or only that batch's own seal
// (right number, place and link; its records may not match), as the last
// readable record.
func tornTail(data []byte, sc logScan, cut int, seq uint64, link uint32, v2 bool) bool {
	var ends []scanned
	for _, s := range sc.recs {
		if s.off >= cut && (s.r.kind == kindSeal || s.r.kind == kindCommit || s.r.kind == kindHeader) {
			ends = append(ends, s)
		}
	}
	if len(ends) == 0 {
		return true
	}
	e := ends[0]
	if len(ends) > 1 || e.off != sc.recs[len(sc.recs)-1].off {
		return false
	}
	if !v2 {
		return e.r.kind == kindCommit && e.r.token == uint64(cut)
	}
	if e.r.kind != kindSeal {
		return false
	}
	sl := parseSeal(&e.r)
	return sl.seq == seq+1 && sl.start == uint64(cut) && sl.link == link
}

func damageReason(sc logScan, at int) string {
	var bytes int64
	for _, d := range sc.damage {
		bytes += int64(d.n)
	}
	after := 0
	for _, r := range sc.recs {
		if r.off > at && r.r.kind != kindCommit && r.r.kind != kindSeal {
			after++
		}
	}
	return fmt.Sprintf("%d bytes in all do not read as records, and %d valid records follow the damage", bytes, after)
}

// corruption fills in the figures of a CorruptionError.
func corruption(path string, sc logScan, p *CorruptionError) *CorruptionError {
	ce := *p
	ce.Path = path
	for _, d := range sc.damage {
		ce.Damaged += int64(d.n)
	}
	for _, r := range sc.recs {
		if r.off > int(ce.Offset) && r.r.kind != kindCommit && r.r.kind != kindSeal && r.r.kind != kindHeader {
			ce.ValidAfter++
		}
	}
	return &ce
}

func storeName(id [storeIDBytes]byte) string { return "store " + hex.EncodeToString(id[:]) }

// recovery is what Open found on disk.
type recovery struct {
	repair  bool
	path    string // the log
	data    []byte // the log's bytes
	sc      logScan
	m       mark // store.meta's newer slot
	hasMeta bool
	// metaDamaged: store.meta is there but neither slot reads back.
	metaDamaged bool
	v2          bool // the log is in the current format
}

// recover replays the log. A compaction that did not reach its rename left
// only a temporary file: the old log is still the truth.
func (s *Store) recover(repair bool) error {
	for _, tmp := range []string{compactName, metaTmpName} {
		if err := s.fs.Remove(filepath.Join(s.dir, tmp)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("store: %w", err)
		}
	}
	rc := &recovery{repair: repair, path: filepath.Join(s.dir, logName)}
	var err error
	rc.data, err = s.fs.ReadFile(rc.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: reading the log: %w", err)
	}
	rc.m, err = readMeta(s.fs, s.dir)
	rc.hasMeta = err == nil
	var metaBad *CorruptionError
	if errors.As(err, &metaBad) {
		err, rc.metaDamaged = nil, true
	}
	if err != nil && !errors.Is(err, errNoMeta) {
		return err
	}
	// Values of the records replayed alias data; it is kept whole for the
	// life of the store (or until compaction rewrites), which is cheaper
	// than copying every value.
	rc.sc = scanLog(rc.data)
	v1 := false
	for _, r := range rc.sc.recs {
		rc.v2 = rc.v2 || r.r.kind == kindHeader || r.r.kind == kindSeal
		v1 = v1 || r.r.kind == kindCommit
	}
	// The current format is only ever written after store.meta: a log next
	// to one, without first-format commits, is of the current format even
	// when none of its headers and seals reads back.
	rc.v2 = rc.v2 || (rc.hasMeta && !v1 && len(rc.data) > 0)
	switch {
	case metaBad != nil:
		return s.refuseOrRepair(rc, &MetaError{Path: metaBad.Path, Reason: "is damaged: " + metaBad.Reason}, false)
	case len(rc.data) == 0:
		return s.recoverEmpty(rc)
	case rc.v2:
		return s.recoverV2(rc)
	default:
		return s.recoverV1(rc)
	}
}

// recoverEmpty starts a store whose log is missing: a new store, one whose
// creation a crash interrupted, or one whose log was removed.
func (s *Store) recoverEmpty(rc *recovery) error {
	m := rc.m
	switch {
	case !rc.hasMeta:
		if _, err := rand.Read(m.id[:]); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if err := s.createMeta(m); err != nil {
			return err
		}
	case m.seq > 0:
		return s.refuseOrRepair(rc, &TruncatedError{Path: rc.path, Wrote: m.seq, Ceiling: m.ceiling}, true)
	}
	s.id = m.id
	return s.rewrite(m.seq, "created the log")
}

// recoverV2 recovers a log of the current format.
func (s *Store) recoverV2(rc *recovery) error {
	v := judge(rc.data, rc.sc, true)
	m := rc.m
	if v.hdrOK && rc.hasMeta && v.hdr.id != m.id {
		return &ForeignLogError{Path: rc.path, LogStore: storeName(v.hdr.id), DirStore: storeName(m.id)}
	}
	if !rc.hasMeta {
		return s.refuseOrRepair(rc, &MetaError{Path: filepath.Join(s.dir, metaName), Reason: "is missing"}, false)
	}
	if v.problem != nil {
		return s.refuseOrRepair(rc, corruption(rc.path, rc.sc, v.problem), false)
	}
	last := v.last()
	if m.seq > last.seq {
		return s.refuseOrRepair(rc, &TruncatedError{Path: rc.path, Holds: last.seq, Wrote: m.seq, Ceiling: m.ceiling}, true)
	}
	for _, g := range v.good {
		if g.seq == m.seq && g.link != m.link {
			ce := &CorruptionError{Path: rc.path, Offset: -1, Reason: fmt.Sprintf("its batch %d is not the batch %d the store recorded writing: "+
				"the log was replaced by another copy", m.seq, m.seq)}
			return s.refuseOrRepair(rc, ce, true)
		}
	}
	s.id, s.floor = v.hdr.id, v.hdr.floor
	s.batch, s.link, s.ceiling = last.seq, last.link, last.ceiling
	return s.openLog(rc.path, rc.data, v)
}

// recoverV1 recovers a log of the first format (no header, no batch
// numbers) and rewrites it in the current one.
func (s *Store) recoverV1(rc *recovery) error {
	m := rc.m
	if rc.hasMeta && m.seq > 0 {
		ce := &CorruptionError{Path: rc.path, Offset: -1, Reason: fmt.Sprintf("it is in the first log format, but the store recorded in %s "+
			"writing batch %d of the current one: the log was replaced by an older copy", metaName, m.seq)}
		return s.refuseOrRepair(rc, ce, true)
	}
	v := judge(rc.data, rc.sc, false)
	if v.problem != nil {
		return s.refuseOrRepair(rc, corruption(rc.path, rc.sc, v.problem), false)
	}
	if v.torn {
		s.dropped(rc.path, int64(len(rc.data)-v.cut), v.cut)
	}
	// store.meta first: a crash before the new log is renamed into place
	// leaves the old log and a store.meta at batch 0, and the next start
	// migrates again.
	if !rc.hasMeta {
		if _, err := rand.Read(m.id[:]); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if err := s.createMeta(m); err != nil {
			return err
		}
	}
	s.id = m.id
	for i := range v.keep {
		s.apply(&v.keep[i].r)
	}
	return s.rewrite(0, "rewrote the log of the first format in the current one")
}

func (s *Store) dropped(path string, n int64, at int) {
	// Dropping is safe only because nothing in the last batch was
	// acknowledged: acknowledgements follow the fsync of a batch.
	s.log.Warn("dropping the torn last batch of the log", "path", path, "offset", at, "bytes", n)
	s.sm.RecoveryDropped(n)
}

// refuseOrRepair returns why without Repair. With Repair it replays every
// readable record (see plan), sets the old log aside and writes a new one;
// when records are known to be lost (lost, or as plan finds), every key's
// max is raised to the highest the store is known to have reached, since
// the lost records may have held any key at up to that. Another store's
// log is refused all the same.
func (s *Store) refuseOrRepair(rc *recovery, why error, lost bool) error {
	var foreign *ForeignLogError
	if !rc.repair || errors.As(why, &foreign) {
		return why
	}
	p := plan(rc.data, rc.sc, rc.v2, rc.m)
	if len(rc.data) > 0 {
		side := fmt.Sprintf("%s.damaged-%d", rc.path, time.Now().Unix())
		if err := s.fs.Link(rc.path, side); err != nil {
			return fmt.Errorf("store: keeping the damaged log: %w", err)
		}
		s.log.Warn("repair: set the log aside", "original", side)
	}
	for _, d := range rc.sc.damage {
		s.log.Warn("repair: damaged bytes", "path", rc.path, "offset", d.off, "bytes", d.n)
	}
	m := rc.m
	var me *MetaError
	if rc.metaDamaged {
		meta := filepath.Join(s.dir, metaName)
		if err := s.fs.Link(meta, fmt.Sprintf("%s.damaged-%d", meta, time.Now().Unix())); err != nil {
			return fmt.Errorf("store: keeping the damaged %s: %w", metaName, err)
		}
	}
	if errors.As(why, &me) || !rc.hasMeta {
		// Adopt the log's identity if its header reads back.
		m = mark{id: p.id}
		if !p.hdrOK {
			if _, err := rand.Read(m.id[:]); err != nil {
				return fmt.Errorf("store: %w", err)
			}
		}
		if err := s.createMeta(m); err != nil {
			return err
		}
	}
	s.id = m.id
	for i := range p.apply {
		s.apply(&p.apply[i].r)
	}
	for i := range p.maxOnly {
		s.fence.Restore(p.maxOnly[i].r.key, p.maxOnly[i].r.max)
	}
	if lost || p.lost {
		s.floor = max(p.floor, p.ceiling, m.ceiling)
	} else {
		s.floor = p.floor
	}
	s.log.Warn("repairing the log", "err", why.Error(), "replayed_records", len(p.apply), "lost", lost || p.lost, "floor", s.floor)
	return s.rewrite(max(p.seq, m.seq), "repaired the log")
}

// repairPlan is what a repair replays.
type repairPlan struct {
	id      [storeIDBytes]byte // the header's, if hdrOK
	hdrOK   bool
	floor   uint64    // the header's
	apply   []scanned // records to replay, in batch order
	maxOnly []scanned // records of repeated batches: only their max counts
	seq     uint64    // the highest batch number seen (current format)
	ceiling uint64    // the highest max seen, in any record or seal
	lost    bool      // a record or a batch is known to be lost
}

// unit is a batch, or the records of a batch that does not check.
type unit struct {
	order uint64 // its number, or its original offset in the first format
	size  uint64 // its bytes (first format)
	whole bool   // its records match its seal (commit)
	link  uint32 // its seal's link
	crc   uint32 // its seal's CRC field
	off   int    // where it lies
	recs  []scanned
}

// plan orders every readable record for a repair. Batches that check on
// their own (their records match their seal's checksum) are replayed in the
// order of their numbers (of their original offsets, in the first format),
// a repeated one once; records of batches that do not check are replayed
// where they lie, after the batch before them. Every record's max counts:
// a max only goes up. Records are known lost when bytes are damaged, when a
// batch that does not check lies before one that does, when the numbers
// (offsets) of the batches that check leave a gap or do not link up (a
// batch of another log in place of one of ours), or when the log ends
// before the batch store.meta records.
func plan(data []byte, sc logScan, v2 bool, m mark) repairPlan {
	var p repairPlan
	var units []unit
	var group []scanned
	order, lastWhole, next := uint64(0), -1, uint64(0)
	prev, linked := uint32(0), false // the CRC the next batch must name
	if len(sc.recs) > 0 && sc.recs[0].off == 0 && sc.recs[0].r.kind == kindHeader {
		h := parseHeader(&sc.recs[0].r)
		p.id, p.hdrOK, p.floor, p.seq = h.id, true, h.floor, h.base
		order, next = h.base, h.base+1
		prev, linked = crcField(data), true
	}
	for _, s := range sc.recs {
		switch s.r.kind {
		case kindHeader:
		case kindSeal, kindCommit:
			from := s.off
			if len(group) > 0 {
				from = group[0].off
			}
			u := unit{order: s.r.token, size: uint64(s.off + s.n - from), off: from, recs: group}
			clean := damageIn(sc.damage, from, s.off) < 0
			if s.r.kind == kindSeal {
				sl := parseSeal(&s.r)
				p.seq, p.ceiling = max(p.seq, sl.seq), max(p.ceiling, sl.ceiling)
				u.order, u.link, u.crc = sl.seq, sl.link, crcField(data[s.off:])
				u.whole = v2 && clean && crc32.Checksum(data[from:s.off], castagnoli) == sl.sum
			} else {
				u.whole = !v2 && clean
			}
			if u.whole {
				units = append(units, u)
				order, lastWhole = u.order, len(units)-1
			} else if len(group) > 0 {
				units = append(units, unit{order: order, off: from, recs: group})
			}
			group = nil
		default:
			group = append(group, s)
			p.ceiling = max(p.ceiling, s.r.max)
		}
	}
	if len(group) > 0 {
		units = append(units, unit{order: order, off: group[0].off, recs: group})
	}
	p.lost = len(sc.damage) > 0 || (v2 && (!p.hdrOK || m.seq > p.seq))
	for i, u := range units {
		p.lost = p.lost || (!u.whole && i < lastWhole)
	}
	slices.SortStableFunc(units, func(a, b unit) int {
		switch {
		case a.order < b.order:
			return -1
		case a.order > b.order:
			return 1
		case a.whole != b.whole && a.whole:
			return -1
		case a.whole != b.whole:
			return 1
		}
		return a.off - b.off
	})
	seen := map[uint64]bool{}
	for _, u := range units {
		switch {
		case !u.whole:
			p.apply = append(p.apply, u.recs...)
		case seen[u.order]:
			p.maxOnly = append(p.maxOnly, u.recs...)
		default:
			seen[u.order] = true
			p.lost = p.lost || u.order != next || (v2 && linked && u.link != prev)
			next, prev, linked = u.order+1, u.crc, true
			if !v2 {
				next = u.order + u.size
			}
			p.apply = append(p.apply, u.recs...)
		}
	}
	return p
}

// openLog replays what the verdict keeps and opens the log for appending,
// first truncating a torn last batch.
func (s *Store) openLog(path string, data []byte, v verdict) error {
	for i := range v.keep {
		s.apply(&v.keep[i].r)
	}
	for k := range s.entries {
		s.fence.Restore(k, s.floor)
	}
	if v.torn {
		s.dropped(path, int64(len(data)-v.cut), v.cut)
	}
	f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if v.torn {
		if err := f.Truncate(int64(v.cut)); err != nil {
			f.Close()
			return fmt.Errorf("store: truncating the torn tail: %w", err)
		}
	}
	// What was read may be only in the page cache (the previous process
	// wrote a batch and was killed before its fsync): make it durable
	// before answering anything from it.
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("store: %w", err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		f.Close()
		return err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return fmt.Errorf("store: %w", err)
	}
	if err := s.openMeta(); err != nil {
		f.Close()
		return err
	}
	s.f = f
	s.size = size
	// The live state's size is unknown until a compaction measures it; past
	// the threshold, the first flush compacts.
	s.compactAt = s.threshold
	s.recovered(path, len(v.keep))
	return nil
}

func (s *Store) recovered(path string, records int) {
	s.sm.SetLogBytes(s.size)
	s.sm.SetKeys(s.liveKeys)
	s.log.Info("recovered the log", "path", path, "store", hex.EncodeToString(s.id[:]), "batch", s.batch,
		"records", records, "keys", s.liveKeys, "bytes", s.size)
}

// rewrite writes the state in memory as a new log whose first batch is
// base+1 (a compaction at start: migration, repair, creation), and records
// the batch in store.meta.
func (s *Store) rewrite(base uint64, what string) error {
	for k := range s.entries {
		s.fence.Restore(k, s.floor)
	}
	f, size, link, err := s.writeCompacted(s.snapshot(), header{id: s.id, base: base, floor: s.floor}, max(s.ceiling, s.floor))
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	s.f, s.size, s.batch, s.link = f, size, base+1, link
	if err := s.openMeta(); err != nil {
		f.Close()
		return err
	}
	if err := s.syncMark(); err != nil {
		f.Close()
		return err
	}
	s.compactAt = max(s.threshold, 2*size)
	s.log.Info(what, "path", filepath.Join(s.dir, logName), "floor", s.floor)
	s.recovered(filepath.Join(s.dir, logName), len(s.entries))
	return nil
}

func (s *Store) writeSynced(path string, b []byte) error {
	f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("store: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("store: %w", err)
	}
	return f.Close()
}
