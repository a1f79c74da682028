package graph

import (
	"fmt"
	"math/rand"
	"slices"
)

// SiteGraphConfig shapes a synthetic site graph for tests and benchmarks.
// Zero fields take the documented defaults.
type SiteGraphConfig struct {
	Pages     int     // number of pages (default 35,602, the SPEC §1 experiment)
	Hosts     int     // number of hosts (default Pages/50, at least 1)
	OutDegree int     // mean out-degree before de-duplication (default 10)
	Intra     float64 // share of links staying on the page's host (default 0.8)
	Dangling  float64 // share of pages without out-links (default 0.1)
	Seed      int64   // random seed; the same config gives the same graph
}

// SiteGraph generates a graph shaped like a crawl of many sites: host sizes
// and the in-degree of hosts follow Zipf laws (a few big, popular sites and a
// long tail), most links stay on their own host, and within a host the links
// favour low page numbers (home and section pages) with a Zipf law too.
// Pages are named http://hNNNNNN.test/pNNNNNNNN, so ids are grouped by host.
// It builds the CSR directly (no adjacency lists), so 50 million edges fit
// in about 0.5 GB.
func SiteGraph(c SiteGraphConfig) *Graph {
	if c.Pages <= 0 {
		c.Pages = 35602
	}
	if c.Hosts <= 0 {
		c.Hosts = max(1, c.Pages/50)
	}
	c.Hosts = min(c.Hosts, c.Pages)
	if c.OutDegree <= 0 {
		c.OutDegree = 10
	}
	if c.Intra == 0 {
		c.Intra = 0.8
	}
	if c.Dangling == 0 {
		c.Dangling = 0.1
	}
	r := rand.New(rand.NewSource(c.Seed))
	// Host sizes: Zipf weights 1/(h+1), every host at least one page.
	weights := make([]float64, c.Hosts)
	var wsum float64
	for h := range weights {
		weights[h] = 1 / float64(h+1)
		wsum += weights[h]
	}
	first := make([]int, c.Hosts+1) // pages of host h: [first[h], first[h+1])
	left := c.Pages - c.Hosts
	for h := 0; h < c.Hosts; h++ {
		size := 1 + int(float64(left)*weights[h]/wsum)
		first[h+1] = first[h] + size
	}
	first[c.Hosts] = c.Pages // rounding leftovers go to the last host
	hostOf := make([]int32, c.Pages)
	for h := 0; h < c.Hosts; h++ {
		for p := first[h]; p < first[h+1]; p++ {
			hostOf[p] = int32(h)
		}
	}
	// Popular hosts are not the biggest ones: shuffle which host each Zipf
	// rank of popularity lands on.
	popular := r.Perm(c.Hosts)
	hostZipf := rand.NewZipf(r, 1.1, 1, uint64(c.Hosts-1))
	pageZipf := make(map[int]*rand.Zipf)
	pick := func(h int) int {
		size := first[h+1] - first[h]
		if size == 1 {
			return first[h]
		}
		z, ok := pageZipf[size]
		if !ok {
			z = rand.NewZipf(r, 1.2, 1, uint64(size-1))
			pageZipf[size] = z
		}
		return first[h] + int(z.Uint64())
	}
	g := &Graph{Names: make([]string, c.Pages), Offsets: make([]uint64, c.Pages+1)}
	g.Targets = make([]uint32, 0, c.Pages*c.OutDegree)
	var buf []uint32
	for u := 0; u < c.Pages; u++ {
		g.Names[u] = fmt.Sprintf("http://h%06d.test/p%08d", hostOf[u], u)
		buf = buf[:0]
		if r.Float64() >= c.Dangling {
			deg := 1 + r.Intn(2*c.OutDegree-1)
			for range deg {
				var v int
				if r.Float64() < c.Intra {
					v = pick(int(hostOf[u]))
				} else {
					v = pick(popular[hostZipf.Uint64()])
				}
				if v != u {
					buf = append(buf, uint32(v))
				}
			}
			slices.Sort(buf)
			buf = slices.Compact(buf)
		}
		g.Targets = append(g.Targets, buf...)
		g.Offsets[u+1] = uint64(len(g.Targets))
	}
	return g
}
