package index

import (
	"slices"
	"strings"
	"sync"

	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/parse"
	spiderurls "github.com/spider-crawler/spider/internal/urls"
)

// Anchor text: the words of the links pointing to a page describe it as
// other pages see it (a table of contents names each chapter by its title),
// the classic web-search signal. The build collects, for every page it
// analyses, the distinct anchor texts of the links pointing to it from the
// pages analysed with it (one batch of the embedded build, one task of the
// distributed one), and adds them as the page's anchor field.
const (
	// MaxAnchorTexts is the most distinct anchor texts a page's anchor
	// field keeps: 10,000 links with 10,000 texts pointing at one page
	// add at most this many.
	MaxAnchorTexts = 64
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

// pageAnchors returns the links of p worth reading as anchor text: <a>
// and <area> links with text, followed (not nofollow), not to the page
// itself, canonical targets.
func pageAnchors(self string, p *parse.Page) []anchor {
	var out []anchor
	for _, l := range p.Links {
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
		out = append(out, anchor{target: t, text: l.Text})
	}
	return out
}

// anchorSet gathers anchor texts for a set of target URLs, bounded per
// target: of the distinct (case-folded) texts pointing at a target it keeps
// the MaxAnchorTexts whose source pages have the smallest URLs, so the
// result does not depend on the order pages are analysed in (the embedded
// and the distributed build give the same fields). Safe for concurrent use.
type anchorSet struct {
	mu      sync.Mutex
	targets map[string]map[string]anchorText // target → folded text → text
}

// anchorText is one distinct anchor text and the smallest source URL it
// was seen on.
type anchorText struct {
	text, source string
}

// newAnchorSet makes a set that keeps anchor text for the given URLs only.
func newAnchorSet(targets []string) *anchorSet {
	s := &anchorSet{targets: make(map[string]map[string]anchorText, len(targets))}
	for _, t := range targets {
		if t != "" {
			s.targets[t] = nil
		}
	}
	return s
}

// add records the anchors of the page at source.
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
			l = map[string]anchorText{}
			s.targets[a.target] = l
		}
		key := strings.ToLower(a.text)
		if old, dup := l[key]; dup {
			if source < old.source {
				l[key] = anchorText{a.text, source}
			}
			continue
		}
		if len(l) >= MaxAnchorTexts {
			// Full: replace the entry of the largest source if this one is smaller.
			var worst string
			for k, v := range l {
				if worst == "" || v.source > l[worst].source || (v.source == l[worst].source && k > worst) {
					worst = k
				}
			}
			if w := l[worst]; source > w.source || (source == w.source && key > worst) {
				continue
			}
			delete(l, worst)
		}
		l[key] = anchorText{a.text, source}
	}
}

// texts returns the anchor texts gathered for the URLs (a page's URL and
// its final URL after redirects): distinct, in order of their source URLs,
// at most MaxAnchorTexts and MaxAnchorBytes.
func (s *anchorSet) texts(pageURLs ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	byKey := map[string]anchorText{}
	for _, u := range pageURLs {
		for k, v := range s.targets[u] {
			if old, dup := byKey[k]; !dup || v.source < old.source {
				byKey[k] = v
			}
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
		if c := strings.Compare(byKey[x].source, byKey[y].source); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	var out []string
	n := 0
	for _, k := range keys {
		t := byKey[k].text
		if len(out) >= MaxAnchorTexts || n+len(t) > MaxAnchorBytes {
			break
		}
		out = append(out, t)
		n += len(t)
	}
	return out
}

// addAnchors adds anchor texts to an analysed Doc as its anchor field,
// weighted by weight (0: nothing is added): each term's weighted frequency
// grows by weight per occurrence and the Doc's length by weight per word.
// The terms stay sorted; anchor-only terms have no positions.
func addAnchors(a *analysis.Analyzer, d *Doc, texts []string, weight int) {
	if weight <= 0 || len(texts) == 0 {
		return
	}
	add := map[string]uint32{}
	for _, s := range texts {
		n := 0
		a.Analyze(s, func(t analysis.Token) {
			add[t.Term] += uint32(weight)
			n = max(n, t.Pos+1)
		})
		d.Len += weight * n
	}
	if len(add) == 0 {
		return
	}
	for i := range d.Terms {
		if w, ok := add[d.Terms[i].Term]; ok {
			d.Terms[i].W += w
			delete(add, d.Terms[i].Term)
		}
	}
	if len(add) == 0 {
		return
	}
	for t, w := range add {
		d.Terms = append(d.Terms, TermPositions{Term: t, W: w})
	}
	slices.SortFunc(d.Terms, func(x, y TermPositions) int { return strings.Compare(x.Term, y.Term) })
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
	for u, c := range win {
		if c.doc != nil {
			addAnchors(a, c.doc, set.texts(u, c.final), weight)
		}
	}
	return nil
}
