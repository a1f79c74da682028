package index

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/store"
)

func text(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed+1))
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "w%d ", r.IntN(3000))
	}
	return b.String()
}

// writeRecords writes records.jsonl into a new data directory: each page
// with status 200, HTML, a page number, and its text's fingerprint and
// SimHash.
func writeRecords(t *testing.T, recs []store.Record, texts []string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, store.RecordsFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, r := range recs {
		if r.Depth == 0 {
			r.Depth = 2
		}
		if r.Status == 0 {
			r.Status = 200
		}
		r.ContentType, r.PageNo = "text/html", int64(i)
		if texts[i] != "" {
			r.Fingerprint = strconv.FormatUint(dedup.Fingerprint([]byte(texts[i])), 16)
			if h := dedup.PageSimHash(texts[i]); h != 0 {
				r.SimHash = strconv.FormatUint(h, 16)
			}
		}
		b, _ := json.Marshal(r)
		f.Write(append(b, '\n'))
	}
	return dir
}

func TestComputeClusters(t *testing.T) {
	art := text(1, 300)
	recs := []store.Record{ // cluster order: URL length, URL (depth 1 here, the copies at 2: not used)
		{URL: "http://a/article", Depth: 1},
		{URL: "http://a/print/article"},                   // exact copy
		{URL: "http://a/article-dated"},                   // near copy
		{URL: "http://a/other"},                           // unrelated
		{URL: "http://a/one"},                             // one word
		{URL: "http://a/one-again"},                       // the same word: an exact copy still
		{URL: "http://a/c1", Canonical: "http://a/other"}, // folds into /other
		{URL: "http://a/c404", Canonical: "http://a/gone"},
		{URL: "http://a/gone", Status: 404},
		{URL: "http://a/loop1", Canonical: "http://a/loop2"},
		{URL: "http://a/loop2", Canonical: "http://a/loop1"},
		{URL: "http://a/chain1", Canonical: "http://a/c1"}, // c1 names another: a chain, ignored
		{URL: "http://a/unfetched", Canonical: "http://a/never"},
		{URL: "http://a/redirected", FinalURL: "http://a/final"},
		{URL: "http://a/to-final", Canonical: "http://a/final"},                     // the final URL of a fetched page
		{URL: "http://a/dated-copy-canonical", Canonical: "http://a/article-dated"}, // folds into /article-dated, whose cluster is /article's
	}
	// The near copy has a date line. SimHash leaves numbers and month
	// names out (dedup's feature rule), so its hash is the article's; with
	// "Updated " before the date (one shingle more) this article's copy
	// happens to be 4 bits away under that rule (371 of 400 such texts are
	// within 3; bench/neardup measures the recall), and this test is about
	// the clusters, not SimHash's recall.
	texts := []string{art, art, "25 November 2026. " + art, text(2, 300), "hello", "hello",
		text(3, 100), text(4, 100), "", text(5, 100), text(6, 100), text(7, 100), text(8, 100), text(9, 100), text(10, 100), text(11, 100)}
	// clusters returns what ComputeClusters (k = 3) folds in dir: each
	// member URL's root and kind.
	clusters := func(dir string) map[string]string {
		t.Helper()
		ms, err := ComputeClusters(context.Background(), dir, 3)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, m := range ms {
			got[m.URL] = m.Root + " " + m.Kind
		}
		return got
	}
	dir := writeRecords(t, recs, texts)
	got := clusters(dir)
	want := map[string]string{
		"http://a/print/article":        "http://a/article exact",
		"http://a/article-dated":        "http://a/article near",
		"http://a/one-again":            "http://a/one exact",
		"http://a/c1":                   "http://a/other canonical",
		"http://a/to-final":             "http://a/redirected canonical",
		"http://a/dated-copy-canonical": "http://a/article canonical",
	}
	for u, w := range want {
		if got[u] != w {
			t.Errorf("%s: %q, want %q", u, got[u], w)
		}
	}
	for u, g := range got {
		if _, ok := want[u]; !ok {
			t.Errorf("%s folded into %q; it stands alone (canonical to a 404, loop, chain or unfetched page)", u, g)
		}
	}
	// The same pages recorded in another order (a crawl resumed after a
	// crash fetches in another order) make the same clusters.
	rev := slices.Clone(recs)
	revTexts := slices.Clone(texts)
	slices.Reverse(rev)
	slices.Reverse(revTexts)
	if got2 := clusters(writeRecords(t, rev, revTexts)); !maps.Equal(got, got2) {
		t.Errorf("records reversed: %v, in order: %v", got2, got)
	}
	// The same pages recorded at other depths (with overlapping levels a
	// page's recorded depth is the one it was fetched at, which depends on
	// timing) make the same clusters.
	deep := slices.Clone(recs)
	for i := range deep {
		deep[i].Depth = 7 - i%5
	}
	if got3 := clusters(writeRecords(t, deep, texts)); !maps.Equal(got, got3) {
		t.Errorf("records at other depths: %v, as fetched: %v", got3, got)
	}
	// k = 0: no near-duplicates.
	ms, _ := ComputeClusters(context.Background(), dir, 0)
	for _, m := range ms {
		if m.Kind == ClusterNear {
			t.Errorf("k=0 found a near-duplicate: %+v", m)
		}
	}
	if _, err := ComputeClusters(context.Background(), dir, 9); err == nil {
		t.Error("distance 9 accepted")
	}
}

func TestSearchOneResultPerCluster(t *testing.T) {
	dir := t.TempDir()
	w := openWriter(t, dir, 10)
	commitPages(t, w, []page{
		{"http://a/root", "zebra root", "zebra zebra stripes"},
		{"http://a/copy1", "zebra copy", "zebra zebra zebra zebra stripes"}, // ranks above its root
		{"http://a/copy2", "zebra copy", "zebra stripes"},
		{"http://a/alone", "zebra alone", "zebra stripes"},
		{"http://a/other", "zebra other", "zebra stripes"},
		{"http://b/member", "lion", "lion only in the member"},
		{"http://b/root", "tiger", "tiger"},
	})
	cl := clustersHeader + " k=3\nhttp://a/copy1\thttp://a/root\tnear\nhttp://a/copy2\thttp://a/root\texact\nhttp://b/member\thttp://b/root\tcanonical\n"
	if err := os.WriteFile(filepath.Join(dir, ClustersFile), []byte(cl), 0o644); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, dir)
	res, err := ix.Search(context.Background(), Request{Query: "zebra", Limit: 10, RankWeight: 0})
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, h := range res.Hits {
		hits = append(hits, fmt.Sprintf("%s/%d", h.URL, h.Similar))
	}
	if len(hits) != 3 || hits[0] != "http://a/root/2" {
		t.Fatalf("hits %v: want 3, the cluster first (its member copy1 ranks first) shown by its own page with 2 similar", hits)
	}
	// A page of 2 is still full: the members do not take its places.
	res, _ = ix.Search(context.Background(), Request{Query: "zebra", Limit: 2, RankWeight: 0})
	if len(res.Hits) != 2 {
		t.Fatalf("Limit 2 gave %d hits", len(res.Hits))
	}
	page2, _ := ix.Search(context.Background(), Request{Query: "zebra", Offset: 2, Limit: 2, RankWeight: 0})
	if len(page2.Hits) != 1 || page2.Hits[0].URL == res.Hits[0].URL || page2.Hits[0].URL == res.Hits[1].URL {
		t.Fatalf("page 2: %+v", page2.Hits)
	}
	// A member matching alone is shown (its words are its own), with its cluster's count.
	res, _ = ix.Search(context.Background(), Request{Query: "lion", Limit: 10})
	if len(res.Hits) != 1 || res.Hits[0].URL != "http://b/member" || res.Hits[0].Similar != 1 {
		t.Fatalf("lion: %+v", res.Hits)
	}
	// A damaged clusters file: search goes on without collapsing.
	os.WriteFile(filepath.Join(dir, ClustersFile), []byte("garbage\n"), 0o644)
	res, err = ix.Search(context.Background(), Request{Query: "zebra", Limit: 10, RankWeight: 0})
	if err != nil || len(res.Hits) != 5 {
		t.Fatalf("with a damaged clusters file: %d hits, %v; want all 5", len(res.Hits), err)
	}
}
