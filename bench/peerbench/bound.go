package main

import (
	"net/url"
	"strings"
	"time"
)

// bound is the most pages/s the politeness rules allow on one web: one
// request in flight per host, starts of successive requests to a host at
// least Delay apart, every answer Latency late, at most Concurrency requests
// in flight in all. A host then serves one request per Period = max(Delay,
// Latency) at best (the first-byte latency keeps its one connection busy; the
// delay is measured start to start, as spider, Scrapy and robots.txt
// Crawl-delay count it). Every host also costs one robots.txt request before
// its pages. Discovery is ignored (every host is assumed known from the start),
// so the bound is optimistic: no crawler can beat it.
type bound struct {
	Period      time.Duration
	Pages       int     // len(Truth.MustFetch)
	Hosts       int     // hosts in Truth.MustFetch
	MaxHost     int     // most URLs of one host (robots.txt excluded)
	Levels      int     // depth levels of the truth
	Rate        float64 // steady-state bound: min(Hosts/Period, Concurrency/Latency), pages/s
	Makespan    float64 // Pages / the shortest possible crawl (busiest host, concurrency), pages/s
	LevelsBound float64 // Makespan's bound if depth levels are crawled one after another, pages/s
	// Discovery is the discovery-aware bound (simulate, delay start to
	// start, depth-blind), pages/s; 0 when not simulated.
	Discovery float64
	// DiscoveryDone is the same with the delay counted from the previous
	// answer, pages/s; 0 when not simulated.
	DiscoveryDone float64
	// DiscoveryDepth is the discovery-aware bound with the depth limit
	// applied as a crawler can know it (simRules.DepthAware), pages/s; 0
	// when not simulated. It is the bound issue 11's latency-bound goal is
	// judged against when present.
	DiscoveryDepth float64
}

// goal is the bound the latency-bound goal is judged against: the
// depth-aware discovery bound when simulated (the tightest that holds for
// any crawler given the same rules, depth limit included), else the
// whole-crawl one.
func (b bound) goal() (name string, rate float64) {
	if b.DiscoveryDepth > 0 {
		return "depth-aware discovery bound", b.DiscoveryDepth
	}
	if b.Discovery > 0 {
		return "discovery-aware politeness bound", b.Discovery
	}
	return "politeness bound", b.Makespan
}

// politenessBound computes the bound of a crawl of the truth's URLs (with
// their depths) under the rules. It returns the zero bound when there is
// no latency and no delay (the CPU-bound regime has no politeness bound).
func politenessBound(mustFetch []string, depth map[string]int, concurrency int, delay, latency time.Duration) bound {
	b := bound{Period: max(delay, latency), Pages: len(mustFetch)}
	if b.Period <= 0 || len(mustFetch) == 0 || concurrency < 1 {
		return b
	}
	perHost := map[string]int{}
	type hd struct {
		host string
		d    int
	}
	perHostLevel := map[hd]int{}
	perLevel := map[int]int{}
	for _, raw := range mustFetch {
		h := raw
		if u, err := url.Parse(raw); err == nil {
			h = strings.ToLower(u.Hostname())
		}
		perHost[h]++
		d := depth[raw]
		perHostLevel[hd{h, d}]++
		perLevel[d]++
	}
	b.Hosts = len(perHost)
	for _, n := range perHost {
		b.MaxHost = max(b.MaxHost, n)
	}
	b.Levels = len(perLevel)
	p, l, c := b.Period.Seconds(), latency.Seconds(), float64(concurrency)
	b.Rate = float64(b.Hosts) / p
	if l > 0 {
		b.Rate = min(b.Rate, c/l)
	}
	// The busiest host needs its robots.txt and its pages one Period apart;
	// all requests (one robots.txt per host) share Concurrency slots of
	// Latency each.
	t := max(float64(b.MaxHost+1)*p, float64(b.Pages+b.Hosts)*l/c)
	b.Makespan = float64(b.Pages) / t
	// Level by level: each level waits for its busiest host (robots.txt
	// counted in the first level a host appears in is left out: a lower
	// bound stays a lower bound without it).
	maxLevel := map[int]int{}
	for k, n := range perHostLevel {
		maxLevel[k.d] = max(maxLevel[k.d], n)
	}
	var tl float64
	for d, n := range perLevel {
		tl += max(float64(maxLevel[d])*p, float64(n)*l/c, l)
	}
	b.LevelsBound = float64(b.Pages) / max(tl, t)
	return b
}
