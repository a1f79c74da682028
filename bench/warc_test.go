package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/websim"
)

// BenchmarkCrawlWARC is BenchmarkCrawl's "levels" crawl with and without
// --warc, on a web of plain bodies and on one whose bodies are gzip- or
// brotli-encoded (websim's "compress" behaviour), reporting the process's
// CPU per page (crawler and websim together) and the WARC bytes per page.
// bench/warccpu.sh runs it on two commits in one sitting; the file uses
// only what both sides have (crawl.Config.WARC), so the script copies it
// into the older tree.
//
//	go test ./bench -run '^$' -bench CrawlWARC -benchtime 3x
func BenchmarkCrawlWARC(b *testing.B) {
	ctx := context.Background()
	for _, web := range []struct {
		name     string
		features websim.Feature
	}{{"plain", 0}, {"compress", websim.FeatureCompress}} {
		srv, err := websim.Start(ctx, websim.Config{Seed: 1, Hosts: *benchHosts, PagesPerHost: *benchPages, LogCap: -1, Enable: web.features})
		if err != nil {
			b.Fatalf("cannot start websim: %v", err)
		}
		seeds := srv.SeedURLs(*benchSeeds)
		for _, warc := range []bool{false, true} {
			name := web.name + "/off"
			if warc {
				name = web.name + "/warc"
			}
			b.Run(name, func(b *testing.B) {
				var pages, warcBytes int64
				var cpu, busy time.Duration
				for b.Loop() {
					dir := b.TempDir()
					start, cpu0 := time.Now(), processCPU()
					pages += crawlWARC(ctx, b, srv, dir, seeds, warc)
					busy += time.Since(start)
					cpu += processCPU() - cpu0
					warcBytes += dirBytes(filepath.Join(dir, "warc"))
				}
				b.ReportMetric(float64(pages)/busy.Seconds(), "pages/s")
				b.ReportMetric(float64(pages)/float64(b.N), "pages/crawl")
				b.ReportMetric(cpu.Seconds()*1000/float64(pages), "cpu-ms/page")
				b.ReportMetric(float64(warcBytes)/float64(pages), "warc-B/page")
			})
		}
		srv.Close()
	}
}

// crawlWARC runs one complete crawl of srv into dir (BenchmarkCrawl's
// settings, depth levels) with or without WARC, and returns the URLs fetched.
func crawlWARC(ctx context.Context, tb testing.TB, srv *websim.Server, dir string, seeds []string, warc bool) int64 {
	tb.Helper()
	cfg := crawl.NewConfig()
	cfg.Data = dir
	cfg.Seeds = seeds
	cfg.MaxDepth = *benchDepth
	cfg.Scope = "any"
	cfg.Concurrency = *benchConc
	cfg.PerHost = 1
	cfg.Delay = 0
	cfg.AllowPrivate = true
	cfg.Resolve = srv.Resolve()
	cfg.WARC = warc
	eng, err := crawl.New(cfg, nil, prometheus.NewRegistry())
	if err != nil {
		tb.Fatalf("cannot create the engine: %v", err)
	}
	if err := eng.Run(ctx); err != nil {
		_ = eng.Close()
		tb.Fatalf("crawl failed: %v", err)
	}
	n := eng.Progress().Fetched
	if err := eng.Close(); err != nil {
		tb.Fatalf("cannot close the engine: %v", err)
	}
	return n
}

// dirBytes is the size of the files in dir (0 if there is none).
func dirBytes(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}
