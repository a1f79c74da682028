package exthash

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// PageSize is the size of every page of the bucket file and the directory
// file, and of each page image in the write-ahead log.
const PageSize = 4096

// Layout of a bucket page (also used by the cache bucket page):
//
//	0      local depth LL (uint8)
//	1      flags: bit 0 = BNP (the cache bucket holds records of this bucket)
//	2..3   RU, the number of records (uint16, little endian)
//	4..5   bytes used by records (uint16)
//	6..7   reserved (0)
//	8..11  CRC-32C of the page with these four bytes zero
//	12..15 reserved (0)
//	16..   records: klen uint16, vlen uint16, key, value
const (
	pageHeader = 16
	recHeader  = 4
	pageRoom   = PageSize - pageHeader
	flagBNP    = 1
)

// MaxRecord is the largest len(key)+len(value) accepted: a quarter of a
// bucket's room, so that a bucket always holds at least four records and a
// split always has something to move.
const MaxRecord = pageRoom/4 - recHeader

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// record is one key/value pair. Slices may alias a page buffer until the
// bucket is re-encoded.
type record struct {
	key, val []byte
}

func (r record) size() int { return recHeader + len(r.key) + len(r.val) }

// bucket is a decoded bucket page.
type bucket struct {
	ll   uint8
	bnp  bool
	recs []record
	used int
}

func (b *bucket) find(key []byte) int {
	for i, r := range b.recs {
		if bytes.Equal(r.key, key) {
			return i
		}
	}
	return -1
}

func (b *bucket) fits(n int) bool { return b.used+n <= pageRoom }

func (b *bucket) add(r record) {
	b.recs = append(b.recs, r)
	b.used += r.size()
}

func (b *bucket) remove(i int) {
	b.used -= b.recs[i].size()
	b.recs = append(b.recs[:i], b.recs[i+1:]...)
}

// encode writes b into a fresh page.
func (b *bucket) encode() []byte {
	p := make([]byte, PageSize)
	p[0] = b.ll
	if b.bnp {
		p[1] |= flagBNP
	}
	binary.LittleEndian.PutUint16(p[2:], uint16(len(b.recs)))
	binary.LittleEndian.PutUint16(p[4:], uint16(b.used))
	off := pageHeader
	for _, r := range b.recs {
		binary.LittleEndian.PutUint16(p[off:], uint16(len(r.key)))
		binary.LittleEndian.PutUint16(p[off+2:], uint16(len(r.val)))
		off += recHeader
		off += copy(p[off:], r.key)
		off += copy(p[off:], r.val)
	}
	sealPage(p)
	return p
}

// sealPage stores the page checksum at bytes 8..11.
func sealPage(p []byte) {
	binary.LittleEndian.PutUint32(p[8:], 0)
	binary.LittleEndian.PutUint32(p[8:], crc32.Checksum(p, castagnoli))
}

// pageOK reports whether p's checksum matches.
func pageOK(p []byte) bool {
	want := binary.LittleEndian.Uint32(p[8:])
	var hdr [4]byte
	copy(hdr[:], p[8:12])
	binary.LittleEndian.PutUint32(p[8:], 0)
	got := crc32.Checksum(p, castagnoli)
	copy(p[8:12], hdr[:])
	return got == want
}

// decodeBucket parses a bucket page; the records alias p.
func decodeBucket(p []byte) (*bucket, error) {
	if len(p) != PageSize {
		return nil, fmt.Errorf("page is %d bytes, want %d: %w", len(p), PageSize, ErrCorrupt)
	}
	if !pageOK(p) {
		return nil, fmt.Errorf("page checksum mismatch: %w", ErrCorrupt)
	}
	b := &bucket{ll: p[0], bnp: p[1]&flagBNP != 0}
	n := int(binary.LittleEndian.Uint16(p[2:]))
	used := int(binary.LittleEndian.Uint16(p[4:]))
	if used > pageRoom {
		return nil, fmt.Errorf("page claims %d used bytes: %w", used, ErrCorrupt)
	}
	b.recs = make([]record, 0, n+1)
	off := pageHeader
	for i := 0; i < n; i++ {
		if off+recHeader > pageHeader+used {
			return nil, fmt.Errorf("record %d runs past the page: %w", i, ErrCorrupt)
		}
		kl := int(binary.LittleEndian.Uint16(p[off:]))
		vl := int(binary.LittleEndian.Uint16(p[off+2:]))
		off += recHeader
		if off+kl+vl > pageHeader+used {
			return nil, fmt.Errorf("record %d runs past the page: %w", i, ErrCorrupt)
		}
		b.recs = append(b.recs, record{key: p[off : off+kl : off+kl], val: p[off+kl : off+kl+vl : off+kl+vl]})
		off += kl + vl
	}
	if off != pageHeader+used {
		return nil, fmt.Errorf("page has %d used bytes but records end at %d: %w", used, off-pageHeader, ErrCorrupt)
	}
	b.used = used
	return b, nil
}

// Layout of the directory file's header page (page 0):
//
//	0..7    magic "EXTHASH1"
//	8..11   CRC-32C (as bucket pages)
//	12      global depth GL
//	13..15  reserved
//	16..19  number of buckets (pages of the bucket file)
//	20..27  number of records
//	28..35  sequence number of the last commit
//
// Page 1 is the cache bucket (bucket page layout; LL unused); pages 2… hold
// the directory: 2^GL little-endian uint32 bucket numbers, 1024 per page.
const (
	hdrPage       = 0
	cachePage     = 1
	firstDirPage  = 2
	dirPerPage    = PageSize / 4
	headerMagic   = "EXTHASH1"
	maxDepthLimit = 30
)

type header struct {
	gl       uint8
	nbuckets uint32
	records  int64
	seq      uint64
}

func (h header) encode() []byte {
	p := make([]byte, PageSize)
	copy(p, headerMagic)
	p[12] = h.gl
	binary.LittleEndian.PutUint32(p[16:], h.nbuckets)
	binary.LittleEndian.PutUint64(p[20:], uint64(h.records))
	binary.LittleEndian.PutUint64(p[28:], h.seq)
	sealPage(p)
	return p
}

func decodeHeader(p []byte) (header, error) {
	if string(p[:8]) != headerMagic {
		return header{}, fmt.Errorf("directory file does not start with %q: %w", headerMagic, ErrCorrupt)
	}
	if !pageOK(p) {
		return header{}, fmt.Errorf("directory header checksum mismatch: %w", ErrCorrupt)
	}
	h := header{
		gl:       p[12],
		nbuckets: binary.LittleEndian.Uint32(p[16:]),
		records:  int64(binary.LittleEndian.Uint64(p[20:])),
		seq:      binary.LittleEndian.Uint64(p[28:]),
	}
	if h.gl > maxDepthLimit || h.nbuckets == 0 || h.records < 0 {
		return header{}, fmt.Errorf("directory header out of range (GL %d, %d buckets, %d records): %w", h.gl, h.nbuckets, h.records, ErrCorrupt)
	}
	return h, nil
}
