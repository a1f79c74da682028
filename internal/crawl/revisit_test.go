package crawl_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// allRecords reads every record of a data directory, in file order.
func allRecords(t *testing.T, dir string) []store.Record {
	t.Helper()
	rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []store.Record
	if _, err := rs.Iterate(func(r store.Record) error { out = append(out, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// runFor runs a crawl of cfg for d (a continuous crawl ends only so) and
// returns its revisit counts.
func runFor(t *testing.T, cfg crawl.Config, d time.Duration, clock func() time.Time) crawl.RevisitCounts {
	t.Helper()
	eng, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if clock != nil {
		crawl.SetRevisitClock(eng, clock)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := eng.Run(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("crawl failed: %v", err)
	}
	c := eng.RevisitCounts()
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

// runUntil runs a continuous crawl of cfg until done reports true (polled
// every 100 ms) or max has passed, which fails the test.
func runUntil(t *testing.T, cfg crawl.Config, max time.Duration, done func() bool) {
	t.Helper()
	eng, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- eng.Run(ctx) }()
	deadline := time.After(max)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err := <-ran:
			t.Fatalf("the continuous crawl ended by itself: %v", err)
		case <-deadline:
			cancel()
			<-ran
			t.Fatalf("the crawl did not get far enough in %v", max)
		case <-tick.C:
			if done() {
				break wait
			}
		}
	}
	cancel()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("crawl failed: %v", err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestContinuousRevisits crawls websim's changing pages continuously with
// the adaptive policy and judges every revisit against websim's history:
// an unchanged page must be answered 304 without a body (the goal:
// ≥ 80 %), a changed page must be fetched and stored again with its new
// fingerprint, and no 304 may stand for a page that changed. It fails if
// the fetcher sends no validators (no 304 at all), if a 304 stores a page
// or change detection follows validators instead of content.
//
// "bad servers" gives half the hosts a validator fault (websim: ETags new
// at every answer, Last-Modified in the future, 304 to unconditional
// requests): the well-behaved hosts must still answer ≥ 80 % of unchanged
// revisits with 304, and no host may make a change seen where there is
// none or a change missed.
func TestContinuousRevisits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12 s")
	}
	t.Run("good servers", func(t *testing.T) {
		continuousRevisits(t, websim.Config{Seed: 7, Hosts: 3, PagesPerHost: 12, ChangeDay: 2 * time.Second, DisappearShare: -1})
	})
	t.Run("bad servers", func(t *testing.T) {
		continuousRevisits(t, websim.Config{Seed: 21, Hosts: 6, PagesPerHost: 8, ChangeDay: 2 * time.Second, DisappearShare: -1,
			ValidatorFaults: websim.AllValidatorFaults, FaultShare: 0.5})
	})
}

func continuousRevisits(t *testing.T, wc websim.Config) {
	srv := startWeb(t, wc)
	cfg := crawlConfig(t, srv, websim.TruthRules{Seeds: srv.SeedURLs(wc.Hosts), MaxDepth: -1, Scope: websim.ScopeSeeds})
	cfg.Revisit = crawl.RevisitAdaptive
	cfg.RevisitMin = crawl.Duration(200 * time.Millisecond)
	cfg.RevisitInitial = crawl.Duration(400 * time.Millisecond)
	cfg.RevisitMax = crawl.Duration(1500 * time.Millisecond)
	cfg.Continuous = true
	c := runFor(t, cfg, 6*time.Second, nil)

	web := srv.Web
	rep := revisittest.Judge(allRecords(t, cfg.Data), web, revisittest.Options{Faulty: revisittest.FaultyHosts(web)})
	rep.Check(t, revisittest.Stored304, revisittest.First304, revisittest.UnchangedNewFingerprint,
		revisittest.Changed304, revisittest.ChangedNotStored)
	// Here a changed page answered 304 counts as changed (and fails), and
	// stored again means with a new fingerprint.
	unchanged, got304, badUnchanged, bad304 := rep.Unchanged, rep.Got304, rep.FaultyUnchanged, rep.Faulty304
	changed, restored, skipped := rep.Changed+rep.Changed304, rep.RestoredNew, rep.Skipped
	t.Logf("revisits judged: %d unchanged on good hosts (%d answered 304), %d unchanged on bad hosts (%d answered 304), %d changed (%d stored again), %d near a change skipped; counts %+v",
		unchanged, got304, badUnchanged, bad304, changed, restored, skipped, c)
	faults := map[string]string{}
	for _, seed := range srv.SeedURLs(wc.Hosts) {
		if f := web.HostFault(revisittest.HostName(seed)); f != 0 {
			faults[revisittest.HostName(seed)] = f.String()
		}
	}
	t.Logf("validator faults: %v", faults)
	if all := unchanged + badUnchanged; all > 0 {
		t.Logf("304 share of unchanged revisits, all hosts: %.2f", float64(got304+bad304)/float64(all))
	}
	if unchanged < 20 || changed < 3 {
		t.Fatalf("too few revisits to judge: %d unchanged, %d changed (want ≥ 20 and ≥ 3)", unchanged, changed)
	}
	if float64(got304) < 0.8*float64(unchanged) {
		t.Errorf("%d of %d revisits to unchanged pages answered 304, want ≥ 80%%", got304, unchanged)
	}
	if c.Revisits == 0 || c.NotModified == 0 || c.Changed == 0 || c.Taken == 0 {
		t.Errorf("revisit counts not kept: %+v", c)
	}
}

// freePort returns a loopback port nothing listens on (just closed).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serveAt serves h on addr (loopback) until the test ends.
func serveAt(t *testing.T, addr string, h http.Handler) {
	t.Helper()
	var l net.Listener
	var err error
	for range 50 { // the port was just closed: retry briefly
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("cannot listen on %s again: %v", addr, err)
	}
	s := &http.Server{Handler: h}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
}

// oneSite is a crawl config of the site served at addr (the URL host
// site.test resolves there), seed / only.
func oneSite(t *testing.T, addr string) crawl.Config {
	_, port, _ := net.SplitHostPort(addr)
	c := crawl.NewConfig()
	c.Data = t.TempDir()
	c.Seeds = []string{"http://site.test:" + port + "/"}
	c.MaxDepth = 0
	c.Resolve = []string{"site.test:" + port + ":127.0.0.1"}
	c.AllowPrivate = true
	c.Delay = 0
	c.MaxRetries = 0
	c.Concurrency = 2
	c.Timeout = crawl.Duration(3 * time.Second)
	return c
}

func page(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, "<html><title>up</title><body><p>the server is up again and serves this page</p></body></html>")
}

// TestFailedSeedRetried: a crawl whose seed failed with the server down
// (connection refused) schedules a retry on the class's back-off and says
// when; a run before then fetches nothing, a run after it (the clock moved
// past the back-off) fetches the seed, and --retry-failed fetches it at
// once. It fails if failures are completed for good (the second `spider
// crawl` of a new user "crawled 0 URLs" for ever).
func TestFailedSeedRetried(t *testing.T) {
	for _, how := range []string{"due", "retry-failed"} {
		t.Run(how, func(t *testing.T) {
			addr := freePort(t)
			cfg := oneSite(t, addr)
			start := time.Now()
			c := runFor(t, cfg, 30*time.Second, nil)
			recs := allRecords(t, cfg.Data)
			if len(recs) != 1 || recs[0].Outcome != crawl.OutcomeRefused {
				t.Fatalf("server down: want one refused record, got %+v", recs)
			}
			if c.Failed != 1 || c.FailedNext.Before(start.Add(20*time.Second)) || c.FailedNext.After(time.Now().Add(40*time.Second)) {
				t.Fatalf("want one failure retried in about 30 s (refused), got %+v", c)
			}
			serveAt(t, addr, http.HandlerFunc(page))
			// Before the back-off: nothing is due.
			runFor(t, cfg, 30*time.Second, nil)
			if n := len(allRecords(t, cfg.Data)); n != 1 {
				t.Fatalf("a run before the retry is due fetched %d records, want none", n-1)
			}
			var clock func() time.Time
			if how == "due" {
				clock = func() time.Time { return time.Now().Add(time.Minute) }
			} else {
				cfg.RetryFailed = true
			}
			c = runFor(t, cfg, 30*time.Second, clock)
			recs = allRecords(t, cfg.Data)
			if len(recs) != 2 || recs[1].Status != 200 || recs[1].PageNo < 0 {
				t.Fatalf("want the seed fetched on the next run, got %+v", recs)
			}
			if c.Retried != 1 || c.Failed != 0 {
				t.Errorf("counts: want one retry and no failure, got %+v", c)
			}
		})
	}
}

// badServer answers / as a bad server does (the bad input) and
// notes the conditional headers of every request.
type badServer struct {
	mu   sync.Mutex
	n    int
	kind string
	inm  []string // If-None-Match of each request of /
	ims  []string // If-Modified-Since
}

func (b *badServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	b.mu.Lock()
	b.n++
	n := b.n
	b.inm = append(b.inm, r.Header.Get("If-None-Match"))
	b.ims = append(b.ims, r.Header.Get("If-Modified-Since"))
	b.mu.Unlock()
	switch b.kind {
	case "etag-every-answer":
		w.Header().Set("ETag", fmt.Sprintf(`"answer-%d"`, n))
	case "future-last-modified":
		w.Header().Set("Last-Modified", time.Now().Add(365*24*time.Hour).UTC().Format(http.TimeFormat))
	case "unconditional-304":
		// No validators ever, so no request can be conditional.
		if n > 1 {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	case "fails-after-first":
		if n > 1 {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
	}
	page(w, r)
}

// TestBadValidators revisits a page of a bad server (fixed policy, every
// 200 ms, for 1.5 s): ETags new at every answer with the same content are
// no change; a Last-Modified in the future is never sent back; a 304 to a
// request without validators is a failure, the stored copy stays. Each
// fails if the fetcher or the policy trusts validators over content.
func TestBadValidators(t *testing.T) {
	for _, kind := range []string{"etag-every-answer", "future-last-modified", "unconditional-304", "fails-after-first"} {
		t.Run(kind, func(t *testing.T) {
			addr := freePort(t)
			b := &badServer{kind: kind}
			serveAt(t, addr, b)
			cfg := oneSite(t, addr)
			cfg.Revisit = crawl.RevisitFixed
			cfg.RevisitMin = crawl.Duration(100 * time.Millisecond)
			cfg.RevisitInitial = crawl.Duration(200 * time.Millisecond)
			cfg.Continuous = true
			c := runFor(t, cfg, 1500*time.Millisecond, nil)
			recs := allRecords(t, cfg.Data)
			b.mu.Lock()
			defer b.mu.Unlock()
			t.Logf("%d requests; counts %+v; If-None-Match %q; If-Modified-Since %q", b.n, c, b.inm, b.ims)
			if kind == "fails-after-first" {
				// The revisit failed (503, retried on its back-off): the
				// summary shows the failure, the WARC export keeps the copy.
				if len(recs) != 2 || recs[1].Status != 503 || c.Failed != 1 {
					t.Fatalf("want a 200 then a 503 record and one failure scheduled, got %+v, %+v", recs, c)
				}
				var warcOut bytes.Buffer
				if err := crawl.Export(context.Background(), cfg.Data, "warc", &warcOut); err != nil {
					t.Fatal(err)
				}
				zr, err := gzip.NewReader(&warcOut)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(zr)
				if !bytes.Contains(body, []byte("the server is up again")) {
					t.Errorf("the WARC export lost the page's copy behind a failed revisit")
				}
				return
			}
			if kind == "unconditional-304" {
				// The revisit has no validators to send: its 304 is the
				// server's fault, a failure (retried in 10 minutes), and
				// the copy of the first fetch stays.
				if b.n != 2 || b.inm[1] != "" || b.ims[1] != "" {
					t.Fatalf("want one unconditional revisit, got %d requests (%q, %q)", b.n, b.inm, b.ims)
				}
				if len(recs) != 2 || recs[0].Status != 200 || recs[0].PageNo < 0 || recs[1].Status != 304 || recs[1].PageNo >= 0 || recs[1].Error == "" {
					t.Fatalf("want a stored 200 then a 304 record with no page and an error, got %+v", recs)
				}
				if c.NotModified != 0 || c.Failed != 1 || c.Changed != 0 {
					t.Errorf("a 304 to an unconditional request must count as a failure, not as not modified: %+v", c)
				}
				s, err := crawl.Stats(cfg.Data)
				if err != nil {
					t.Fatal(err)
				}
				if s.Outcomes["200"] != 1 {
					t.Errorf("the summary lost the stored copy behind the 304: outcomes %v", s.Outcomes)
				}
				return
			}
			if b.n < 3 {
				t.Fatalf("only %d requests of the page in 1.5 s at a 200 ms interval", b.n)
			}
			switch kind {
			case "etag-every-answer":
				for i := 1; i < b.n; i++ {
					if want := fmt.Sprintf(`"answer-%d"`, i); b.inm[i] != want {
						t.Errorf("request %d sent If-None-Match %q, want the last answer's %q", i+1, b.inm[i], want)
					}
				}
				if c.Changed != 0 || c.Unchanged == 0 {
					t.Errorf("new ETags with the same content seen as changes: %+v", c)
				}
			case "future-last-modified":
				for i, v := range b.ims {
					if v != "" {
						t.Errorf("request %d sent If-Modified-Since %q: a Last-Modified in the future was kept", i+1, v)
					}
				}
				if c.Changed != 0 {
					t.Errorf("unchanged content seen as changed: %+v", c)
				}
			}
		})
	}
}

// TestRevisitShare: while new URLs wait, revisits take at most
// --revisit-share of the requests. A continuous crawl of a web large
// enough to keep new URLs waiting for seconds, every page due again 100 ms
// after its fetch: among the requests made before the last new URL was
// fetched, the revisits' share stays near the bound (0.25 of 8 slots: 2
// revisits in flight at most), and revisits do happen. It fails if
// FeedRevisits ignores the share (revisits would crowd the new URLs out:
// half the requests or more).
func TestRevisitShare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 4 s")
	}
	srv := startWeb(t, websim.Config{Seed: 11, Hosts: 24, PagesPerHost: 60, Latency: 2 * time.Millisecond})
	cfg := crawlConfig(t, srv, websim.TruthRules{Seeds: srv.SeedURLs(24), MaxDepth: -1, Scope: websim.ScopeSeeds})
	cfg.Concurrency = 8
	cfg.Revisit = crawl.RevisitFixed
	cfg.RevisitMin = crawl.Duration(100 * time.Millisecond)
	cfg.RevisitInitial = crawl.Duration(100 * time.Millisecond)
	cfg.RevisitShare = 0.25
	cfg.Continuous = true
	// Run until 300 URLs have records (about 3 s on a quiet machine), not
	// for a fixed time: a CI run under load fetched only 96 in 4 s. The web
	// has 1,440 pages, so new URLs still wait when the crawl stops.
	runUntil(t, cfg, time.Minute, func() bool {
		rs, err := store.OpenRecords(cfg.Data, store.Options{ReadOnly: true})
		if err != nil {
			return false
		}
		defer rs.Close()
		urls := map[string]bool{}
		rs.Iterate(func(r store.Record) error { urls[r.URL] = true; return nil })
		return len(urls) >= 300
	})
	recs := allRecords(t, cfg.Data)
	seen := map[string]bool{}
	lastNew := 0
	for i, r := range recs {
		if !seen[r.URL] {
			seen[r.URL] = true
			lastNew = i
		}
	}
	seen = map[string]bool{}
	var fresh, revisits int
	for _, r := range recs[:lastNew+1] {
		if seen[r.URL] {
			revisits++
		} else {
			fresh++
		}
		seen[r.URL] = true
	}
	share := float64(revisits) / float64(revisits+fresh)
	t.Logf("before the last new URL: %d new, %d revisits (share %.2f); %d records in all", fresh, revisits, share, len(recs))
	if revisits == 0 || fresh < 200 {
		t.Fatalf("nothing to judge: %d new, %d revisits", fresh, revisits)
	}
	if share > 0.35 {
		t.Errorf("revisits took %.2f of the requests while new URLs waited, want ≤ 0.25 (+0.10 slack)", share)
	}
}
