package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Segment file layout (all integers little-endian; "uv" is an unsigned
// varint as encoding/binary writes it):
//
//	header   8-byte magic "SPDXSEG\x00", u32 format version, u32 zero
//	docs     per document: uv len, URL; uv len, title; uv len, stored text
//	         (raw DEFLATE of the first StoredTextBytes of the text); uv
//	         len, snippet marks (see Doc.Marks); uv last fetched, Unix
//	         seconds (Doc.Fetched; 0: unknown; not in version 3)
//	doctab   per document: u64 offset of its entry in docs, u32 length
//	         of the main text in words (Doc.Len)
//	hashes   per document: u64 xxhash64 of its URL
//	tombs    sorted u64 URL hashes this segment deletes from older segments
//	postings per term: per document, in id order: uv doc-id delta, uv
//	         short-field frequency (BM25F: title, headings and anchor text
//	         occurrences times their field weights, in quarters: see
//	         shortScale), uv main-text frequency
//	         (times the body weight; the two are not both 0), uv number of
//	         positions (0 for a term only in headings or anchor text), then
//	         that many uv position deltas
//	dict     terms in byte order: uv len, term, uv document frequency,
//	         uv postings offset, uv postings length
//	dictidx  u64 offset in dict of every dictBlock-th term
//	footer   per section (docs … dictidx): u64 offset, u64 length, u32
//	         CRC-32C; then u32 documents, u64 terms, u64 total length,
//	         u32 CRC-32C of the footer so far, 8-byte magic
//	         "SPDXEND\x00"
//
// Opening checks the magics, the version, every section's bounds and CRC, so
// a truncated or corrupt file is refused with ErrCorrupt before any query
// reads it; decoding is also bounds-checked, so even a file whose checksums
// were forged cannot crash a query. Segments of versions 1 and 2 (before
// BM25F: one frequency per posting, no field weights) are refused with
// ErrOldFormat; spider index rebuilds such an index. Version 3 segments
// (before the last-fetched time) are read, their documents' fetch time
// unknown; a merge rewrites them as version 4.
const (
	segMagic      = "SPDXSEG\x00"
	segEndMagic   = "SPDXEND\x00"
	segVersion    = 4 // written and read; 3 read; 1 and 2 are refused with ErrOldFormat
	headerSize    = 16
	numSections   = 7
	footerSize    = numSections*20 + 4 + 8 + 8 + 4 + 8
	dictBlock     = 64
	segmentSuffix = ".seg"
)

const (
	secDocs = iota
	secDocTab
	secHashes
	secTombs
	secPostings
	secDict
	secDictIdx
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by the errors for index files that are truncated,
// damaged or of an unknown format version.
var ErrCorrupt = errors.New("index file is corrupt")

// ErrOldFormat is wrapped by the errors for segments written by an older
// spider (format versions 1 and 2, before BM25F). Build rebuilds them; a
// search says to run spider index.
var ErrOldFormat = errors.New("index is of an older format")

// urlHash is the document identity used across segments.
func urlHash(url string) uint64 { return xxhash.Sum64String(url) }

// segment is one open, read-only segment file.
type segment struct {
	name     string
	data     []byte
	version  int // format version: 1 has no snippet marks
	unmap    func() error
	ndocs    int
	nterms   int
	totalLen int64
	sec      [numSections][]byte
	skipc    skipCache // skip indexes of long postings lists, built on demand
	ranks    docRanks  // PageRank score of every document, per rank file
}

// decodeSegment validates data as a segment file and returns its sections.
// It never panics on any input.
func decodeSegment(name string, data []byte) (*segment, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("cannot open index segment %s: %s; run spider index --data DIR (it rebuilds damaged segments) or spider fsck --data DIR --repair: %w",
			name, fmt.Sprintf(format, args...), ErrCorrupt)
	}
	if len(data) < headerSize+footerSize {
		return nil, bad("file is %d bytes, shorter than a header and footer (truncated?)", len(data))
	}
	if string(data[:8]) != segMagic {
		return nil, bad("not a segment file (bad magic)")
	}
	version := binary.LittleEndian.Uint32(data[8:])
	if version == 1 || version == 2 {
		return nil, fmt.Errorf("cannot open index segment %s: it is of format version %d, written before ranking by fields (BM25F with anchor text); this spider reads version %d: run spider index --data DIR to rebuild the index: %w",
			name, version, segVersion, ErrOldFormat)
	}
	if version != segVersion && version != 3 {
		return nil, bad("format version %d, this spider reads version %d", version, segVersion)
	}
	foot := data[len(data)-footerSize:]
	if string(foot[footerSize-8:]) != segEndMagic {
		return nil, bad("footer magic missing (truncated?)")
	}
	crcAt := footerSize - 12
	if got, want := crc32.Checksum(foot[:crcAt], castagnoli), binary.LittleEndian.Uint32(foot[crcAt:]); got != want {
		return nil, bad("footer checksum mismatch")
	}
	s := &segment{name: name, data: data, version: int(version)}
	body := uint64(len(data) - footerSize)
	for i := range numSections {
		e := foot[i*20:]
		off, n := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
		if off < headerSize || off > body || n > body-off {
			return nil, bad("section %d out of bounds", i)
		}
		sec := data[off : off+n]
		if crc32.Checksum(sec, castagnoli) != binary.LittleEndian.Uint32(e[16:]) {
			return nil, bad("section %d checksum mismatch", i)
		}
		s.sec[i] = sec
	}
	rest := foot[numSections*20:]
	ndocs := binary.LittleEndian.Uint32(rest)
	nterms := binary.LittleEndian.Uint64(rest[4:])
	s.totalLen = int64(binary.LittleEndian.Uint64(rest[12:]) & (1<<62 - 1))
	if uint64(len(s.sec[secDocTab])) != uint64(ndocs)*12 || uint64(len(s.sec[secHashes])) != uint64(ndocs)*8 {
		return nil, bad("document tables do not match the %d documents", ndocs)
	}
	if len(s.sec[secTombs])%8 != 0 {
		return nil, bad("deletion list is not a whole number of hashes")
	}
	if nterms > uint64(len(s.sec[secDict])) || uint64(len(s.sec[secDictIdx])) != (nterms+dictBlock-1)/dictBlock*8 {
		return nil, bad("dictionary index does not match the %d terms", nterms)
	}
	s.ndocs, s.nterms = int(ndocs), int(nterms)
	return s, nil
}

// openSegment maps (or reads) dir/name and validates it.
func openSegment(dir, name string) (*segment, error) {
	data, unmap, err := mapFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("cannot open index segment %s: %w; run spider index --data DIR (it rebuilds missing segments) or spider fsck --data DIR --repair", name, err)
	}
	s, err := decodeSegment(name, data)
	if err != nil {
		unmap()
		return nil, err
	}
	s.unmap = unmap
	return s, nil
}

func (s *segment) close() error {
	if s.unmap == nil {
		return nil
	}
	err := s.unmap()
	s.unmap = nil
	return err
}

func (s *segment) hash(i int) uint64 {
	return binary.LittleEndian.Uint64(s.sec[secHashes][i*8:])
}

func (s *segment) docLen(i int) int {
	return int(binary.LittleEndian.Uint32(s.sec[secDocTab][i*12+8:]))
}

func (s *segment) tombs() int { return len(s.sec[secTombs]) / 8 }

func (s *segment) tomb(i int) uint64 { return binary.LittleEndian.Uint64(s.sec[secTombs][i*8:]) }

// storedDoc is a document's stored fields.
type storedDoc struct {
	URL, Title string
	Text       []byte    // raw DEFLATE of the stored text
	Marks      []byte    // snippet marks (Doc.Marks); nil in version 1 segments
	Fetched    time.Time // last fetched (Doc.Fetched); zero: unknown (version 3 segments)
}

// doc decodes document i's stored fields.
func (s *segment) doc(i int) (storedDoc, error) {
	if i < 0 || i >= s.ndocs {
		return storedDoc{}, fmt.Errorf("document %d of segment %s does not exist: %w", i, s.name, ErrCorrupt)
	}
	off := binary.LittleEndian.Uint64(s.sec[secDocTab][i*12:])
	docs := s.sec[secDocs]
	if off > uint64(len(docs)) {
		return storedDoc{}, fmt.Errorf("document %d of segment %s points outside the file: %w", i, s.name, ErrCorrupt)
	}
	r := reader{b: docs[off:]}
	d := storedDoc{URL: string(r.bytes()), Title: string(r.bytes()), Text: r.bytes()}
	if s.version >= 2 {
		d.Marks = r.bytes()
	}
	if s.version >= 4 {
		if sec := r.uvarint(); sec > 0 && sec < 1<<40 {
			d.Fetched = time.Unix(int64(sec), 0).UTC()
		}
	}
	if r.err {
		return storedDoc{}, fmt.Errorf("document %d of segment %s is damaged: %w", i, s.name, ErrCorrupt)
	}
	return d, nil
}

// docURL returns document i's URL without copying the other fields.
func (s *segment) docURL(i int) (string, bool) {
	u, ok := s.docURLBytes(i)
	return string(u), ok
}

// docURLBytes is docURL without a copy: the bytes are the mapped file's.
func (s *segment) docURLBytes(i int) ([]byte, bool) {
	off := binary.LittleEndian.Uint64(s.sec[secDocTab][i*12:])
	docs := s.sec[secDocs]
	if off > uint64(len(docs)) {
		return nil, false
	}
	r := reader{b: docs[off:]}
	u := r.bytes()
	return u, !r.err
}

// termInfo locates one term's postings.
type termInfo struct {
	term     string
	df       int
	postings []byte
}

// dictEntry decodes the dictionary entry at r; ok is false on damage.
func (s *segment) dictEntry(r *reader) (termInfo, bool) {
	t := r.bytes()
	df, off, n := r.uvarint(), r.uvarint(), r.uvarint()
	post := s.sec[secPostings]
	if r.err || off > uint64(len(post)) || n > uint64(len(post))-off || df > uint64(s.ndocs) {
		return termInfo{}, false
	}
	return termInfo{term: string(t), df: int(df), postings: post[off : off+n]}, true
}

// lookup finds term in the dictionary: a binary search over the block index,
// then a scan of at most dictBlock entries.
func (s *segment) lookup(term string) (termInfo, bool, error) {
	idx, dict := s.sec[secDictIdx], s.sec[secDict]
	nb := len(idx) / 8
	firstTerm := func(b int) ([]byte, bool) {
		off := binary.LittleEndian.Uint64(idx[b*8:])
		if off > uint64(len(dict)) {
			return nil, false
		}
		r := reader{b: dict[off:]}
		t := r.bytes()
		return t, !r.err
	}
	damaged := false
	b := sort.Search(nb, func(b int) bool {
		t, ok := firstTerm(b)
		if !ok {
			damaged = true
			return true
		}
		return string(t) > term
	}) - 1
	if damaged {
		return termInfo{}, false, fmt.Errorf("dictionary of segment %s is damaged: %w", s.name, ErrCorrupt)
	}
	if b < 0 {
		return termInfo{}, false, nil
	}
	off := binary.LittleEndian.Uint64(idx[b*8:])
	r := reader{b: dict[off:]}
	for k := 0; k < dictBlock && b*dictBlock+k < s.nterms; k++ {
		ti, ok := s.dictEntry(&r)
		if !ok {
			return termInfo{}, false, fmt.Errorf("dictionary of segment %s is damaged: %w", s.name, ErrCorrupt)
		}
		if ti.term == term {
			return ti, true, nil
		}
		if ti.term > term {
			break
		}
	}
	return termInfo{}, false, nil
}

// terms calls fn for every dictionary entry in term order.
func (s *segment) terms(fn func(termInfo) error) error {
	r := reader{b: s.sec[secDict]}
	for range s.nterms {
		ti, ok := s.dictEntry(&r)
		if !ok {
			return fmt.Errorf("dictionary of segment %s is damaged: %w", s.name, ErrCorrupt)
		}
		if err := fn(ti); err != nil {
			return err
		}
	}
	return nil
}

// posting is one document of a postings list.
type posting struct {
	doc   int
	short int    // short-field frequency (title, headings, anchor text), weighted
	freq  int    // main-text frequency, weighted
	npos  int    // number of positions
	pos   []byte // npos position deltas, still encoded
}

// postIter walks a postings list. It stops with err set at the first damage.
type postIter struct {
	r    reader
	doc  int
	n    int // postings left
	max  int // number of documents in the segment
	err  error
	name string
}

func newPostIter(s *segment, ti termInfo) postIter {
	return postIter{r: reader{b: ti.postings}, doc: -1, n: ti.df, max: s.ndocs, name: s.name}
}

// next returns the next posting; ok is false at the end or on damage.
func (it *postIter) next() (p posting, ok bool) {
	if it.n == 0 || it.err != nil {
		return posting{}, false
	}
	it.n--
	d := it.r.uvarint()
	sh := it.r.uvarint()
	f := it.r.uvarint()
	np := it.r.uvarint()
	start := it.r.off
	// Skip the np position varints: count the bytes that end a varint (high
	// bit clear) rather than decoding them.
	end := start
	if !it.r.err && np > uint64(len(it.r.b)-start) {
		it.r.err = true
	}
	if !it.r.err {
		b := it.r.b
		for left := int(np); left > 0; end++ {
			if end >= len(b) {
				it.r.err = true
				break
			}
			if b[end] < 0x80 {
				left--
			}
		}
		if !it.r.err {
			it.r.off = end
		}
	}
	// The first document id is absolute, the others are deltas above 0.
	nd := int(d)
	if it.doc >= 0 {
		nd = it.doc + int(d)
	}
	if it.r.err || f+sh == 0 || f >= 1<<31 || sh >= 1<<31 || d > uint64(it.max) || (it.doc >= 0 && d == 0) || nd >= it.max {
		it.err = fmt.Errorf("postings in segment %s are damaged: %w", it.name, ErrCorrupt)
		return posting{}, false
	}
	it.doc = nd
	return posting{doc: it.doc, short: int(sh), freq: int(f), npos: int(np), pos: it.r.b[start:it.r.off]}, true
}

// positions decodes p's positions into dst.
func (p posting) positions(dst []int) []int {
	r := reader{b: p.pos}
	last := 0
	for range p.npos {
		last += int(r.uvarint() & (1<<31 - 1))
		dst = append(dst, last)
	}
	return dst
}

// reader decodes varints and length-prefixed bytes; err latches.
type reader struct {
	b   []byte
	off int
	err bool
}

func (r *reader) uvarint() uint64 {
	if r.err {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = true
		return 0
	}
	r.off += n
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err || n > uint64(len(r.b)-r.off) {
		r.err = true
		return nil
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b
}

// segWriter writes a segment file section by section.
type segWriter struct {
	w    io.Writer
	off  uint64
	secs [numSections][3]uint64 // offset, length, crc
	crc  uint32
	cur  int
	err  error
}

func (w *segWriter) write(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.w.Write(b); err != nil {
		w.err = err
		return
	}
	w.off += uint64(len(b))
	w.crc = crc32.Update(w.crc, castagnoli, b)
}

func (w *segWriter) begin(sec int) {
	w.cur = sec
	w.secs[sec][0] = w.off
	w.crc = 0
}

func (w *segWriter) end() {
	w.secs[w.cur][1] = w.off - w.secs[w.cur][0]
	w.secs[w.cur][2] = uint64(w.crc)
}

func (w *segWriter) footer(ndocs int, nterms int, totalLen int64) {
	var f bytes.Buffer
	for _, s := range w.secs {
		f.Write(binary.LittleEndian.AppendUint64(nil, s[0]))
		f.Write(binary.LittleEndian.AppendUint64(nil, s[1]))
		f.Write(binary.LittleEndian.AppendUint32(nil, uint32(s[2])))
	}
	f.Write(binary.LittleEndian.AppendUint32(nil, uint32(ndocs)))
	f.Write(binary.LittleEndian.AppendUint64(nil, uint64(nterms)))
	f.Write(binary.LittleEndian.AppendUint64(nil, uint64(totalLen)))
	f.Write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(f.Bytes(), castagnoli)))
	f.WriteString(segEndMagic)
	w.write(f.Bytes())
}

// createFile writes a file through fn into a temporary name, fsyncs it and
// renames it into place, so readers never see a partial file.
func createFile(dir, name string, fn func(io.Writer) error) (size int64, err error) {
	tmp, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return 0, fmt.Errorf("cannot create %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := newBufWriter(tmp)
	if err = fn(bw); err != nil {
		return 0, err
	}
	if err = bw.Flush(); err != nil {
		return 0, fmt.Errorf("cannot write %s: %w", name, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return 0, fmt.Errorf("cannot write %s: %w", name, err)
	}
	if err = tmp.Sync(); err != nil {
		return 0, fmt.Errorf("cannot sync %s: %w", name, err)
	}
	info, err := tmp.Stat()
	if err != nil {
		return 0, fmt.Errorf("cannot stat %s: %w", name, err)
	}
	if err = tmp.Close(); err != nil {
		return 0, fmt.Errorf("cannot close %s: %w", name, err)
	}
	if err = os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return 0, fmt.Errorf("cannot rename %s into place: %w", name, err)
	}
	return info.Size(), nil
}

// appendFetched appends a document's last-fetched time as the docs
// section stores it: Unix seconds, 0 for unknown.
func appendFetched(b []byte, t time.Time) []byte {
	if t.IsZero() || t.Unix() <= 0 {
		return binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(b, uint64(t.Unix()))
}
