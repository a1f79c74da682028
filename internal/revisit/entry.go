package revisit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Entry is one URL's revisit schedule. The zero Entry is a URL never fetched.
type Entry struct {
	// Next is when to fetch the URL again (zero: never).
	Next time.Time
	// Interval is the current revisit interval.
	Interval time.Duration
	// LastFetch is the last fetch that answered (2xx or 304); LastChange the fetch that
	// first saw the current content.
	LastFetch, LastChange time.Time
	// ETag and LastModified are the validators of the stored copy.
	ETag         string
	LastModified time.Time
	// Fingerprint is the stored copy's content fingerprint.
	Fingerprint uint64
	// History summarises the changes seen at revisits.
	History History
	// Failures counts the failed fetches in a row, FailClass the last one's class.
	Failures  uint8
	FailClass Class
	// ChangeFreq is the sitemap's changefreq; HintMisses counts the lastmod hints that
	// brought a fetch forward for no change; HintPending marks the next fetch as one.
	ChangeFreq  ChangeFreq
	HintMisses  uint8
	HintPending bool
	// HintLastMod is the sitemap <lastmod> that last brought a fetch forward (Policy.Hint;
	// kept to the second): a lastmod not after it is no news. A sitemap's request for a
	// page carries the entry's lastmod here too (a hint entry, not a schedule).
	HintLastMod time.Time
}

// Encoding limits.
const (
	// EncodingVersion is the first byte of MarshalBinary's output for an
	// entry with a hinted lastmod (Entry.HintLastMod, added in version 2);
	// an entry without one is written as version 1, which spiders from
	// before version 2 read too. UnmarshalEntry reads both.
	EncodingVersion = 2
	// MaxETag is the longest ETag kept (a longer one is not kept: no conditional GET).
	MaxETag = 256
)

// ErrBadEntry reports an encoded entry that cannot be read.
var ErrBadEntry = errors.New("bad revisit entry")

const (
	flagNext = 1 << iota
	flagFetch
	flagChange
	flagETag
	flagLastMod
	flagFingerprint
	flagHintPending
	flagHintLastMod
)

// MarshalBinary encodes e compactly: a version byte, a flag byte naming the present
// fields, then each present field as a varint (times in Unix milliseconds, Last-Modified
// in Unix seconds, the fingerprint as 8 bytes), the counters and the kept revisits
// (seconds << 1 | changed), and the hinted lastmod (Unix seconds) when set; Next and LastChange are written relative to LastFetch. A
// page fetched once with a 12-byte ETag takes 44 bytes; a full history adds about
// 4 bytes a kept revisit. An ETag longer than MaxETag is dropped.
func (e *Entry) MarshalBinary() ([]byte, error) {
	return e.AppendBinary(make([]byte, 0, 48+5*len(e.History.Recent)+len(e.ETag))), nil
}

// AppendBinary appends MarshalBinary's encoding to b.
func (e *Entry) AppendBinary(b []byte) []byte {
	var fl byte
	if !e.Next.IsZero() {
		fl |= flagNext
	}
	if !e.LastFetch.IsZero() {
		fl |= flagFetch
	}
	if !e.LastChange.IsZero() {
		fl |= flagChange
	}
	if e.ETag != "" && len(e.ETag) <= MaxETag {
		fl |= flagETag
	}
	if !e.LastModified.IsZero() {
		fl |= flagLastMod
	}
	if e.Fingerprint != 0 {
		fl |= flagFingerprint
	}
	if e.HintPending {
		fl |= flagHintPending
	}
	if !e.HintLastMod.IsZero() {
		fl |= flagHintLastMod
	}
	version := byte(1) // what spiders before HintLastMod read
	if fl&flagHintLastMod != 0 {
		version = EncodingVersion
	}
	b = append(b, version, fl)
	var base int64 // Next and LastChange are written relative to LastFetch
	if fl&flagFetch != 0 {
		base = e.LastFetch.UnixMilli()
		b = binary.AppendVarint(b, base)
	}
	if fl&flagNext != 0 {
		b = binary.AppendVarint(b, e.Next.UnixMilli()-base)
	}
	b = binary.AppendUvarint(b, uint64(max(e.Interval, 0)/time.Millisecond))
	if fl&flagChange != 0 {
		b = binary.AppendVarint(b, e.LastChange.UnixMilli()-base)
	}
	if fl&flagETag != 0 {
		b = binary.AppendUvarint(b, uint64(len(e.ETag)))
		b = append(b, e.ETag...)
	}
	if fl&flagLastMod != 0 {
		b = binary.AppendVarint(b, e.LastModified.Unix())
	}
	if fl&flagFingerprint != 0 {
		b = binary.LittleEndian.AppendUint64(b, e.Fingerprint)
	}
	b = append(b, e.Failures, byte(e.FailClass), byte(e.ChangeFreq), e.HintMisses)
	h := &e.History
	b = binary.AppendUvarint(b, uint64(h.Revisits))
	b = binary.AppendUvarint(b, uint64(h.Changes))
	rec := h.Recent
	if len(rec) > MaxObservations {
		rec = rec[len(rec)-MaxObservations:]
	}
	b = binary.AppendUvarint(b, uint64(len(rec)))
	for _, o := range rec {
		v := uint64(o.Seconds) << 1
		if o.Changed {
			v |= 1
		}
		b = binary.AppendUvarint(b, v)
	}
	if fl&flagHintLastMod != 0 {
		b = binary.AppendVarint(b, e.HintLastMod.Unix())
	}
	return b
}

// UnmarshalBinary decodes MarshalBinary's encoding into e; on error e is unchanged.
func (e *Entry) UnmarshalBinary(data []byte) error {
	out, err := UnmarshalEntry(data)
	if err != nil {
		return err
	}
	*e = out
	return nil
}

// UnmarshalEntry decodes MarshalBinary's encoding. It returns an error wrapping
// ErrBadEntry for an unknown version, a truncated or over-long input, a field out of
// range, or trailing bytes.
func UnmarshalEntry(data []byte) (Entry, error) {
	var e Entry
	d := decoder{b: data}
	v := d.byte()
	if d.err == nil && (v < 1 || v > EncodingVersion) {
		return e, fmt.Errorf("cannot read revisit entry version %d: %w: this build reads versions 1 to %d (a newer spider wrote it?)", v, ErrBadEntry, EncodingVersion)
	}
	fl := d.byte()
	if int(fl) >= flagHintLastMod<<1 || v == 1 && fl&flagHintLastMod != 0 {
		d.fail("unknown flags")
	}
	var base int64
	if fl&flagFetch != 0 {
		e.LastFetch = d.millis(0)
		base = e.LastFetch.UnixMilli()
	}
	if fl&flagNext != 0 {
		e.Next = d.millis(base)
	}
	iv := d.uvarint()
	if iv > uint64(1<<62)/uint64(time.Millisecond) {
		d.fail("interval out of range")
	}
	e.Interval = time.Duration(iv) * time.Millisecond
	if fl&flagChange != 0 {
		e.LastChange = d.millis(base)
	}
	if fl&flagETag != 0 {
		n := d.uvarint()
		if n == 0 || n > MaxETag {
			d.fail("etag length out of range")
		}
		e.ETag = string(d.bytes(int(n)))
	}
	if fl&flagLastMod != 0 {
		s := d.varint()
		if s < -1<<40 || s > 1<<40 {
			d.fail("last-modified out of range")
		}
		e.LastModified = time.Unix(s, 0).UTC()
	}
	if fl&flagFingerprint != 0 {
		if fp := d.bytes(8); fp != nil {
			e.Fingerprint = binary.LittleEndian.Uint64(fp)
		}
		if e.Fingerprint == 0 {
			d.fail("zero fingerprint flagged")
		}
	}
	e.HintPending = fl&flagHintPending != 0
	e.Failures, e.FailClass, e.ChangeFreq, e.HintMisses = d.byte(), Class(d.byte()), ChangeFreq(d.byte()), d.byte()
	if e.FailClass >= numClasses || int(e.ChangeFreq) >= len(freqNames) {
		d.fail("class or changefreq out of range")
	}
	rv, ch := d.uvarint(), d.uvarint()
	if rv > 1<<32-1 || ch > rv {
		d.fail("counters out of range")
	}
	e.History.Revisits, e.History.Changes = uint32(rv), uint32(ch)
	n := d.uvarint()
	if n > MaxObservations || n > rv {
		d.fail("too many revisits kept")
	}
	if d.err == nil && n > 0 {
		e.History.Recent = make([]Observed, n)
		for i := range e.History.Recent {
			v := d.uvarint()
			if v>>1 == 0 || v>>1 > 1<<32-1 {
				d.fail("revisit interval out of range")
			}
			e.History.Recent[i] = Observed{Seconds: uint32(v >> 1), Changed: v&1 == 1}
		}
	}
	if fl&flagHintLastMod != 0 {
		s := d.varint()
		if s < -1<<40 || s > 1<<40 || s == 0 {
			d.fail("hint lastmod out of range")
		}
		e.HintLastMod = time.Unix(s, 0).UTC()
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return Entry{}, d.err
	}
	return e, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("cannot read revisit entry: %w: %s (the stored schedule is damaged; the URL is fetched again as new)", ErrBadEntry, what)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || len(d.b) < n {
		d.fail("truncated")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// millis reads a Unix-millisecond time written relative to base, bounded to about
// ±8,900 years around 1970.
func (d *decoder) millis(base int64) time.Time {
	v := d.varint()
	if v < -1<<49 || v > 1<<49 {
		d.fail("time out of range")
		return time.Time{}
	}
	v += base
	if v < -1<<48 || v > 1<<48 {
		d.fail("time out of range")
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
