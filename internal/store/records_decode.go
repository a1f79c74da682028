package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeRecordLine decodes one records.jsonl line. A hand-written fast path
// handles the lines Records.Append writes (about three times faster than
// encoding/json in BenchmarkRecordsIterate, with half the allocations); any line
// the fast path is not sure about (unknown or differently cased keys, null
// values, fractions, invalid UTF-8, malformed JSON) goes to json.Unmarshal,
// so the result is always what json.Unmarshal would give. FuzzDecodeRecord
// checks that equivalence.
func decodeRecordLine(line []byte) (Record, error) {
	var rec Record
	if fastDecodeRecord(line, &rec) {
		return rec, nil
	}
	rec = Record{}
	if err := json.Unmarshal(line, &rec); err != nil {
		return Record{}, err
	}
	if isJSONNull(line) {
		return Record{}, errors.New("line is JSON null, not a record")
	}
	return rec, nil
}

// readRecordLine is decodeRecordLine for the check of a records file (fsck):
// every record spider writes has a url, an outcome and a fetched_at, so a line
// without one
// is damaged (readers that only read, Records.Iterate, take it as it is). A flipped byte in
// one of those keys leaves valid JSON whose field is silently gone (seen in
// a CI run, an "outcome" key: the crawl then took the URL for done with no
// outcome).
func readRecordLine(line []byte) (Record, error) {
	rec, err := decodeRecordLine(line)
	switch {
	case err != nil:
		return Record{}, err
	case rec.URL == "":
		return Record{}, errors.New("record has no url")
	case rec.Outcome == "":
		return Record{}, errors.New("record has no outcome")
	case !validOutcome(rec.Outcome):
		return Record{}, fmt.Errorf("record has an outcome no crawl writes: %q", rec.Outcome)
	case rec.FetchedAt.IsZero():
		return Record{}, errors.New("record has no fetched_at")
	}
	return rec, nil
}

// validOutcome reports whether outcome has a form the crawl writes: an HTTP
// status class, three digits from 100 to 599 ("200"), or a word of
// lowercase letters and hyphens ("robots", "too-many-redirects"). A flipped byte in an outcome
// is caught here (seen in a CI run: "200" became "h00", a valid JSON string
// the resumed crawl took for a finished URL). The digits are not compared
// with the record's status: the crawl writes them equal, but a false alarm
// here makes fsck --repair drop a good record, and other writers (tools,
// tests' fixtures) need not agree.
func validOutcome(outcome string) bool {
	if c := outcome[0]; c >= '0' && c <= '9' {
		n, err := strconv.Atoi(outcome)
		return err == nil && len(outcome) == 3 && n >= 100 && n <= 599
	}
	for i := 0; i < len(outcome); i++ {
		if c := outcome[i]; (c < 'a' || c > 'z') && c != '-' {
			return false
		}
	}
	return true
}

func isJSONNull(b []byte) bool {
	d := jsonScanner{b: b}
	d.ws()
	if !d.lit("null") {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// jsonScanner is the fast path's cursor over one line.
type jsonScanner struct {
	b []byte
	i int
}

func (d *jsonScanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// eat consumes byte c (after white space) and reports whether it was there.
func (d *jsonScanner) eat(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *jsonScanner) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// str parses a JSON string; ok is false for anything json.Unmarshal would
// reject or alter (invalid UTF-8 is replaced there, so it is left to it).
func (d *jsonScanner) str() (string, bool) {
	d.ws()
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", false
	}
	d.i++
	start := d.i
	for d.i < len(d.b) { // fast scan: no escapes, ASCII
		c := d.b[d.i]
		if c == '"' {
			s := string(d.b[start:d.i])
			d.i++
			return s, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		d.i++
	}
	out := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return string(out), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.b[d.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			out = append(out, d.b[d.i:d.i+size]...)
			d.i += size
		case c != '\\':
			out = append(out, c)
			d.i++
		default:
			if d.i+1 >= len(d.b) {
				return "", false
			}
			e := d.b[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					// A pair decodes to one rune; anything else is left
					// to encoding/json's replacement rules.
					if !d.lit(`\u`) {
						return "", false
					}
					r2, ok := d.hex4()
					if !ok {
						return "", false
					}
					r = utf16.DecodeRune(r, r2)
					if r == utf8.RuneError {
						return "", false
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", false
			}
		}
	}
	return "", false
}

func (d *jsonScanner) hex4() (rune, bool) {
	if len(d.b)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

// key parses an object key; plain ASCII keys are returned in place.
func (d *jsonScanner) key() ([]byte, bool) {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == '"' {
		for j := d.i + 1; j < len(d.b); j++ {
			c := d.b[j]
			if c == '"' {
				k := d.b[d.i+1 : j]
				d.i = j + 1
				return k, true
			}
			if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
		}
	}
	s, ok := d.str()
	return []byte(s), ok
}

// int parses a JSON integer without fraction or exponent into an int64.
func (d *jsonScanner) int() (int64, bool) {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || (n > 1 && d.b[digits] == '0') || n > 18 {
		return 0, false
	}
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	return v, err == nil
}

// fastDecodeRecord decodes the common shape of a record line into rec and
// reports whether it could; on false rec holds partial data.
func fastDecodeRecord(line []byte, rec *Record) bool {
	d := jsonScanner{b: line}
	if !d.eat('{') {
		return false
	}
	if d.eat('}') {
		d.ws()
		return d.i == len(d.b)
	}
	for {
		key, ok := d.key()
		if !ok || !d.eat(':') {
			return false
		}
		var sp *string
		var ip *int64
		var n int64
		switch string(key) { // no allocation: the compiler compares in place
		case "url":
			sp = &rec.URL
		case "final_url":
			sp = &rec.FinalURL
		case "outcome":
			sp = &rec.Outcome
		case "content_type":
			sp = &rec.ContentType
		case "charset":
			sp = &rec.Charset
		case "title":
			sp = &rec.Title
		case "duplicate_of":
			sp = &rec.DuplicateOf
		case "near":
			d.ws()
			switch {
			case d.lit("true"):
				rec.Near = true
			case d.lit("false"):
				rec.Near = false
			default:
				return false // null or not a bool: encoding/json decides
			}
		case "fingerprint":
			sp = &rec.Fingerprint
		case "simhash":
			sp = &rec.SimHash
		case "canonical":
			sp = &rec.Canonical
		case "body_crc32c":
			sp = &rec.BodyCRC
		case "ip":
			sp = &rec.IP
		case "error":
			sp = &rec.Error
		case "page_no":
			ip = &rec.PageNo
		case "duration_ms":
			ip = &rec.DurationMS
		case "status", "depth", "size", "attempts":
			v, ok := d.int()
			if !ok || int64(int(v)) != v {
				return false
			}
			switch string(key) {
			case "status":
				rec.Status = int(v)
			case "depth":
				rec.Depth = int(v)
			case "attempts":
				rec.Attempts = int(v)
			default:
				rec.Size = int(v)
			}
		case "fetched_at":
			d.ws()
			start := d.i
			if _, ok := d.str(); !ok {
				return false
			}
			if rec.FetchedAt.UnmarshalJSON(d.b[start:d.i]) != nil {
				return false
			}
		case "out_links":
			if !d.eat('[') {
				return false
			}
			links := []string{}
			if !d.eat(']') {
				for {
					s, ok := d.str()
					if !ok {
						return false
					}
					links = append(links, s)
					if d.eat(']') {
						break
					}
					if !d.eat(',') {
						return false
					}
				}
			}
			rec.OutLinks = links
		default:
			return false // unknown or differently cased: encoding/json decides
		}
		if sp != nil {
			if *sp, ok = d.str(); !ok {
				return false
			}
		}
		if ip != nil {
			if n, ok = d.int(); !ok {
				return false
			}
			*ip = n
		}
		if d.eat('}') {
			d.ws()
			return d.i == len(d.b)
		}
		if !d.eat(',') {
			return false
		}
	}
}
