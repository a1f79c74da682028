// Package bench holds the in-process crawler benchmarks of issue 3: the
// engine (crawl.New/Run) against websim, for pages/s and for profiling with
// go test -cpuprofile. The side-by-side comparison with Colly and the bare
// loop is the peerbench command; bench/run.sh runs everything.
package bench

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/websim"
)

// The size of the web BenchmarkCrawl crawls; the defaults take a few seconds
// per iteration on two cores.
var (
	benchHosts = flag.Int("bench.hosts", 200, "BenchmarkCrawl: websim hosts")
	benchPages = flag.Int("bench.pages", 50, "BenchmarkCrawl: websim pages per host")
	benchSeeds = flag.Int("bench.seeds", 5, "BenchmarkCrawl: seed URLs")
	benchDepth = flag.Int("bench.depth", 5, "BenchmarkCrawl: largest depth fetched")
	benchConc  = flag.Int("bench.concurrency", 32, "BenchmarkCrawl: spider --concurrency")
)

// crawlOnce runs one complete crawl of srv in dir with the benchmark's
// settings (no delay, one connection per host, scope any) and returns its
// progress at the end.
func crawlOnce(ctx context.Context, tb testing.TB, srv *websim.Server, dir string, seeds []string, depth, concurrency int) crawl.Progress {
	tb.Helper()
	cfg := crawl.NewConfig()
	cfg.Data = dir
	cfg.Seeds = seeds
	cfg.MaxDepth = depth
	cfg.Scope = "any"
	cfg.Concurrency = concurrency
	cfg.PerHost = 1
	cfg.Delay = 0
	cfg.AllowPrivate = true
	cfg.Resolve = srv.Resolve()
	eng, err := crawl.New(cfg, nil, prometheus.NewRegistry())
	if err != nil {
		tb.Fatalf("cannot create the engine: %v", err)
	}
	if err := eng.Run(ctx); err != nil {
		_ = eng.Close()
		tb.Fatalf("crawl failed: %v", err)
	}
	p := eng.Progress()
	if err := eng.Close(); err != nil {
		tb.Fatalf("cannot close the engine: %v", err)
	}
	return p
}

// BenchmarkCrawl crawls a synthetic web (no latency) with the engine
// in-process, one complete crawl per iteration, and reports pages/s and
// pages per crawl. websim serves from the same process, so a CPU profile
// shows both; the crawler's share is everything outside package websim.
//
//	go test ./bench -run '^$' -bench Crawl -benchtime 3x -cpuprofile cpu.out
func BenchmarkCrawl(b *testing.B) {
	ctx := context.Background()
	srv, err := websim.Start(ctx, websim.Config{Seed: 1, Hosts: *benchHosts, PagesPerHost: *benchPages, LogCap: -1})
	if err != nil {
		b.Fatalf("cannot start websim: %v", err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(*benchSeeds)
	var pages int64
	var busy time.Duration
	for b.Loop() {
		dir := b.TempDir()
		start := time.Now()
		p := crawlOnce(ctx, b, srv, dir, seeds, *benchDepth, *benchConc)
		busy += time.Since(start)
		pages += p.Fetched
	}
	b.ReportMetric(float64(pages)/busy.Seconds(), "pages/s")
	b.ReportMetric(float64(pages)/float64(b.N), "pages/crawl")
}

// TestCrawlMatchesTruth checks the benchmark's setup: with these settings the
// engine fetches exactly the ground truth of a small web, so the pages/s of
// BenchmarkCrawl measure a complete and correct crawl.
func TestCrawlMatchesTruth(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name                string
		hosts, pages, seeds int
		depth               int
	}{
		{"one seed", 10, 20, 1, 3},
		{"several seeds", 30, 10, 3, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := websim.Start(ctx, websim.Config{Seed: 7, Hosts: tc.hosts, PagesPerHost: tc.pages})
			if err != nil {
				t.Fatalf("cannot start websim: %v", err)
			}
			defer srv.Close()
			seeds := srv.SeedURLs(tc.seeds)
			truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: tc.depth, Scope: websim.ScopeAny})
			if err != nil {
				t.Fatalf("cannot compute the truth: %v", err)
			}
			p := crawlOnce(ctx, t, srv, t.TempDir(), seeds, tc.depth, 8)
			if int(p.Fetched) != len(truth.MustFetch) {
				t.Errorf("fetched %d URLs, the truth has %d", p.Fetched, len(truth.MustFetch))
			}
			fetched := map[string]bool{}
			for _, e := range srv.Log().Entries() {
				if u, ok := websim.Canonical(nil, e.URL); ok {
					fetched[u.String()] = true
				}
			}
			for _, u := range truth.MustFetch {
				if !fetched[u] {
					t.Errorf("%s not fetched", u)
				}
			}
			if d := srv.Log().Duplicates(); len(d) > 0 {
				t.Errorf("duplicate fetches: %v", d)
			}
		})
	}
}
