package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// printTimeline writes, for one host of one crawl, every request in arrival
// order next to the ideal crawler's schedule (simulate, depth-aware): when
// the crawler could first have known the URL within the depth limit (the
// end of the answer in its own crawl that completed a short enough path of
// followable links to it), when it asked for it, the gap since the host's previous
// request, and when the ideal crawler knew and started it. It shows where a
// crawl loses time against the discovery-aware bound: a URL known long
// before it was asked for is the scheduler's delay; a URL known late is
// discovery's. host "" picks the host of the crawl's last request. Times are
// from the crawl's first request.
func printTimeline(w io.Writer, entries []websim.Entry, g simGraph, sim simResult, host string) {
	if len(entries) == 0 || len(g.URLs) == 0 {
		return
	}
	idx := make(map[string]int, len(g.URLs))
	for i, u := range g.URLs {
		idx[u] = i
	}
	urlOf := func(e websim.Entry) int {
		if u, ok := websim.Canonical(nil, e.URL); ok {
			if i, ok := idx[u.String()]; ok {
				return i
			}
		}
		return -1
	}
	t0 := entries[0].Time
	known := make([]time.Duration, len(g.URLs))
	for i := range known {
		known[i] = -1
	}
	// The crawl's own discovery, depth-aware like the ideal's: answers in
	// the order they ended.
	disc := newDiscovery(g, true, func(u int, at time.Duration) error {
		if known[u] < 0 {
			known[u] = at
		}
		return nil
	})
	for _, s := range g.Seeds {
		_ = disc.seed(s) // indices from g itself: no error
	}
	byEnd := slices.Clone(entries)
	slices.SortStableFunc(byEnd, func(a, b websim.Entry) int { return a.End.Compare(b.End) })
	for _, e := range byEnd {
		if i := urlOf(e); i >= 0 && e.Status != 0 && e.Status < 400 {
			_ = disc.answer(i, e.End.Sub(t0))
		}
	}
	if host == "" {
		host = entries[len(entries)-1].Host
	}
	fmt.Fprintf(w, "timeline of %s (ms from the first request; ideal = the depth-aware simulation):\n", host)
	fmt.Fprintf(w, "  %4s %-28s %8s %8s %8s %8s | %8s %8s\n", "n", "path", "known", "asked", "waited", "gap", "ideal kn", "ideal st")
	var prev time.Duration = -1
	n := 0
	ms := func(d time.Duration) string {
		if d < 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond))
	}
	for _, e := range entries {
		if e.Host != host {
			continue
		}
		n++
		at := e.Time.Sub(t0)
		gap := time.Duration(-1)
		if prev >= 0 {
			gap = at - prev
		}
		prev = at
		kn, waited, ikn, ist := time.Duration(-1), time.Duration(-1), time.Duration(-1), time.Duration(-1)
		if i := urlOf(e); i >= 0 {
			kn, ikn, ist = known[i], sim.Known[i], sim.Start[i]
			if kn >= 0 {
				waited = at - kn
			}
		}
		path := e.Path
		if len(path) > 28 {
			path = path[:28]
		}
		fmt.Fprintf(w, "  %4d %-28s %8s %8s %8s %8s | %8s %8s\n", n, path, ms(kn), ms(at), ms(waited), ms(gap), ms(ikn), ms(ist))
	}
}
