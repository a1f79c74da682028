package frontier

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Request is one URL to crawl, as it travels between the engine, the
// frontier and the durable state.
type Request struct {
	// URL is the absolute URL to fetch.
	URL string
	// Key is the politeness key: "host:port", or the server IP in per-IP
	// mode. The engine sets it; the frontier never derives it from URL.
	Key string
	// Depth is the link distance from a seed (seeds are 0).
	Depth int
	// Priority selects the front queue: 0 is the highest; values at or above
	// Config.FrontQueues use the last (lowest) queue.
	Priority int
	// Seq is the unique, increasing sequence number assigned by internal/state
	// when the URL was accepted; it is the key of the pending record.
	Seq uint64
	// Attempt counts earlier failed tries (0 for the first try).
	Attempt int
	// Redirects counts redirects followed to reach URL.
	Redirects int
	// Topic names the crawl topic the URL belongs to ("" for none). Topics
	// are meant to be a small set of names: the frontier interns each
	// distinct topic for its whole life.
	Topic string
	// Kind tells what the URL is fetched for: KindPage (the zero value), or
	// KindSitemap, a sitemap document whose URLs are discovered and which is
	// not stored as a page.
	Kind Kind
	// Schedule is the URL's revisit schedule entry (package revisit's
	// Entry encoding) when the request is a revisit or a retry of an URL
	// fetched before; nil for a first fetch. The fetcher reads its
	// validators for a conditional GET, the scheduler updates it. The
	// frontier never reads it. (A string, not a []byte, so that a Request
	// stays comparable and its copies never share mutable bytes.)
	Schedule string
}

// Kind is what a request is fetched for.
type Kind uint8

// The kinds of requests.
const (
	// KindPage is a page: fetched, stored, its links followed.
	KindPage Kind = iota
	// KindSitemap is a sitemap document (sitemaps.org): its URLs are
	// discovered; it is not stored as a page.
	KindSitemap
)

// requestVersion is the first byte of the binary encoding of a request
// whose Kind and Schedule are zero; requestVersion2 adds them.
const (
	requestVersion  = 1
	requestVersion2 = 2
)

// ErrBadEncoding is wrapped by UnmarshalBinary errors.
var ErrBadEncoding = errors.New("bad request encoding")

// AppendBinary appends the compact binary form of r to b and returns the
// extended slice. The form is: a version byte (1); the URL and Key as
// uvarint-length-prefixed bytes; Depth and Priority as zig-zag varints; Seq as
// a uvarint; Attempt and Redirects as zig-zag varints; Topic as
// length-prefixed bytes. A typical request costs its URL and Key bytes plus
// about 10 bytes. A request with a Kind or a Schedule is written as version 2:
// the same fields, then Kind as one byte and Schedule as length-prefixed
// bytes (so requests without them keep the version 1 form that older data
// and the Redis state's scripts read). It never fails (the error is for
// encoding.BinaryAppender).
func (r Request) AppendBinary(b []byte) ([]byte, error) {
	v2 := r.Kind != KindPage || len(r.Schedule) > 0
	if v2 {
		b = append(b, requestVersion2)
	} else {
		b = append(b, requestVersion)
	}
	b = binary.AppendUvarint(b, uint64(len(r.URL)))
	b = append(b, r.URL...)
	b = binary.AppendUvarint(b, uint64(len(r.Key)))
	b = append(b, r.Key...)
	b = binary.AppendVarint(b, int64(r.Depth))
	b = binary.AppendVarint(b, int64(r.Priority))
	b = binary.AppendUvarint(b, r.Seq)
	b = binary.AppendVarint(b, int64(r.Attempt))
	b = binary.AppendVarint(b, int64(r.Redirects))
	b = binary.AppendUvarint(b, uint64(len(r.Topic)))
	b = append(b, r.Topic...)
	if v2 {
		b = append(b, byte(r.Kind))
		b = binary.AppendUvarint(b, uint64(len(r.Schedule)))
		b = append(b, r.Schedule...)
	}
	return b, nil
}

// MarshalBinary returns the encoding described at AppendBinary.
func (r Request) MarshalBinary() ([]byte, error) {
	return r.AppendBinary(make([]byte, 0, 26+len(r.URL)+len(r.Key)+len(r.Topic)+len(r.Schedule)))
}

// UnmarshalBinary decodes data written by MarshalBinary into r. It returns an
// error wrapping ErrBadEncoding when data is truncated, has an unknown
// version, an integer that does not fit, or trailing bytes; r is then left
// unchanged. The decoded strings do not alias data. A version 2
// encoding whose Kind and Schedule are zero is refused (it is always written
// as version 1), so every request has exactly one encoding.
func (r *Request) UnmarshalBinary(data []byte) error {
	d := decoder{b: data}
	v := d.byte()
	if d.err == nil && v != requestVersion && v != requestVersion2 {
		return fmt.Errorf("cannot decode request: unknown version %d (this build reads versions %d and %d): %w", v, requestVersion, requestVersion2, ErrBadEncoding)
	}
	var out Request
	out.URL = d.str("URL")
	out.Key = d.str("Key")
	out.Depth = d.int("Depth")
	out.Priority = d.int("Priority")
	out.Seq = d.uvarint("Seq")
	out.Attempt = d.int("Attempt")
	out.Redirects = d.int("Redirects")
	out.Topic = d.str("Topic")
	if v == requestVersion2 {
		out.Kind = Kind(d.byte())
		out.Schedule = d.str("Schedule")
		if d.err == nil && out.Kind > KindSitemap {
			d.fail("Kind", fmt.Sprintf("unknown kind %d", out.Kind))
		}
		if d.err == nil && out.Kind == KindPage && out.Schedule == "" {
			d.fail("version", "version 2 with no kind and no schedule")
		}
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("cannot decode request: %d trailing bytes: %w", len(d.b), ErrBadEncoding)
	}
	*r = out
	return nil
}

// decoder reads the request encoding, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(field, what string) {
	if d.err == nil {
		d.err = fmt.Errorf("cannot decode request field %s: %s: %w", field, what, ErrBadEncoding)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("version", "empty input")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(field, "truncated or overflowing varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int(field string) int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(field, "truncated or overflowing varint")
		return 0
	}
	if int64(int(v)) != v {
		d.fail(field, "value does not fit in int")
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) str(field string) string {
	n := d.uvarint(field)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail(field, fmt.Sprintf("length %d exceeds the %d remaining bytes", n, len(d.b)))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// AppendRequests appends a list of requests to b: a uvarint count, then
// each request's MarshalBinary encoding after its uvarint length. It is the
// tail of the kept-links records of both crawl states (package state's
// links bucket, package rstate's links hash).
func AppendRequests(b []byte, reqs []Request) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(reqs)))
	for _, r := range reqs {
		enc, err := r.MarshalBinary()
		if err != nil {
			return nil, err
		}
		b = binary.AppendUvarint(b, uint64(len(enc)))
		b = append(b, enc...)
	}
	return b, nil
}

// DecodeRequests reads a list written by AppendRequests that fills all of
// b. It fails on a bad count, a truncated or undecodable request, or
// trailing bytes.
func DecodeRequests(b []byte) ([]Request, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, errors.New("bad count")
	}
	b = b[n:]
	reqs := make([]Request, 0, count)
	for range count {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, errors.New("truncated request")
		}
		var r Request
		if err := r.UnmarshalBinary(b[n : n+int(l)]); err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
		b = b[n+int(l):]
	}
	if len(b) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return reqs, nil
}

// ShiftDepth returns copies of reqs shift levels shallower (Depth and
// Priority, neither below 0): the requests a page discovered, for a page
// later found that much closer to a seed. shift ≤ 0 returns reqs itself.
func ShiftDepth(reqs []Request, shift int) []Request {
	if shift <= 0 {
		return reqs
	}
	out := make([]Request, len(reqs))
	for i, r := range reqs {
		r.Depth = max(r.Depth-shift, 0)
		r.Priority = max(r.Priority-shift, 0)
		out[i] = r
	}
	return out
}
