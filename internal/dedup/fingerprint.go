package dedup

import (
	"math/bits"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
)

// Fingerprint returns the exact-duplicate fingerprint of a page's visible
// text: the xxhash64 of the text after whitespace normalisation (every run of
// Unicode white space becomes one ASCII space; leading and trailing white
// space is dropped). Two texts that differ only in white space have the same
// fingerprint. The caller extracts the visible text (no markup). Bytes that
// are not valid UTF-8 are hashed as they are.
//
// Fingerprint never returns 0, so 0 can mean "no fingerprint" (a hash of 0 is
// mapped to 1). It does not allocate.
func Fingerprint(text []byte) uint64 {
	var d xxhash.Digest
	d.Reset()
	pending := false // a separator is owed before the next field
	i := 0
	for i < len(text) {
		// Skip white space.
		for i < len(text) {
			r, size := rune(text[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRune(text[i:])
			}
			if !unicode.IsSpace(r) {
				break
			}
			i += size
		}
		if i == len(text) {
			break
		}
		// Write one field (a maximal run of non-space runes) as it is.
		start := i
		for i < len(text) {
			r, size := rune(text[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRune(text[i:])
			}
			if unicode.IsSpace(r) {
				break
			}
			i += size
		}
		if pending {
			_, _ = d.Write(space)
		}
		_, _ = d.Write(text[start:i])
		pending = true
	}
	h := d.Sum64()
	if h == 0 {
		return 1
	}
	return h
}

var space = []byte{' '}

// ShingleSize is the number of consecutive words hashed together by SimHash.
const ShingleSize = 3

// SimHash returns Charikar's 64-bit similarity hash of text for near-duplicate
// detection: texts that share most of their word shingles have hashes at a
// small HammingDistance (a few bits), unrelated texts are about 32 bits apart.
//
// Words are maximal runs of letters and digits, compared case-insensitively;
// every Han, Hiragana, Katakana and Hangul character is a word on its own, as
// those scripts do not separate words with spaces. Words that carry no
// content identity are left out (see features.go): numbers (runs of
// decimal digits, ordinals such as 25th, times such as 3pm), English month
// and weekday names and their abbreviations, and Chinese dates (2026年,
// 11月, 十一月, 星期三, 周三); so a page and its copy with a date line or
// other numbers changed share all their shingles but the few around the
// change. A text without such words hashes as it did before the rule. Each
// run of ShingleSize consecutive words is hashed; bit j of the result is 1
// when more shingle hashes have bit j set than clear. A text with fewer words than
// ShingleSize is hashed as one shingle; a text with no words hashes to 0.
// For near-duplicate detection use PageSimHash, which refuses texts too
// short to judge.
func SimHash(text string) uint64 {
	h, _ := simHash(text)
	return h
}

// simHash is SimHash and the number of shingles hashed.
//
// It makes one pass over text without allocating: a word's lower-cased
// UTF-8 bytes are packed eight to a 64-bit lane and folded with a multiply
// per lane; words without content identity are dropped (features.go);
// a shingle's hash is fmix64 (every input bit affects every
// output bit) of its words' values each multiplied by its position's odd
// constant; the 64 bit votes
// are kept as vertical (bit-sliced) counters, so adding a shingle costs a
// couple of word operations instead of 64 increments.
func simHash(text string) (uint64, int) {
	var st simState
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			if v := asciiWord[c]; v != 0 {
				st.lane = st.lane<<8 | uint64(v)
				st.wn++
				if st.wn&7 == 0 {
					st.fold()
				}
			} else if st.npend != 0 {
				st.endWord()
			} else if st.wn != 0 {
				st.pushWord()
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		st.rune(r)
	}
	return st.finish()
}

// finish ends the last word and returns the hash and the number of
// shingles hashed.
func (st *simState) finish() (uint64, int) {
	st.endWord()
	if st.shingles == 0 {
		if st.words == 0 {
			return 0, 0
		}
		// Fewer words than a shingle: one shingle of them all.
		var h uint64
		for j := ShingleSize - st.words; j < ShingleSize; j++ {
			h += st.ring[j] * shingleK[j]
		}
		st.add(fmix64(h ^ uint64(st.words)))
	}
	// Bit j is set when more shingles had it set than clear: count > n/2.
	var out uint64
	for b := 0; b < 64; b++ {
		var count uint64
		for i := simPlanes - 1; i >= 0; i-- {
			count = count<<1 | st.planes[i]>>b&1
		}
		if 2*count > uint64(st.shingles) {
			out |= 1 << b
		}
	}
	return out, st.shingles
}

// simState is simHash's state.
type simState struct {
	planes   [simPlanes]uint64   // planes[i] holds bit i of the 64 counts of set bits
	ring     [ShingleSize]uint64 // the last words' hashes, oldest first
	words    int
	shingles int
	wh       uint64  // the word's folded lanes
	lane     uint64  // the word's bytes not folded yet
	wn       int     // the word's bytes
	or       uint64  // the word's folded lanes OR-ed together (number test)
	pend     [4]rune // Han characters held back: maybe the start of a date
	npend    int
}

// add counts a shingle's bits: a ripple-carry add of h's bits into the
// vertical counters (two rounds on average).
func (st *simState) add(h uint64) {
	carry := h
	for i := 0; carry != 0 && i < simPlanes; i++ {
		t := st.planes[i] & carry
		st.planes[i] ^= carry
		carry = t
	}
	st.shingles++
}

// simPlanes bounds the shingles counted per bit to 2^simPlanes−1, far above
// what a page's text (parse caps it at 1 MiB) holds.
const simPlanes = 24

// wordK is an odd 64-bit constant (the golden ratio's) folding a word's
// lanes.
const wordK = 0x9e3779b97f4a7c15

// asciiWord maps an ASCII byte to itself lower-cased when it is a letter or
// a digit, else to 0 (a separator).
var asciiWord = func() (t [utf8.RuneSelf]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c] = c
		t[c-'a'+'A'] = c
	}
	return t
}()

// shingleK are odd constants weighting a shingle's words by position.
var shingleK = [ShingleSize]uint64{0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53, 0x87c37b91114253d5}

// fmix64 is MurmurHash3's 64-bit finaliser: every input bit affects every
// output bit.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func isIdeographic(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// HammingDistance returns the number of bit positions in which a and b
// differ, in [0, 64]. For SimHash values, a distance of at most 3 (of 64) is
// the usual near-duplicate threshold for web pages.
func HammingDistance(a, b uint64) int { return bits.OnesCount64(a ^ b) }
