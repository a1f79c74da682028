package p2p_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestContinuousPeers runs a continuous, adaptive peer-to-peer crawl of two
// nodes (each with its own Redis client, as separate processes) over
// websim's changing pages for a few seconds and judges the records of both
// against websim's history: pages are revisited by the node that owns
// their bucket, an unchanged page's revisit is answered 304 (the bucket's
// pending record carried the schedule entry's validators), a changed page
// is stored again, no node decides the crawl is done while it runs, and
// every recorded URL has its revisit record in its bucket afterwards. It
// fails if the nodes never take due URLs (no revisits), if they end the
// crawl (termination detection in continuous mode), or if the schedule
// entries do not reach the fetcher (no 304).
func TestContinuousPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 7 s")
	}
	f := newFixtureSeeds(t, websim.Config{Seed: 7, Hosts: 4, PagesPerHost: 10, ChangeDay: 2 * time.Second, DisappearShare: -1},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeSeeds}, 4)
	f.cfg.Revisit = crawl.RevisitAdaptive
	f.cfg.RevisitMin = crawl.Duration(200 * time.Millisecond)
	f.cfg.RevisitInitial = crawl.Duration(400 * time.Millisecond)
	f.cfg.RevisitMax = crawl.Duration(1500 * time.Millisecond)
	f.cfg.Continuous = true
	const name = "p2previsit"
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
	defer cancel()
	var dirs []string
	errs := make(chan error, 2)
	started := time.Now()
	for _, id := range []string{"n1", "n2"} {
		fn := *f
		fn.rdb = f.rs.Client()
		n, dir := fn.node(t, steadyOptions(name, id, 100))
		dirs = append(dirs, dir)
		go func() {
			err := n.Run(ctx)
			if time.Since(started) < 6*time.Second {
				t.Errorf("node %s ended after %s (%v): a continuous crawl runs until stopped", id, time.Since(started).Round(time.Millisecond), err)
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Errorf("node failed: %v", err)
		}
	}

	recs := revisittest.Records(t, dirs...)
	revisittest.SortByFetchTime(recs)
	// Only changing pages carry validators (websim: the small pages have
	// no change history): Judge skips the others.
	rep := revisittest.Judge(recs, f.srv.Web, revisittest.Options{})
	rep.Check(t, revisittest.Changed304)
	urls := rep.URLs
	t.Logf("%d records of %d URLs; revisits: %d unchanged (%d answered 304), %d changed (%d stored again)",
		len(recs), len(urls), rep.Unchanged, rep.Got304, rep.Changed, rep.Restored)
	rep.Expect(t, 10, 2, "")
	var lost []string
	bg := context.Background()
	for u := range urls {
		k := string(dedup.KeyOf(u).AppendBinary(nil))
		found := false
		for b := range steadyOptions(name, "x", 1).Buckets {
			if ok, err := f.rdb.HExists(bg, rstate.KeyPrefix(name, rstate.BucketName(b))+"rv", k).Result(); err != nil {
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
}

// TestPeerRetryFailed: a seed that failed (its server down) in a finished
// peer-to-peer crawl is fetched when the crawl is run again with
// --retry-failed once the server is up: the finished crawl resumes, the
// node makes the failed URLs of each bucket it acquires due and takes
// them, and the crawl ends again. It fails if the rerun ends at once (the
// crawl taken as done) or never makes the failure due.
func TestPeerRetryFailed(t *testing.T) {
	f := newFixtureSeeds(t, websim.Config{Seed: 3, Hosts: 1, PagesPerHost: 5}, websim.TruthRules{MaxDepth: 1, Scope: websim.ScopeSeeds}, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // down for the first run
	_, port, _ := net.SplitHostPort(addr)
	down := "http://down.test:" + port + "/"
	f.cfg.Seeds = append(f.cfg.Seeds, down)
	f.cfg.Resolve = append(f.cfg.Resolve, "down.test:"+port+":127.0.0.1")
	f.cfg.MaxRetries = 0
	const name = "p2pretry"
	run := func(retry bool) map[string]int {
		t.Helper()
		fn := *f
		fn.cfg.RetryFailed = retry
		n, dir := fn.node(t, steadyOptions(name, "n1", 100))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := n.Run(ctx); err != nil {
			t.Fatalf("node: %v", err)
		}
		n.Close()
		status := map[string]int{}
		rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		rs.Iterate(func(r store.Record) error { status[r.URL] = r.Status; return nil })
		return status
	}
	first := run(false)
	if s, ok := first[down]; !ok || s != 0 {
		t.Fatalf("first run: %s recorded %v (%v), want a failure without an answer", down, s, ok)
	}
	var l2 net.Listener
	for range 50 { // the port was just closed: retry briefly
		if l2, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("cannot listen on %s again: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><title>up</title><body><p>the server is up again and serves this page</p></body></html>"))
	})}
	go srv.Serve(l2)
	t.Cleanup(func() { srv.Close() })
	second := run(true)
	if s := second[down]; s != 200 {
		t.Fatalf("the rerun with --retry-failed recorded %s as %d (records %v), want 200", down, s, second)
	}
	for u := range second {
		if u != down && first[u] == 200 {
			t.Errorf("the rerun fetched %s again, which the first run fetched (revisit off)", u)
		}
	}
}
