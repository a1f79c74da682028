package rank

import (
	"context"
	"sync"
	"testing"

	"github.com/spider-crawler/spider/internal/graph"
)

var (
	benchOnce  sync.Once
	benchSite  *graph.Graph
	benchLarge *Matrix
)

func benchGraphs() {
	benchOnce.Do(func() {
		benchSite = graph.SiteGraph(graph.SiteGraphConfig{Pages: 35602, Seed: 1})
		benchLarge = NewMatrix(graph.SiteGraph(graph.SiteGraphConfig{Pages: 700_000, Seed: 2}))
	})
}

// BenchmarkComputeSiteGraph is the SPEC §1 experiment in memory: PageRank of
// a 35,602-page site graph to tolerance 1e-10 (transpose included).
func BenchmarkComputeSiteGraph(b *testing.B) {
	benchGraphs()
	for _, w := range []int{1, 2} {
		b.Run(map[int]string{1: "1thread", 2: "2threads"}[w], func(b *testing.B) {
			for b.Loop() {
				if _, err := Compute(context.Background(), benchSite, Options{Workers: w}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIteration measures one thread's pull iterations (10 per op) on a ~5M-edge
// site graph and reports edges per second.
func BenchmarkIteration(b *testing.B) {
	benchGraphs()
	const iters = 10
	for b.Loop() {
		if _, err := benchLarge.Compute(context.Background(), Options{Workers: 1, MaxIter: iters, Tolerance: 1e-300}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchLarge.Edges())*iters*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
}
