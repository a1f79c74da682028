package masterworker_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

type fixture struct {
	srv   *websim.Server
	truth *websim.Truth
	cfg   crawl.Config
	rs    *redistest.Server
	rdb   redis.UniversalClient
}

func newFixture(t *testing.T, web websim.Config, rules websim.TruthRules, ropts ...redistest.Option) *fixture {
	t.Helper()
	srv, err := websim.Start(context.Background(), web)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if rules.Seeds == nil {
		rules.Seeds = srv.SeedURLs(2)
	}
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
	cfg.Delay = crawl.Duration(5 * time.Millisecond)
	cfg.RetryDelay = crawl.Duration(50 * time.Millisecond)
	cfg.Timeout = crawl.Duration(3 * time.Second)
	cfg.FirstByteTimeout = crawl.Duration(2 * time.Second)
	rs := redistest.Start(t, ropts...)
	return &fixture{srv: srv, truth: truth, cfg: cfg, rs: rs, rdb: rs.Client()}
}

func (f *fixture) master(t *testing.T, name string) *masterworker.Master {
	t.Helper()
	st, err := state.Open(filepath.Join(t.TempDir(), "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f.masterOn(t, name, st)
}

// masterOn makes a master whose crawl state is st.
func (f *fixture) masterOn(t *testing.T, name string, st crawl.State) *masterworker.Master {
	t.Helper()
	cfg := f.cfg
	cfg.Data = t.TempDir()
	fetcher, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	seeds, err := fetcher.SeedRequests()
	fetcher.Close()
	if err != nil {
		t.Fatal(err)
	}
	sched, err := crawl.NewScheduler(cfg, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := masterworker.NewMaster(cfg, sched, seeds, f.rdb, opts(name), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func opts(name string) masterworker.Options {
	return masterworker.Options{Crawl: name, Heartbeat: 100 * time.Millisecond, WorkerTTL: 600 * time.Millisecond, TaskTTL: 5 * time.Second}
}

func (f *fixture) worker(t *testing.T, name string, concurrency int) (*masterworker.Worker, string) {
	t.Helper()
	return f.workerWith(t, name, concurrency, nil)
}

// workerWith is worker with its options changed by edit (nil: none).
func (f *fixture) workerWith(t *testing.T, name string, concurrency int, edit func(*masterworker.Options)) (*masterworker.Worker, string) {
	t.Helper()
	cfg, err := masterworker.LoadConfig(context.Background(), f.rdb, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The local-only settings (resolve entries, allow-private, limits) are
	// the worker's own, here the fixture's.
	cfg.SetLocal(f.cfg)
	cfg.Data = t.TempDir()
	fetcher, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := opts(name)
	if edit != nil {
		edit(&o)
	}
	w, err := masterworker.NewWorker(fetcher, f.rdb, o, concurrency, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, cfg.Data
}

// fetched reads the URLs recorded in the workers' data directories.
func fetched(t *testing.T, dirs []string) map[string]store.Record {
	t.Helper()
	out := map[string]store.Record{}
	for _, d := range dirs {
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Iterate(func(r store.Record) error { out[r.URL] = r; return nil }); err != nil {
			t.Fatal(err)
		}
		rs.Close()
	}
	return out
}

func (f *fixture) check(t *testing.T, dirs []string, allowedRepeats int) {
	t.Helper()
	recs := fetched(t, dirs)
	var missing []string
	for _, u := range f.truth.MustFetch {
		if _, ok := recs[u]; !ok {
			missing = append(missing, u)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d of %d URLs never fetched, e.g. %s", len(missing), len(f.truth.MustFetch), strings.Join(missing[:min(5, len(missing))], " "))
	}
	for _, e := range f.srv.Log().Entries() {
		if reason, ok := f.truth.MustNotFetch["http://"+e.Host+e.Path]; ok {
			t.Errorf("requested %s%s, which must not be fetched (%s)", e.Host, e.Path, reason)
		}
	}
	repeats := 0
	retries := f.srv.Log().Retries()
	for u, n := range f.srv.Log().Duplicates() {
		if retries[u] == 0 {
			repeats += n - 1
		}
	}
	if repeats > allowedRepeats {
		t.Errorf("%d repeated requests, want at most %d", repeats, allowedRepeats)
	}
}

// TestMasterWorkers: one master, three workers, ground truth, politeness
// kept across workers (one connection per host, delay between requests).
func TestMasterWorkers(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 31, Hosts: 10, PagesPerHost: 30, Latency: 2 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw1")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	var dirs []string
	var workers []*masterworker.Worker
	for i := 0; i < 3; i++ {
		w, dir := f.worker(t, "mw1", 4)
		dirs = append(dirs, dir)
		workers = append(workers, w)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 0)
	busy := 0
	for _, w := range workers {
		if w.Fetched() > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("only %d of 3 workers fetched anything", busy)
	}
	log := f.srv.Log()
	robotsFetches := map[string]int{}
	for _, e := range log.Entries() {
		if e.Path == "/robots.txt" {
			robotsFetches[e.Host]++
		}
	}
	for h, n := range robotsFetches {
		if n != 1 {
			t.Errorf("%s/robots.txt requested %d times across the workers, want once (shared through Redis)", h, n)
		}
	}
	gaps := 0 // hosts with two requests or more: the gaps measured
	for _, h := range log.Hosts() {
		if n := log.MaxOpen(h); n > 1 {
			t.Errorf("%s: %d requests open at once across workers, want 1", h, n)
		}
		if gap, ok := log.MinGap(h); ok {
			gaps++
			if gap < 5*time.Millisecond {
				t.Errorf("%s: requests %v apart, want at least 5ms", h, gap)
			}
		}
	}
	if gaps == 0 {
		t.Error("no host received two requests: the politeness check measured nothing")
	}
	s := m.Stats()
	if s.Stale != 0 || s.Bad != 0 || s.Requeued != 0 {
		t.Errorf("clean run with stale/bad/requeued tasks: %+v", s)
	}
	t.Logf("master: %+v; %d URLs", s, len(f.truth.MustFetch))
}

// TestMasterWorkersDelayFromStart: with the delay counted start to start,
// the gaps websim sees stay at least the delay even when the tasks wait in
// srq before a worker takes them (here: the workers start late), because
// the master places each request by its age when the result arrives, not
// by its offset from when a worker took the task.
func TestMasterWorkersDelayFromStart(t *testing.T) {
	const delay = 150 * time.Millisecond
	f := newFixture(t, websim.Config{Seed: 33, Hosts: 4, PagesPerHost: 6, Latency: 10 * time.Millisecond},
		websim.TruthRules{MaxDepth: 2, Scope: websim.ScopeAny})
	f.cfg.Delay = crawl.Duration(delay)
	f.cfg.DelayFrom = crawl.DelayFromStart
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw-start")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	// Leased tasks wait in srq for longer than the delay: once the master has put tasks
	// there, their age is the subject, so time passes.
	masterworker.WaitSRQ(t, f.rdb, "mw-start", 1)
	time.Sleep(3 * delay)
	var dirs []string
	for range 2 {
		w, dir := f.worker(t, "mw-start", 4)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 0)
	log := f.srv.Log()
	gaps := 0 // hosts with two requests or more: the gaps measured
	for _, h := range log.Hosts() {
		if gap, ok := log.MinGap(h); ok {
			gaps++
			if gap < delay {
				t.Errorf("%s: requests %v apart, want at least the delay %v", h, gap, delay)
			}
		}
	}
	if gaps == 0 {
		t.Error("no host received two requests: the politeness check measured nothing")
	}
}

// TestWorkerDies: a worker that took tasks and then went silent (what
// kill -9 leaves behind: tasks in its processing list, a stale heartbeat)
// has its tasks re-queued; the crawl completes with every URL fetched.
func TestWorkerDies(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 32, Hosts: 8, PagesPerHost: 30, Latency: 5 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw2")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })

	// The victim: a work number, a heartbeat, a task taken — then silence.
	victim := masterworker.Victim(t, f.rdb, "mw2")
	var dirs []string
	for i := 0; i < 2; i++ {
		w, dir := f.worker(t, "mw2", 4)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 0)
	s := m.Stats()
	if s.Requeued < 1 {
		t.Errorf("the dead worker's task was not re-queued: %+v", s)
	}
	if n, _ := f.rdb.LLen(ctx, victim).Result(); n != 0 {
		t.Errorf("the dead worker's processing list still holds %d tasks", n)
	}
	t.Logf("master: %+v", s)
}

// TestMasterRestart: the master is stopped mid-crawl and started again on
// the same state; a new epoch makes workers drop old tasks and the crawl
// completes with nothing lost.
func TestMasterRestart(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 33, Hosts: 8, PagesPerHost: 30, Latency: 10 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := f.cfg
	cfg.Data = t.TempDir()
	newMaster := func() *masterworker.Master {
		fetcher, err := crawl.NewFetcher(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		seeds, _ := fetcher.SeedRequests()
		fetcher.Close()
		st, err := state.Open(filepath.Join(cfg.Data, "state"), state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sched, err := crawl.NewScheduler(cfg, st, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := masterworker.NewMaster(cfg, sched, seeds, f.rdb, opts("mw3"), 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1 := newMaster()
	m1ctx, stop1 := context.WithCancel(ctx)
	m1done := make(chan error, 1)
	go func() { m1done <- m1.Run(m1ctx) }()
	g, gctx := errgroup.WithContext(ctx)
	var dirs []string
	for i := 0; i < 2; i++ {
		w, dir := f.worker(t, "mw3", 4)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	// Poll the first master's progress (every 5 ms) up to its kill point; the deadline
	// fails a crawl that never gets there.
	for deadline := time.Now().Add(60 * time.Second); m1.Progress().Fetched < 30; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first master fetched %d URLs in 60 s, want 30 before its kill", m1.Progress().Fetched)
		}
	}
	stop1()
	<-m1done
	m1.Close()
	m2 := newMaster()
	defer m2.Close()
	g.Go(func() error { return m2.Run(gctx) })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 2*4*2)
}

// TestRedisRestart: Redis (append-only file, fsync always) is killed and
// started again 2 s later in the middle of a master–worker crawl whose master keeps
// its state in Redis (as `spider master` does); master and workers wait for
// it, and the crawl finishes with every URL fetched.
func TestRedisRestart(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 57, Hosts: 12, PagesPerHost: 25, Latency: 5 * time.Millisecond},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny}, redistest.AppendOnly())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := rstate.Open(ctx, f.rdb, rstate.Options{Crawl: "mwr", Bucket: "mw", SeenMode: "bloom"})
	if err != nil {
		t.Fatal(err)
	}
	m := f.masterOn(t, "mwr", masterworker.RetryState(st))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	var dirs []string
	var workers []*masterworker.Worker
	for i := 0; i < 2; i++ {
		w, dir := f.worker(t, "mwr", 4)
		dirs, workers = append(dirs, dir), append(workers, w)
		g.Go(func() error { return w.Run(gctx) })
	}
	// Poll the workers' progress (every 5 ms) up to the fault point.
	deadline := time.Now().Add(60 * time.Second)
	for workers[0].Fetched()+workers[1].Fetched() < 40 {
		if time.Now().After(deadline) {
			t.Fatal("the crawl did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Down for 2 s: longer than go-redis's own retries, so master and
	// workers must wait the outage out themselves.
	f.rs.Kill()
	time.Sleep(2 * time.Second) // time is the subject: the outage's length
	f.rs.Restart()
	if err := g.Wait(); err != nil {
		t.Fatalf("crawl across a Redis restart: %v", err)
	}
	if n := workers[0].Fetched() + workers[1].Fetched(); n < int64(len(f.truth.MustFetch)) {
		t.Errorf("workers fetched %d, truth has %d", n, len(f.truth.MustFetch))
	}
	// Tasks in flight at the restart may be fetched once more.
	f.check(t, dirs, 8)
	t.Logf("master: %+v", m.Stats())
}

// TestMasterWorkersLooseDepth: a master on the Redis state with
// --loose-depth under a depth limit: levels overlap, so a page may be
// fetched before its shortest path is known; the state relinks
// (rstate.Options.Relink, workers fill Visit.Beyond from the configuration
// they load), so the workers fetch exactly the pages within the limit,
// each once.
func TestMasterWorkersLooseDepth(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 34, Hosts: 30, PagesPerHost: 20, Latency: time.Millisecond,
		Enable: websim.FeatureSlow, SlowShare: 0.3, SlowLatency: 30 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	f.cfg.LooseDepth = true
	f.cfg.Delay = crawl.Duration(time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := rstate.Open(ctx, f.rdb, rstate.Options{Crawl: "mwl", Bucket: "mw", SeenMode: "bloom",
		Relink: f.cfg.DepthOverlaps(), MaxDepth: f.cfg.MaxDepth})
	if err != nil {
		t.Fatal(err)
	}
	m := f.masterOn(t, "mwl", masterworker.RetryState(st))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	var dirs []string
	for i := 0; i < 2; i++ {
		w, dir := f.worker(t, "mwl", 8)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 0)
	kept := f.rdb.HLen(ctx, st.Prefix()+"links").Val()
	if kept == 0 {
		t.Error("no links kept: the master's state does not relink")
	}
	t.Logf("%d URLs in the truth, %d kept-links records", len(f.truth.MustFetch), kept)
}
