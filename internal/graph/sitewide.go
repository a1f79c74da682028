package graph

import "fmt"

// SiteWide is the rule that recognises site-wide (template) links: links
// repeated on most pages of a site, such as navigation bars and footers,
// which say nothing about their target's importance (Bar-Yossef and
// Rajagopalan, "Template detection via data mining and its applications",
// WWW 2002). The zero value (Share 0) recognises none.
type SiteWide struct {
	// Share: an edge from a page of host H to target T is site-wide when
	// T is linked from at least Share of H's pages that have out-links
	// (in (0, 1]; 0 switches the rule off).
	Share float64
	// MinPages: hosts with fewer pages that have out-links keep all their
	// edges (a small site's shared links are not evidence of a template).
	MinPages int
}

// DefaultSiteWide is the rule spider rank applies unless told otherwise
// (--site-wide-share 0 keeps every link): a link is site-wide when half
// or more of a host's linking pages have it, on hosts of 10 or more
// linking pages (bench/RESULTS.md, "PageRank without site-wide links").
var DefaultSiteWide = SiteWide{Share: 0.5, MinPages: 10}

// Enabled reports whether the rule drops anything at all.
func (s SiteWide) Enabled() bool { return s.Share > 0 }

// Validate returns an error saying which field is out of range.
func (s SiteWide) Validate() error {
	switch {
	case !(s.Share >= 0 && s.Share <= 1):
		return fmt.Errorf("site-wide link share %v must be in [0, 1] (0: keep every link; e.g. 0.5)", s.Share)
	case s.MinPages < 1:
		return fmt.Errorf("site-wide link minimum pages %d must be at least 1 (e.g. 10)", s.MinPages)
	}
	return nil
}

// WithoutSiteWide returns g without its site-wide edges (rule s) and how
// many edges it dropped. The result has the same names and ids as g (only
// edges go), so scores computed on it are indexed like g's; g itself is
// not changed. Hosts are HostOf each name; the target of a site-wide
// edge may be on any host. With s not Enabled it returns g itself.
//
// A page whose every out-link is site-wide becomes dangling in the
// result; PageRank spreads its score like any dangling page's.
func WithoutSiteWide(g *Graph, s SiteWide) (*Graph, int) {
	if !s.Enabled() || g.N() == 0 {
		return g, 0
	}
	n := g.N()
	host, hostNames := pageHosts(g.Names)
	linking := make([]int, len(hostNames)) // pages with out-links, per host
	type key struct {
		host   int
		target uint32
	}
	count := make(map[key]int) // pages of host linking to target
	for u := range n {
		if g.OutDegree(u) == 0 {
			continue
		}
		linking[host[u]]++
		for _, t := range g.Out(u) {
			count[key{host[u], t}]++
		}
	}
	out := &Graph{Names: g.Names, Offsets: make([]uint64, n+1), Targets: make([]uint32, 0, len(g.Targets))}
	dropped := 0
	for u := range n {
		h := host[u]
		pages := linking[h]
		for _, t := range g.Out(u) {
			if pages >= s.MinPages && float64(count[key{h, t}]) >= s.Share*float64(pages) {
				dropped++
				continue
			}
			out.Targets = append(out.Targets, t)
		}
		out.Offsets[u+1] = uint64(len(out.Targets))
	}
	return out, dropped
}
