package main

import (
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// logMetrics are the measurements websim's access log gives about one crawl.
type logMetrics struct {
	Requests         int // every request, robots.txt included
	Pages            int // requests other than robots.txt
	Covered          int // distinct URLs fetched that are in Truth.MustFetch
	MustFetch        int // len(Truth.MustFetch)
	Outside          int // distinct URLs fetched that are not in Truth.MustFetch
	RobotsViolations int // requests to URLs Truth.MustNotFetch excludes for robots.txt
	Duplicates       int // repeated requests of a URL after a complete answer below 500
	Errors           int // answers 0 (reset, abandoned) or 400 and above
	PolitenessHosts  int // hosts with more than perHost requests in flight at once
	MaxOpen          int // most requests in flight to one host
	GapHosts         int // hosts whose smallest gap between arrivals is below delay (delay > 0)
	Hosts            int // hosts that received a request

	MinGap time.Duration // smallest gap between arrivals at one host (hosts with 2+ requests)
	Span   time.Duration // first to last arrival of the crawl
	// Busiest is the host with the most requests (the critical path of a
	// polite crawl): its request count, its first and last arrival after
	// the crawl's first, and its mean gap between arrivals.
	Busiest                   string
	BusiestN                  int
	BusiestFirst, BusiestLast time.Duration
	BusiestMeanGap            time.Duration
	// Last is the host of the crawl's last request, with the same facts.
	Last                string
	LastN               int
	LastFirst, LastLast time.Duration
	LastMeanGap         time.Duration

	RobotsExamples  []string // the first few robots.txt violations
	OutsideExamples []string // the first few URLs fetched outside the truth
	GapExamples     []string // the first few gaps below delay: "host: path → path gap"
}

// maxExamples bounds logMetrics' example lists.
const maxExamples = 5

// Coverage returns Covered/MustFetch (1 when the truth is empty).
func (m logMetrics) Coverage() float64 {
	if m.MustFetch == 0 {
		return 1
	}
	return float64(m.Covered) / float64(m.MustFetch)
}

// isRobots reports whether a request path (with query) asks for robots.txt.
func isRobots(pathQuery string) bool {
	p, _, _ := strings.Cut(pathQuery, "?")
	return p == "/robots.txt" || p == "/robots-real.txt"
}

// analyze measures one crawl from its access-log entries (sorted by arrival,
// as AccessLog.Entries gives them), the log's Duplicates and Retries maps and
// the ground truth. perHost is the allowed number of requests in flight to
// one host; delay the smallest allowed gap between arrivals at one host (0:
// not checked).
func analyze(entries []websim.Entry, dup, retries map[string]int, truth *websim.Truth, perHost int, delay time.Duration) logMetrics {
	must := make(map[string]bool, len(truth.MustFetch))
	for _, u := range truth.MustFetch {
		must[u] = true
	}
	m := logMetrics{Requests: len(entries), MustFetch: len(truth.MustFetch)}
	type hostState struct {
		maxOpen  int
		first    time.Time
		last     time.Time
		lastPath string
		minGap   time.Duration
		n        int // requests seen
	}
	hosts := map[string]*hostState{}
	fetched := map[string]bool{}
	for _, e := range entries {
		h := hosts[e.Host]
		if h == nil {
			h = &hostState{}
			hosts[e.Host] = h
		}
		h.maxOpen = max(h.maxOpen, e.OpenAtArrival)
		if g := e.Time.Sub(h.last); h.n > 0 && (h.n == 1 || g < h.minGap) {
			h.minGap = g
		}
		if g := e.Time.Sub(h.last); h.n > 0 && delay > 0 && g < delay && len(m.GapExamples) < maxExamples {
			m.GapExamples = append(m.GapExamples, e.Host+": "+h.lastPath+" → "+e.Path+" "+g.Round(10*time.Microsecond).String())
		}
		if h.n == 0 {
			h.first = e.Time
		}
		h.last, h.lastPath = e.Time, e.Path
		h.n++
		if e.Status == 0 || e.Status >= 400 {
			m.Errors++
		}
		if isRobots(e.Path) {
			continue
		}
		m.Pages++
		key := e.URL
		if u, ok := websim.Canonical(nil, e.URL); ok {
			key = u.String()
		}
		if truth.MustNotFetch[key] == websim.ReasonRobots {
			m.RobotsViolations++
			if len(m.RobotsExamples) < maxExamples {
				m.RobotsExamples = append(m.RobotsExamples, key)
			}
		}
		if fetched[key] {
			continue
		}
		fetched[key] = true
		if must[key] {
			m.Covered++
		} else {
			m.Outside++
			if len(m.OutsideExamples) < maxExamples {
				m.OutsideExamples = append(m.OutsideExamples, key)
			}
		}
	}
	for u, n := range dup {
		m.Duplicates += max(0, n-1-retries[u])
	}
	m.Hosts = len(hosts)
	if len(entries) > 0 {
		t0 := entries[0].Time
		m.Span = entries[len(entries)-1].Time.Sub(t0)
		m.Last = entries[len(entries)-1].Host
		if h := hosts[m.Last]; h != nil {
			m.LastN, m.LastFirst, m.LastLast = h.n, h.first.Sub(t0), h.last.Sub(t0)
			if h.n > 1 {
				m.LastMeanGap = h.last.Sub(h.first) / time.Duration(h.n-1)
			}
		}
		for name, h := range hosts {
			if h.n > m.BusiestN || h.n == m.BusiestN && name < m.Busiest {
				m.Busiest, m.BusiestN = name, h.n
				m.BusiestFirst, m.BusiestLast = h.first.Sub(t0), h.last.Sub(t0)
				m.BusiestMeanGap = 0
				if h.n > 1 {
					m.BusiestMeanGap = h.last.Sub(h.first) / time.Duration(h.n-1)
				}
			}
		}
	}
	for _, h := range hosts {
		m.MaxOpen = max(m.MaxOpen, h.maxOpen)
		if h.maxOpen > perHost {
			m.PolitenessHosts++
		}
		if delay > 0 && h.n > 1 && h.minGap < delay {
			m.GapHosts++
		}
		if h.n > 1 && (m.MinGap == 0 || h.minGap < m.MinGap) {
			m.MinGap = h.minGap
		}
	}
	return m
}
