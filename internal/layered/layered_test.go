package layered

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/net/html"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

func startWeb(t *testing.T) *websim.Server {
	t.Helper()
	srv, err := websim.Start(context.Background(), websim.Config{
		Seed: 5, Hosts: 8, PagesPerHost: 20, Enable: websim.FeatureNoise | websim.FeatureRedirects, TroubleShare: 0.5,
	})
	if err != nil {
		t.Fatalf("cannot start websim: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func testConfig(t *testing.T, srv *websim.Server, seeds []string) crawl.Config {
	c := crawl.NewConfig()
	c.Data = t.TempDir()
	c.Seeds = seeds
	c.Scope = websim.ScopeAny
	c.Resolve = srv.Resolve()
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 8
	c.RetryDelay = crawl.Duration(50 * time.Millisecond)
	c.Timeout = crawl.Duration(3 * time.Second)
	c.FirstByteTimeout = crawl.Duration(2 * time.Second)
	return c
}

func lastRecords(t *testing.T, dir string) map[string]store.Record {
	t.Helper()
	rs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]store.Record{}
	if _, err := rs.Iterate(func(r store.Record) error { out[r.URL] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func runLayered(t *testing.T, cfg crawl.Config, opt Options) *Crawler {
	t.Helper()
	c, err := New(cfg, opt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatalf("layered crawl: %v", err)
	}
	return c
}

// markupNoise is an oracle independent of package parse: websim marks its
// noise blocks with classes (<div class="nav">, <div class="footer">,
// <table class="links">). It returns the URLs of the <a> links inside such
// elements that the page does not also reference outside them.
func markupNoise(base *url.URL, body []byte) map[string]bool {
	z := html.NewTokenizer(bytes.NewReader(body))
	type open struct {
		tag   string
		noise bool
	}
	var stack []open
	inNoise := func() bool {
		for _, o := range stack {
			if o.noise {
				return true
			}
		}
		return false
	}
	noiseA, outside := map[string]bool{}, map[string]bool{}
	sawBase := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			for u := range outside {
				delete(noiseA, u)
			}
			return noiseA
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if tok.Data == "base" && !sawBase {
				for _, a := range tok.Attr {
					if a.Key == "href" {
						if b, ok := websim.Canonical(base, a.Val); ok {
							base, sawBase = b, true
						}
					}
				}
				continue
			}
			noisy := false
			for _, a := range tok.Attr {
				if a.Key == "class" && (a.Val == "nav" || a.Val == "footer" || a.Val == "links") {
					noisy = true
				}
			}
			for _, a := range tok.Attr {
				if a.Key != "href" && a.Key != "src" && a.Key != "content" {
					continue
				}
				v := a.Val
				if a.Key == "content" {
					_, after, ok := strings.Cut(strings.ToLower(v), "url=")
					if !ok {
						continue
					}
					v = v[len(v)-len(after):]
				}
				cu, ok := websim.Canonical(base, v)
				if !ok {
					continue
				}
				if tok.Data == "a" && (noisy || inNoise()) {
					noiseA[cu.String()] = true
				} else {
					outside[cu.String()] = true
				}
			}
			if tt == html.StartTagToken && !voidTag[tok.Data] {
				stack = append(stack, open{tok.Data, noisy})
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			for i := len(stack) - 1; i >= 0; i-- {
				if stack[i].tag == string(name) {
					stack = stack[:i]
					break
				}
			}
		}
	}
}

var voidTag = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true, "frame": true}

// checkAgainstTruth compares a layered crawl with the ratio rule
// (NoiseRatio, SPEC §2 S302) with what it must fetch: the pages reachable from the seeds within the depth limit through links that
// are neither in noise blocks (by the markup oracle; checked to be within
// websim's Truth.NoiseLinks) nor noise URLs (Truth.NoiseURLs), redirect
// targets keeping their source's depth. It must fetch exactly those, and
// none twice.
//
// maxRepeats bounds the URLs requested twice: an interrupted crawl refetches
// the URLs in flight at the interruption (one per running task), whose
// answers it never stored.
func checkAgainstTruth(t *testing.T, srv *websim.Server, truth *websim.Truth, dir string, maxRepeats int) map[string]store.Record {
	t.Helper()
	recs := lastRecords(t, dir)
	pages, err := store.OpenPageFiles(filepath.Join(dir, "pages"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pages.Close()
	noiseURL := map[string]bool{}
	for _, u := range truth.NoiseURLs {
		noiseURL[u] = true
		if _, ok := recs[u]; ok {
			t.Errorf("noise URL %s was fetched", u)
		}
	}
	must := map[string]bool{}
	for _, u := range truth.MustFetch {
		must[u] = true
	}
	type item struct {
		u string
		d int
	}
	var queue []item
	want := map[string]bool{}
	for _, s := range truth.Rules.Seeds {
		cu, _ := websim.Canonical(nil, s)
		want[cu.String()] = true
		queue = append(queue, item{cu.String(), 0})
	}
	removedNav := 0
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		rec, ok := recs[it.u]
		if !ok {
			t.Errorf("%s (depth %d) was not fetched", it.u, it.d)
			continue
		}
		var noise map[string]bool
		if rec.PageNo >= 0 && rec.Status == 200 {
			pg, err := pages.Read(rec.PageNo)
			if err != nil {
				t.Fatal(err)
			}
			base, _ := url.Parse(rec.FinalURL)
			noise = markupNoise(base, pg.Body)
			for n := range noise {
				if !slices.Contains(truth.NoiseLinks[it.u], n) {
					t.Errorf("oracle: %s is noise on %s, websim does not say so", n, it.u)
				}
			}
		}
		for _, l := range rec.OutLinks {
			d := it.d + 1
			if rec.Status >= 300 && rec.Status < 400 {
				d = it.d // a redirect target keeps the depth
			}
			if noise[l] {
				removedNav++
			}
			if d > truth.Rules.MaxDepth || want[l] || noise[l] || noiseURL[l] || !must[l] {
				continue
			}
			want[l] = true
			queue = append(queue, item{l, d})
		}
	}
	for u := range recs {
		if !want[u] {
			t.Errorf("fetched %s, reachable only through noise", u)
		}
	}
	if removedNav == 0 {
		t.Error("no noise-block links on the pages: the test checks nothing")
	}
	if d := srv.Log().Duplicates(); len(d) > maxRepeats {
		t.Errorf("URLs requested more than once: %v", d)
	}
	t.Logf("fetched %d URLs, %d expected; the plain crawl fetches %d, of which %d are noise URLs; %d noise-block links skipped",
		len(recs), len(want), len(truth.MustFetch), len(truth.NoiseURLs), removedNav)
	return recs
}

func TestLayeredCrawlAgainstTruth(t *testing.T) {
	srv := startWeb(t)
	seeds := srv.SeedURLs(2)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, srv, seeds)
	c := runLayered(t, cfg, Options{Rounds: 3, Groups: 4, NoiseRule: NoiseRatio})
	recs := checkAgainstTruth(t, srv, truth, cfg.Data, 0)

	reps := c.Reports()
	if len(reps) != 3 {
		t.Fatalf("%d round reports, want 3", len(reps))
	}
	var dom, clu, visit, fetched int
	for _, r := range reps {
		dom += r.NoiseDOM
		clu += r.NoiseCluster + r.NoiseOutlier
		visit += r.DupVisit
		fetched += r.Fetched
	}
	if dom == 0 || clu == 0 || visit == 0 {
		t.Errorf("a pass removed nothing: dom %d cluster %d visit-list duplicates %d", dom, clu, visit)
	}
	if fetched != len(recs) {
		t.Errorf("reports count %d fetches, records hold %d URLs", fetched, len(recs))
	}
	// The report is saved; the pages are in the one page store.
	var saved []RoundReport
	if err := readJSON(filepath.Join(cfg.Data, DirName, ReportFile), &saved); err != nil || len(saved) != 3 {
		t.Errorf("saved report: %v, %d rounds", err, len(saved))
	}
	pages, err := store.OpenPageFiles(filepath.Join(cfg.Data, "pages"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pages.Close()
	stored := 0
	for _, r := range recs {
		if r.PageNo < 0 {
			continue
		}
		stored++
		pg, err := pages.Read(r.PageNo)
		if err != nil || pg.URL != r.FinalURL {
			t.Errorf("page %d of %s: %v, URL %q", r.PageNo, r.URL, err, pg.URL)
		}
	}
	if stored == 0 {
		t.Error("no pages stored")
	}
	// Running again does nothing: the crawl is complete.
	c.Close()
	before := srv.Log().Len()
	runLayered(t, cfg, Options{Rounds: 3, Groups: 4, NoiseRule: NoiseRatio})
	if after := srv.Log().Len(); after != before {
		t.Errorf("a complete crawl made %d more requests", after-before)
	}
}

func TestLayeredResume(t *testing.T) {
	srv := startWeb(t)
	seeds := srv.SeedURLs(2)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, srv, seeds)
	// Kill (cancel) the crawl at several points of its progress (fetches of all runs so
	// far), then let it finish. Each point must lie inside the crawl, or its kill tests
	// nothing.
	if n := len(truth.MustFetch); n <= 85 {
		t.Fatalf("the web has %d URLs: the kill points (up to 85 fetches) must lie inside the crawl", n)
	}
	var before int64 // fetches of the killed runs
	for _, stopAt := range []int64{5, 40, 85} {
		reg := prometheus.NewRegistry()
		c, err := New(cfg, Options{Rounds: 3, Groups: 4, NoiseRule: NoiseRatio}, nil, reg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Poll the crawl's fetch counter (every millisecond) and kill at the point.
			for ctx.Err() == nil {
				if before+c.fetchedN.Load() >= stopAt {
					cancel()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		err = c.Run(ctx)
		cancel()
		wg.Wait()
		c.Close()
		if err == nil {
			t.Fatalf("the crawl finished before %d fetches: the kill tested nothing", stopAt)
		}
		before += c.fetchedN.Load()
	}
	runLayered(t, cfg, Options{Rounds: 3, Groups: 4, NoiseRule: NoiseRatio})
	checkAgainstTruth(t, srv, truth, cfg.Data, 3*4)
}

func TestLayeredRejectsBadInput(t *testing.T) {
	srv := startWeb(t)
	cfg := testConfig(t, srv, srv.SeedURLs(1))
	cases := []struct {
		opt  Options
		want string
	}{
		{Options{Rounds: -1}, "--rounds"},
		{Options{Groups: -2}, "--groups"},
		{Options{NoiseThreshold: 2}, "noise threshold"},
	}
	for _, c := range cases {
		if _, err := New(cfg, c.opt, nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error about %s", c.opt, err, c.want)
		}
	}
	c := runLayered(t, cfg, Options{Rounds: 1, Groups: 2})
	c.Close()
	c2, err := New(cfg, Options{Rounds: 1, Groups: 3}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := New(cfg, Options{Rounds: 1, Groups: 3}, nil, nil); err == nil || !strings.Contains(err.Error(), "another layered crawl") {
		t.Errorf("second crawler on one data directory: %v", err)
	}
	if err := c2.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "--groups") {
		t.Errorf("resume with other groups: %v", err)
	}
}

func TestLayeredDistributed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	rs := redistest.Start(t)
	srv := startWeb(t)
	seeds := srv.SeedURLs(2)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	coordCfg := testConfig(t, srv, seeds)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A worker that dies right after taking a task (it never runs it, never
	// heart-beats again): the coordinator must hand the task out again. It
	// is blocked on the task list first, so it gets the first task.
	k := newKeys("t1")
	rdb := rs.Client()
	if err := rdb.SAdd(ctx, k.workers(), "dead-1").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, k.hb("dead-1"), "1", 500*time.Millisecond)
	dead := make(chan string, 1)
	// It waits on the shard of the first seed's task in round 0.
	shard := shardOf(Task{Kind: KindFetch, Group: GroupOf(seeds[0], 4)})
	go func() {
		v, _ := rdb.BLMove(ctx, k.todo(shard), k.proc(shard, "dead-1"), "LEFT", "RIGHT", 30*time.Second).Result()
		dead <- v
	}()
	waitBlocked(t, rdb, 1) // the doomed worker waits on the task list before anyone else
	coord, err := New(coordCfg, Options{Rounds: 3, Groups: 4, NoiseRule: NoiseRatio, Redis: rdb, Crawl: "t1", NodeID: "coord", LeaseTTL: time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	workerCfg := testConfig(t, srv, seeds)
	worker, err := New(workerCfg, Options{Rounds: 3, Groups: 4, NoiseRule: NoiseRatio, Redis: rs.Client(), Crawl: "t1", NodeID: "worker", LeaseTTL: time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	cdone := make(chan error, 1)
	go func() { cdone <- coord.Run(ctx) }()
	// The worker starts once the coordinator has handed out its first task, which the
	// doomed worker took.
	if task := <-dead; task == "" {
		t.Fatal("the dead worker took no task")
	}
	wdone := make(chan error, 1)
	go func() { wdone <- worker.Run(ctx) }()
	if err := <-cdone; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	if err := <-wdone; err != nil {
		t.Fatalf("worker: %v", err)
	}

	// The coordinator's page store holds the whole crawl, exactly what an
	// embedded crawl fetches; the worker and the doomed worker did tasks.
	checkAgainstTruth(t, srv, truth, coordCfg.Data, 4)
	if worker.fetchedN.Load() == 0 || coord.fetchedN.Load() == 0 {
		t.Errorf("worker fetched %d URLs, coordinator %d: both should work", worker.fetchedN.Load(), coord.fetchedN.Load())
	}
	if n, _ := rdb.LLen(ctx, k.proc(shard, "dead-1")).Result(); n != 0 {
		t.Errorf("the dead worker's task was not handed out again")
	}
	if len(worker.Reports()) != 0 {
		t.Error("the worker has round reports")
	}
	if _, err := os.Stat(filepath.Join(coordCfg.Data, DirName, ReportFile)); err != nil {
		t.Error(err)
	}
	// Tasks by the worker process must have reached the coordinator's store.
	if fin, _ := rdb.HExists(ctx, k.meta(), metaFinished).Result(); !fin {
		t.Error("crawl not marked finished")
	}
}

// waitBlocked waits until Redis has n clients blocked in a command (INFO clients'
// blocked_clients), polling every millisecond; it fails the test after 10 s.
func waitBlocked(t *testing.T, rdb redis.UniversalClient, n int) {
	t.Helper()
	want := fmt.Sprintf("blocked_clients:%d\r\n", n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rdb.Info(context.Background(), "clients").Result()
		if err == nil && strings.Contains(info, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d blocked Redis clients after 10 s: %v\n%s", n, err, info)
		}
		time.Sleep(time.Millisecond)
	}
}
