package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Record kinds. Every kind carries the key's max token after the operation,
// so that the fence and the data it guards reach the disk in one record.
const (
	kindPut    byte = 1 // key = value, written with token; max
	kindDelete byte = 2 // tombstone: the value is gone, the max stays
	kindFence  byte = 3 // only the max moved (a fenced read raised it)
	// kindCommit ended every batch of the first log format (no header, no
	// batch numbers); its token field holds the log offset where the batch
	// starts, its key and value are empty and its max 0. Such a log is still
	// read, and rewritten in the current format when the store opens it.
	kindCommit byte = 4
	// kindHeader is the first record of a log: which store it belongs to,
	// the number of the batch before its first one, and the store's floor
	// (see header).
	kindHeader byte = 5
	// kindSeal ends every batch written with one write and one fsync: its
	// number, where it starts, a checksum of its records, and a link to the
	// record that ended the batch before it (see seal). Recovery uses it to
	// tell a batch torn by a crash (only the last one can be) from damage to
	// a batch that was synced and acknowledged, and to refuse batches that
	// were removed, repeated, moved or brought in from another log.
	kindSeal byte = 6
)

// logFormat is the version of the log the header names.
const logFormat = 2

// storeIDBytes is the length of a store's identity, random at creation.
const storeIDBytes = 16

// header is what a log's first record says: the store it belongs to
// (the identity also kept in store.meta), the number of the batch before
// its first batch (0 for a new store; the last batch folded into a
// compaction), and the floor, a max every key has at least (raised by a
// repair that lost records; 0 otherwise).
//
// On disk: kind 5, max = format, token = base, key empty, value = id |
// u64 floor.
type header struct {
	id    [storeIDBytes]byte
	base  uint64
	floor uint64
}

// seal is what the record ending a batch says:
//   - seq: the batch's number, one more than the batch before it;
//   - start: the log offset of the batch's first record;
//   - link: the CRC field of the record that ended the batch before (the
//     header's, for the first batch of a log), so that each batch names its
//     predecessor and, through it, the header and the store;
//   - sum: CRC-32C of the batch's bytes from start to the seal;
//   - ceiling: the highest max of any key once the batch is applied, which
//     lets a repair that lost records raise every key to it.
//
// On disk: kind 6, max = seq, token = start, key empty, value = u32 link |
// u32 sum | u64 ceiling.
type seal struct {
	seq, start uint64
	link, sum  uint32
	ceiling    uint64
}

const (
	headerValue = storeIDBytes + 8
	sealValue   = 4 + 4 + 8
)

// On disk a record is
//
//	u32 body length | u32 CRC-32C of (length, body) | body
//	body: u8 kind | u64 max | u64 token | u16 key length | key | value
//
// all little-endian. The CRC covers the length too, so a torn or flipped
// length cannot send the decoder to a wrong boundary that happens to check.
const (
	recordHeader = 8
	bodyFixed    = 1 + 8 + 8 + 2
	// maxBody bounds what the decoder believes, so that garbage in a torn
	// tail cannot make recovery allocate gigabytes.
	maxBody = bodyFixed + MaxKeyBytes + MaxValueBytes
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record is one log entry. value is shared, never modified after creation.
type record struct {
	kind  byte
	key   string
	value []byte
	token uint64 // the token of the write that stored value (0 if none)
	max   uint64 // the key's max token after this record
}

// errTorn marks a record cut short by the end of the log; errCorrupt one
// whose bytes do not check.
var (
	errTorn    = errors.New("store: torn record at the end of the log")
	errCorrupt = errors.New("store: corrupt record")
)

func (r *record) size() int { return recordHeader + bodyFixed + len(r.key) + len(r.value) }

// appendRecord appends r's encoding to b.
func appendRecord(b []byte, r *record) []byte {
	start := len(b)
	body := bodyFixed + len(r.key) + len(r.value)
	b = binary.LittleEndian.AppendUint32(b, uint32(body))
	b = append(b, 0, 0, 0, 0) // CRC, filled in below
	b = append(b, r.kind)
	b = binary.LittleEndian.AppendUint64(b, r.max)
	b = binary.LittleEndian.AppendUint64(b, r.token)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(r.key)))
	b = append(b, r.key...)
	b = append(b, r.value...)
	crc := crc32.Update(crc32.Checksum(b[start:start+4], castagnoli), castagnoli, b[start+recordHeader:])
	binary.LittleEndian.PutUint32(b[start+4:], crc)
	return b
}

// decodeRecord decodes the record at the start of b and returns it with its
// encoded length. The record's value aliases b.
func decodeRecord(b []byte) (record, int, error) {
	if len(b) < recordHeader {
		return record{}, 0, errTorn
	}
	body := int(binary.LittleEndian.Uint32(b))
	if body < bodyFixed || body > maxBody {
		return record{}, 0, fmt.Errorf("%w: body length %d out of range", errCorrupt, body)
	}
	if len(b) < recordHeader+body {
		return record{}, 0, errTorn
	}
	crc := crc32.Update(crc32.Checksum(b[:4], castagnoli), castagnoli, b[recordHeader:recordHeader+body])
	if crc != binary.LittleEndian.Uint32(b[4:]) {
		return record{}, 0, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	p := b[recordHeader : recordHeader+body]
	r := record{
		kind:  p[0],
		max:   binary.LittleEndian.Uint64(p[1:]),
		token: binary.LittleEndian.Uint64(p[9:]),
	}
	klen := int(binary.LittleEndian.Uint16(p[17:]))
	if bodyFixed+klen > body {
		return record{}, 0, fmt.Errorf("%w: key length %d past the record", errCorrupt, klen)
	}
	r.key = string(p[bodyFixed : bodyFixed+klen])
	r.value = p[bodyFixed+klen:]
	// A record that checks but says something impossible was written by a
	// bug, not torn by a crash: it is refused all the same.
	switch r.kind {
	case kindCommit:
		if r.key != "" || len(r.value) != 0 || r.max != 0 {
			return record{}, 0, fmt.Errorf("%w: commit record with a key, value or max", errCorrupt)
		}
		return r, recordHeader + body, nil
	case kindHeader:
		if r.key != "" || len(r.value) != headerValue || r.max != logFormat {
			return record{}, 0, fmt.Errorf("%w: header of format %d with %d bytes", errCorrupt, r.max, len(r.value))
		}
		return r, recordHeader + body, nil
	case kindSeal:
		if r.key != "" || len(r.value) != sealValue || r.max == 0 {
			return record{}, 0, fmt.Errorf("%w: seal record with a key, a value of %d bytes or no number", errCorrupt, len(r.value))
		}
		return r, recordHeader + body, nil
	}
	switch {
	case r.kind != kindPut && r.kind != kindDelete && r.kind != kindFence:
		return record{}, 0, fmt.Errorf("%w: unknown kind %d", errCorrupt, r.kind)
	case r.kind != kindPut && len(r.value) != 0:
		return record{}, 0, fmt.Errorf("%w: kind %d carries a value", errCorrupt, r.kind)
	case len(r.value) > MaxValueBytes:
		return record{}, 0, fmt.Errorf("%w: value of %d bytes", errCorrupt, len(r.value))
	case ValidateKey(r.key) != nil:
		return record{}, 0, fmt.Errorf("%w: invalid key", errCorrupt)
	case r.token > r.max && r.kind == kindPut:
		// A put's token never exceeds the max it leaves behind, in every
		// fence mode (off still raises the max).
		return record{}, 0, fmt.Errorf("%w: token %d above max %d", errCorrupt, r.token, r.max)
	}
	return r, recordHeader + body, nil
}

// appendCommit appends the commit record of a first-format batch that
// starts at offset start of the log (tests write old logs with it).
func appendCommit(b []byte, start int64) []byte {
	return appendRecord(b, &record{kind: kindCommit, token: uint64(start)})
}

// appendHeader appends h as a header record.
func appendHeader(b []byte, h header) []byte {
	v := make([]byte, 0, headerValue)
	v = append(v, h.id[:]...)
	v = binary.LittleEndian.AppendUint64(v, h.floor)
	return appendRecord(b, &record{kind: kindHeader, max: logFormat, token: h.base, value: v})
}

func parseHeader(r *record) header {
	var h header
	copy(h.id[:], r.value)
	h.base = r.token
	h.floor = binary.LittleEndian.Uint64(r.value[storeIDBytes:])
	return h
}

// appendSeal ends the batch that b holds from offset from on (its records
// are the bytes b[from:]), which the log will hold from offset s.start on,
// filling in its sum. It returns b and the seal's CRC field, the link the
// next batch names.
func appendSeal(b []byte, from int, s seal) ([]byte, uint32) {
	s.sum = crc32.Checksum(b[from:], castagnoli)
	return appendSealSum(b, s)
}

// appendSealSum is appendSeal with the sum already in s.
func appendSealSum(b []byte, s seal) ([]byte, uint32) {
	v := make([]byte, 0, sealValue)
	v = binary.LittleEndian.AppendUint32(v, s.link)
	v = binary.LittleEndian.AppendUint32(v, s.sum)
	v = binary.LittleEndian.AppendUint64(v, s.ceiling)
	at := len(b)
	b = appendRecord(b, &record{kind: kindSeal, max: s.seq, token: s.start, value: v})
	return b, crcField(b[at:])
}

func parseSeal(r *record) seal {
	return seal{
		seq:     r.max,
		start:   r.token,
		link:    binary.LittleEndian.Uint32(r.value),
		sum:     binary.LittleEndian.Uint32(r.value[4:]),
		ceiling: binary.LittleEndian.Uint64(r.value[8:]),
	}
}

// crcField is the CRC stored in the encoded record at the start of b.
func crcField(b []byte) uint32 { return binary.LittleEndian.Uint32(b[4:]) }

// plausibleAt is a cheap look at whether a record could start at b, run
// before the CRC while recovery searches damaged bytes for the next record.
func plausibleAt(b []byte) bool {
	if len(b) < recordHeader+bodyFixed {
		return false
	}
	body := int(binary.LittleEndian.Uint32(b))
	if body < bodyFixed || body > maxBody || len(b) < recordHeader+body {
		return false
	}
	kind := b[recordHeader]
	klen := int(binary.LittleEndian.Uint16(b[recordHeader+17:]))
	return kind >= kindPut && kind <= kindSeal && bodyFixed+klen <= body
}
