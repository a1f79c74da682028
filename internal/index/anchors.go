package index

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/parse"
	spiderurls "github.com/spider-crawler/spider/internal/urls"
)

// Anchor text: the words of the links pointing to a page describe it as
// other pages see it (a table of contents names each chapter by its title,
// cross-references name the command a page documents), the classic
// web-search signal. The build collects, for every page it analyses, the
// anchor texts of the links pointing to it from the other pages analysed
// with it (every page of an embedded build's batch of records, every page
// of a distributed build) and adds them as the page's anchor field: each
// distinct (case-folded) text once per power of two of the number of pages
// linking with it (1 page: once, 2–3: twice, 4–7: three times, …), the
// MaxAnchorTexts most frequent texts, at most MaxAnchorBytes of them.
const (
	// MaxAnchorTexts is the most distinct anchor texts a page's anchor
	// field keeps: 10,000 links with 10,000 texts pointing at one page
	// add at most this many.
	MaxAnchorTexts = 64
	// maxAnchorCandidates is the most distinct texts counted per target
	// while pages are read (see anchorSet).
	maxAnchorCandidates = 1024
	// MaxAnchorBytes bounds the bytes of a page's anchor field.
	MaxAnchorBytes = 4 << 10
	// maxAnchorLinks is the most links of one page whose anchor text is
	// read.
	maxAnchorLinks = 2000
)

// anchor is one link's target (canonical URL) and anchor text.
type anchor struct {
	target, text string
}

// pageAnchors returns the links worth reading as anchor text: <a> and
// <area> links with text, followed (not nofollow), not to the page itself,
// not skipped (skip may be nil), canonical targets.
func pageAnchors(self string, links []parse.Link, skip func(i int) bool) []anchor {
	var out []anchor
	seen := map[anchor]struct{}{}
	for i, l := range links {
		if skip != nil && skip(i) {
			continue
		}
		if l.URL == nil || l.Text == "" || l.NoFollow || (l.Tag != "a" && l.Tag != "area") {
			continue
		}
		u, err := spiderurls.Parse(l.URL.String())
		if err != nil {
			continue
		}
		t := u.String()
		if t == self {
			continue
		}
		a := anchor{target: t, text: l.Text}
		if _, dup := seen[anchor{t, strings.ToLower(l.Text)}]; dup {
			continue // a page counts once per (target, text)
		}
		seen[anchor{t, strings.ToLower(l.Text)}] = struct{}{}
		out = append(out, a)
	}
	return out
}

// anchorSet gathers anchor texts for a set of target URLs: per target,
// each distinct (case-folded) text with the number of pages linking with
// it and the smallest of their URLs (the tie-break that keeps the result
// independent of the order pages are read in, so the embedded and the
// distributed build give the same fields). Bounded per target by
// maxAnchorCandidates texts: when full, a new text replaces a text linked
// by one page only with a larger source URL, or is dropped; so with more
// than maxAnchorCandidates distinct texts per page the counts of the
// rarest texts can depend on the reading order, those of frequent ones
// not. Safe for concurrent use.
type anchorSet struct {
	mu      sync.Mutex
	targets map[string]map[string]*anchorCount // target → folded text → count
}

// anchorCount is one distinct anchor text of a target.
type anchorCount struct {
	text, source string // source: the smallest URL of a page linking with it
	pages        int
}

// anchorText is an anchor text and how many times it counts in the
// field: 1 + ⌊log2(pages linking with it)⌋.
type anchorText struct {
	text string
	n    int
}

// newAnchorSet makes a set that keeps anchor text for the given URLs only.
func newAnchorSet(targets []string) *anchorSet {
	s := &anchorSet{targets: make(map[string]map[string]*anchorCount, len(targets))}
	for _, t := range targets {
		if t != "" {
			s.targets[t] = nil
		}
	}
	return s
}

// add records the anchors of the page at source (pageAnchors: one per
// target and text).
func (s *anchorSet) add(source string, as []anchor) {
	if len(as) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range as {
		l, ok := s.targets[a.target]
		if !ok {
			continue
		}
		if l == nil {
			l = map[string]*anchorCount{}
			s.targets[a.target] = l
		}
		key := strings.ToLower(a.text)
		if c := l[key]; c != nil {
			c.pages++
			if source < c.source {
				c.text, c.source = a.text, source
			}
			continue
		}
		if len(l) >= maxAnchorCandidates {
			// Full: the new text replaces the one linked by the fewest
			// pages (ties: the largest source), so frequent texts stay.
			var worst string
			for k, v := range l {
				if w := l[worst]; worst == "" || v.pages < w.pages || (v.pages == w.pages && (v.source > w.source || (v.source == w.source && k > worst))) {
					worst = k
				}
			}
			if w := l[worst]; w.pages > 1 || source > w.source {
				continue
			}
			delete(l, worst)
		}
		l[key] = &anchorCount{text: a.text, source: source, pages: 1}
	}
}

// texts returns the anchor field of the page known by the URLs (its URL
// and its final URL after redirects): the MaxAnchorTexts texts linked by
// the most pages (ties: the smaller source URL, then the text), within
// MaxAnchorBytes, each with its multiplicity.
func (s *anchorSet) texts(pageURLs ...string) []anchorText {
	s.mu.Lock()
	defer s.mu.Unlock()
	byKey := map[string]anchorCount{}
	for _, u := range pageURLs {
		for k, v := range s.targets[u] {
			old, dup := byKey[k]
			if !dup {
				byKey[k] = *v
				continue
			}
			old.pages += v.pages
			if v.source < old.source {
				old.text, old.source = v.text, v.source
			}
			byKey[k] = old
		}
	}
	if len(byKey) == 0 {
		return nil
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		a, b := byKey[x], byKey[y]
		if a.pages != b.pages {
			return b.pages - a.pages
		}
		if c := strings.Compare(a.source, b.source); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	var out []anchorText
	n := 0
	for _, k := range keys {
		c := byKey[k]
		if len(out) >= MaxAnchorTexts || n+len(c.text) > MaxAnchorBytes {
			break
		}
		out = append(out, anchorText{c.text, bits.Len(uint(c.pages))})
		n += len(c.text)
	}
	return out
}

// shortScale is the unit of the short-field frequencies stored in
// postings: quarters, so that the length-normalised anchor field keeps a
// fraction (bm25Score divides by it).
const shortScale = 4

// anchorB is BM25F's length normalisation of the anchor field: a page
// named by many different texts (a site's home, a section page) has a
// long anchor field, and each of its words counts for less.
const anchorB = 0.75

// anchorField is a page's analysed anchor field: each term's occurrences
// (times the texts' multiplicities) and the field's length in words.
type anchorField struct {
	counts map[string]uint32
	length int
}

// analyzeAnchors analyses a page's anchor texts.
func analyzeAnchors(a *analysis.Analyzer, texts []anchorText) anchorField {
	f := anchorField{counts: map[string]uint32{}}
	for _, at := range texts {
		n := 0
		a.Analyze(at.text, func(t analysis.Token) {
			f.counts[t.Term] += uint32(at.n)
			n = max(n, t.Pos+1)
		})
		f.length += at.n * n
	}
	return f
}

// addAnchorFields adds the anchor fields of docs (fields[i] is docs[i]'s)
// weighted by weight (0: nothing is added), each normalised by its length
// against the average over docs: a term's short-field frequency grows by
// shortScale × weight × occurrences / (1 − anchorB + anchorB·length/average),
// rounded (at least 1). The main text's length is unchanged. The terms
// stay sorted; anchor-only terms have no positions.
func addAnchorFields(docs []*Doc, fields []anchorField, weight int) {
	if weight <= 0 || len(docs) == 0 {
		return
	}
	total := 0
	for _, f := range fields {
		total += f.length
	}
	avg := float64(total) / float64(len(docs))
	for i, d := range docs {
		f := fields[i]
		if len(f.counts) == 0 {
			continue
		}
		norm := 1.0
		if avg > 0 {
			norm = 1 - anchorB + anchorB*float64(f.length)/avg
		}
		add := make(map[string]uint32, len(f.counts))
		for t, c := range f.counts {
			add[t] = uint32(max(1, math.Round(float64(shortScale*weight)*float64(c)/norm)))
		}
		for k := range d.Terms {
			if w, ok := add[d.Terms[k].Term]; ok {
				d.Terms[k].Short += w
				delete(add, d.Terms[k].Term)
			}
		}
		if len(add) == 0 {
			continue
		}
		for t, w := range add {
			d.Terms = append(d.Terms, TermPositions{Term: t, Short: w})
		}
		slices.SortFunc(d.Terms, func(x, y TermPositions) int { return strings.Compare(x.Term, y.Term) })
	}
}

// addDistAnchors gives the distributed build's winning documents their
// anchor fields from the anchors of every winning page, as the embedded
// build does for the pages of a batch.
func addDistAnchors(win map[string]winner, weight int) error {
	if weight <= 0 {
		return nil
	}
	a, err := analysis.Shared()
	if err != nil {
		return err
	}
	targets := make([]string, 0, 2*len(win))
	for u, c := range win {
		if c.doc != nil {
			targets = append(targets, u, c.final)
		}
	}
	set := newAnchorSet(targets)
	for u, c := range win {
		if c.doc != nil {
			set.add(u, c.anchors)
		}
	}
	var docs []*Doc
	var fields []anchorField
	for u, c := range win {
		if c.doc != nil {
			docs = append(docs, c.doc)
			fields = append(fields, analyzeAnchors(a, set.texts(u, c.final)))
		}
	}
	addAnchorFields(docs, fields, weight)
	return nil
}
