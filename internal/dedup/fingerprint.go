package dedup

import (
	"encoding/binary"
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
// those scripts do not separate words with spaces. Each run of ShingleSize
// consecutive words is hashed (xxhash64); bit j of the result is 1 when more
// shingle hashes have bit j set than clear. A text with fewer words than
// ShingleSize is hashed as one shingle; a text with no words hashes to 0.
// For near-duplicate detection use PageSimHash, which refuses texts too
// short to judge.
func SimHash(text string) uint64 {
	h, _ := simHash(text)
	return h
}

// simHash is SimHash and the number of shingles hashed.
func simHash(text string) (uint64, int) {
	var (
		vec    [64]int32
		ring   [ShingleSize]uint64 // hashes of the last words
		words  int
		shingl int
		tok    = make([]byte, 0, 64)
	)
	addShingle := func(n int) {
		var buf [8 * ShingleSize]byte
		for j := 0; j < n; j++ {
			binary.LittleEndian.PutUint64(buf[8*j:], ring[(words-n+j)%ShingleSize])
		}
		h := xxhash.Sum64(buf[:8*n])
		for b := 0; b < 64; b++ {
			if h&(1<<b) != 0 {
				vec[b]++
			} else {
				vec[b]--
			}
		}
		shingl++
	}
	endWord := func() {
		if len(tok) == 0 {
			return
		}
		ring[words%ShingleSize] = xxhash.Sum64(tok)
		words++
		tok = tok[:0]
		if words >= ShingleSize {
			addShingle(ShingleSize)
		}
	}
	for _, r := range text {
		switch {
		case isIdeographic(r):
			endWord()
			tok = utf8.AppendRune(tok, r)
			endWord()
		case unicode.IsLetter(r) || unicode.IsNumber(r):
			if r < utf8.RuneSelf {
				if 'A' <= r && r <= 'Z' {
					r += 'a' - 'A'
				}
				tok = append(tok, byte(r))
			} else {
				tok = utf8.AppendRune(tok, unicode.ToLower(r))
			}
		default:
			endWord()
		}
	}
	endWord()
	if shingl == 0 {
		if words == 0 {
			return 0, 0
		}
		addShingle(words)
	}
	var out uint64
	for b := 0; b < 64; b++ {
		if vec[b] > 0 {
			out |= 1 << b
		}
	}
	return out, shingl
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
