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
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
	}
	return unicode.IsSpace(r)
}
