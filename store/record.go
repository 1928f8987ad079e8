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
	// kindCommit ends every batch written with one write and one fsync;
	// its token field holds the log offset where the batch starts, its key
	// and value are empty and its max 0. Recovery uses it to tell a batch
	// torn by a crash (only the last one can be) from damage to a batch
	// that was synced and acknowledged before a later one was written.
	kindCommit byte = 4
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
	if r.kind == kindCommit {
		if r.key != "" || len(r.value) != 0 || r.max != 0 {
			return record{}, 0, fmt.Errorf("%w: commit record with a key, value or max", errCorrupt)
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

// appendCommit appends the commit record of a batch that starts at offset
// start of the log.
func appendCommit(b []byte, start int64) []byte {
	return appendRecord(b, &record{kind: kindCommit, token: uint64(start)})
}

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
	return kind >= kindPut && kind <= kindCommit && bodyFixed+klen <= body
}
