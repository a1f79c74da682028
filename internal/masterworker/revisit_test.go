package masterworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestContinuousMasterWorkers runs a continuous, adaptive master–worker
// crawl (the master's state split over its parts on a real redis-server)
// over websim's changing pages for a few seconds, with a third worker
// killed (kill -9: masterworker.Victim) holding a task once revisits flow,
// and judges the workers' records against websim's history: pages
// are revisited, an unchanged page's revisit is answered 304 (the worker
// sent the validators of the schedule entry that came with its task), a
// changed page is stored again, and every URL recorded has its revisit
// record in the state afterwards (the dead worker's tasks lost no schedule
// entry). It fails if the master never takes due URLs (no revisits), if the
// schedule entry does not reach the worker intact (no 304), or if a task
// of the killed worker leaves its URL without a record.
func TestContinuousMasterWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 7 s")
	}
	f := newFixture(t, websim.Config{Seed: 7, Hosts: 3, PagesPerHost: 12, ChangeDay: 2 * time.Second, DisappearShare: -1},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeSeeds})
	f.cfg.Revisit = crawl.RevisitAdaptive
	f.cfg.RevisitMin = crawl.Duration(200 * time.Millisecond)
	f.cfg.RevisitInitial = crawl.Duration(400 * time.Millisecond)
	f.cfg.RevisitMax = crawl.Duration(1500 * time.Millisecond)
	f.cfg.Continuous = true
	f.cfg.Seen = "bloom"
	const name = "mwrevisit"
	// The master's client as spider master sizes it (Options.MasterConns).
	f.rdb = redis.NewClient(&redis.Options{Addr: f.rs.Addr(), PoolSize: 10*runtime.GOMAXPROCS(0) + opts(name).MasterConns()})
	t.Cleanup(func() { f.rdb.Close() })
	ctx := context.Background()
	st, err := masterworker.OpenState(ctx, f.rdb, name, masterworker.StateOptions{SeenMode: f.cfg.Seen, ExpectedURLs: 10_000, MaxDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	rv, ok := st.(crawlstate.Revisits)
	if !ok {
		t.Fatalf("the master's state %T keeps no revisit schedule", st)
	}
	m := f.masterOn(t, name, st)
	m.UseSchedule(rv)

	// The crawl runs at least 7 s, and on until the master has taken the
	// killed worker's task back and a worker fetched its URL again (a
	// loaded machine may take longer than 7 s), at most 40 s.
	started := time.Now()
	runCtx, stop := context.WithTimeout(ctx, 40*time.Second)
	defer stop()
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return m.Run(gctx) })
	// Each process its own Redis client, as separate processes have: a
	// worker's blocking pops then never hold the master's connections.
	fa, fb := *f, *f
	fa.rdb, fb.rdb = f.rs.Client(), f.rs.Client()
	wa, dirA := fa.worker(t, name, 4)
	wb, dirB := fb.worker(t, name, 4)
	g.Go(func() error { return wa.Run(gctx) })
	g.Go(func() error { return wb.Run(gctx) })
	// A third worker is killed (kill -9) holding a task, once revisits
	// flow: its heartbeat stops, the task stays in its processing list.
	time.Sleep(2500 * time.Millisecond)
	proc := masterworker.Victim(t, f.rs.Client(), name)
	killedAt := time.Now()
	raw, err := f.rdb.LRange(ctx, proc, 0, -1).Result()
	if err != nil || len(raw) != 1 {
		t.Fatalf("the killed worker's processing list: %v, %v", raw, err)
	}
	var task masterworker.Task
	if err := json.Unmarshal([]byte(raw[0]), &task); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer stop()
		for runCtx.Err() == nil {
			if time.Since(started) >= 7*time.Second && m.Stats().Requeued > 0 &&
				fetchedAfter(task.Request.URL, killedAt, dirA, dirB) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if err := g.Wait(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatalf("crawl failed: %v", err)
	}
	if s := m.Stats(); s.Requeued == 0 {
		t.Errorf("the killed worker's task was not taken back: %+v", s)
	}

	// Every record, in time order, judged against the page's history.
	recs := revisittest.Records(t, dirA, dirB)
	revisittest.SortByFetchTime(recs)
	rep := revisittest.Judge(recs, f.srv.Web, revisittest.Options{})
	rep.Check(t, revisittest.First304, revisittest.Changed304)
	urls := rep.URLs
	t.Logf("%d records of %d URLs; revisits: %d unchanged (%d answered 304), %d changed (%d stored again); worker A fetched %d, B %d; the killed worker held %s (a revisit: %v)",
		len(recs), len(urls), rep.Unchanged, rep.Got304, rep.Changed, rep.Restored, wa.Fetched(), wb.Fetched(), task.Request.URL, len(task.Schedule) > 0)
	again := false
	for _, r := range recs {
		again = again || r.URL == task.Request.URL && r.FetchedAt.After(killedAt)
	}
	if !again {
		t.Errorf("%s, the killed worker's task, was not fetched again after the kill", task.Request.URL)
	}
	rep.Expect(t, 10, 2, "(do the schedule entries reach the workers?)")

	// No schedule entry lost: every recorded URL has its revisit record in
	// one of the state's parts.
	var rvKeys []string
	for i := range masterworker.Shards {
		rvKeys = append(rvKeys, rstate.KeyPrefix(name, masterworker.ShardTag(i, masterworker.Shards))+"rv")
	}
	var lost []string
	for u := range urls {
		k := string(dedup.KeyOf(u).AppendBinary(nil))
		found := false
		for _, key := range rvKeys {
			if ok, err := f.rdb.HExists(ctx, key, k).Result(); err != nil {
				t.Fatal(err)
			} else if ok {
				found = true
				break
			}
		}
		if !found {
			lost = append(lost, u)
		}
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		t.Errorf("%d of %d recorded URLs have no revisit record, e.g. %v", len(lost), len(urls), lost[:min(5, len(lost))])
	}
	records, _, err := rv.Scheduled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if records < int64(len(urls)) {
		t.Errorf("the schedule holds %d records, %d URLs were recorded", records, len(urls))
	}
}

// TestMasterOneShotRevisits: a one-shot master–worker crawl with --revisit
// fixed, run again once its pages are due, queues them at the start (as a
// single-node crawl does) and ends when they are fetched: every page with
// validators is revisited with a conditional GET and answered 304 (the
// pages do not change within the test). It fails if the second master
// run takes nothing due (it would end at once, fetching nothing).
func TestMasterOneShotRevisits(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 9, Hosts: 2, PagesPerHost: 8, ChangeDay: 1000 * time.Hour, DisappearShare: -1},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeSeeds})
	f.cfg.Revisit = crawl.RevisitFixed
	f.cfg.RevisitMin = crawl.Duration(100 * time.Millisecond)
	f.cfg.RevisitInitial = crawl.Duration(300 * time.Millisecond)
	f.cfg.Seen = "bloom"
	const name = "mwoneshot"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func() []store.Record {
		t.Helper()
		st, err := masterworker.OpenState(ctx, f.rdb, name, masterworker.StateOptions{SeenMode: f.cfg.Seen, ExpectedURLs: 10_000, MaxDepth: -1})
		if err != nil {
			t.Fatal(err)
		}
		m := f.masterOn(t, name, st)
		m.UseSchedule(st.(crawlstate.Revisits))
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return m.Run(gctx) })
		masterworker.WaitNotDone(t, f.rdb, name)
		fw := *f
		fw.rdb = f.rs.Client()
		w, dir := fw.worker(t, name, 2)
		g.Go(func() error { return w.Run(gctx) })
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		m.Close()
		return revisittest.Records(t, dir)
	}
	first := run()
	time.Sleep(400 * time.Millisecond) // every page due
	second := run()
	web := f.srv.Web
	want := map[string]bool{}
	for _, r := range first {
		if _, ok := web.VersionAt(r.URL, r.FetchedAt); ok && r.Status == 200 {
			want[r.URL] = true
		}
	}
	got := map[string]bool{}
	for _, r := range second {
		if r.Status == 304 {
			got[r.URL] = true
		}
	}
	t.Logf("first run %d records, %d pages with validators; second run %d records, %d answered 304", len(first), len(want), len(second), len(got))
	if len(want) == 0 {
		t.Fatal("no page with validators in the first run: the test proves nothing")
	}
	missing := revisittest.Missing(want, got)
	if len(missing) > 0 {
		t.Errorf("%d of %d pages not revisited with a 304 by the second run, e.g. %v", len(missing), len(want), missing[:min(5, len(missing))])
	}
}

// fetchedAfter reports whether a record of u fetched after t is in one of
// the data directories (read-only: the workers may still be writing).
func fetchedAfter(u string, at time.Time, dirs ...string) bool {
	found := false
	for _, d := range dirs {
		rs, err := store.OpenRecords(d, store.Options{ReadOnly: true})
		if err != nil {
			continue // not created yet
		}
		rs.Iterate(func(r store.Record) error {
			found = found || r.URL == u && r.FetchedAt.After(at)
			return nil
		})
		rs.Close()
	}
	return found
}
