package masterworker_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/cluster/slots"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawls"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestShardTags: the state parts' tags lie in evenly spaced slot ranges,
// so on a cluster whose masters hold equal ranges they spread evenly.
func TestShardTags(t *testing.T) {
	for _, n := range []int{1, 3, masterworker.Shards} {
		for i := range n {
			tag := masterworker.ShardTag(i, n)
			s := slots.KeySlot(tag)
			if s < i*slots.Slots/n || s >= (i+1)*slots.Slots/n {
				t.Errorf("ShardTag(%d, %d) = %q in slot %d, outside its range", i, n, tag, s)
			}
			if _, kind, ok := crawls.Parse(rstate.KeyPrefix("c", tag) + "pending"); !ok || kind != crawls.KindMasterWorker {
				t.Errorf("key of part %q parses as %q %v, want master-worker", tag, kind, ok)
			}
		}
	}
}

// TestMasterWorkerCluster: a master–worker crawl of a few thousand pages
// over dozens of hosts on a Redis Cluster of 3 masters is exact (websim's
// truth: nothing missing, no repeated request) and no master holds more
// than 45% of the crawl's keys (issue #24's goal) or of their memory.
func TestMasterWorkerCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a crawl of 2,400 pages on a Redis Cluster")
	}
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 41, Hosts: 40, PagesPerHost: 60, Latency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny, Seeds: srv.SeedURLs(4)}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawl.NewConfig()
	cfg.Seeds = rules.Seeds
	cfg.MaxDepth = rules.MaxDepth
	cfg.Scope = rules.Scope
	cfg.Resolve = srv.Resolve()
	cfg.AllowPrivate = true
	cfg.Delay = crawl.Duration(time.Millisecond)
	cfg.RetryDelay = crawl.Duration(50 * time.Millisecond)
	cfg.Timeout = crawl.Duration(5 * time.Second)
	cfg.FirstByteTimeout = crawl.Duration(4 * time.Second)
	cfg.Seen = "bloom"
	cfg.ExpectedURLs = 120_000
	c := redistest.StartCluster(t, 3)
	f := &fixture{srv: srv, truth: truth, cfg: cfg, rdb: c.Client()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	st, err := masterworker.OpenState(ctx, f.rdb, "mwc", masterworker.StateOptions{SeenMode: cfg.Seen, ExpectedURLs: cfg.ExpectedURLs, MaxDepth: cfg.MaxDepth})
	if err != nil {
		t.Fatal(err)
	}
	m := f.masterOn(t, "mwc", st)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	var dirs []string
	for range 3 {
		fw := *f
		fw.rdb = c.Client() // a client per worker, as with worker processes
		w, dir := fw.worker(t, "mwc", 8)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// Requeued or Expired above 0 means a worker was declared dead or a
	// task outlived the task TTL (a loaded machine): its requests repeat.
	t.Logf("master: %+v", m.Stats())
	f.check(t, dirs, 0)
	if n := len(truth.MustFetch); n < 2000 {
		t.Fatalf("the truth has %d URLs, want a few thousand", n)
	}

	shards, err := crawls.PerMaster(ctx, f.rdb, "mwc")
	if err != nil {
		t.Fatal(err)
	}
	keys, mem := crawls.Spread(shards)
	for _, s := range shards {
		t.Logf("%s: %d keys %v, %d bytes", s.Addr, s.Total, s.Keys, s.MemoryBytes)
	}
	if cc, ok := f.rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var work []string
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			ks, err := c.Keys(ctx, "{spider:mwc}:mw:*").Result()
			mu.Lock()
			work = append(work, ks...)
			mu.Unlock()
			return err
		})
		slices.Sort(work)
		t.Logf("the crawl's own tag: %d keys %v", len(work), work)
	}
	if len(shards) != 3 || keys > 0.45 {
		t.Errorf("the largest shard holds %.0f%% of the crawl's keys on %d masters, want at most 45%% on 3", 100*keys, len(shards))
	}
	if mem > 0.45 {
		t.Errorf("the largest shard holds %.0f%% of the crawl's memory, want at most 45%%", 100*mem)
	}
	t.Logf("%d URLs; largest shard: %.0f%% of the keys, %.0f%% of the memory", len(truth.MustFetch), 100*keys, 100*mem)
}

// TestOldLayoutRefused: a crawl whose state an earlier version kept in
// the single store spider:C:{mw}:* is refused with a message that says
// what to do, and nothing of the new layout is written.
func TestOldLayoutRefused(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	if err := rdb.HSet(ctx, rstate.KeyPrefix("old", "mw")+"meta", "mode", "bloom").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := masterworker.OpenState(ctx, rdb, "old", masterworker.StateOptions{SeenMode: "bloom", MaxDepth: -1})
	if !errors.Is(err, masterworker.ErrOldLayout) {
		t.Fatalf("OpenState on an old crawl: %v, want ErrOldLayout", err)
	}
	t.Log(err)
	if n := rdb.DBSize(ctx).Val(); n != 1 {
		t.Errorf("%d keys after the refusal, want the old one only", n)
	}
	// Another crawl on the same Redis is not concerned.
	st, err := masterworker.OpenState(ctx, rdb, "new", masterworker.StateOptions{SeenMode: "bloom", MaxDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
}

// TestMasterRestartSharded: a master on the split state (as spider master
// runs) stopped in the middle of the crawl and started again finds every
// URL where it was: the host directory read back gives each host the same
// part, and the crawl ends with every URL of the truth fetched and no more
// repeats than the tasks out at the stop. Fails if a restarted master
// assigned hosts afresh (their pending URLs would be lost in another part).
func TestMasterRestartSharded(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 35, Hosts: 16, PagesPerHost: 20, Latency: 10 * time.Millisecond},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "mws"
	newMaster := func() *masterworker.Master {
		st, err := masterworker.OpenState(ctx, f.rdb, name, masterworker.StateOptions{SeenMode: "bloom", ExpectedURLs: 100_000, MaxDepth: -1})
		if err != nil {
			t.Fatal(err)
		}
		return f.masterOn(t, name, st)
	}
	m1 := newMaster()
	m1ctx, stop1 := context.WithCancel(ctx)
	m1done := make(chan error, 1)
	go func() { m1done <- m1.Run(m1ctx) }()
	g, gctx := errgroup.WithContext(ctx)
	var dirs []string
	for range 2 {
		w, dir := f.worker(t, name, 4)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	for deadline := time.Now().Add(60 * time.Second); m1.Progress().Fetched < 60; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first master fetched %d URLs in 60 s, want 60 before its stop", m1.Progress().Fetched)
		}
	}
	stop1()
	<-m1done
	m1.Close()
	before := f.rdb.HGetAll(ctx, "{spider:"+name+"}:mw:hosts").Val()
	if len(before) < 2 {
		t.Fatalf("host directory before the restart: %v", before)
	}
	m2 := newMaster()
	g.Go(func() error { return m2.Run(gctx) })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 2*4*2)
	after := f.rdb.HGetAll(ctx, "{spider:"+name+"}:mw:hosts").Val()
	for h, p := range before {
		if after[h] != p {
			t.Errorf("host %s moved from part %s to %s across the restart", h, p, after[h])
		}
	}
}
