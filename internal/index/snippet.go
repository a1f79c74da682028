package index

import (
	"bytes"
	"compress/flate"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

// Snippet shape: a window of snippetWords words with the most distinct
// query terms (then the most matches), cut at word boundaries.
const (
	snippetWords = 32
	maxInflate   = StoredTextBytes + 1024
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

// makeSnippet picks the part of text with the most query terms and marks
// them. Without any match it returns the start of the text.
func makeSnippet(a *analysis.Analyzer, text string, terms []string) []Fragment {
	want := make(map[string]int, len(terms))
	for i, t := range terms {
		want[t] = i
	}
	type tok struct {
		start, end int
		term       int // index in terms, or -1
	}
	var toks []tok
	lastPos := -1
	a.Analyze(text, func(t analysis.Token) {
		ti, ok := want[t.Term]
		if !ok {
			ti = -1
		}
		if t.Pos == lastPos && len(toks) > 0 {
			// A sub-word of the previous (compound) word: mark the compound
			// when the sub-word is a query term.
			if ti >= 0 && toks[len(toks)-1].term < 0 {
				toks[len(toks)-1].term = ti
			}
			return
		}
		lastPos = t.Pos
		toks = append(toks, tok{start: t.Start, end: t.End, term: ti})
	})
	if len(toks) == 0 {
		return []Fragment{{Text: clip(text, 200)}}
	}
	// Slide a window over the tokens, counting distinct terms and matches.
	best, bestDistinct, bestHits := 0, -1, -1
	counts := make([]int, len(terms))
	distinct, hits := 0, 0
	for i := range toks {
		if t := toks[i].term; t >= 0 {
			if counts[t] == 0 {
				distinct++
			}
			counts[t]++
			hits++
		}
		if j := i - snippetWords; j >= 0 {
			if t := toks[j].term; t >= 0 {
				counts[t]--
				if counts[t] == 0 {
					distinct--
				}
				hits--
			}
		}
		if start := max(i-snippetWords+1, 0); distinct > bestDistinct || distinct == bestDistinct && hits > bestHits {
			best, bestDistinct, bestHits = start, distinct, hits
		}
	}
	if bestHits == 0 {
		best = 0
	}
	// Start a few words before the first match so it has some context.
	first := best
	for k := best; k < min(best+snippetWords, len(toks)); k++ {
		if toks[k].term >= 0 {
			first = max(best, k-4)
			break
		}
	}
	end := min(first+snippetWords, len(toks))
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
	if first > 0 {
		add("… ", false)
	}
	at := toks[first].start
	for k := first; k < end; k++ {
		t := toks[k]
		if t.term < 0 {
			continue
		}
		add(squash(text[at:t.start]), false)
		add(text[t.start:t.end], true)
		at = t.end
	}
	tail := text[at:toks[end-1].end]
	if end < len(toks) {
		tail += " …"
	} else {
		tail = text[at:]
		tail = clip(tail, 80)
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
