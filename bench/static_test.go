package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
)

// BenchmarkStatic crawls the static web bench/static.sh serves (its seeds
// in SPIDER_STATIC_SEEDS, space-separated) with the engine in-process, one
// complete crawl per iteration, one connection per host, no delay: for CPU
// profiles of the crawler alone (the server is nginx, another process).
// Skipped without SPIDER_STATIC_SEEDS.
//
//	SPIDER_STATIC_SEEDS="$(jq -r '.seeds|join(" ")' WORK/web/manifest.json)" \
//	  go test ./bench -run '^$' -bench Static -benchtime 3x -cpuprofile cpu.out
func BenchmarkStatic(b *testing.B) {
	seeds := strings.Fields(os.Getenv("SPIDER_STATIC_SEEDS"))
	if len(seeds) == 0 {
		b.Skip("SPIDER_STATIC_SEEDS is not set: run bench/static.sh's web first")
	}
	ctx := context.Background()
	var pages int64
	var busy, cpu time.Duration
	for b.Loop() {
		cfg := crawl.NewConfig()
		cfg.Data = b.TempDir()
		cfg.Seeds = seeds
		cfg.MaxDepth = -1
		cfg.Scope = "seeds"
		cfg.PerHost = 1
		cfg.Delay = 0
		cfg.AllowPrivate = true
		eng, err := crawl.New(cfg, nil, prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), processCPU()
		if err := eng.Run(ctx); err != nil {
			b.Fatal(err)
		}
		busy += time.Since(start)
		cpu += processCPU() - cpu0
		pages += eng.Progress().Fetched
		if err := eng.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pages)/busy.Seconds(), "pages/s")
	b.ReportMetric(cpu.Seconds()*1000/float64(pages), "cpu-ms/page")
}
