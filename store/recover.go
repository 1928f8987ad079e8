package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// CorruptionError is returned by Open when the log is damaged somewhere other
// than in its last batch: bytes that were synced, and so acknowledged, no
// longer read back, and valid records follow them. Cutting the log there
// would silently drop acknowledged writes and lower the fence of every key
// they touched, so Open refuses; Options.Repair keeps every readable record
// instead and sets the damaged file aside.
type CorruptionError struct {
	Path       string
	Offset     int64 // where the first damage starts
	Damaged    int64 // bytes that do not read as records, in all
	ValidAfter int   // readable records after Offset
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("store: %s is damaged at byte %d (%d bytes in all) and %d valid records follow the damage: "+
		"refusing to start, since cutting the log there would lose acknowledged writes; "+
		"start with --repair to keep every readable record and set the damaged file aside",
		e.Path, e.Offset, e.Damaged, e.ValidAfter)
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

// verdict is what recovery makes of a scan.
type verdict struct {
	keep    []scanned // the records to replay
	cut     int       // with torn: the offset to truncate the log to
	torn    bool      // the log ends in a batch that never completed
	corrupt bool      // a batch that was synced is damaged
}

// judge decides what a scan means. A batch is one write followed by one
// fsync, ended by a commit record, and the next batch is written only after
// that fsync returned, so a crash can only leave the last batch incomplete.
// Hence:
//   - no damage and every record committed: a clean log;
//   - records after the last commit, or damage with nothing committed after
//     it but the damaged batch's own commit: the last batch was torn by a
//     crash; it was never acknowledged and is cut;
//   - damage followed by a later batch: the damaged bytes had been synced
//     and acknowledged, so this is corruption.
func judge(sc logScan) verdict {
	firstBad := -1
	if len(sc.damage) > 0 {
		firstBad = sc.damage[0].off
	}
	v := verdict{}
	committed := 0 // records in sc.recs up to the last commit before the damage
	for i, s := range sc.recs {
		if firstBad >= 0 && s.off > firstBad {
			break
		}
		if s.r.kind == kindCommit {
			committed = i + 1
			v.cut = s.off + s.n
		}
	}
	v.keep = sc.recs[:committed]
	if firstBad < 0 {
		v.torn = committed < len(sc.recs)
		return v
	}
	// Records after the damage are the torn batch's own only if no batch
	// other than the damaged one committed after it.
	for i, s := range sc.recs[committed:] {
		if s.r.kind != kindCommit || s.off < firstBad {
			continue
		}
		last := committed+i == len(sc.recs)-1
		if s.r.token != uint64(v.cut) || !last {
			v.corrupt = true
			v.keep = withoutCommits(sc.recs)
			return v
		}
	}
	v.torn = true
	return v
}

func withoutCommits(recs []scanned) []scanned {
	out := make([]scanned, 0, len(recs))
	for _, s := range recs {
		if s.r.kind != kindCommit {
			out = append(out, s)
		}
	}
	return out
}

// recover replays the log. A compaction that did not reach its rename left
// only a temporary file: the old log is still the truth.
func (s *Store) recover(repair bool) error {
	if err := s.fs.Remove(filepath.Join(s.dir, compactName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(s.dir, logName)
	data, err := s.fs.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: reading the log: %w", err)
	}
	// Values of the records replayed alias data; it is kept whole for the
	// life of the store (or until compaction rewrites), which is cheaper
	// than copying every value.
	sc := scanLog(data)
	v := judge(sc)
	if v.corrupt {
		ce := corruption(path, sc)
		if !repair {
			return ce
		}
		if err := s.repair(path, data, sc, v, ce); err != nil {
			return err
		}
		return s.openLog(path, v.keep, -1)
	}
	if v.torn {
		// Dropping is safe only because nothing in the last batch was
		// acknowledged: acknowledgements follow the fsync of a batch.
		dropped := int64(len(data) - v.cut)
		s.log.Warn("dropping the torn last batch of the log", "path", path, "offset", v.cut, "bytes", dropped)
		s.sm.RecoveryDropped(dropped)
		return s.openLog(path, v.keep, v.cut)
	}
	return s.openLog(path, v.keep, -1)
}

func corruption(path string, sc logScan) *CorruptionError {
	ce := &CorruptionError{Path: path, Offset: int64(sc.damage[0].off)}
	for _, d := range sc.damage {
		ce.Damaged += int64(d.n)
	}
	for _, r := range sc.recs {
		if r.off > sc.damage[0].off && r.r.kind != kindCommit {
			ce.ValidAfter++
		}
	}
	return ce
}

// repair rewrites the log from every readable record, after linking the
// damaged file to a side name so that nothing is thrown away. Replaying
// every readable record raises each key's max to at least every token the
// log still shows, so the fence never goes down.
func (s *Store) repair(path string, data []byte, sc logScan, v verdict, ce *CorruptionError) error {
	side := fmt.Sprintf("%s.damaged-%d", path, time.Now().Unix())
	if err := s.fs.Link(path, side); err != nil {
		return fmt.Errorf("store: keeping the damaged log: %w", err)
	}
	var buf []byte
	for _, r := range v.keep {
		buf = append(buf, data[r.off:r.off+r.n]...)
	}
	buf = appendCommit(buf, 0)
	tmp := filepath.Join(s.dir, compactName)
	if err := s.writeSynced(tmp, buf); err != nil {
		return err
	}
	if err := s.fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return err
	}
	for _, d := range sc.damage {
		s.log.Warn("repair: set aside damaged bytes", "path", path, "offset", d.off, "bytes", d.n)
	}
	s.log.Warn("repaired the log", "path", path, "kept_records", len(v.keep), "damaged_bytes", ce.Damaged, "original", side)
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

// openLog replays keep and opens the log for appending, first truncating it
// to cut when cut is not -1. After a repair the file on disk is the rewritten
// one; its size is read back from it.
func (s *Store) openLog(path string, keep []scanned, cut int) error {
	for i := range keep {
		s.apply(&keep[i].r)
	}
	f, err := s.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if cut >= 0 {
		if err := f.Truncate(int64(cut)); err != nil {
			f.Close()
			return fmt.Errorf("store: truncating the torn tail: %w", err)
		}
	}
	// What was read may be only in the page cache (the previous process
	// wrote a batch and was killed before its fsync), and a compaction's
	// rename may not be durable yet: make both so before answering anything
	// from them.
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
	s.f = f
	s.size = size
	// The live state's size is unknown until a compaction measures it; past
	// the threshold, the first flush compacts.
	s.compactAt = s.threshold
	s.sm.SetLogBytes(s.size)
	s.sm.SetKeys(s.liveKeys)
	s.log.Info("recovered the log", "path", path, "records", len(keep), "keys", s.liveKeys, "bytes", s.size)
	return nil
}
