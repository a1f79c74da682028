// Package bench holds the in-process crawler benchmarks of issue 3: the
// engine (crawl.New/Run) against websim, for pages/s and for profiling with
// go test -cpuprofile. The side-by-side comparison with Colly and the bare
// loop is the peerbench command; bench/run.sh runs everything.
package bench

import (
	"context"
	"flag"
	"syscall"
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

// crawlSettings are the knobs BenchmarkCrawl varies.
type crawlSettings struct {
	depth, concurrency int
	loose              bool // no barrier between depth levels (the default); false: crawl.Config.StrictLevels
}

// crawlStats is what one crawl did: its final progress and the mean number
// of URLs in flight, sampled every 5 ms while it ran.
type crawlStats struct {
	crawl.Progress
	meanInFlight float64
}

// crawlOnce runs one complete crawl of srv in dir with the benchmark's
// settings (no delay, one connection per host, scope any).
func crawlOnce(ctx context.Context, tb testing.TB, srv *websim.Server, dir string, seeds []string, s crawlSettings) crawlStats {
	tb.Helper()
	cfg := crawl.NewConfig()
	cfg.Data = dir
	cfg.Seeds = seeds
	cfg.MaxDepth = s.depth
	cfg.StrictLevels = !s.loose
	cfg.Scope = "any"
	cfg.Concurrency = s.concurrency
	cfg.PerHost = 1
	cfg.Delay = 0
	cfg.AllowPrivate = true
	cfg.Resolve = srv.Resolve()
	eng, err := crawl.New(cfg, nil, prometheus.NewRegistry())
	if err != nil {
		tb.Fatalf("cannot create the engine: %v", err)
	}
	done := make(chan struct{})
	sampled := make(chan float64, 1)
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var sum, n float64
		for {
			select {
			case <-done:
				sampled <- sum / max(n, 1)
				return
			case <-t.C:
				sum += float64(eng.Progress().InFlight)
				n++
			}
		}
	}()
	runErr := eng.Run(ctx)
	close(done)
	st := crawlStats{meanInFlight: <-sampled}
	if runErr != nil {
		_ = eng.Close()
		tb.Fatalf("crawl failed: %v", runErr)
	}
	st.Progress = eng.Progress()
	if err := eng.Close(); err != nil {
		tb.Fatalf("cannot close the engine: %v", err)
	}
	return st
}

// BenchmarkCrawl crawls a synthetic web (no latency) with the engine
// in-process, one complete crawl per iteration, and reports pages/s, pages
// per crawl and the mean number of URLs in flight (out of
// -bench.concurrency: the rest of the workers were waiting for work).
// "levels" sets StrictLevels (a barrier between depth levels, so each page
// is fetched at its shortest depth); "loose" is the default (levels overlap,
// the state relinks), to measure the barrier's cost. websim serves from the same process, so a CPU profile shows both; the
// crawler's share is everything outside package websim.
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
	for _, mode := range []struct {
		name  string
		loose bool
	}{{"levels", false}, {"loose", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var pages int64
			var busy time.Duration
			var inFlight float64
			var cpu time.Duration
			for b.Loop() {
				dir := b.TempDir()
				start, cpu0 := time.Now(), processCPU()
				st := crawlOnce(ctx, b, srv, dir, seeds, crawlSettings{depth: *benchDepth, concurrency: *benchConc, loose: mode.loose})
				busy += time.Since(start)
				cpu += processCPU() - cpu0
				pages += st.Fetched
				inFlight += st.meanInFlight
			}
			b.ReportMetric(float64(pages)/busy.Seconds(), "pages/s")
			b.ReportMetric(float64(pages)/float64(b.N), "pages/crawl")
			b.ReportMetric(inFlight/float64(b.N), "inflight")
			b.ReportMetric(cpu.Seconds()*1000/float64(pages), "cpu-ms/page")
		})
	}
}

// processCPU returns this process's user + system time so far (crawler and
// websim together).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
			p := crawlOnce(ctx, t, srv, t.TempDir(), seeds, crawlSettings{depth: tc.depth, concurrency: 8})
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
