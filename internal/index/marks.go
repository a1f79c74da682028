package index

import (
	"encoding/binary"
	"errors"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

// Snippet marks (Doc.Marks) let a snippet lex a page's stored text from
// near its window instead of from the start: a result's window lies on
// average about a hundred words in, and lexing those words (gse for
// Chinese) was a third of a search's CPU time. The encoding:
//
//	uv base: the body's first word position in the document (NewDoc
//	     numbers the title from 0, the body after it and titleGap)
//	then per mark: uv position delta, uv byte offset delta (from the
//	     previous mark; the first from position 0, offset 0)
//
// A mark (p, o) says that the stored text's word at body position p starts
// at byte o right after a separator, so lexing text[o:] from position p
// numbers every later word as lexing from the start does (storedText.words
// relies on the same restart at separators between chunks). Marks are at
// least markEvery positions apart; a page costs about two bytes per mark.
const markEvery = 16

// errBadMarks is the damage parseMarks and storedText.words report.
var errBadMarks = errors.New("snippet marks are damaged")

// mark is one decoded snippet mark: body position and byte offset.
type mark struct{ pos, off int }

// marker collects the marks of one page while NewDoc analyses its body.
type marker struct {
	b      []byte
	stored string // the stored prefix of the body: marks point into it
	next   int    // the smallest position of the next mark
	last   mark
}

func newMarker(base int, stored string) *marker {
	return &marker{b: binary.AppendUvarint(nil, uint64(base)), stored: stored, next: markEvery}
}

// token sees the body's tokens in order and marks one when it is far
// enough from the last mark and starts right after a separator inside the
// stored text.
func (m *marker) token(t analysis.Token) {
	if t.Pos < m.next || t.Start <= 0 || t.Start >= len(m.stored) {
		return
	}
	r, _ := utf8.DecodeLastRuneInString(m.stored[:t.Start])
	if r == utf8.RuneError || !analysis.IsSeparator(r) {
		return
	}
	m.b = binary.AppendUvarint(m.b, uint64(t.Pos-m.last.pos))
	m.b = binary.AppendUvarint(m.b, uint64(t.Start-m.last.off))
	m.last = mark{t.Pos, t.Start}
	m.next = t.Pos + markEvery
}

// parseMarks decodes a page's marks: the body base and the marks in
// ascending order. Empty input (a version 1 segment) gives ok false.
func parseMarks(b []byte) (base int, marks []mark, ok bool, err error) {
	if len(b) == 0 {
		return 0, nil, false, nil
	}
	r := reader{b: b}
	base = int(r.uvarint() & (1<<31 - 1))
	var at mark
	for !r.err && r.off < len(b) {
		dp, do := r.uvarint(), r.uvarint()
		if r.err || dp == 0 || dp >= 1<<31 || do >= 1<<31 {
			return 0, nil, false, errBadMarks
		}
		at = mark{at.pos + int(dp), at.off + int(do)}
		if at.pos >= 1<<31 || at.off > maxInflate {
			return 0, nil, false, errBadMarks
		}
		marks = append(marks, at)
	}
	if r.err {
		return 0, nil, false, errBadMarks
	}
	return base, marks, true, nil
}

// startAt returns the last mark at or before body position first (the
// start of the text without one).
func startAt(marks []mark, first int) mark {
	start := mark{}
	for _, m := range marks {
		if m.pos > first {
			break
		}
		start = m
	}
	return start
}
