package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/websim"
)

// TestBM25FTitleBeatsHub is the ranking failure issue 27 names: a hub page
// (many matching words, every page's title in its text) outranked the page
// whose title is the query. With BM25Fields (title and text as one text,
// the ranking before BM25F) the hub wins; with the default field weights
// the titled page does, and anchor text alone lifts a page whose own text
// barely names the query.
func TestBM25FTitleBeatsHub(t *testing.T) {
	a := analyzer(t)
	topics := []string{"garden hose", "tax refund", "river crawler", "kernel module", "postgres vacuum", "network socket",
		"cloud storage", "music theory", "bread baking", "solar panel", "chess opening", "wine cellar"}
	mk := func(w FieldWeights) []Doc {
		var hub strings.Builder
		var docs []Doc
		var anchorsTo = map[string][]string{}
		for i, tp := range topics {
			u := fmt.Sprintf("http://h.test/%d", i)
			// The hub repeats every topic's words (its table of contents and a summary).
			fmt.Fprintf(&hub, "%s: see %s, all about %s, more on %s. ", tp, tp, tp, tp)
			anchorsTo[u] = append(anchorsTo[u], tp)
		}
		docs = append(docs, NewDocFields(a, Fields{URL: "http://h.test/", Title: "Index of everything", Text: hub.String()}, w))
		for i, tp := range topics {
			u := fmt.Sprintf("http://h.test/%d", i)
			text := strings.Repeat("filler words about this chapter and its details. ", 20) + "It covers " + tp + "."
			docs = append(docs, NewDocFields(a, Fields{URL: u, Title: tp, Text: text, Anchors: anchorsTo[u]}, w))
		}
		return docs
	}
	top := func(w FieldWeights, q string) string {
		dir := t.TempDir()
		wr, err := OpenWriter(dir, WriterOptions{Fields: w})
		if err != nil {
			t.Fatal(err)
		}
		defer wr.Close()
		if err := wr.Commit(mk(w), nil, -1, "test"); err != nil {
			t.Fatal(err)
		}
		ix := openIndex(t, dir)
		res, err := ix.Search(context.Background(), Request{Query: q, Limit: 3, RankWeight: 0})
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("%s: %v %v", q, res, err)
		}
		return res.Hits[0].URL
	}
	for i, tp := range topics {
		want := fmt.Sprintf("http://h.test/%d", i)
		if got := top(DefaultFieldWeights, tp); got != want {
			t.Errorf("BM25F %q: first hit %s, want the page titled so (%s)", tp, got, want)
		}
	}
	// The baseline shows the failure this fixes (else the test proves nothing).
	if got := top(BM25Fields, topics[0]); got != "http://h.test/" {
		t.Errorf("BM25 alone %q: first hit %s, want the hub (the failure BM25F fixes)", topics[0], got)
	}
}

// TestLinkLabelsDiscount: a hub (its main text a list of links whose
// labels carry the query words) and an article with the same words, as
// often, in its prose, the same length and the same title: with the
// link-label discount (FieldWeights.Links) the article ranks first, by
// a margin that grows with the discount; without it the two tie. The
// frequencies: a label word counts Body − Links per occurrence, never
// below 1, positions unchanged.
func TestLinkLabelsDiscount(t *testing.T) {
	a := analyzer(t)
	const q = "marathon tournament"
	var hubText, artText strings.Builder
	var labels []string
	for i := range 6 {
		l := fmt.Sprintf("marathon tournament %d", i)
		labels = append(labels, l)
		fmt.Fprintf(&hubText, "%s and more ", l)
		fmt.Fprintf(&artText, "runners said the marathon tournament %d was and more ", i)
	}
	hubText.WriteString("runners said the was ")
	for range 5 {
		hubText.WriteString("runners said the was ")
	}
	// The same words, the same length (a last word that is not a stop
	// word): only which of them are link labels differs.
	hubText.WriteString("finish")
	artText.WriteString("finish")
	if got, want := sortedWords(hubText.String()), sortedWords(artText.String()); got != want {
		t.Fatalf("the two texts differ in words:\n%s\n%s", got, want)
	}
	scores := func(w FieldWeights) (hub, art float64, first string) {
		docs := []Doc{
			NewDocFields(a, Fields{URL: "http://h.test/a-hub", Title: "Section 1", Text: hubText.String(), LinkLabels: labels}, w),
			NewDocFields(a, Fields{URL: "http://h.test/b-article", Title: "Section 1", Text: artText.String()}, w),
		}
		dir := t.TempDir()
		wr, err := OpenWriter(dir, WriterOptions{Fields: w})
		if err != nil {
			t.Fatal(err)
		}
		defer wr.Close()
		if err := wr.Commit(docs, nil, -1, "test"); err != nil {
			t.Fatal(err)
		}
		ix := openIndex(t, dir)
		res, err := ix.Search(context.Background(), Request{Query: q, Limit: 2, RankWeight: 0, Explain: true})
		if err != nil || len(res.Hits) != 2 {
			t.Fatalf("%v: %v %v", w, res, err)
		}
		for _, h := range res.Hits {
			if h.URL == "http://h.test/a-hub" {
				// "marathon": 6 occurrences, all link labels.
				want := map[int]string{0: "tf 6 in", 1: "tf 3 in", 2: "tf 0.5 in"}[w.Links]
				if !strings.Contains(h.Explain, `"marathon": `+want) {
					t.Errorf("links=%d: explain does not show %q:\n%s", w.Links, want, h.Explain)
				}
				hub = h.Score
			} else {
				art = h.Score
			}
		}
		return hub, art, res.Hits[0].URL
	}
	noDiscount := DefaultFieldWeights
	noDiscount.Links = 0 // the default discounts link labels (links=2)
	hub0, art0, _ := scores(noDiscount)
	if hub0 != art0 {
		t.Errorf("without the discount: hub %g, article %g: want a tie (same words, same counts)", hub0, art0)
	}
	prev := 0.0
	for _, n := range []int{1, 2} {
		w := DefaultFieldWeights
		w.Links = n
		hub, art, first := scores(w)
		if first != "http://h.test/b-article" || !(art > hub) {
			t.Errorf("links=%d: first %s, hub %g, article %g: want the article first", n, first, hub, art)
		}
		if margin := art - hub; !(margin > prev) {
			t.Errorf("links=%d: margin %g, not above links=%d's %g", n, margin, n-1, prev)
		} else {
			prev = margin
		}
	}
	// The frequencies behind it: "marathon" occurs 6 times, all in labels.
	for _, c := range []struct{ links, body int }{{0, 12}, {1, 6}, {2, 1}} {
		w := DefaultFieldWeights
		w.Links = c.links
		d := NewDocFields(a, Fields{URL: "http://h.test/a-hub", Text: hubText.String(), LinkLabels: labels}, w)
		i := slices.IndexFunc(d.Terms, func(tp TermPositions) bool { return tp.Term == "marathon" })
		if i < 0 || int(d.Terms[i].Body) != c.body || len(d.Terms[i].Pos) != 6 {
			t.Errorf("links=%d: marathon %+v, want body %d and 6 positions", c.links, d.Terms, c.body)
		}
		if d0 := NewDocFields(a, Fields{URL: "http://h.test/a-hub", Text: hubText.String()}, w); d0.Len != d.Len {
			t.Errorf("links=%d: length %d with labels, %d without: the discount must not change the length", c.links, d.Len, d0.Len)
		}
	}
}

// sortedWords is s's words sorted, joined by spaces.
func sortedWords(s string) string {
	f := strings.Fields(s)
	slices.Sort(f)
	return strings.Join(f, " ")
}

// TestAnchorSetBounded points 10,000 links with distinct texts and 10,000
// with one text ("Home") at one page: its anchor field keeps at most
// MaxAnchorTexts texts of at most MaxAnchorBytes, "Home" first and counted
// 1 + ⌊log2 10,000⌋ = 14 times; the page's weighted length grows by a
// bounded amount. With fewer distinct texts than the candidates bound the
// field does not depend on the order pages are read in.
func TestAnchorSetBounded(t *testing.T) {
	const target = "http://t.test/"
	type src struct {
		url string
		as  []anchor
	}
	mk := func(n int) []src {
		var srcs []src
		for i := range n {
			srcs = append(srcs, src{fmt.Sprintf("http://s.test/%05d", i), []anchor{
				{target, fmt.Sprintf("word%d extra%d", i, i)},
				{target, "Home"},
				{"http://elsewhere.test/", "ignored"},
			}})
		}
		return srcs
	}
	fill := func(srcs []src, seed uint64) []anchorText {
		s := newAnchorSet([]string{target})
		for _, k := range rand.New(rand.NewPCG(seed, 7)).Perm(len(srcs)) {
			s.add(srcs[k].url, srcs[k].as)
		}
		if s.texts("http://elsewhere.test/") != nil {
			t.Errorf("a URL not asked for kept anchor text")
		}
		return s.texts(target)
	}
	got := fill(mk(10_000), 1)
	n := 0
	for _, x := range got {
		n += len(x.text)
	}
	if len(got) > MaxAnchorTexts || n > MaxAnchorBytes || len(got) < 2 {
		t.Fatalf("%d texts, %d bytes: want 2 to %d texts within %d bytes", len(got), n, MaxAnchorTexts, MaxAnchorBytes)
	}
	if got[0] != (anchorText{"Home", 14}) || got[1].n != 1 {
		t.Errorf("texts %v: want Home ×14 first, then texts of one page", got[:2])
	}
	small := mk(maxAnchorCandidates - 1)
	first := fill(small, 1)
	for seed := range uint64(3) {
		if again := fill(small, seed+2); !slices.Equal(again, first) {
			t.Errorf("order %d: anchor texts differ from the first order's", seed)
		}
	}
	a := analyzer(t)
	d := NewDocFields(a, Fields{URL: target, Title: "T", Text: "body"}, DefaultFieldWeights)
	before := d.Len
	addAnchorFields([]*Doc{&d}, []anchorField{analyzeAnchors(a, got)}, DefaultFieldWeights.Anchor)
	if d.Len != before {
		t.Errorf("anchor text changed the main text's length from %d to %d", before, d.Len)
	}
	if !slices.IsSortedFunc(d.Terms, func(x, y TermPositions) int { return strings.Compare(x.Term, y.Term) }) {
		t.Errorf("terms not sorted after adding anchors")
	}
	for _, tp := range d.Terms {
		if tp.Short+tp.Body == 0 {
			t.Errorf("term %q has frequency 0", tp.Term)
		}
		if want := uint32(shortScale * 14 * DefaultFieldWeights.Anchor); tp.Term == "home" && tp.Short != want {
			t.Errorf("home: short-field frequency %d, want %d", tp.Short, want)
		}
	}
}

// TestFieldWeightsValidate checks the ranges.
func TestFieldWeightsValidate(t *testing.T) {
	for _, c := range []struct {
		w  FieldWeights
		ok bool
	}{
		{DefaultFieldWeights, true}, {BM25Fields, true},
		{FieldWeights{Title: -1, Body: 1}, false}, {FieldWeights{Title: 1, Body: 0}, false},
		{FieldWeights{Title: 1, Body: 1, Anchor: -1}, false}, {FieldWeights{Title: 101, Body: 1}, false},
		{FieldWeights{Body: 2, Links: 2}, true}, {FieldWeights{Body: 2, Links: 3}, false}, {FieldWeights{Body: 2, Links: -1}, false},
	} {
		if err := c.w.Validate(); (err == nil) != c.ok {
			t.Errorf("%v: %v", c.w, err)
		}
	}
}

// TestParseFieldWeights reads the --fields syntax.
func TestParseFieldWeights(t *testing.T) {
	for _, c := range []struct {
		in   string
		want FieldWeights
		err  string
	}{
		{"", DefaultFieldWeights, ""},
		{DefaultFieldWeights.String(), DefaultFieldWeights, ""},
		{"title=0, anchor=0", FieldWeights{Title: 0, Headings: DefaultFieldWeights.Headings, Body: DefaultFieldWeights.Body, Anchor: 0, K1: DefaultFieldWeights.K1, Links: DefaultFieldWeights.Links}, ""},
		{"k1=2.5,template=1", FieldWeights{Title: DefaultFieldWeights.Title, Headings: DefaultFieldWeights.Headings, Body: DefaultFieldWeights.Body, Anchor: DefaultFieldWeights.Anchor, K1: 2.5, Template: 1, Links: DefaultFieldWeights.Links}, ""},
		{"body=4", FieldWeights{Title: DefaultFieldWeights.Title, Headings: DefaultFieldWeights.Headings, Body: 4, Anchor: DefaultFieldWeights.Anchor, K1: DefaultFieldWeights.K1}, ""}, // links not named: 0
		{"links=0", FieldWeights{Title: DefaultFieldWeights.Title, Headings: DefaultFieldWeights.Headings, Body: DefaultFieldWeights.Body, Anchor: DefaultFieldWeights.Anchor, K1: DefaultFieldWeights.K1}, ""},
		{"title=0,headings=0,body=1,anchor=0,k1=0,template=1", BM25Fields, ""}, // docs/search.md: the ranking before fields
		{"k1=x", FieldWeights{}, "k1=N"},
		{"k1=-1", FieldWeights{}, "cannot use k1"},
		{"template=2", FieldWeights{}, "template weight"},
		{"title", FieldWeights{}, "NAME=N"},
		{"colour=3", FieldWeights{}, "the fields are"},
		{"body=0", FieldWeights{}, "body must be"},
		{"links=2", FieldWeights{Title: DefaultFieldWeights.Title, Headings: DefaultFieldWeights.Headings, Body: DefaultFieldWeights.Body, Anchor: DefaultFieldWeights.Anchor, K1: DefaultFieldWeights.K1, Links: 2}, ""},
		{"links=3", FieldWeights{}, "link-label discount"},
		{"links=-1", FieldWeights{}, "link-label discount"},
	} {
		got, err := ParseFieldWeights(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one mentioning %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

// TestOldFormat: an index written before BM25F (format versions 1 and 2)
// is refused by a search with ErrOldFormat and a message naming spider
// index; Build rebuilds it; so does Build after the field weights change.
func TestOldFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a synthetic web")
	}
	data, _, _ := crawlWeb(t, websim.Config{Seed: 5, Hosts: 2, PagesPerHost: 15}, 3)
	dir := filepath.Join(data, DirName)
	for _, version := range []uint32{1, 2} {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		for _, name := range []string{"00000001.seg", "MANIFEST"} {
			b, err := os.ReadFile(filepath.Join("testdata", "v1index", name))
			if err != nil {
				t.Fatal(err)
			}
			if name != "MANIFEST" {
				binary.LittleEndian.PutUint32(b[8:], version) // the header is not checksummed
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Open(dir, Options{ReloadInterval: -1})
		if !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "run spider index") {
			t.Fatalf("version %d: open error %v, want ErrOldFormat saying to run spider index", version, err)
		}
		st, err := Build(context.Background(), data, BuildOptions{})
		if err != nil || st.Docs == 0 || st.FromOffset != 0 {
			t.Fatalf("version %d: build %+v %v, want a rebuild", version, st, err)
		}
		ix := openIndex(t, dir)
		if ix.Stats().Docs != st.Docs {
			t.Errorf("version %d: %d documents after the rebuild, built %d", version, ix.Stats().Docs, st.Docs)
		}
	}
	// Other field weights: the next Build rebuilds everything.
	st, err := Build(context.Background(), data, BuildOptions{Fields: BM25Fields})
	if err != nil || st.FromOffset != 0 || st.Docs == 0 {
		t.Errorf("build with other weights: %+v %v, want a rebuild from offset 0", st, err)
	}
	if _, err := Build(context.Background(), data, BuildOptions{Fields: FieldWeights{}}); err != nil {
		t.Fatal(err)
	}
	m, _, _ := readManifest(dir)
	if m.Fields == nil || *m.Fields != DefaultFieldWeights {
		t.Errorf("manifest fields %v, want the defaults", m.Fields)
	}
}

// TestSnippetsFromMainText indexes a websim crawl: every page carries the
// site's navigation bar ("Home | Section 1 | Section 2 | …"). Indexed from the
// main text (the default) no snippet shows it; indexed from the whole
// visible text (Template 1), snippets do (so the check can fail).
func TestSnippetsFromMainText(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a synthetic web")
	}
	data, _, _ := crawlWeb(t, websim.Config{Seed: 6, Hosts: 3, PagesPerHost: 30}, 4)
	nav := func(fields FieldWeights) int {
		if _, err := Build(context.Background(), data, BuildOptions{Rebuild: true, Fields: fields}); err != nil {
			t.Fatal(err)
		}
		ix := openIndex(t, filepath.Join(data, DirName))
		n := 0
		for _, topic := range websim.Topics() {
			en, _ := websim.TopicWords(topic)
			res, err := ix.Search(context.Background(), Request{Query: strings.Join(en[:4], " OR "), Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range res.Hits {
				var b strings.Builder
				for _, f := range h.Snippet {
					b.WriteString(f.Text)
				}
				if s := b.String(); strings.Contains(s, "Section 1 | Section 2") || strings.Contains(s, "Home | Section") {
					n++
					if fields.Template == 0 {
						t.Errorf("%s: snippet shows the navigation bar: %q", h.URL, s)
					}
				}
			}
		}
		return n
	}
	nav(DefaultFieldWeights)
	visible := DefaultFieldWeights
	visible.Template = 1
	if n := nav(visible); n == 0 {
		t.Errorf("no snippet of the whole visible text shows the navigation bar: the check proves nothing")
	}
}
