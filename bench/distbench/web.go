package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/spider-crawler/spider/internal/websim"
)

// web is a websim server with the ground truth of one crawl of it and the
// files the spider processes need (--resolve-file, --config with the seeds).
type web struct {
	srv         *websim.Server
	truth       *websim.Truth
	must        map[string]bool
	resolveFile string
	configFile  string
	seeds       []string
}

// webSpec describes a synthetic web and the crawl's seeds.
type webSpec struct {
	Hosts, Pages, Seeds int
	Latency             time.Duration
	Features            websim.Feature
	TroubleShare        float64
	HangTime            time.Duration
}

// startWeb serves spec's web in-process, computes the ground truth of a crawl
// with scope any and no depth limit from its first spec.Seeds index pages, and
// writes the resolve and seed files under dir.
func startWeb(ctx context.Context, spec webSpec, dir string) (*web, error) {
	cfg := websim.Config{Seed: 1, Hosts: spec.Hosts, PagesPerHost: spec.Pages, Latency: spec.Latency,
		Enable: spec.Features, TroubleShare: spec.TroubleShare, HangTime: spec.HangTime, LogCap: 4_000_000}
	if spec.TroubleShare == 0 {
		cfg.TroubleShare = -1
	}
	srv, err := websim.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot start websim: %w", err)
	}
	w := &web{srv: srv, seeds: srv.SeedURLs(spec.Seeds)}
	w.truth, err = srv.Truth(websim.TruthRules{Seeds: w.seeds, MaxDepth: -1, Scope: websim.ScopeAny, MaxURLs: 5_000_000})
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("cannot compute the ground truth: %w", err)
	}
	w.must = make(map[string]bool, len(w.truth.MustFetch))
	for _, u := range w.truth.MustFetch {
		w.must[u] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		srv.Close()
		return nil, fmt.Errorf("cannot create %s: %w", dir, err)
	}
	w.resolveFile = filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(w.resolveFile, []byte(strings.Join(srv.Resolve(), "\n")+"\n"), 0o644); err != nil {
		srv.Close()
		return nil, fmt.Errorf("cannot write the resolve file: %w", err)
	}
	w.configFile = filepath.Join(dir, "seeds.yaml")
	b, err := yaml.Marshal(map[string][]string{"seeds": w.seeds})
	if err == nil {
		err = os.WriteFile(w.configFile, b, 0o644)
	}
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("cannot write the seed file: %w", err)
	}
	return w, nil
}

func (w *web) close() { w.srv.Close() }

// hostCount is the number of distinct hosts in the ground truth.
func (w *web) hostCount() int {
	hosts := map[string]bool{}
	for _, u := range w.truth.MustFetch {
		hosts[hostOf(u)] = true
	}
	return len(hosts)
}

// hostOf returns the host name of an absolute URL ("" if it does not parse).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// logCheck is what the access log says about one crawl.
type logCheck struct {
	Requests    int            // every request, robots.txt included
	Pages       int            // requests other than robots.txt
	Robots      int            // robots.txt requests
	Covered     int            // distinct URLs of Truth.MustFetch requested
	MustFetch   int            // len(Truth.MustFetch)
	Outside     int            // distinct URLs requested that are not in MustFetch
	Duplicates  int            // repeats after a complete answer below 500, retries excepted
	DupURLs     int            // distinct URLs with such repeats
	Retries     int            // repeats after an answer 0 or ≥ 500
	ByAgent     map[string]int // page requests by User-Agent
	MaxOpen     int            // most requests to one host in flight at once
	HostsOver   int            // hosts with more than one request in flight at once
	First       time.Time      // first request's arrival
	Last        time.Time      // last request's end
	Missing     []string       // a few MustFetch URLs never requested
	OpenExample []string       // a few requests that arrived while another to the same host was in flight
	DupExample  []string       // a few duplicated URLs with their counts
	Dropped     int            // entries the log could not keep
}

// Coverage is Covered/MustFetch.
func (c logCheck) Coverage() float64 {
	if c.MustFetch == 0 {
		return 1
	}
	return float64(c.Covered) / float64(c.MustFetch)
}

// Active is the time between the first request and the end of the last.
func (c logCheck) Active() time.Duration {
	if c.First.IsZero() {
		return 0
	}
	return c.Last.Sub(c.First)
}

const maxExamples = 5

// check reads the access log after a crawl and compares it with the truth.
func (w *web) check() logCheck {
	l := w.srv.Log()
	entries := l.Entries()
	c := logCheck{Requests: len(entries), MustFetch: len(w.truth.MustFetch), ByAgent: map[string]int{}, Dropped: l.Dropped()}
	fetched := make(map[string]bool, len(entries))
	for _, e := range entries {
		c.MaxOpen = max(c.MaxOpen, e.OpenAtArrival)
		if c.First.IsZero() || e.Time.Before(c.First) {
			c.First = e.Time
		}
		if e.End.After(c.Last) {
			c.Last = e.End
		}
		if isRobots(e.Path) {
			c.Robots++
			continue
		}
		c.Pages++
		c.ByAgent[e.UserAgent]++
		key := e.URL
		if u, ok := websim.Canonical(nil, e.URL); ok {
			key = u.String()
		}
		if fetched[key] {
			continue
		}
		fetched[key] = true
		if w.must[key] {
			c.Covered++
		} else {
			c.Outside++
		}
	}
	over := map[string]bool{}
	for _, e := range entries {
		if e.OpenAtArrival > 1 {
			over[e.Host] = true
			if len(c.OpenExample) < maxExamples {
				other := "?"
				for _, o := range l.HostEntries(e.Host) {
					if o.Time.Before(e.Time) && o.End.After(e.Time) {
						other = fmt.Sprintf("%s status %d, open %s after it arrived", o.Path, o.Status, e.Time.Sub(o.Time).Round(time.Millisecond))
					}
				}
				c.OpenExample = append(c.OpenExample, fmt.Sprintf("%s (status %d) while %s", e.URL, e.Status, other))
			}
		}
	}
	c.HostsOver = len(over)
	for _, u := range w.truth.MustFetch {
		if !fetched[u] && len(c.Missing) < maxExamples {
			c.Missing = append(c.Missing, u)
		}
	}
	retries := l.Retries()
	for _, n := range retries {
		c.Retries += n
	}
	dups := l.Duplicates()
	keys := make([]string, 0, len(dups))
	for u, n := range dups {
		extra := n - 1 - retries[u]
		if extra <= 0 {
			continue
		}
		c.Duplicates += extra
		c.DupURLs++
		keys = append(keys, u)
	}
	sort.Strings(keys)
	for _, u := range keys[:min(len(keys), maxExamples)] {
		c.DupExample = append(c.DupExample, fmt.Sprintf("%s×%d", u, dups[u]))
	}
	return c
}

// isRobots reports whether a request path (with query) asks for robots.txt.
func isRobots(pathQuery string) bool {
	p, _, _ := strings.Cut(pathQuery, "?")
	return p == "/robots.txt" || p == "/robots-real.txt"
}

// waitQuiet waits until the access log stops growing (requests abandoned
// by a process that exited are recorded when their handlers end).
func waitQuiet(l *websim.AccessLog) {
	last := -1
	for range 50 {
		n := l.Len()
		if n == last {
			return
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
}
