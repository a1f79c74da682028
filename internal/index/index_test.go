package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/websim"
)

func analyzer(t testing.TB) *analysis.Analyzer {
	t.Helper()
	a, err := analysis.Shared()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// page is a test document.
type page struct{ url, title, text string }

// commitPages writes one segment of pages (and deletions) to dir.
func commitPages(t testing.TB, w *Writer, pages []page, deleted ...string) {
	t.Helper()
	a := analyzer(t)
	var docs []Doc
	for _, p := range pages {
		docs = append(docs, NewDoc(a, p.url, p.title, p.text))
	}
	if err := w.Commit(docs, deleted, -1, "test"); err != nil {
		t.Fatal(err)
	}
}

func openWriter(t testing.TB, dir string, maxSegs int) *Writer {
	t.Helper()
	w, err := OpenWriter(dir, WriterOptions{MaxSegments: maxSegs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func openIndex(t testing.TB, dir string) *Index {
	t.Helper()
	ix, err := Open(dir, Options{ReloadInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// urls runs q and returns the hit URLs in order.
func urls(t testing.TB, ix *Index, q string) []string {
	t.Helper()
	res, err := ix.Search(context.Background(), Request{Query: q, Limit: 100, RankWeight: 0})
	if err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.URL)
	}
	if res.Total != len(out) {
		t.Fatalf("%q: total %d but %d hits", q, res.Total, len(out))
	}
	return out
}

var corpus = []page{
	{"http://a.test/1", "Tax guide", "How to file your income tax return before the deadline. Tax refunds come later."},
	{"http://a.test/2", "Stock markets", "Investors watched the stock market fall; bonds rose and dividends held."},
	{"http://b.test/3", "Football", "The football match ended with a late goal. The coach praised the players."},
	{"http://sub.b.test/4", "Healthy food", "Fresh vegetables and fruit make healthy food; the recipe needs garlic."},
	{"http://c.test/5", "足球比赛", "足球比赛的冠军球队在联赛中获得胜利。"},
	{"http://c.test/6", "股票市场", "投资者关注股票市场和债券利率。"},
	{"http://c.test/7", "Mixed", "Go语言 supports concurrency; 投资者 like the stock market too."},
	{"http://a.test/8", "Market tax", "A tax on the stock market: market makers pay the tax."},
}

func TestQueries(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir, 8)
	commitPages(t, w, corpus)
	ix := openIndex(t, dir)
	cases := []struct {
		q    string
		want []string // as a set, unless ordered
		ord  bool
	}{
		{q: "tax", want: []string{"http://a.test/8", "http://a.test/1"}, ord: true}, // tf 2 in a shorter page first
		{q: "TAXES", want: []string{"http://a.test/1", "http://a.test/8"}},
		{q: "stock market", want: []string{"http://a.test/2", "http://c.test/7", "http://a.test/8"}},
		{q: "stock AND tax", want: []string{"http://a.test/8"}},
		{q: "football OR food", want: []string{"http://b.test/3", "http://sub.b.test/4"}},
		{q: "market -tax", want: []string{"http://a.test/2", "http://c.test/7"}},
		{q: "market NOT tax", want: []string{"http://a.test/2", "http://c.test/7"}},
		{q: `"stock market"`, want: []string{"http://a.test/2", "http://c.test/7", "http://a.test/8"}},
		{q: `"market stock"`, want: nil},
		{q: `"tax on the stock"`, want: []string{"http://a.test/8"}},
		{q: "site:b.test", want: []string{"http://b.test/3", "http://sub.b.test/4"}},
		{q: "site:sub.b.test", want: []string{"http://sub.b.test/4"}},
		{q: "healthy site:b.test", want: []string{"http://sub.b.test/4"}},
		{q: "market -site:a.test", want: []string{"http://a.test/2", "http://c.test/7"}[:1:1]},
		{q: "(football OR tax) -refunds", want: []string{"http://b.test/3", "http://a.test/8"}},
		{q: "足球", want: []string{"http://c.test/5"}},
		{q: "足球比赛", want: []string{"http://c.test/5"}},
		{q: "投资者", want: []string{"http://c.test/6", "http://c.test/7"}},
		{q: "语言 concurrency", want: []string{"http://c.test/7"}},
		{q: "nothing-here-zzz", want: nil},
	}
	// "market -site:a.test": only c.test/7 has market outside a.test.
	cases[13].want = []string{"http://c.test/7"}
	for _, c := range cases {
		got := urls(t, ix, c.q)
		want := slices.Clone(c.want)
		if !c.ord {
			slices.Sort(got)
			slices.Sort(want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", c.q, got, want)
		}
	}
}

func TestQueryErrors(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir, 8)
	commitPages(t, w, corpus[:2])
	ix := openIndex(t, dir)
	cases := []struct{ q, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"the of and", "no searchable words"},
		{`"unclosed`, "not closed"},
		{"(tax", "not closed"},
		{"tax)", "unexpected )"},
		{"-tax", "only excludes"},
		{"NOT tax", "only excludes"},
		{"OR tax", "no words before it"},
		{"tax NOT", "nothing to exclude"},
		{"site:", "needs a host"},
		{strings.Repeat("x", MaxQueryBytes+1), "limit"},
		{strings.Repeat("word ", 40), "terms"},
		{strings.Repeat("(", 20) + "x" + strings.Repeat(")", 20), "deeper"},
	}
	for _, c := range cases {
		_, err := ix.Search(context.Background(), Request{Query: c.q})
		if !errors.Is(err, ErrQuery) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want ErrQuery mentioning %q", c.q, err, c.want)
		}
	}
	for _, r := range []Request{{Query: "tax", Offset: -1}, {Query: "tax", Limit: 5000}} {
		if _, err := ix.Search(context.Background(), r); !errors.Is(err, ErrQuery) {
			t.Errorf("%+v: error %v, want ErrQuery", r, err)
		}
	}
}

func TestPagingSnippetsExplain(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir, 8)
	var pages []page
	for i := range 25 {
		pages = append(pages, page{fmt.Sprintf("http://p.test/%02d", i), fmt.Sprintf("Page %d", i),
			strings.Repeat("filler words here ", i) + "the garden tax is due " + strings.Repeat("more text ", 30)})
	}
	commitPages(t, w, pages)
	ix := openIndex(t, dir)
	all := urls(t, ix, "garden tax")
	if len(all) != 25 {
		t.Fatalf("%d hits, want 25", len(all))
	}
	var paged []string
	for off := 0; off < 25; off += 10 {
		res, err := ix.Search(context.Background(), Request{Query: "garden tax", Offset: off, Limit: 10, RankWeight: 0, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 25 {
			t.Fatalf("total %d", res.Total)
		}
		for _, h := range res.Hits {
			paged = append(paged, h.URL)
			var marked []string
			for _, f := range h.Snippet {
				if f.Match {
					marked = append(marked, strings.ToLower(f.Text))
				}
			}
			if !slices.Contains(marked, "garden") || !slices.Contains(marked, "tax") {
				t.Errorf("%s: snippet %+v does not mark both terms", h.URL, h.Snippet)
			}
			if !strings.Contains(h.Explain, `"garden": tf 1`) {
				t.Errorf("explain lacks the term: %s", h.Explain)
			}
		}
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages concatenated %v differ from one query %v", paged, all)
	}
	res, err := ix.Search(context.Background(), Request{Query: "garden", Offset: 100})
	if err != nil || res.Total != 25 || len(res.Hits) != 0 {
		t.Errorf("past the end: %+v %v", res, err)
	}
}

func TestRankWeight(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, DirName)
	w := openWriter(t, dir, 8)
	commitPages(t, w, []page{
		{"http://r.test/a", "", "apple apple apple banana"},
		{"http://r.test/b", "", "apple banana cherry date"},
	})
	if err := os.MkdirAll(filepath.Join(data, "rank"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "rank", "pages.tsv"), []byte("0.99\thttp://r.test/b\n0.01\thttp://r.test/a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, dir)
	if st := ix.Stats(); st.Ranked != 2 || st.Docs != 2 {
		t.Fatalf("stats %+v", st)
	}
	for _, c := range []struct {
		w     float64
		first string
	}{{0, "http://r.test/a"}, {5, "http://r.test/b"}} {
		res, err := ix.Search(context.Background(), Request{Query: "apple", RankWeight: c.w})
		if err != nil {
			t.Fatal(err)
		}
		if res.Hits[0].URL != c.first {
			t.Errorf("weight %g: first %s, want %s (%+v)", c.w, res.Hits[0].URL, c.first, res.Hits)
		}
		if c.w > 0 && res.Hits[0].PageRank != 0.99 {
			t.Errorf("pagerank %g", res.Hits[0].PageRank)
		}
	}
}

// TestIncremental covers replacement, deletion, merging and reloading.
func TestIncremental(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir, 100)
	commitPages(t, w, corpus[:4])
	ix, err := Open(dir, Options{ReloadInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if got := urls(t, ix, "football"); !slices.Equal(got, []string{"http://b.test/3"}) {
		t.Fatalf("football: %v", got)
	}
	// A newer segment replaces b.test/3 and deletes a.test/1.
	commitPages(t, w, []page{{"http://b.test/3", "Cricket", "The cricket match was rained off."}}, "http://a.test/1")
	check := func(stage string) {
		t.Helper()
		if got := urls(t, ix, "football"); len(got) != 0 {
			t.Errorf("%s: football still found: %v", stage, got)
		}
		if got := urls(t, ix, "cricket"); !slices.Equal(got, []string{"http://b.test/3"}) {
			t.Errorf("%s: cricket: %v", stage, got)
		}
		if got := urls(t, ix, "income"); len(got) != 0 {
			t.Errorf("%s: deleted page found: %v", stage, got)
		}
		if got := urls(t, ix, "investors"); !slices.Equal(got, []string{"http://a.test/2"}) {
			t.Errorf("%s: investors: %v", stage, got)
		}
		if st := ix.Stats(); st.Docs != 3 {
			t.Errorf("%s: %d live docs, want 3", stage, st.Docs)
		}
	}
	check("two segments")
	if merged, err := w.Merge(context.Background(), true); err != nil || !merged {
		t.Fatalf("merge: %v %v", merged, err)
	}
	check("merged")
	if st := ix.Stats(); st.Segments != 1 {
		t.Errorf("after merge %d segments", st.Segments)
	}
	// A deleted URL coming back in a later segment is found again.
	commitPages(t, w, []page{{"http://a.test/1", "Tax guide", "income tax again"}})
	if got := urls(t, ix, "income"); !slices.Equal(got, []string{"http://a.test/1"}) {
		t.Errorf("re-added page: %v", got)
	}
}

// TestConcurrentSearchDuringIndexing runs searches while segments are
// committed and merged in the background (run with -race).
func TestConcurrentSearchDuringIndexing(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir, 3)
	w.StartMerger(context.Background())
	commitPages(t, w, corpus)
	ix, err := Open(dir, Options{ReloadInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := ix.Search(ctx, Request{Query: []string{"tax", "market", "足球", "\"stock market\""}[g], Limit: 5})
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if res.Total == 0 {
					errs <- fmt.Errorf("query %d found nothing", g)
					return
				}
			}
		}()
	}
	for i := range 12 {
		commitPages(t, w, []page{{fmt.Sprintf("http://n.test/%d", i), "new", fmt.Sprintf("tax market number%d", i)}})
	}
	if err := w.WaitMerges(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := ix.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.Docs != len(corpus)+12 || st.Segments > 3 {
		t.Errorf("stats after merges: %+v", st)
	}
	if got := urls(t, ix, "number11"); !slices.Equal(got, []string{"http://n.test/11"}) {
		t.Errorf("last page: %v", got)
	}
}

func TestCorruptIndex(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir, 8)
	commitPages(t, w, corpus)
	w.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	orig, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	damage := []struct {
		name string
		data []byte
	}{
		{"truncated", orig[:len(orig)/2]},
		{"empty", nil},
		{"flipped byte", func() []byte { b := slices.Clone(orig); b[len(b)/3] ^= 0x40; return b }()},
		{"bad magic", func() []byte { b := slices.Clone(orig); b[0] = 'X'; return b }()},
		{"future version", func() []byte { b := slices.Clone(orig); b[8] = 9; return b }()},
	}
	for _, d := range damage {
		if err := os.WriteFile(segs[0], d.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Options{})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "rebuild") {
			t.Errorf("%s: error %v, want ErrCorrupt with advice", d.name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad manifest: %v", err)
	}
	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, ErrNoIndex) || !strings.Contains(err.Error(), "spider index") {
		t.Errorf("no index: %v", err)
	}
}

// crawlWeb crawls a small websim web into a data directory.
func crawlWeb(t *testing.T, cfg websim.Config, depth int) (string, *websim.Server, websim.TruthRules) {
	t.Helper()
	srv, err := websim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: depth, Scope: websim.ScopeAny}
	c := crawl.NewConfig()
	c.Data = t.TempDir()
	c.Seeds = rules.Seeds
	c.MaxDepth = rules.MaxDepth
	c.Scope = rules.Scope
	c.Resolve = srv.Resolve()
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 16
	eng, err := crawl.New(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return c.Data, srv, rules
}

// TestTopicsRankFirst indexes a websim crawl and checks that for every
// topic, the first hits of the topic's name are pages about that topic.
func TestTopicsRankFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a synthetic web (about 15 s; longer under -race)")
	}
	data, srv, rules := crawlWeb(t, websim.Config{Seed: 3, Hosts: 8, PagesPerHost: 30, ChineseShare: 0.5}, 4)
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Build(context.Background(), data, BuildOptions{BatchRecords: 50})
	if err != nil {
		t.Fatal(err)
	}
	if st.Docs == 0 || st.Segments < 2 {
		t.Fatalf("build stats %+v", st)
	}
	ix := openIndex(t, filepath.Join(data, DirName))
	for _, topic := range websim.Topics() {
		en, zh := websim.TopicWords(topic)
		for _, q := range []string{strings.Join(en[:3], " OR "), strings.Join(zh[:3], " OR ")} {
			res, err := ix.Search(context.Background(), Request{Query: q, Limit: 5, RankWeight: 0})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) == 0 {
				t.Errorf("%s: %d hits", q, len(res.Hits))
			}
			for i, h := range res.Hits {
				if !slices.Contains(truth.Topics[h.URL], topic.String()) {
					t.Errorf("%s (%s): hit %d %s has topics %v", q, topic, i+1, h.URL, truth.Topics[h.URL])
				}
			}
		}
	}
	// Indexing again finds nothing new.
	st2, err := Build(context.Background(), data, BuildOptions{})
	if err != nil || st2.Records != 0 {
		t.Errorf("second build: %+v %v", st2, err)
	}
}

func TestScanRecordsShrank(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "records.jsonl"), []byte(`{"url":"http://x.test/","status":200}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ScanRecords(dir, 1000, -1, func(Record, int64) bool { return true }); !errors.Is(err, ErrRecordsShrank) {
		t.Errorf("got %v", err)
	}
	if _, err := ScanRecords(t.TempDir(), 0, -1, func(Record, int64) bool { return true }); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Errorf("missing records: %v", err)
	}
}
