package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// store.meta holds the store's identity and its mark: the number and link
// of the last batch the store wrote, and the highest max any key had then.
// The log says what it holds; the mark says what the store wrote, so that a
// log cut at a batch boundary, removed, or replaced by an older copy of
// itself, which reads back as a clean log, is caught by holding less than
// the mark. The identity, also in the log's header, catches another store's
// log.
//
// The mark is written after every batch's fsync, never before: whatever
// the disk keeps of it after a crash names a batch that was already
// durable, so it can lag the log but never lead it. Its own fsync is off
// the write path, at most once per markSyncEvery, at compaction and at
// Close: a write costs one more pwrite into the page cache, not a second
// fsync. What a mark that lags the log cannot see is in docs/store.md.
//
// The file has two slots, one 4 KiB page apart, written alternately (batch
// n goes to slot n%2) with a checksum each, so that a write torn by a power
// loss leaves the other slot, one batch older, to read.
const (
	metaName    = "store.meta"
	metaTmpName = "store.meta.tmp"
	slotStride  = 4096
	slotBytes   = 8 + storeIDBytes + 8 + 4 + 8 + 4
	metaSize    = slotStride + slotBytes
)

var markMagic = []byte("seqdmrk1")

type mark struct {
	id      [storeIDBytes]byte
	seq     uint64 // the last batch the store wrote
	link    uint32 // that batch's seal's CRC field
	ceiling uint64 // the highest max of any key after it
}

func (m mark) encode() []byte {
	b := make([]byte, 0, slotBytes)
	b = append(b, markMagic...)
	b = append(b, m.id[:]...)
	b = binary.LittleEndian.AppendUint64(b, m.seq)
	b = binary.LittleEndian.AppendUint32(b, m.link)
	b = binary.LittleEndian.AppendUint64(b, m.ceiling)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeMark(b []byte) (mark, bool) {
	if len(b) < slotBytes || !bytes.Equal(b[:8], markMagic) {
		return mark{}, false
	}
	if crc32.Checksum(b[:slotBytes-4], castagnoli) != binary.LittleEndian.Uint32(b[slotBytes-4:]) {
		return mark{}, false
	}
	var m mark
	copy(m.id[:], b[8:])
	p := b[8+storeIDBytes:]
	m.seq = binary.LittleEndian.Uint64(p)
	m.link = binary.LittleEndian.Uint32(p[8:])
	m.ceiling = binary.LittleEndian.Uint64(p[12:])
	return m, true
}

// errNoMeta is readMeta's answer for a directory without store.meta.
var errNoMeta = errors.New("store: no store.meta")

// readMeta returns the newer readable slot of store.meta.
func readMeta(fs fileSystem, dir string) (mark, error) {
	path := filepath.Join(dir, metaName)
	b, err := fs.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return mark{}, errNoMeta
	}
	if err != nil {
		return mark{}, fmt.Errorf("store: reading %s: %w", path, err)
	}
	var best mark
	found := false
	for _, off := range []int{0, slotStride} {
		if off >= len(b) {
			continue
		}
		m, ok := decodeMark(b[off:])
		if !ok {
			continue
		}
		if found && m.id != best.id {
			return mark{}, &CorruptionError{Path: path, Reason: "its two slots name different stores"}
		}
		if !found || m.seq > best.seq {
			best, found = m, true
		}
	}
	if !found {
		return mark{}, &CorruptionError{Path: path, Reason: "neither of its slots reads back"}
	}
	return best, nil
}

// createMeta writes store.meta with m in both slots, under a temporary name
// renamed into place, and makes the rename durable.
func (s *Store) createMeta(m mark) error {
	b := make([]byte, metaSize)
	copy(b, m.encode())
	copy(b[slotStride:], m.encode())
	tmp := filepath.Join(s.dir, metaTmpName)
	if err := s.writeSynced(tmp, b); err != nil {
		return err
	}
	if err := s.fs.Rename(tmp, filepath.Join(s.dir, metaName)); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return s.fs.SyncDir(s.dir)
}

// openMeta opens store.meta for the marks of the batches to come.
func (s *Store) openMeta() error {
	f, err := s.fs.OpenFile(filepath.Join(s.dir, metaName), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	s.meta = f
	return nil
}

// writeMark records m in its slot. It does not fsync: see markSyncEvery.
func writeMark(f file, m mark) error {
	_, err := f.WriteAt(m.encode(), int64(m.seq%2)*slotStride)
	return err
}
