package parse

import (
	"unicode"
	"unicode/utf8"
)

// textBuf accumulates text with whitespace runs collapsed to one space and
// no leading or trailing space, within a byte budget that may be shared by
// several buffers. Invalid UTF-8 becomes U+FFFD.
type textBuf struct {
	b         []byte
	budget    *int // bytes left; shared between the Blocks of one page
	pending   bool // a space is due before the next non-space rune
	truncated bool // some text did not fit the budget
}

func newTextBuf(budget *int) textBuf { return textBuf{budget: budget} }

// brk separates what follows from what came before (a block boundary).
func (t *textBuf) brk() {
	if len(t.b) > 0 {
		t.pending = true
	}
}

// write appends s and returns the number of non-space runes in it, counted
// whether or not they fit the budget.
func (t *textBuf) write(s []byte) (runes int) {
	for len(s) > 0 {
		if c := s[0]; c < utf8.RuneSelf && !isSpaceByte(c) {
			// A run of ASCII non-space bytes is copied at once, as much
			// of it as the budget takes (one byte per rune, one more for
			// a pending space before it): what the rune-by-rune path
			// below would append.
			j := 1
			for j < len(s) && s[j] < utf8.RuneSelf && !isSpaceByte(s[j]) {
				j++
			}
			runes += j
			run := s[:j]
			s = s[j:]
			if t.truncated {
				continue
			}
			if t.pending {
				if *t.budget < 2 {
					t.truncated = true
					continue
				}
				*t.budget--
				t.b = append(t.b, ' ')
				t.pending = false
			}
			k := min(*t.budget, len(run))
			*t.budget -= k
			t.b = append(t.b, run[:k]...)
			if k < len(run) {
				t.truncated = true
			}
			continue
		}
		r, size := rune(s[0]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(s)
		}
		s = s[size:]
		if isSpace(r) {
			t.brk()
			continue
		}
		runes++
		if t.truncated {
			continue
		}
		need := utf8.RuneLen(r)
		if need < 0 {
			r, need = utf8.RuneError, 3
		}
		if t.pending {
			need++
		}
		if *t.budget < need {
			t.truncated = true
			continue
		}
		*t.budget -= need
		if t.pending {
			t.b = append(t.b, ' ')
			t.pending = false
		}
		t.b = utf8.AppendRune(t.b, r)
	}
	return runes
}

func (t *textBuf) String() string { return string(t.b) }

// reset empties the buffer (keeping its budget pointer).
func (t *textBuf) reset() {
	t.b, t.pending, t.truncated = t.b[:0], false, false
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return isSpaceByte(byte(r))
	}
	return unicode.IsSpace(r)
}

// isSpaceByte reports whether an ASCII byte is white space (as
// unicode.IsSpace).
func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
