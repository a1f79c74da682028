package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/rank"
)

// randomCorpus writes segs segments of random pages over a small
// vocabulary with Zipf-like frequencies (so some terms have long postings
// lists with several skip blocks), later segments replacing and deleting
// some URLs of earlier ones; it returns the vocabulary.
func randomCorpus(t *testing.T, r *rand.Rand, dir string, docs, segs int) []string {
	return randomCorpusLinks(t, r, dir, docs, segs, 0)
}

// randomCorpusLinks is randomCorpus built with the link-label discount
// FieldWeights.Links = links: with links > 0 about a quarter of each
// page's words are also link labels, so that a term's main-text
// frequencies vary within a page and between pages (randomCorpus's pages
// and random draws are unchanged with links 0).
func randomCorpusLinks(t *testing.T, r *rand.Rand, dir string, docs, segs, links int) []string {
	vocab := make([]string, 40)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%cx%c", 'a'+rune(i%26), 'a'+rune(i/26))
	}
	fields := DefaultFieldWeights
	fields.Links = links
	w, err := OpenWriter(dir, WriterOptions{MaxSegments: 100, Fields: fields})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	a := analyzer(t)
	for s := range segs {
		var pages []page
		var labels [][]string
		for range docs {
			// Documents are numbered by URL: short pages (high scores) on
			// host t0 come first, long ones on t2 last, so the blocks of a
			// long list have different bounds, as on a real site.
			host := r.IntN(3)
			n := []int{1 + r.IntN(10), 20 + r.IntN(60), 100 + r.IntN(200)}[host]
			var text []byte
			var ls []string
			for range n {
				// Zipf-like: low indexes are common.
				k := int(float64(len(vocab)) * r.Float64() * r.Float64() * r.Float64())
				text = append(text, vocab[k]...)
				text = append(text, ' ')
				if links > 0 && r.IntN(4) == 0 {
					ls = append(ls, vocab[k])
				}
			}
			// Identical pages make exact score ties.
			if host == 0 && r.IntN(5) == 0 {
				text = []byte(vocab[0] + " " + vocab[1] + " " + vocab[2])
				ls = nil
			}
			pages = append(pages, page{fmt.Sprintf("http://t%d.test/%d", host, r.IntN(docs*segs)), "", string(text)})
			labels = append(labels, ls)
		}
		var deleted []string
		if s > 0 {
			for range docs / 20 {
				deleted = append(deleted, fmt.Sprintf("http://t%d.test/%d", r.IntN(3), r.IntN(docs*segs)))
			}
		}
		var ds []Doc
		for i, p := range pages {
			ds = append(ds, NewDocFields(a, Fields{URL: p.url, Title: p.title, Text: p.text, LinkLabels: labels[i]}, fields))
		}
		if err := w.Commit(ds, deleted, -1, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return vocab
}

// TestPrunedEqualsExhaustive runs random queries (mostly conjunctive) with the
// pruned evaluation and the exhaustive one: same totals, same hits in the
// same order (ties included), same scores, with and without PageRank.
// Round 3's index is built with the link-label discount
// (FieldWeights.Links), whose lowered main-text frequencies the block
// bounds must still cover.
func TestPrunedEqualsExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 4 {
		dir := filepath.Join(t.TempDir(), "index")
		docs := 1500
		if testing.Short() {
			docs = 700
		}
		segs, links := 1+round, 0
		if round == 3 {
			segs, links = 2, 2
		}
		vocab := randomCorpusLinks(t, r, dir, docs, segs, links)
		rankFile := filepath.Join(t.TempDir(), "pages.tsv")
		scores := map[string]float64{}
		for i := range docs * segs {
			if r.IntN(3) > 0 {
				scores[fmt.Sprintf("http://t%d.test/%d", r.IntN(3), i)] = r.ExpFloat64() / float64(docs)
			}
		}
		if err := rank.WriteScores(rankFile, scores); err != nil {
			t.Fatal(err)
		}
		pruned, err := Open(dir, Options{ReloadInterval: -1, RankFile: rankFile})
		if err != nil {
			t.Fatal(err)
		}
		defer pruned.Close()
		if round == 1 {
			pruned.WaitWarm()
		}
		exh, err := Open(dir, Options{ReloadInterval: -1, RankFile: rankFile, Exhaustive: true})
		if err != nil {
			t.Fatal(err)
		}
		defer exh.Close()
		long := 0
		for _, s := range pruned.cur.segs {
			s.terms(func(ti termInfo) error {
				if ti.df >= skipMinDF {
					long++
				}
				return nil
			})
		}
		if long == 0 {
			t.Fatal("no postings list is long enough to be pruned: the test tests nothing")
		}
		viaMaps := 0 // conjunctions whose every term has a document map in the first segment
		for q := range 150 {
			word := func() string { return vocab[int(float64(len(vocab))*r.Float64()*r.Float64())] }
			var query string
			switch q % 6 {
			case 0: // a phrase: positions, cursors jumping blocks
				query = `"` + word() + " " + word() + `"`
			case 1:
				query = word() + " OR " + word()
			case 2:
				query = word() + " -" + word()
			default: // conjunctions: the pruned path
				for range 1 + r.IntN(3) {
					query += word() + " "
				}
			}
			req := Request{Query: query, Limit: []int{1, 3, 10, 50}[q%4], Offset: []int{0, 0, 5}[q%3],
				RankWeight: []float64{0, -1, 3}[q%3]}
			for _, pw := range []float64{0, 1.5} { // without and with the proximity rescoring
				req.ProximityWeight = pw
				a, err := pruned.Search(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := exh.Search(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if a.Total != b.Total {
					t.Fatalf("round %d %+v: total %d pruned, %d exhaustive", round, req, a.Total, b.Total)
				}
				if !reflect.DeepEqual(hitKeys(a.Hits), hitKeys(b.Hits)) {
					t.Fatalf("round %d %+v:\npruned     %v\nexhaustive %v", round, req, hitKeys(a.Hits), hitKeys(b.Hits))
				}
			}
			if terms := strings.Fields(query); q%6 >= 3 && len(terms) > 1 {
				all := true
				for _, w := range terms {
					ti, ok, _ := pruned.cur.segs[0].lookup(w)
					all = all && ok && pruned.cur.segs[0].docMap(ti) != nil
				}
				if all {
					viaMaps++
				}
			}
		}
		if viaMaps < 5 {
			t.Fatalf("round %d: only %d conjunctions of terms with document maps: the document-map path is barely tested", round, viaMaps)
		}
		t.Logf("round %d: %d conjunctions evaluated with document maps", round, viaMaps)
	}
}

type hitKey struct {
	URL   string
	Score float64
	BM25  float64
}

func hitKeys(hs []Hit) []hitKey {
	var out []hitKey
	for _, h := range hs {
		out = append(out, hitKey{h.URL, h.Score, h.BM25})
	}
	return out
}

// TestDocMapBudget: a segment builds document maps only within
// Options.DocMapBytes (none when negative), and searches give the
// exhaustive results whichever terms have maps.
func TestDocMapBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dir := filepath.Join(t.TempDir(), "index")
	vocab := randomCorpus(t, r, dir, 1500, 1)
	exh, err := Open(dir, Options{ReloadInterval: -1, Exhaustive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exh.Close()
	for _, budget := range []int{-1, 2*docMapBytes(1500) + 1, 0} {
		ix, err := Open(dir, Options{ReloadInterval: -1, NoWarm: true, DocMapBytes: budget})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			q := vocab[i%8] + " " + vocab[(i/8)%5]
			a, err := ix.Search(context.Background(), Request{Query: q, Limit: 10, RankWeight: 0})
			if err != nil {
				t.Fatal(err)
			}
			b, err := exh.Search(context.Background(), Request{Query: q, Limit: 10, RankWeight: 0})
			if err != nil {
				t.Fatal(err)
			}
			if a.Total != b.Total || !reflect.DeepEqual(hitKeys(a.Hits), hitKeys(b.Hits)) {
				t.Fatalf("budget %d, %q: %d %v, exhaustive %d %v", budget, q, a.Total, hitKeys(a.Hits), b.Total, hitKeys(b.Hits))
			}
		}
		sc := &ix.cur.segs[0].skipc
		sc.mu.Lock()
		maps, used := len(sc.maps), sc.mapBytes
		sc.mu.Unlock()
		switch {
		case budget < 0 && maps != 0:
			t.Errorf("budget %d: %d maps built", budget, maps)
		case budget > 0 && (maps != 2 || used > budget):
			t.Errorf("budget %d (two maps): %d maps of %d bytes", budget, maps, used)
		case budget == 0 && maps < 3:
			t.Errorf("default budget: only %d maps: the queries' frequent terms should all have one", maps)
		}
		ix.Close()
	}
}

// TestDocMapHighFrequency: a frequency of 255 or more does not fit a
// document map's byte; the posting is decoded for it, and the scores stay
// the exhaustive ones.
func TestDocMapHighFrequency(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	w := openWriter(t, dir, 8)
	var pages []page
	for i := range 700 {
		text := "alpha beta gamma"
		switch i {
		case 100:
			text = strings.Repeat("alpha ", 300) + "beta"
		case 200:
			text = strings.Repeat("alpha ", 254) + "beta"
		}
		pages = append(pages, page{fmt.Sprintf("http://h.test/%03d", i), "", text})
	}
	commitPages(t, w, pages)
	ix, err := Open(dir, Options{ReloadInterval: -1, NoWarm: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	exh, err := Open(dir, Options{ReloadInterval: -1, Exhaustive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exh.Close()
	req := Request{Query: "alpha beta", Limit: 1000, RankWeight: 0} // every page, scores compared
	a, err := ix.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := exh.Search(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	seg := ix.cur.segs[0]
	ti, _, _ := seg.lookup("alpha")
	if seg.docMap(ti) == nil {
		t.Fatal("alpha has no document map: the test does not test the maps")
	}
	if a.Total != 700 || a.Total != b.Total || !reflect.DeepEqual(hitKeys(a.Hits), hitKeys(b.Hits)) {
		t.Fatalf("maps: %d %v\nexhaustive: %d %v", a.Total, hitKeys(a.Hits), b.Total, hitKeys(b.Hits))
	}
}
