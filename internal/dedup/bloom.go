// Package dedup holds the crawler's de-duplication primitives: a lock-free
// Bloom filter for "have we seen this URL" (SPEC §3: "k hash functions over a
// bit array; false positives, no false negatives") and content fingerprints
// for exact (Fingerprint) and near (SimHash) duplicate pages.
package dedup

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Seeds of the two independent 64-bit hashes that make up a Key.
const (
	seedH1 = 0
	seedH2 = 0x9e3779b97f4a7c15
)

// Key is the 128-bit hash of a string: two xxhash64 values computed with
// different seeds. It is what the Bloom filter sets bits from (double hashing
// needs two independent hashes) and what internal/state stores in its seen
// bucket, so a filter can be rebuilt from stored keys without the original
// strings. Two different strings share a Key with probability about 2^-128.
type Key struct {
	H1, H2 uint64
}

// KeyOf returns the Key of s. It does not allocate.
func KeyOf(s string) Key {
	var d xxhash.Digest
	d.ResetWithSeed(seedH2)
	_, _ = d.WriteString(s)
	return Key{H1: xxhash.Sum64String(s), H2: d.Sum64()}
}

// AppendBinary appends the 16-byte big-endian form of k (H1 then H2) to b.
func (k Key) AppendBinary(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, k.H1)
	return binary.BigEndian.AppendUint64(b, k.H2)
}

// KeyFromBytes decodes the 16-byte form written by Key.AppendBinary. It
// returns an error when b is not exactly 16 bytes long.
func KeyFromBytes(b []byte) (Key, error) {
	if len(b) != 16 {
		return Key{}, fmt.Errorf("cannot decode key: want 16 bytes, got %d", len(b))
	}
	return Key{H1: binary.BigEndian.Uint64(b), H2: binary.BigEndian.Uint64(b[8:])}, nil
}

// Bloom is a Bloom filter: a bit array of m bits and k hash functions. Test
// never reports a false negative; it reports a false positive with a
// probability that grows as the filter fills (EstimatedFPRate).
//
// The k bit positions of a key are g_i = (H1 + i·H2) mod m for i = 0..k-1
// (Kirsch–Mitzenmacher double hashing: two hashes simulate k without loss of
// asymptotic false-positive rate). H1 and H2 are the two seeded xxhash64
// values of Key.
//
// Add, Test and TestAndAdd are lock-free and safe for concurrent use: bits are
// set with an atomic OR on 64-bit words and read with atomic loads. Two
// concurrent TestAndAdd calls for the same new string may both report
// "absent" (each sees a bit the other has not set yet); callers that need
// exactly-one-wins semantics must serialise those calls, as internal/state
// does. ReadFrom replaces the whole filter and must not run concurrently with
// any other method.
type Bloom struct {
	words []uint64
	m     uint64 // number of bits: len(words)*64
	k     uint32
	n     atomic.Uint64 // insertions that set at least one new bit
}

// Bloom serialisation format (version 1), all integers little endian:
//
//	magic   [4]byte "SPBF"
//	version uint32  = 1
//	m       uint64  bits, a positive multiple of 64
//	k       uint32  hash functions, 1..maxK
//	n       uint64  approximate number of inserted strings
//	words   [m/64]uint64
//	sum     uint64  xxhash64 of every preceding byte
const (
	bloomMagic   = "SPBF"
	bloomVersion = 1
	headerSize   = 4 + 4 + 8 + 4 + 8
	maxK         = 64
	// maxBits caps what ReadFrom accepts (8 GiB of bits), so a corrupt
	// header cannot make it allocate without bound.
	maxBits = 1 << 36
)

// ErrCorrupt is returned (wrapped) by Bloom.ReadFrom when the input is not a
// complete, intact filter written by WriteTo.
var ErrCorrupt = errors.New("corrupt bloom filter data")

// MaxBloomBytes is the largest filter NewBloom allocates (4 GiB, 2^35
// bits): about 1.2·10⁹ URLs at a false-positive rate of 10⁻⁶. Sizes from
// configuration are checked against it with BloomBytes before a crawl
// starts; NewBloom itself never allocates more (a larger request gets this
// size and a higher false-positive rate).
const MaxBloomBytes = 1 << 32

// BloomBytes returns the memory, in bytes, of the filter NewBloom would
// size for expected insertions at fpRate, without the MaxBloomBytes cap
// (so callers can refuse a size and say what it would have needed). It
// returns +Inf when the size does not fit a float64.
func BloomBytes(expected uint64, fpRate float64) float64 {
	_, words := bloomShape(expected, fpRate)
	return words * 8
}

// bloomShape clamps fpRate and returns the bits per insertion that the
// optimal formulas give and the filter's size in 64-bit words (uncapped,
// as a float so that absurd sizes do not overflow).
func bloomShape(expected uint64, fpRate float64) (n, words float64) {
	if expected == 0 {
		expected = 1
	}
	if !(fpRate > 0) || fpRate < 1e-12 {
		fpRate = 1e-12
	}
	if fpRate > 0.5 {
		fpRate = 0.5
	}
	n = float64(expected)
	mf := math.Ceil(-n * math.Log(fpRate) / (math.Ln2 * math.Ln2))
	return n, max(math.Ceil(mf/64), 1)
}

// bloomWords is the size of NewBloom's filter in 64-bit words: the
// optimal size, capped at MaxBloomBytes.
func bloomWords(expected uint64, fpRate float64) uint64 {
	_, wf := bloomShape(expected, fpRate)
	return uint64(min(wf, MaxBloomBytes/8))
}

// NewBloom returns an empty filter sized for expected insertions at a false
// positive rate fpRate, using the standard optimal formulas
//
//	m = ceil(-n·ln(p) / (ln 2)²)   bits (rounded up to a multiple of 64)
//	k = round((m/n)·ln 2)          hash functions (at least 1, at most 64)
//
// For n = 10⁷ and p = 10⁻⁶ that is m ≈ 2.9·10⁸ bits (36 MB) and k = 20.
// expected 0 is treated as 1; fpRate outside (0, 1) is clamped to
// [1e-12, 0.5]. The filter never exceeds MaxBloomBytes: check BloomBytes
// first to refuse a configuration that asks for more.
func NewBloom(expected uint64, fpRate float64) *Bloom {
	n, _ := bloomShape(expected, fpRate)
	words := bloomWords(expected, fpRate)
	m := words * 64
	k := uint32(math.Round(float64(m) / n * math.Ln2))
	k = max(1, min(k, maxK))
	return &Bloom{words: make([]uint64, words), m: m, k: k}
}

// M returns the number of bits in the filter.
func (b *Bloom) M() uint64 { return b.m }

// K returns the number of hash functions.
func (b *Bloom) K() int { return int(b.k) }

// reduce maps a 64-bit hash onto [0, m) without a division (Lemire's
// multiply-shift range reduction).
func (b *Bloom) reduce(h uint64) uint64 {
	hi, _ := bits.Mul64(h, b.m)
	return hi
}

// Add inserts s.
func (b *Bloom) Add(s string) { b.TestAndAddKey(KeyOf(s)) }

// Test reports whether s may have been added (true may be a false positive;
// false is always right).
func (b *Bloom) Test(s string) bool { return b.TestKey(KeyOf(s)) }

// TestAndAdd inserts s and reports whether it was (probably) present before.
func (b *Bloom) TestAndAdd(s string) (present bool) { return b.TestAndAddKey(KeyOf(s)) }

// AddKey inserts a precomputed key.
func (b *Bloom) AddKey(key Key) { b.TestAndAddKey(key) }

// TestKey is Test for a precomputed key.
func (b *Bloom) TestKey(key Key) bool {
	if b.m == 0 {
		return false
	}
	h := key.H1
	for i := uint32(0); i < b.k; i++ {
		pos := b.reduce(h)
		if atomic.LoadUint64(&b.words[pos>>6])&(1<<(pos&63)) == 0 {
			return false
		}
		h += key.H2
	}
	return true
}

// TestAndAddKey is TestAndAdd for a precomputed key.
func (b *Bloom) TestAndAddKey(key Key) (present bool) {
	if b.m == 0 {
		return false
	}
	present = true
	h := key.H1
	for i := uint32(0); i < b.k; i++ {
		pos := b.reduce(h)
		mask := uint64(1) << (pos & 63)
		if atomic.OrUint64(&b.words[pos>>6], mask)&mask == 0 {
			present = false
		}
		h += key.H2
	}
	if !present {
		b.n.Add(1)
	}
	return present
}

// Len returns the approximate number of distinct strings added: the count of
// insertions that set at least one new bit. It undercounts by the strings
// that were false positives when added.
func (b *Bloom) Len() uint64 { return b.n.Load() }

// FillRatio returns the fraction of bits set, in [0, 1]. It scans the whole
// bit array (m/64 atomic loads).
func (b *Bloom) FillRatio() float64 {
	if b.m == 0 {
		return 0
	}
	var set uint64
	for i := range b.words {
		set += uint64(bits.OnesCount64(atomic.LoadUint64(&b.words[i])))
	}
	return float64(set) / float64(b.m)
}

// EstimatedFPRate returns the false-positive probability of Test at the
// filter's current fill: FillRatio()^k.
func (b *Bloom) EstimatedFPRate() float64 {
	return math.Pow(b.FillRatio(), float64(b.k))
}

// WriteTo writes the filter in the versioned, checksummed format described in
// the package source and returns the number of bytes written. Concurrent Adds
// during WriteTo may or may not be included, but every Add that finished
// before WriteTo started is.
func (b *Bloom) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	d := xxhash.New()
	var written int64
	put := func(p []byte) error {
		_, _ = d.Write(p)
		n, err := bw.Write(p)
		written += int64(n)
		return err
	}
	hdr := make([]byte, 0, headerSize)
	hdr = append(hdr, bloomMagic...)
	hdr = binary.LittleEndian.AppendUint32(hdr, bloomVersion)
	hdr = binary.LittleEndian.AppendUint64(hdr, b.m)
	hdr = binary.LittleEndian.AppendUint32(hdr, b.k)
	hdr = binary.LittleEndian.AppendUint64(hdr, b.n.Load())
	if err := put(hdr); err != nil {
		return written, fmt.Errorf("cannot write bloom filter header: %w", err)
	}
	// Each word is loaded atomically (Adds may run meanwhile) into a block
	// that is then written as a whole: on a little-endian machine the block's
	// memory is already the file's byte order.
	block := make([]uint64, min(len(b.words), ioWords))
	for i := 0; i < len(b.words); i += len(block) {
		blk := block[:min(len(block), len(b.words)-i)]
		for j := range blk {
			blk[j] = atomic.LoadUint64(&b.words[i+j])
		}
		if err := put(wordBytes(blk)); err != nil {
			return written, fmt.Errorf("cannot write bloom filter bits: %w", err)
		}
	}
	sum := binary.LittleEndian.AppendUint64(nil, d.Sum64())
	n, err := bw.Write(sum)
	written += int64(n)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return written, fmt.Errorf("cannot write bloom filter: %w", err)
	}
	return written, nil
}

// ReadFrom replaces b with a filter read from r in the format written by
// WriteTo and returns the number of bytes consumed. On a bad magic, unknown
// version, implausible header, short input or checksum mismatch it returns an
// error wrapping ErrCorrupt and leaves b unchanged. A zero Bloom may be used
// as the receiver. ReadFrom is not safe for concurrent use with other methods.
func (b *Bloom) ReadFrom(r io.Reader) (int64, error) {
	var read int64
	d := xxhash.New()
	hdr := make([]byte, headerSize)
	n, err := io.ReadFull(r, hdr)
	read += int64(n)
	if err != nil {
		return read, fmt.Errorf("cannot read bloom filter header (%v): %w", err, ErrCorrupt)
	}
	_, _ = d.Write(hdr)
	if string(hdr[:4]) != bloomMagic {
		return read, fmt.Errorf("cannot read bloom filter: bad magic %q, the data was not written by Bloom.WriteTo: %w", hdr[:4], ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(hdr[4:]); v != bloomVersion {
		return read, fmt.Errorf("cannot read bloom filter: unsupported version %d (this build reads version %d): %w", v, bloomVersion, ErrCorrupt)
	}
	m := binary.LittleEndian.Uint64(hdr[8:])
	k := binary.LittleEndian.Uint32(hdr[16:])
	cnt := binary.LittleEndian.Uint64(hdr[20:])
	if m == 0 || m%64 != 0 || m > maxBits {
		return read, fmt.Errorf("cannot read bloom filter: invalid size of %d bits: %w", m, ErrCorrupt)
	}
	if k == 0 || k > maxK {
		return read, fmt.Errorf("cannot read bloom filter: invalid hash count %d: %w", k, ErrCorrupt)
	}
	// Read the bit array in blocks straight into the words. Up to
	// readAtOnceWords words are allocated at once (the default filter, 36 MB,
	// in one allocation); beyond that the slice grows as data arrives, so a
	// header that lies about a larger m fails on short input before
	// allocating m bits.
	nw := m / 64
	words := make([]uint64, 0, min(nw, readAtOnceWords))
	for uint64(len(words)) < nw {
		nb := int(min(nw-uint64(len(words)), ioWords))
		words = slices.Grow(words, nb)
		blk := words[len(words) : len(words)+nb]
		p := wordBytes(blk)
		n, err := io.ReadFull(r, p)
		read += int64(n)
		if err != nil {
			return read, fmt.Errorf("cannot read bloom filter bits: input ends after %d of %d words (%v): %w", len(words)+n/8, nw, err, ErrCorrupt)
		}
		_, _ = d.Write(p)
		fromLittleEndian(blk)
		words = words[:len(words)+nb]
	}
	sum := make([]byte, 8)
	n, err = io.ReadFull(r, sum)
	read += int64(n)
	if err != nil {
		return read, fmt.Errorf("cannot read bloom filter checksum (%v): %w", err, ErrCorrupt)
	}
	if got, want := d.Sum64(), binary.LittleEndian.Uint64(sum); got != want {
		return read, fmt.Errorf("cannot read bloom filter: checksum mismatch (computed %016x, stored %016x), the file is damaged: %w", got, want, ErrCorrupt)
	}
	b.words = words
	b.m = m
	b.k = k
	b.n.Store(cnt)
	return read, nil
}

const (
	// ioWords is the block of words WriteTo and ReadFrom move at once (1 MiB).
	ioWords = 1 << 17
	// readAtOnceWords is the most ReadFrom allocates before the data proves
	// the header's size (64 MiB).
	readAtOnceWords = 1 << 23
)

// littleEndian reports whether this machine stores a uint64's low byte
// first, the byte order of the serialised filter.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// wordBytes returns the memory of w as bytes (aliasing w). On a
// little-endian machine that is w in the serialised byte order; on a
// big-endian one it holds w's words with their bytes in native order, which
// toLittleEndian and fromLittleEndian convert in place.
func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	p := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	if !littleEndian {
		for i := range w {
			binary.LittleEndian.PutUint64(p[i*8:], w[i])
		}
	}
	return p
}

// fromLittleEndian turns words whose memory was filled with little-endian
// bytes into native words (nothing to do on a little-endian machine).
func fromLittleEndian(w []uint64) {
	if littleEndian || len(w) == 0 {
		return
	}
	p := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(p[i*8:])
	}
}
