package main

import (
	"container/heap"
	"fmt"
	"math"
	"time"
)

// simRules are the politeness rules every crawler is given, as the
// discovery-aware bound (simulate) applies them.
type simRules struct {
	// Delay is the smallest gap between the starts of two requests to one
	// host (with FromDone: between an answer and the next start).
	Delay time.Duration
	// Latency is how long every request takes: its answer, and the links
	// in it, arrive Latency after its start.
	Latency time.Duration
	// Concurrency is the most requests in flight in all.
	Concurrency int
	// FromDone counts Delay from the previous answer instead of the
	// previous start (spider's frontier with --per-host 1 before it had
	// --delay-from start; wget's --wait).
	FromDone bool
	// DepthAware applies the depth limit as a crawler can know it: a URL
	// becomes known only once the answers arrived show a path to it of
	// followable edges (simGraph.Step) within simGraph.MaxDepth; a shorter
	// path found later lowers the depths of the URLs below it at once
	// (spider relinks them: its default, not with --strict-levels). Without it a URL is known at
	// the first answer naming it, whatever the depth (a looser bound).
	DepthAware bool
}

// simGraph is the web as the ideal crawler sees it: the truth's URLs, the
// host of each, the truth URLs each one's answer names (links, redirect
// target, meta refresh), and the seeds.
type simGraph struct {
	URLs  []string
	Host  []int   // Host[i] is URL i's host, 0..Hosts-1
	Hosts int     // distinct hosts
	Links [][]int // Links[i]: URLs (indices) named by URL i's answer
	Seeds []int
	// Step[i][k] is what following Links[i][k] adds to the depth: 0 for a
	// redirect target, 1 for a link or meta refresh, -1 for a link a
	// crawler does not follow (nofollow). Used with simRules.DepthAware;
	// nil means 1 for every edge.
	Step [][]int8
	// MaxDepth is the crawl's depth limit (seeds are 0), for DepthAware.
	MaxDepth int
}

// step is Step[i][k], 1 when Step is nil.
func (g simGraph) step(i, k int) int {
	if g.Step == nil {
		return 1
	}
	return int(g.Step[i][k])
}

// simResult is the schedule of the ideal polite crawler on a simGraph.
type simResult struct {
	Makespan time.Duration // start of the crawl to its last answer
	Pages    int           // URLs fetched (robots.txt excluded)
	Requests int           // pages plus one robots.txt per host reached
	Peak     int           // most requests in flight at once
	// Start[i] is when URL i's request started (-1: never fetched), and
	// Known[i] when URL i became known; for --timeline.
	Start, Known []time.Duration
}

// Rate is pages per second of the schedule (0 when it is empty).
func (r simResult) Rate() float64 {
	if r.Makespan <= 0 {
		return 0
	}
	return float64(r.Pages) / r.Makespan.Seconds()
}

// robotsItem marks a host's robots.txt request in a host queue.
const robotsItem = -1

// simFlight is one request in flight.
type simFlight struct {
	end  time.Duration
	host int
	url  int // robotsItem for robots.txt
}

type flightHeap []simFlight

func (h flightHeap) Len() int { return len(h) }
func (h flightHeap) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	return h[i].url < h[j].url
}
func (h flightHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *flightHeap) Push(x any)   { *h = append(*h, x.(simFlight)) }
func (h *flightHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// simulate schedules an ideal polite crawl of g under r and returns its
// makespan: the discovery-aware politeness bound. The crawler knows only
// the seeds at time 0; a URL becomes known when the answer of a fetched URL
// naming it arrives. A host's first request is its robots.txt, made when the
// host's first URL becomes known. Each host has one connection (a request
// starts after the previous one's answer) and starts at least Delay apart
// (FromDone: Delay after the previous answer); at most Concurrency requests
// are in flight. The schedule is greedy: whenever a connection slot is free
// it starts the request of the host that has been ready longest (FIFO inside
// a host, in the order URLs became known), and never waits when something
// could start. Every rule here is one the crawlers are held to, and the
// ideal crawler spends no time computing, so no crawler obeying the rules
// is expected to finish sooner (greedy is not proven optimal when the
// concurrency cap binds, or in which order a host's known URLs are taken;
// with 50 hosts, 32 slots and 50 ms the cap does not bind).
func simulate(g simGraph, r simRules) (simResult, error) {
	if r.Concurrency < 1 {
		return simResult{}, fmt.Errorf("cannot simulate with concurrency %d: give at least 1", r.Concurrency)
	}
	if r.Delay < 0 || r.Latency < 0 {
		return simResult{}, fmt.Errorf("cannot simulate with a negative delay (%s) or latency (%s)", r.Delay, r.Latency)
	}
	n := len(g.URLs)
	if len(g.Host) != n || len(g.Links) != n {
		return simResult{}, fmt.Errorf("cannot simulate: %d URLs but %d hosts and %d link lists", n, len(g.Host), len(g.Links))
	}
	var (
		res       simResult
		known     = make([]bool, n)
		hostSeen  = make([]bool, g.Hosts)
		queue     = make([][]int, g.Hosts)
		knownAt   = make([]time.Duration, n)       // when URL i became known
		robotsAt  = make([]time.Duration, g.Hosts) // when host h became known
		nextStart = make([]time.Duration, g.Hosts) // earliest start of the host's next request
		lastEnd   = make([]time.Duration, g.Hosts) // the host's last answer
		busy      = make([]bool, g.Hosts)
		flights   flightHeap
		now       time.Duration
	)
	reveal := func(u int, at time.Duration) error {
		if u < 0 || u >= n {
			return fmt.Errorf("cannot simulate: link to URL %d of %d", u, n)
		}
		if known[u] {
			return nil
		}
		known[u] = true
		knownAt[u] = at
		h := g.Host[u]
		if h < 0 || h >= g.Hosts {
			return fmt.Errorf("cannot simulate: URL %q has host %d of %d", g.URLs[u], h, g.Hosts)
		}
		if !hostSeen[h] {
			hostSeen[h] = true
			queue[h] = append(queue[h], robotsItem)
			robotsAt[h] = at
		}
		queue[h] = append(queue[h], u)
		return nil
	}
	res.Start = make([]time.Duration, n)
	for i := range res.Start {
		res.Start[i] = -1
	}
	res.Known = knownAt
	disc := newDiscovery(g, r.DepthAware, reveal)
	for _, s := range g.Seeds {
		if err := disc.seed(s); err != nil {
			return res, err
		}
	}
	for {
		// Answers arriving now reveal their links before anything starts.
		for len(flights) > 0 && flights[0].end <= now {
			f := heap.Pop(&flights).(simFlight)
			busy[f.host] = false
			lastEnd[f.host] = f.end
			if r.FromDone {
				nextStart[f.host] = f.end + r.Delay
			}
			if f.url == robotsItem {
				continue
			}
			if err := disc.answer(f.url, f.end); err != nil {
				return res, err
			}
		}
		// readySince is when host h's queue head could first have started.
		readySince := func(h int) time.Duration {
			at := robotsAt[h]
			if head := queue[h][0]; head != robotsItem {
				at = knownAt[head]
			}
			return max(at, nextStart[h], lastEnd[h])
		}
		// Start requests while slots are free: the host ready longest first.
		for len(flights) < r.Concurrency {
			best, bestAt := -1, time.Duration(0)
			for h := range g.Hosts {
				if len(queue[h]) == 0 || busy[h] || nextStart[h] > now {
					continue
				}
				if at := readySince(h); best < 0 || at < bestAt {
					best, bestAt = h, at
				}
			}
			if best < 0 {
				break
			}
			u := queue[best][0]
			queue[best] = queue[best][1:]
			busy[best] = true
			end := now + r.Latency
			if !r.FromDone {
				nextStart[best] = now + r.Delay
			}
			heap.Push(&flights, simFlight{end: end, host: best, url: u})
			res.Requests++
			if u != robotsItem {
				res.Pages++
				res.Start[u] = now
			}
			res.Makespan = max(res.Makespan, end)
			res.Peak = max(res.Peak, len(flights))
		}
		// The next event: an answer, or a host's delay running out.
		next := time.Duration(-1)
		if len(flights) > 0 {
			next = flights[0].end
		}
		if len(flights) < r.Concurrency {
			for h := range g.Hosts {
				if len(queue[h]) > 0 && !busy[h] && nextStart[h] > now && (next < 0 || nextStart[h] < next) {
					next = nextStart[h]
				}
			}
		}
		if next < 0 {
			if res.Pages < n {
				return res, fmt.Errorf("cannot simulate: only %d of %d URLs are reachable from the seeds (depth-aware: %v, depth limit %d): the graph does not match the truth", res.Pages, n, r.DepthAware, g.MaxDepth)
			}
			return res, nil
		}
		now = next
	}
}

// discovery is how a crawler learns of URLs from the answers it gets: every
// URL an answer names (depth-blind), or, depth-aware, the URLs a path of
// followable edges within g.MaxDepth reaches, depths falling as shorter
// paths turn up (simRules.DepthAware). It calls reveal once a URL is known
// (possibly again for a known URL: reveal must ignore repeats).
type discovery struct {
	g          simGraph
	depthAware bool
	reveal     func(u int, at time.Duration) error
	depth      []int  // smallest depth of each URL the answers so far show
	answered   []bool // whether each URL's answer has arrived
}

func newDiscovery(g simGraph, depthAware bool, reveal func(int, time.Duration) error) *discovery {
	d := &discovery{g: g, depthAware: depthAware, reveal: reveal, depth: make([]int, len(g.URLs)), answered: make([]bool, len(g.URLs))}
	for i := range d.depth {
		d.depth[i] = math.MaxInt
	}
	return d
}

// seed makes URL s known at time 0, depth 0.
func (d *discovery) seed(s int) error {
	if d.depthAware {
		return d.lower(s, 0, 0)
	}
	return d.reveal(s, 0)
}

// answer takes URL u's answer, arrived at time at.
func (d *discovery) answer(u int, at time.Duration) error {
	if u < 0 || u >= len(d.answered) {
		return fmt.Errorf("cannot simulate: answer of URL %d of %d", u, len(d.answered))
	}
	d.answered[u] = true
	for k, c := range d.g.Links[u] {
		var err error
		switch {
		case !d.depthAware:
			err = d.reveal(c, at)
		case d.g.step(u, k) >= 0:
			err = d.lower(c, d.depth[u]+d.g.step(u, k), at)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lower records a path of depth dep to URL v found at time at, and passes
// the lower depth on below v if v's answer has arrived (the crawler kept
// its links: spider relinks them unless --strict-levels).
func (d *discovery) lower(v, dep int, at time.Duration) error {
	if v < 0 || v >= len(d.depth) {
		return fmt.Errorf("cannot simulate: link to URL %d of %d", v, len(d.depth))
	}
	if dep >= d.depth[v] {
		return nil
	}
	d.depth[v] = dep
	if dep <= d.g.MaxDepth {
		if err := d.reveal(v, at); err != nil {
			return err
		}
	}
	if !d.answered[v] {
		return nil
	}
	for k, c := range d.g.Links[v] {
		if s := d.g.step(v, k); s >= 0 {
			if err := d.lower(c, dep+s, at); err != nil {
				return err
			}
		}
	}
	return nil
}
