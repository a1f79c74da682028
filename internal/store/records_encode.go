package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// encodeRecordLine appends rec's records.jsonl line (with its '\n') to dst:
// the bytes a json.Encoder with SetEscapeHTML(false) writes, appended field
// by field instead of through reflection. A record the fast path is not
// sure about (a time that RFC 3339 cannot hold) goes to encoding/json, so
// the result, error included, is always encoding/json's.
// TestEncodeRecordLineMatchesEncodingJSON and FuzzEncodeRecord check that
// equivalence.
func encodeRecordLine(dst []byte, rec *Record) ([]byte, error) {
	if out, ok := appendRecord(dst, rec); ok {
		return out, nil
	}
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	cp := *rec                              // only this rare path copies rec to the heap
	if err := enc.Encode(&cp); err != nil { // Encode ends the line with '\n'
		return dst, err
	}
	return buf.Bytes(), nil
}

// appendRecord is encodeRecordLine's fast path; ok is false when it cannot
// encode rec exactly as encoding/json does.
func appendRecord(b []byte, rec *Record) (_ []byte, ok bool) {
	b = append(b, `{"url":`...)
	b = appendJSONString(b, rec.URL)
	if rec.FinalURL != "" {
		b = append(b, `,"final_url":`...)
		b = appendJSONString(b, rec.FinalURL)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(rec.Status), 10)
	b = append(b, `,"outcome":`...)
	b = appendJSONString(b, rec.Outcome)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(rec.Depth), 10)
	b = append(b, `,"fetched_at":"`...)
	var err error
	// What Time.MarshalJSON writes between its quotes (RFC 3339 with
	// nanoseconds; an error for a year or zone RFC 3339 cannot hold).
	if b, err = rec.FetchedAt.AppendText(b); err != nil {
		return b, false
	}
	b = append(b, '"')
	b = appendOmitEmpty(b, `,"content_type":`, rec.ContentType)
	b = appendOmitEmpty(b, `,"charset":`, rec.Charset)
	b = appendOmitEmpty(b, `,"title":`, rec.Title)
	if len(rec.OutLinks) > 0 {
		b = append(b, `,"out_links":[`...)
		for i, l := range rec.OutLinks {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, l)
		}
		b = append(b, ']')
	}
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(rec.Size), 10)
	b = append(b, `,"page_no":`...)
	b = strconv.AppendInt(b, rec.PageNo, 10)
	b = appendOmitEmpty(b, `,"duplicate_of":`, rec.DuplicateOf)
	if rec.Near {
		b = append(b, `,"near":true`...)
	}
	b = appendOmitEmpty(b, `,"fingerprint":`, rec.Fingerprint)
	b = appendOmitEmpty(b, `,"simhash":`, rec.SimHash)
	b = appendOmitEmpty(b, `,"canonical":`, rec.Canonical)
	b = appendOmitEmpty(b, `,"body_crc32c":`, rec.BodyCRC)
	if rec.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(rec.Attempts), 10)
	}
	b = appendOmitEmpty(b, `,"ip":`, rec.IP)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, rec.DurationMS, 10)
	b = appendOmitEmpty(b, `,"error":`, rec.Error)
	return append(b, "}\n"...), true
}

// appendOmitEmpty appends key (`,"name":`) and s unless s is empty.
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

const lowerHex = "0123456789abcdef"

// appendJSONString appends s as a JSON string as encoding/json does without
// HTML escaping: '"', '\\' and control characters escaped (\b \f \n \r \t
// short), invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
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
				b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', lowerHex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// lineBufs recycles the buffers records lines are encoded into (a line is
// written, then its buffer is free).
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledLine bounds the buffers kept in lineBufs (a page with thousands
// of out-links makes a line of hundreds of KiB).
const maxPooledLine = 256 << 10
