package rank

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawls"
	"github.com/spider-crawler/spider/internal/graph"
)

// TestMapReduceOnCluster: map/reduce PageRank on a Redis Cluster of 3
// masters agrees with the in-memory iteration, and while it runs (graph
// parts and a round's rank slices in Redis) no master holds more than 45%
// of its keys or of their memory: the per-part keys spread over the
// masters (slots.SpreadTag). Fails if the parts share one tag again, or
// if a script crosses slots (go-redis refuses it on a cluster).
func TestMapReduceOnCluster(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := graph.SiteGraph(graph.SiteGraphConfig{Pages: 20000, Hosts: 200, Seed: 9})
	want, err := Compute(ctx, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var shards []crawls.Shard
	var merr error
	stop := startWorkers(t, rdb, "rc", 3, WorkerConfig{afterClaim: func(task) bool {
		once.Do(func() { shards, merr = crawls.PerMaster(ctx, rdb, "rc") }) // round 0: graph and ranks up
		return false
	}})
	m, err := NewMaster(ctx, rdb, MasterConfig{Crawl: "rc", Parts: 24})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Compute(ctx, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if e := l1(got.Ranks, want.Ranks); e >= 1e-9 || got.Iterations != want.Iterations {
		t.Fatalf("map/reduce on a cluster vs memory: L1 %g, iterations %d vs %d", e, got.Iterations, want.Iterations)
	}
	if merr != nil {
		t.Fatal(merr)
	}
	keys, mem := crawls.Spread(shards)
	for _, s := range shards {
		t.Logf("%s: %d keys, %d bytes", s.Addr, s.Total, s.MemoryBytes)
	}
	if len(shards) != 3 || keys > 0.45 || mem > 0.45 {
		t.Errorf("largest of %d shards: %.0f%% of the keys, %.0f%% of the memory; want at most 45%% of each on 3", len(shards), 100*keys, 100*mem)
	}
}

// TestLostBeforeReport: a worker that stored its result and vanished
// before reporting it leaves the part unannounced; the next worker's
// report announces it once, and the master gets the stored result.
func TestLostBeforeReport(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	k, _ := newKeys("lost")
	tk := task{run: "r1", round: 0, part: 3}
	rdb.Set(ctx, k.ranks("r1", 0, 3), encodeRanks([]float64{1}), 0)
	first := encodeResult(&result{dangling: 0.25})
	if n, err := storeScript.Run(ctx, rdb, []string{k.result("r1", 0, 3), k.ranks("r1", 0, 3)}, first, 60000).Int(); err != nil || n != 1 {
		t.Fatalf("store: %d, %v", n, err)
	}
	if n, err := complete(ctx, rdb, k, tk, encodeResult(&result{dangling: 0.5})); err != nil || n != 1 {
		t.Fatalf("the next worker's completion: %d, %v; want 1 (announced)", n, err)
	}
	if n, _ := complete(ctx, rdb, k, tk, first); n != 0 {
		t.Fatalf("a third completion: %d, want 0", n)
	}
	if l := rdb.LLen(ctx, k.done("r1", 0)).Val(); l != 1 {
		t.Fatalf("done list has %d entries, want 1", l)
	}
	if b, _ := rdb.Get(ctx, k.result("r1", 0, 3)).Bytes(); string(b) != string(first) {
		t.Fatal("the stored result was replaced: first writer must win")
	}
}
