package index

import (
	"bytes"
	"compress/flate"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

// Snippet shape: a window of snippetWords words (every word counts, stop
// words included: word positions as the analyser numbers them) with the
// most distinct query terms, then the most matches, cut at word
// boundaries.
const (
	snippetWords   = 32
	snippetContext = 4 // words shown before the first match when the window has room
	maxInflate     = StoredTextBytes + 1024
	inflateChunk   = 8 << 10
)

// inflate decompresses a stored text, refusing more than maxInflate bytes.
func inflate(b []byte) (string, error) {
	r := flate.NewReader(bytes.NewReader(b))
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, maxInflate))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// termPos is a query term (its index in the query's terms) at a word
// position of a page's body.
type termPos struct {
	pos  int
	term int
}

// bodyBase is the position of a page's first body word: NewDoc numbers the
// title's words from 0 and the body's after them and a gap of titleGap.
func bodyBase(a *analysis.Analyzer, title string) int {
	n := 0
	a.Analyze(title, func(t analysis.Token) { n = max(n, t.Pos+1) })
	if n > 0 {
		n += titleGap
	}
	return n
}

// normaliseMatches sorts matches by position and keeps one per position
// (the query term listed first: a Chinese compound and a word inside it
// share a position).
func normaliseMatches(m []termPos) []termPos {
	slices.SortFunc(m, func(x, y termPos) int {
		if x.pos != y.pos {
			return x.pos - y.pos
		}
		return x.term - y.term
	})
	return slices.CompactFunc(m, func(x, y termPos) bool { return x.pos == y.pos })
}

// snippetWindow picks the snippet's first word position from the matches
// (sorted, one per position): the window of snippetWords positions
// starting at a match that holds the most distinct terms, then the most
// matches (the earliest such window), moved back by up to snippetContext
// words while every match of the window still fits. Without matches it is
// the start of the text.
func snippetWindow(m []termPos, nterms int) int {
	if len(m) == 0 {
		return 0
	}
	counts := make([]int, nterms)
	distinct, j := 0, 0
	best, bestDistinct, bestHits, bestLast := 0, -1, -1, 0
	for i := range m {
		for j < len(m) && m[j].pos < m[i].pos+snippetWords {
			if counts[m[j].term] == 0 {
				distinct++
			}
			counts[m[j].term]++
			j++
		}
		if hits := j - i; distinct > bestDistinct || distinct == bestDistinct && hits > bestHits {
			best, bestDistinct, bestHits, bestLast = m[i].pos, distinct, hits, m[j-1].pos
		}
		counts[m[i].term]--
		if counts[m[i].term] == 0 {
			distinct--
		}
	}
	span := bestLast - best + 1
	return max(best-min(snippetContext, snippetWords-span), 0)
}

// snippetWord is one word of the stored text.
type snippetWord struct{ pos, start, end int }

// storedText inflates a stored text on demand, so a snippet near the start
// of a long page decompresses and reads only that start.
type storedText struct {
	fr  io.ReadCloser
	src bytes.Reader
	buf []byte
	eof bool
	err error
}

// storedTexts reuses storedTexts: a DEFLATE reader allocates a 32 KiB
// window and its tables, and every hit of every search made one (half of
// a search's allocated bytes).
var storedTexts sync.Pool

// newStoredText returns a storedText reading compressed, from the pool;
// release gives it back.
func newStoredText(compressed []byte) *storedText {
	st, _ := storedTexts.Get().(*storedText)
	if st == nil {
		st = &storedText{}
	}
	st.src.Reset(compressed)
	if st.fr == nil {
		st.fr = flate.NewReader(&st.src)
	} else if err := st.fr.(flate.Resetter).Reset(&st.src, nil); err != nil {
		st.fr = flate.NewReader(&st.src)
	}
	st.buf, st.eof, st.err = st.buf[:0], false, nil
	return st
}

// release returns st to the pool; st must not be used after. Buffers
// grown beyond a page's stored text are left to the collector.
func (st *storedText) release() {
	if cap(st.buf) > maxInflate {
		st.buf = nil
	}
	storedTexts.Put(st)
}

// more appends the next chunk to buf; false at the end or on an error.
func (st *storedText) more() bool {
	if st.eof {
		return false
	}
	if len(st.buf) >= maxInflate {
		st.eof = true
		return false
	}
	st.buf = slices.Grow(st.buf, inflateChunk)
	n, err := st.fr.Read(st.buf[len(st.buf):min(cap(st.buf), maxInflate)])
	st.buf = st.buf[:len(st.buf)+n]
	if err == io.EOF {
		st.eof = true
	} else if err != nil {
		st.err, st.eof = err, true
	}
	return true
}

// words lexes the text from the mark from (the zero mark: its start),
// reading as needed, and calls fn for every word until fn returns false or
// the text ends. It returns the position after the last word visited. A
// mark beyond the text sets st.err.
func (st *storedText) words(a *analysis.Analyzer, from mark, fn func(snippetWord) bool) int {
	for len(st.buf) < from.off && st.more() {
	}
	if len(st.buf) < from.off {
		if st.err == nil {
			st.err = errBadMarks
		}
		return from.pos
	}
	pos, done, stop := from.pos, from.off, false
	for !stop {
		// Lex up to the end of the last separator: the words before it are
		// complete, whatever the next chunk holds.
		safe := len(st.buf)
		if !st.eof {
			safe = lastSeparatorEnd(st.buf, done)
		}
		if safe > done {
			base := done
			pos = a.Words(string(st.buf[done:safe]), pos, func(p, s, e int) bool {
				if !fn(snippetWord{p, base + s, base + e}) {
					stop = true
				}
				return !stop
			})
			done = safe
		}
		if stop || !st.more() && done >= len(st.buf) {
			break
		}
	}
	return pos
}

// lastSeparatorEnd returns the offset just past the last separator rune of
// b[from:] (a valid rune: a cut byte sequence decodes as RuneError), or
// from if there is none.
func lastSeparatorEnd(b []byte, from int) int {
	for i := len(b); i > from; {
		r, n := utf8.DecodeLastRune(b[from:i])
		if r != utf8.RuneError && analysis.IsSeparator(r) {
			return i
		}
		i -= n
	}
	return from
}

// makeSnippet builds the snippet of a page from its compressed stored text,
// its snippet marks (parseMarks; nil: lex from the start) and the body
// positions of the query terms in it (from the postings, see
// termPositions): it picks the window from the positions, then inflates the
// text up to the window's end and lexes it from the last mark before the
// window, so no page is analysed, and a long page is decompressed only as
// far as its snippet. Without a match in the stored text it returns the
// start of the text.
func makeSnippet(a *analysis.Analyzer, compressed []byte, marks []mark, matches []termPos, nterms int) ([]Fragment, error) {
	st := newStoredText(compressed)
	defer st.release()
	for {
		first := snippetWindow(matches, nterms)
		end := first + snippetWords
		var win []snippetWord
		more := false
		total := st.words(a, startAt(marks, first), func(w snippetWord) bool {
			if w.pos >= end {
				more = true
				return false
			}
			if w.pos >= first {
				win = append(win, w)
			}
			return true
		})
		if st.err != nil {
			return nil, st.err
		}
		if !more && len(matches) > 0 && matches[len(matches)-1].pos >= total {
			// Some matches lie beyond the stored text (pages longer than
			// StoredTextBytes): choose among those inside it. (Only a
			// window reaching the text's end can have counted them, so
			// !more tells; a copy: the caller's slice stays as it was.)
			matches = slices.DeleteFunc(slices.Clone(matches), func(m termPos) bool { return m.pos >= total })
			continue
		}
		if len(win) == 0 {
			// Read just past what clip keeps: it needs to see that more
			// text follows to add its "…".
			text, err := st.text(0, 201)
			if err != nil {
				return nil, err
			}
			return []Fragment{{Text: clip(text, 200)}}, nil
		}
		// The window's text and, after a window that ends the text, the
		// bytes its tail may show (clip keeps 80 and must see an 81st).
		lo, hi := win[0].start, win[len(win)-1].end
		if !more {
			hi += 81
		}
		text, err := st.text(lo, hi)
		if err != nil {
			return nil, err
		}
		for i := range win {
			win[i].start -= lo
			win[i].end -= lo
		}
		return snippetFragments(text, win, matches, first > 0, more), nil
	}
}

// text returns bytes lo to hi of the text (to its end when shorter),
// inflating as needed.
func (st *storedText) text(lo, hi int) (string, error) {
	for len(st.buf) < hi && st.more() {
	}
	if st.err != nil {
		return "", st.err
	}
	return string(st.buf[min(lo, len(st.buf)):min(hi, len(st.buf))]), nil
}

// snippetFragments marks the matched words of win (consecutive words of
// text) and joins the text between them.
func snippetFragments(text string, win []snippetWord, matches []termPos, cutBefore, cutAfter bool) []Fragment {
	var frags []Fragment
	add := func(s string, m bool) {
		if s == "" {
			return
		}
		if n := len(frags); n > 0 && frags[n-1].Match == m {
			frags[n-1].Text += s
			return
		}
		frags = append(frags, Fragment{Text: s, Match: m})
	}
	if cutBefore {
		add("… ", false)
	}
	at := win[0].start
	k := 0
	for _, w := range win {
		for k < len(matches) && matches[k].pos < w.pos {
			k++
		}
		if k == len(matches) || matches[k].pos != w.pos {
			continue
		}
		add(squash(text[at:w.start]), false)
		add(text[w.start:w.end], true)
		at = w.end
	}
	var tail string
	if cutAfter {
		tail = text[at:win[len(win)-1].end] + " …"
	} else {
		tail = clip(text[at:], 80)
	}
	add(squash(tail), false)
	return frags
}

// squash collapses whitespace runs to one space (page text is already
// collapsed by package parse; stored text of other origins may not be).
func squash(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// clip cuts s to at most n bytes at a rune boundary, adding "…" if cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
