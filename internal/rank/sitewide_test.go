package rank

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/spider-crawler/spider/internal/graph"
)

// TestSiteWideLinksLeftOut: on a site whose navigation bar links every page
// to the home and three section pages, the sections rank far above the
// articles on the whole graph; with the site-wide links left out
// (graph.WithoutSiteWide, share 1/2 of at least 10 pages) no section ranks
// above any article.
func TestSiteWideLinksLeftOut(t *testing.T) {
	const base = "http://site.test"
	var names []string
	id := map[string]int{}
	add := func(u string) { id[u] = len(names); names = append(names, u) }
	sec := func(s int) string { return fmt.Sprintf("%s/s%d/", base, s) }
	art := func(s, i int) string { return fmt.Sprintf("%s/s%d/a%d", base, s, i%10) }
	add(base + "/")
	for s := range 3 {
		add(sec(s))
		for i := range 10 {
			add(art(s, i))
		}
	}
	nav := []int{id[base+"/"], id[sec(0)], id[sec(1)], id[sec(2)]}
	adj := make([][]int, len(names))
	for u := range names {
		adj[u] = append(adj[u], nav...)
	}
	for s := range 3 {
		for i := range 10 {
			adj[id[sec(s)]] = append(adj[id[sec(s)]], id[art(s, i)])
			adj[id[art(s, i)]] = append(adj[id[art(s, i)]], id[art(s, i+1)], id[art(s, i+2)])
		}
	}
	g, err := graph.FromAdjacency(names, adj)
	if err != nil {
		t.Fatal(err)
	}
	// split returns the lowest section and the highest article score.
	split := func(ranks []float64) (minSection, maxArticle float64) {
		var secs, arts []float64
		for s := range 3 {
			secs = append(secs, ranks[g.ID(sec(s))])
			for i := range 10 {
				arts = append(arts, ranks[g.ID(art(s, i))])
			}
		}
		return slices.Min(secs), slices.Max(arts)
	}
	opt := Options{Damping: DefaultDamping, Tolerance: DefaultTolerance, MaxIter: DefaultMaxIter, Workers: 1}
	all, err := Compute(context.Background(), g, opt)
	if err != nil {
		t.Fatal(err)
	}
	if s, a := split(all.Ranks); !(s > 3*a) {
		t.Fatalf("whole graph: sections' lowest PageRank %.4f not far above the articles' highest %.4f: the fixture lost its navigation bar", s, a)
	}
	content, dropped := graph.WithoutSiteWide(g, graph.SiteWide{Share: 0.5, MinPages: 10})
	if dropped == 0 {
		t.Fatal("no site-wide link dropped")
	}
	res, err := Compute(context.Background(), content, opt)
	if err != nil {
		t.Fatal(err)
	}
	if s, a := split(res.Ranks); s > a {
		t.Fatalf("without site-wide links: a section's PageRank %.4f is above the articles' highest %.4f", s, a)
	}
}
