package fsck_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/fsck"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestScale measures fsck on a larger crawl: a check of a clean directory,
// and a repair after half of records.jsonl was cut. It runs only with
// SPIDER_FSCK_SCALE=N (hosts of 200 pages each).
func TestScale(t *testing.T) {
	hosts, _ := strconv.Atoi(os.Getenv("SPIDER_FSCK_SCALE"))
	if hosts <= 0 {
		t.Skip("set SPIDER_FSCK_SCALE=hosts to measure")
	}
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 3, Hosts: hosts, PagesPerHost: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	g := &golden{srv: srv, rules: websim.TruthRules{Seeds: srv.SeedURLs(4), MaxDepth: -1, Scope: websim.ScopeAny}, dir: t.TempDir()}
	cfg := g.config(g.dir)
	cfg.Concurrency = 32
	start := time.Now()
	runCrawl(t, cfg)
	t.Logf("crawl: %s", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	var ms runtime.MemStats
	start = time.Now()
	rep, err := fsck.Run(ctx, g.dir, fsck.Options{})
	if err != nil || !rep.Clean() {
		t.Fatalf("%v %v", err, rep.Findings)
	}
	runtime.ReadMemStats(&ms)
	t.Logf("check: %d pages, %d records, %d completed: %s (heap in use after: %.1f MB, total alloc %.1f MB)",
		rep.Pages, rep.Records, rep.Completed, time.Since(start).Round(time.Millisecond), float64(ms.HeapInuse)/1e6, float64(ms.TotalAlloc)/1e6)
	recs := filepath.Join(g.dir, "records.jsonl")
	info, _ := os.Stat(recs)
	if err := os.Truncate(recs, info.Size()/2); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	rep, err = fsck.Run(ctx, g.dir, fsck.Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("repair after cutting half of records.jsonl: %s, %d requeued, %d forgotten", time.Since(start).Round(time.Millisecond), len(rep.Requeued), rep.Forgotten)
	start = time.Now()
	runCrawl(t, cfg)
	t.Logf("resumed crawl: %s", time.Since(start).Round(time.Millisecond))
	recsAfter, _ := contents(t, g.dir)
	t.Logf("%d URLs recorded after the resume", len(recsAfter))
}
