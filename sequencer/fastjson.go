package sequencer

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// A hand-written JSON path for the bodies of the calls every lease makes:
// the requests of acquire, renew and release and their Lease,
// ReleaseResponse and ErrorBody replies, on the daemon's side and the
// Client's, and a contender node's data. encoding/json's reflection cost a
// few percent of the daemon's CPU per cycle and a third of its allocations.
//
// The decoders understand one plain shape only: an object of known keys,
// each at most once and spelt exactly, with strings without escapes and
// numbers that are plain unsigned integers, and nothing after it but white
// space. For anything else they give up, and the strict decoder of decode.go
// reads the body: what is accepted, what is refused and the sentence of a
// refusal stay exactly the strict decoder's. The encoders write the same
// bytes as json.Encoder (HTML escaping, the final newline), and leave to it
// what they do not write (a time outside RFC 3339). The fuzz tests of
// fastjson_test.go hold all of it to that; strictJSONOnly turns the daemon
// and the Client back to encoding/json alone.

// strictJSONOnly switches the hand-written path off (but for contender
// data); tests and benchmarks compare the two.
var strictJSONOnly atomic.Bool

// bufPool holds the buffers that request bodies are read into and replies
// written from.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledBuf is the largest buffer put back into bufPool: a rare big body
// is not kept.
const maxPooledBuf = 16 << 10

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(bp *[]byte, b []byte) {
	if cap(b) > maxPooledBuf {
		return
	}
	*bp = b[:0]
	bufPool.Put(bp)
}

// decodeAcquire reads an acquire's body into req, as decode does.
func decodeAcquire(w http.ResponseWriter, r *http.Request, req *AcquireRequest) bool {
	return decodeFast(w, r, func(body []byte) bool { return fastAcquire(body, req) }, func(body []byte) bool {
		var v AcquireRequest // not req: only this path lets it escape
		if !decodeBytes(w, body, &v) {
			return false
		}
		*req = v
		return true
	})
}

// decodeLease reads a renew's or a release's body into req, as decode does.
func decodeLease(w http.ResponseWriter, r *http.Request, req *LeaseRequest) bool {
	return decodeFast(w, r, func(body []byte) bool { return fastLease(body, req) }, func(body []byte) bool {
		var v LeaseRequest
		if !decodeBytes(w, body, &v) {
			return false
		}
		*req = v
		return true
	})
}

// decodeFast reads the body and has fast decode it; if fast gives up, or
// the hand-written path is off, strict decodes it.
func decodeFast(w http.ResponseWriter, r *http.Request, fast, strict func(body []byte) bool) bool {
	bp := getBuf()
	body, ok := readBody(w, r, (*bp)[:0])
	defer putBuf(bp, body)
	if !ok {
		return false
	}
	if !strictJSONOnly.Load() && fast(body) {
		return true
	}
	return strict(body)
}

// jsonWS reports whether c is JSON white space.
func jsonWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// fastScan reads the plain shape of a request body.
type fastScan struct {
	b []byte
	i int
}

func (s *fastScan) ws() {
	for s.i < len(s.b) && jsonWS(s.b[s.i]) {
		s.i++
	}
}

// consume skips white space and then c.
func (s *fastScan) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, in valid
// UTF-8: what encoding/json reads as its bytes unchanged.
func (s *fastScan) str() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// uint reads a JSON number that is an integer in 0..2^64-1 without sign,
// fraction or exponent.
func (s *fastScan) uint() (uint64, bool) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	digits := s.b[start:s.i]
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' || len(digits) > 20 {
		return 0, false
	}
	if s.i < len(s.b) && !jsonWS(s.b[s.i]) && s.b[s.i] != ',' && s.b[s.i] != '}' {
		return 0, false // 1.5, 1e3, 12x
	}
	var v uint64
	for _, c := range digits {
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// duration reads a Duration's string for a *Duration field.
func (s *fastScan) duration() (*Duration, bool) {
	d, ok := s.durationValue()
	if !ok {
		return nil, false
	}
	return &d, true
}

// durationValue reads a Duration's string.
func (s *fastScan) durationValue() (Duration, bool) {
	v, ok := s.str()
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(string(v))
	if err != nil {
		return 0, false
	}
	return Duration(d), true
}

// object reads an object of the plain shape, calling field for each key
// with s just after the colon; field reads the value or gives up. Nothing
// but white space may follow the object.
func (s *fastScan) object(field func(key []byte) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		s.ws()
		return s.i == len(s.b)
	}
	for {
		key, ok := s.str()
		if !ok || !s.consume(':') || !field(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		if !s.consume('}') {
			return false
		}
		s.ws()
		return s.i == len(s.b)
	}
}

// fastAcquire decodes an AcquireRequest of the plain shape into req, or
// reports false.
func fastAcquire(body []byte, req *AcquireRequest) bool {
	s := fastScan{b: body}
	var seen uint8
	var v AcquireRequest
	ok := s.object(func(key []byte) bool {
		var bit uint8
		var ok bool
		var b []byte
		switch string(key) {
		case "owner":
			bit = 1
			if b, ok = s.str(); ok {
				v.Owner = string(b)
			}
		case "lease_id":
			bit = 2
			if b, ok = s.str(); ok {
				v.LeaseID = string(b)
			}
		case "ttl":
			bit = 4
			v.TTL, ok = s.duration()
		case "wait":
			bit = 8
			v.Wait, ok = s.duration()
		case "lock_delay":
			bit = 16
			v.LockDelay, ok = s.duration()
		case "mode":
			bit = 32
			if b, ok = s.str(); ok {
				v.Mode = string(b)
			}
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if ok {
		*req = v
	}
	return ok
}

// fastLease decodes a LeaseRequest of the plain shape into req, or reports
// false.
func fastLease(body []byte, req *LeaseRequest) bool {
	s := fastScan{b: body}
	var seen uint8
	var v LeaseRequest
	ok := s.object(func(key []byte) bool {
		var bit uint8
		var ok bool
		switch string(key) {
		case "lease_id":
			bit = 1
			var b []byte
			if b, ok = s.str(); ok {
				v.LeaseID = string(b)
			}
		case "token":
			bit = 2
			v.Token, ok = s.uint()
		case "ttl":
			bit = 4
			v.TTL, ok = s.duration()
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if ok {
		*req = v
	}
	return ok
}

// writeLease answers with l as writeJSON does.
func writeLease(w http.ResponseWriter, status int, l *Lease) {
	if strictJSONOnly.Load() {
		writeJSON(w, status, *l)
		return
	}
	bp := getBuf()
	b, ok := appendLease((*bp)[:0], l)
	if !ok {
		putBuf(bp, b)
		writeJSON(w, status, *l)
		return
	}
	writeBytes(w, status, b)
	putBuf(bp, b)
}

var releasedBody = []byte("{\"released\":true}\n")

// writeReleased answers ReleaseResponse{Released: true} as writeJSON does.
func writeReleased(w http.ResponseWriter) {
	if strictJSONOnly.Load() {
		writeJSON(w, http.StatusOK, ReleaseResponse{Released: true})
		return
	}
	writeBytes(w, http.StatusOK, releasedBody)
}

// jsonContentType is the Content-Type header's value, shared by every
// reply rather than allocated for each: net/http and the handlers replace
// a header's values (Set, Add) but never write into them.
var jsonContentType = []string{"application/json"}

func writeBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	w.Write(b)
}

// appendLease appends l as json.Encoder writes it, newline included; false
// if it cannot (an ExpiresAt that RFC 3339 cannot say), and then b is to be
// dropped.
func appendLease(b []byte, l *Lease) ([]byte, bool) {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, l.Name)
	b = append(b, `,"token":`...)
	b = strconv.AppendUint(b, l.Token, 10)
	b = append(b, `,"sequencer":`...)
	b = appendJSONString(b, l.Sequencer)
	if l.LeaseID != "" {
		b = append(b, `,"lease_id":`...)
		b = appendJSONString(b, l.LeaseID)
	}
	b = append(b, `,"owner":`...)
	b = appendJSONString(b, l.Owner)
	b = append(b, `,"ttl":`...)
	b = appendDuration(b, time.Duration(l.TTL))
	b = append(b, `,"expires_at":`...)
	var ok bool
	if b, ok = appendTime(b, l.ExpiresAt); !ok {
		return b, false
	}
	if l.Term != 0 {
		b = append(b, `,"term":`...)
		b = strconv.AppendUint(b, l.Term, 10)
	}
	if l.Limit != 0 {
		b = append(b, `,"limit":`...)
		b = strconv.AppendInt(b, int64(l.Limit), 10)
	}
	if l.Mode != "" {
		b = append(b, `,"mode":`...)
		b = appendJSONString(b, l.Mode)
	}
	return append(b, "}\n"...), true
}

// appendErrorBody appends e as json.Encoder writes it, newline included.
func appendErrorBody(b []byte, e *ErrorBody) []byte {
	b = append(b, `{"error":`...)
	b = appendJSONString(b, e.Error)
	b = append(b, `,"code":`...)
	b = appendJSONString(b, e.Code)
	if e.CurrentToken != nil {
		b = append(b, `,"current_token":`...)
		b = strconv.AppendUint(b, *e.CurrentToken, 10)
	}
	return append(b, "}\n"...)
}

// appendTime appends t as time.Time's MarshalJSON does; false where
// MarshalJSON fails.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	// MarshalJSON refuses a year outside 0..9999 and a zone offset of 24
	// hours or more, which RFC 3339 cannot say.
	if len(b) < n0+len("2006-01-02T15:04:05Z") || b[n0+4] != '-' {
		return b, false
	}
	if b[len(b)-1] != 'Z' {
		if c := b[len(b)-len("Z07:00")]; '0' <= c && c <= '9' {
			return b, false
		}
		h := b[len(b)-len("07:00"):]
		if 10*(h[0]-'0')+(h[1]-'0') >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}

// appendDuration appends d as Duration's MarshalJSON does.
func appendDuration(b []byte, d time.Duration) []byte {
	if d <= 0 || d%time.Second != 0 {
		return appendJSONString(b, d.String())
	}
	// Whole seconds, as Duration.String writes them: 15s, 1m30s, 1h0m0s.
	b = append(b, '"')
	secs := int64(d / time.Second)
	if h := secs / 3600; h > 0 {
		b = strconv.AppendInt(b, h, 10)
		b = append(b, 'h')
		b = strconv.AppendInt(b, secs/60%60, 10)
		b = append(b, 'm')
	} else if m := secs / 60; m > 0 {
		b = strconv.AppendInt(b, m, 10)
		b = append(b, 'm')
	}
	b = strconv.AppendInt(b, secs%60, 10)
	return append(b, 's', '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes a string with
// HTML escaping on (json.Marshal's and json.Encoder's default): \" \\ \b
// \f \n \r \t, \u00XX for other control characters and < > &, \ufffd for
// each byte of invalid UTF-8, \u2028 and \u2029.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// The Client's side: its acquire, renew and release bodies, written as
// json.Marshal writes them, and the Lease of a reply, read as
// json.Unmarshal reads it when it has the shape the daemon writes.

// appendAcquireRequest appends req as json.Marshal writes it.
func appendAcquireRequest(b []byte, req *AcquireRequest) []byte {
	b = append(b, `{"owner":`...)
	b = appendJSONString(b, req.Owner)
	if req.LeaseID != "" {
		b = append(b, `,"lease_id":`...)
		b = appendJSONString(b, req.LeaseID)
	}
	if req.TTL != nil {
		b = append(b, `,"ttl":`...)
		b = appendDuration(b, time.Duration(*req.TTL))
	}
	if req.Wait != nil {
		b = append(b, `,"wait":`...)
		b = appendDuration(b, time.Duration(*req.Wait))
	}
	if req.LockDelay != nil {
		b = append(b, `,"lock_delay":`...)
		b = appendDuration(b, time.Duration(*req.LockDelay))
	}
	if req.Mode != "" {
		b = append(b, `,"mode":`...)
		b = appendJSONString(b, req.Mode)
	}
	return append(b, '}')
}

// appendLeaseRequest appends req as json.Marshal writes it.
func appendLeaseRequest(b []byte, req *LeaseRequest) []byte {
	b = append(b, `{"lease_id":`...)
	b = appendJSONString(b, req.LeaseID)
	b = append(b, `,"token":`...)
	b = strconv.AppendUint(b, req.Token, 10)
	if req.TTL != nil {
		b = append(b, `,"ttl":`...)
		b = appendDuration(b, time.Duration(*req.TTL))
	}
	return append(b, '}')
}

// int reads a JSON number that is an int in 0..MaxInt without sign,
// fraction or exponent.
func (s *fastScan) int() (int, bool) {
	v, ok := s.uint()
	if !ok || v > uint64(int(^uint(0)>>1)) {
		return 0, false
	}
	return int(v), true
}

// fastLeaseReply reads a Lease of the shape the daemon writes into l as
// json.Unmarshal would, or reports false having changed nothing. Unlike a
// request's, a reply's unknown keys are not errors to json.Unmarshal: the
// fast path gives up on them too.
func fastLeaseReply(body []byte, l *Lease) bool {
	s := fastScan{b: body}
	var seen uint16
	var v Lease
	ok := s.object(func(key []byte) bool {
		var bit uint16
		var ok bool
		var b []byte
		switch string(key) {
		case "name":
			bit = 1
			if b, ok = s.str(); ok {
				v.Name = string(b)
			}
		case "token":
			bit = 2
			v.Token, ok = s.uint()
		case "sequencer":
			bit = 4
			if b, ok = s.str(); ok {
				v.Sequencer = string(b)
			}
		case "lease_id":
			bit = 8
			if b, ok = s.str(); ok {
				v.LeaseID = string(b)
			}
		case "owner":
			bit = 16
			if b, ok = s.str(); ok {
				v.Owner = string(b)
			}
		case "ttl":
			bit = 32
			v.TTL, ok = s.durationValue()
		case "expires_at":
			bit = 64
			start := s.i
			if _, ok = s.str(); ok {
				// Time's own UnmarshalJSON, on the quoted string as
				// json.Unmarshal hands it over.
				ws := start
				for jsonWS(s.b[ws]) {
					ws++
				}
				ok = v.ExpiresAt.UnmarshalJSON(s.b[ws:s.i]) == nil
			}
		case "term":
			bit = 128
			v.Term, ok = s.uint()
		case "limit":
			bit = 256
			v.Limit, ok = s.int()
		case "mode":
			bit = 512
			if b, ok = s.str(); ok {
				v.Mode = string(b)
			}
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	})
	if !ok {
		return false
	}
	// As json.Unmarshal into l: the keys present replace l's fields, the
	// others stay.
	set := func(bit uint16) bool { return seen&bit != 0 }
	if set(1) {
		l.Name = v.Name
	}
	if set(2) {
		l.Token = v.Token
	}
	if set(4) {
		l.Sequencer = v.Sequencer
	}
	if set(8) {
		l.LeaseID = v.LeaseID
	}
	if set(16) {
		l.Owner = v.Owner
	}
	if set(32) {
		l.TTL = v.TTL
	}
	if set(64) {
		l.ExpiresAt = v.ExpiresAt
	}
	if set(128) {
		l.Term = v.Term
	}
	if set(256) {
		l.Limit = v.Limit
	}
	if set(512) {
		l.Mode = v.Mode
	}
	return true
}

// marshalContender is json.Marshal(c): a contender node's data, by hand.
func marshalContender(c contenderData) []byte {
	b := make([]byte, 0, len(`{"owner":"","daemon":"","command":""}`)+len(c.Owner)+len(c.Daemon)+len(c.Command)+8)
	b = append(b, `{"owner":`...)
	b = appendJSONString(b, c.Owner)
	if c.Daemon != "" {
		b = append(b, `,"daemon":`...)
		b = appendJSONString(b, c.Daemon)
	}
	if c.Command != "" {
		b = append(b, `,"command":`...)
		b = appendJSONString(b, c.Command)
	}
	return append(b, '}')
}
