package dedup

import (
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// PageHashes returns a page text's exact-duplicate fingerprint and, when
// near is true, its near-duplicate SimHash, in one walk of the text: the
// results are always those of Fingerprint([]byte(text)) and (near)
// PageSimHash(text); with near false sim is 0.
//
// The walk decodes each rune once for both. While it splits words for
// SimHash it also checks that the text is already white-space normalised
// (words separated by single ASCII spaces, none leading or trailing: what
// parse.Page.Text always is), in which case the fingerprint is the xxhash64
// of the text's bytes as they are, hashed in bulk. Only a text that is not
// normalised is walked a second time, by Fingerprint. It does not allocate.
func PageHashes(text string, near bool) (fp, sim uint64) {
	if !near {
		if normalised(text) {
			return fpOf(xxhash.Sum64String(text)), 0
		}
		return fingerprintString(text), 0
	}
	var st simState
	// last is the index of the last white-space byte seen (−2: none), so a
	// run of two, a leading one, or a trailing one is seen without a
	// store per byte on the path of word bytes.
	last, clean := -2, true
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if v := asciiWord[c]; v != 0 {
				i++
				st.lane = st.lane<<8 | uint64(v)
				st.wn++
				if st.wn&7 == 0 {
					st.fold()
				}
				continue
			}
			if c <= ' ' && isSpaceASCII(c) {
				if c != ' ' || last == i-1 || i == 0 {
					clean = false
				}
				last = i
			}
			i++
			if st.npend != 0 {
				st.endWord()
			} else if st.wn != 0 {
				st.pushWord()
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if st.rune(r) && unicode.IsSpace(r) {
			clean = false
		}
	}
	if last == len(text)-1 {
		clean = false // a trailing space
	}
	if clean {
		fp = fpOf(xxhash.Sum64String(text))
	} else {
		fp = fingerprintString(text)
	}
	h, shingles := st.finish()
	if shingles < MinSimHashShingles {
		return fp, 0
	}
	if h == 0 {
		return fp, 1
	}
	return fp, h
}

// normalised reports whether text's white space is already as Fingerprint
// makes it: single ASCII spaces between non-space runes, none at either
// end.
func normalised(text string) bool {
	if len(text) == 0 {
		return true
	}
	prevSpace := true // as if a space came before: a leading space fails
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			if c > ' ' {
				prevSpace = false
				continue
			}
			if isSpaceASCII(c) {
				if c != ' ' || prevSpace {
					return false
				}
				prevSpace = true
				continue
			}
			prevSpace = false
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if unicode.IsSpace(r) {
			return false
		}
		prevSpace = false
	}
	return !prevSpace
}

// fingerprintString is Fingerprint of a string, without copying it.
func fingerprintString(text string) uint64 {
	// Fingerprint only reads its argument.
	return Fingerprint(unsafe.Slice(unsafe.StringData(text), len(text)))
}

// fpOf maps a hash of 0 to 1, as Fingerprint does.
func fpOf(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// isSpaceASCII reports whether an ASCII byte is white space (as
// unicode.IsSpace: tab, newline, vertical tab, form feed, carriage return,
// space).
func isSpaceASCII(c byte) bool {
	return c == ' ' || c-'\t' <= '\r'-'\t'
}
