package layered

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// revisitWeb is a small web whose pages change (a day of the change model
// is 2 s) and never disappear.
func revisitWeb(t *testing.T) *websim.Server {
	t.Helper()
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 7, Hosts: 3, PagesPerHost: 12, ChangeDay: 2 * time.Second, DisappearShare: -1})
	if err != nil {
		t.Fatalf("cannot start websim: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// continuousConfig is a continuous, adaptive layered crawl of srv.
func continuousConfig(t *testing.T, srv *websim.Server) crawl.Config {
	cfg := testConfig(t, srv, srv.SeedURLs(3))
	cfg.Scope = websim.ScopeSeeds
	cfg.Revisit = crawl.RevisitAdaptive
	cfg.RevisitMin = crawl.Duration(200 * time.Millisecond)
	cfg.RevisitInitial = crawl.Duration(400 * time.Millisecond)
	cfg.RevisitMax = crawl.Duration(1500 * time.Millisecond)
	cfg.Continuous = true
	return cfg
}

// revisitCounts judges every record of the page store in dir, in time
// order, against websim's change history, as the master–worker and p2p
// continuous tests do: a revisit of an unchanged page should be answered
// 304 (counted in got304), a changed page never, and stored again
// (restored). Records within slack of a change are not judged.
func revisitCounts(t *testing.T, srv *websim.Server, dir string) (urls map[string]bool, unchanged, got304, changed, restored int) {
	t.Helper()
	rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	if _, err := rs.Iterate(func(r store.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].FetchedAt.Before(recs[j].FetchedAt) })
	web := srv.Web
	const slack = 150 * time.Millisecond
	ambiguous := func(u string, at time.Time) bool {
		a, _ := web.VersionAt(u, at.Add(-slack))
		b, _ := web.VersionAt(u, at.Add(slack))
		return a != b
	}
	last := map[string]store.Record{}
	urls = map[string]bool{}
	for _, r := range recs {
		urls[r.URL] = true
		if r.Status != 200 && r.Status != 304 {
			continue
		}
		prev, seen := last[r.URL]
		last[r.URL] = r
		if !seen {
			if r.Status == 304 {
				t.Errorf("%s: first fetch answered 304", r.URL)
			}
			continue
		}
		if _, ok := web.VersionAt(r.URL, r.FetchedAt); !ok || ambiguous(r.URL, prev.FetchedAt) || ambiguous(r.URL, r.FetchedAt) {
			continue
		}
		v0, _ := web.VersionAt(r.URL, prev.FetchedAt)
		v1, _ := web.VersionAt(r.URL, r.FetchedAt)
		switch {
		case v0 == v1:
			unchanged++
			if r.Status == 304 {
				got304++
			}
		case r.Status == 304:
			t.Errorf("%s: changed (version %d → %d) but answered 304", r.URL, v0, v1)
		default:
			changed++
			if r.PageNo >= 0 {
				restored++
			}
		}
	}
	return urls, unchanged, got304, changed, restored
}

// fetchedPages returns the URLs of the page store in dir whose last record
// is a 200 or a 304.
func fetchedPages(t *testing.T, dir string) map[string]bool {
	out := map[string]bool{}
	for u, r := range lastRecords(t, dir) {
		out[u] = r.Status == 200 || r.Status == 304
	}
	return out
}

// checkRevisits fails the test unless the revisits are enough to judge,
// ≥ 80 % of the unchanged ones were answered 304, every changed page was
// stored again, and every URL of the page store has its revisit record.
func checkRevisits(t *testing.T, srv *websim.Server, data string, c *Crawler) {
	t.Helper()
	urls, unchanged, got304, changed, restored := revisitCounts(t, srv, data)
	pages := fetchedPages(t, data)
	st := c.ScheduleStatus()
	t.Logf("%d URLs; revisits: %d unchanged (%d answered 304), %d changed (%d stored again); the coordinator counted %+v; schedule: %d records",
		len(urls), unchanged, got304, changed, restored, st.Counts, st.Records)
	if unchanged < 10 || changed < 2 {
		t.Fatalf("too few revisits to judge: %d unchanged, %d changed (want ≥ 10 and ≥ 2)", unchanged, changed)
	}
	if float64(got304) < 0.8*float64(unchanged) {
		t.Errorf("%d of %d revisits to unchanged pages answered 304, want ≥ 80%% (do the schedule entries reach the tasks?)", got304, unchanged)
	}
	if restored != changed {
		t.Errorf("%d of %d changed pages stored again", restored, changed)
	}
	if st.Counts.NotModified == 0 || st.Counts.Changed == 0 {
		t.Errorf("the coordinator's counts saw no 304 or no change: %+v", st.Counts)
	}
	// No schedule entry lost: every page fetched (200 or 304) is in the
	// schedule, due or pending (taken by the round the run stopped in).
	sched, err := state.Open(filepath.Join(data, DirName, "schedule"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	ctx := context.Background()
	have := map[string]bool{}
	if err := sched.LoadPending(ctx, func(q frontier.Request) error { have[q.URL] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	due, err := sched.TakeDue(ctx, time.Now().Add(24*time.Hour), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range due {
		have[q.URL] = true
	}
	var lost []string
	for u, ok := range pages {
		if ok && !have[u] {
			lost = append(lost, u)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d pages fetched have no schedule entry: %v", len(lost), len(pages), lost[:min(5, len(lost))])
	}
}

// untilRevisiting lets a continuous layered crawl run until its depth
// rounds and a first revisit round are done (at most a minute: a loaded
// machine once needed more than the 7 s these tests used to run for), then
// 4 s more of revisit rounds, and cancels it; done is where its Run
// returns, and is left for the caller to read.
func untilRevisiting(t *testing.T, c *Crawler, done chan error, cancel context.CancelFunc) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); c.repRevisit.Load() < 1; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			done <- err
			cancel()
			t.Fatalf("the continuous crawl ended before its first revisit round: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no revisit round done in a minute (depth round %d)", c.repRound.Load())
		}
	}
	time.Sleep(4 * time.Second)
	cancel()
}

// TestContinuousLayered runs a continuous, adaptive layered crawl (no
// Redis) on websim's changing pages: the rounds, then revisit rounds for
// 4 s after the first, until the context ends.
func TestContinuousLayered(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 7 s")
	}
	srv := revisitWeb(t)
	cfg := continuousConfig(t, srv)
	c, err := New(cfg, Options{Rounds: 6, Groups: 4}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	untilRevisiting(t, c, done, cancel)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a continuous layered crawl must run until its context ends, got %v", err)
	}
	if c.man.Phase != "done" || c.man.Revisit == 0 {
		t.Fatalf("phase %q after %d revisit rounds: the rounds did not end, or no revisit round ran", c.man.Phase, c.man.Revisit)
	}
	checkRevisits(t, srv, cfg.Data, c)
}

// TestContinuousLayeredRedis is TestContinuousLayered distributed: a
// coordinator and a worker process on a real redis-server, the revisit
// tasks leased like any task.
func TestContinuousLayeredRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 7 s, starts redis-server")
	}
	rs := redistest.Start(t)
	srv := revisitWeb(t)
	cfg := continuousConfig(t, srv)
	opt := Options{Rounds: 6, Groups: 4, Redis: rs.Client(), Crawl: "rv", NodeID: "coord", LeaseTTL: time.Second}
	coord, err := New(cfg, opt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	wcfg := continuousConfig(t, srv)
	wopt := opt
	wopt.Redis, wopt.NodeID = rs.Client(), "worker"
	worker, err := New(wcfg, wopt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cdone := make(chan error, 1)
	go func() { cdone <- coord.Run(ctx) }()
	// The coordinator role goes to coord: the worker starts once the
	// crawl is created in its data directory.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(cfg.Data, DirName, ManifestFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no crawl created in 30 s")
		}
	}
	wdone := make(chan error, 1)
	go func() { wdone <- worker.Run(ctx) }()
	untilRevisiting(t, coord, cdone, cancel)
	if err := <-cdone; !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		t.Fatalf("coordinator: a continuous layered crawl must run until its context ends, got %v", err)
	}
	<-wdone
	if fin, _ := rs.Client().HExists(context.Background(), newKeys("rv").meta(), metaFinished).Result(); fin {
		t.Error("a continuous crawl stopped by its context is marked finished")
	}
	if worker.fetchedN.Load() == 0 {
		t.Error("the worker fetched nothing")
	}
	checkRevisits(t, srv, cfg.Data, coord)
}
