package graph

import (
	"fmt"
	"testing"
)

// navSite is one host of 1 home, 3 sections and 30 articles (10 per
// section): every page's navigation bar links to the home and the three
// sections, each section lists its articles and each article links to the
// next two of its section. Article i of section s is "/s<s>/a<i>".
// extra pages of another host link to article 0 of section 0.
func navSite(t testing.TB, extra int) *Graph {
	t.Helper()
	base := "http://site.test"
	var names []string
	id := map[string]int{}
	add := func(u string) {
		id[u] = len(names)
		names = append(names, u)
	}
	add(base + "/")
	for s := range 3 {
		add(fmt.Sprintf("%s/s%d/", base, s))
		for i := range 10 {
			add(fmt.Sprintf("%s/s%d/a%d", base, s, i))
		}
	}
	for e := range extra {
		add(fmt.Sprintf("http://other.test/p%d", e))
	}
	nav := []int{id[base+"/"], id[base+"/s0/"], id[base+"/s1/"], id[base+"/s2/"]}
	adj := make([][]int, len(names))
	for u, name := range names {
		if HostOf(name) == "site.test" {
			adj[u] = append(adj[u], nav...)
		}
	}
	for s := range 3 {
		sec := id[fmt.Sprintf("%s/s%d/", base, s)]
		for i := range 10 {
			a := id[fmt.Sprintf("%s/s%d/a%d", base, s, i)]
			adj[sec] = append(adj[sec], a)
			adj[a] = append(adj[a], id[fmt.Sprintf("%s/s%d/a%d", base, s, (i+1)%10)], id[fmt.Sprintf("%s/s%d/a%d", base, s, (i+2)%10)])
		}
	}
	for e := range extra {
		adj[id[fmt.Sprintf("http://other.test/p%d", e)]] = []int{id[base+"/s0/a0"]}
	}
	g, err := FromAdjacency(names, adj)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestWithoutSiteWide(t *testing.T) {
	g := navSite(t, 12)
	// 34 pages of site.test, each with 4 navigation links (3 on the home
	// and each section: no self-link) = 34*4-4 = 132 navigation edges; 30
	// section→article and 60 article→article edges; 12 from other.test.
	if g.M() != 132+30+60+12 {
		t.Fatalf("navSite has %d edges, want %d", g.M(), 132+30+60+12)
	}
	tests := []struct {
		name    string
		rule    SiteWide
		dropped int
	}{
		{"off", SiteWide{}, 0},
		// other.test's 12 pages all link to one article: site-wide on
		// that host too (the target's host does not matter).
		{"half of 10 pages: the navigation bar goes", SiteWide{Share: 0.5, MinPages: 10}, 132 + 12},
		// a navigation target is linked from 33 of the 34 pages (not
		// from itself): below a share of 1.
		{"all of 10 pages", SiteWide{Share: 1, MinPages: 10}, 12},
		{"sites too small", SiteWide{Share: 0.5, MinPages: 35}, 0},
		{"a tenth: an article's 3 in-links of 34 stay", SiteWide{Share: 0.1, MinPages: 10}, 132 + 12},
		{"a twentieth: the in-links of articles go too", SiteWide{Share: 0.05, MinPages: 10}, 132 + 90 + 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, dropped := WithoutSiteWide(g, tc.rule)
			if dropped != tc.dropped || h.M() != g.M()-tc.dropped {
				t.Fatalf("dropped %d (graph %d edges), want %d", dropped, h.M(), tc.dropped)
			}
			if err := h.Validate(); err != nil {
				t.Fatal(err)
			}
			if h.N() != g.N() {
				t.Fatalf("%d nodes, want %d", h.N(), g.N())
			}
		})
	}
	if g.M() != 132+30+60+12 {
		t.Fatal("WithoutSiteWide changed its input")
	}
}

func TestSiteWideValidate(t *testing.T) {
	for _, tc := range []struct {
		rule SiteWide
		ok   bool
	}{
		{SiteWide{Share: 0.5, MinPages: 10}, true},
		{SiteWide{Share: 0, MinPages: 1}, true},
		{SiteWide{Share: 1.5, MinPages: 10}, false},
		{SiteWide{Share: -0.1, MinPages: 10}, false},
		{SiteWide{Share: 0.5, MinPages: 0}, false},
	} {
		if err := tc.rule.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok %v", tc.rule, err, tc.ok)
		}
	}
}
