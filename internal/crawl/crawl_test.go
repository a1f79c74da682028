package crawl_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// startWeb serves a synthetic web for one test.
func startWeb(t *testing.T, cfg websim.Config) *websim.Server {
	t.Helper()
	return revisittest.StartWeb(t, cfg)
}

// crawlConfig is a fast test crawl of srv under rules.
func crawlConfig(t *testing.T, srv *websim.Server, rules websim.TruthRules) crawl.Config {
	c := crawl.NewConfig()
	c.Data = t.TempDir()
	c.Seeds = rules.Seeds
	c.MaxDepth = rules.MaxDepth
	c.Scope = rules.Scope
	c.Resolve = srv.Resolve()
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 16
	c.RetryDelay = crawl.Duration(50 * time.Millisecond)
	c.Timeout = crawl.Duration(3 * time.Second)
	c.FirstByteTimeout = crawl.Duration(2 * time.Second)
	return c
}

func runCrawl(t *testing.T, cfg crawl.Config) {
	t.Helper()
	eng, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatalf("crawl failed: %v", err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
}

// records reads the last record of every URL in a data directory.
func records(t *testing.T, dir string) map[string]store.Record {
	t.Helper()
	rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
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

// checkTruth compares a finished crawl with websim's ground truth: every URL
// that must be fetched was, with the outcome it must end with; none that
// must not be fetched was requested; nothing was requested twice.
func checkTruth(t *testing.T, srv *websim.Server, dir string, truth *websim.Truth) {
	t.Helper()
	recs := records(t, dir)
	fetched := map[string]bool{}
	for u, r := range recs {
		if r.Outcome == crawl.OutcomeRobots || r.Outcome == crawl.OutcomeRobotsUnavailable {
			if _, ok := truth.MustNotFetch[u]; !ok {
				t.Errorf("%s: recorded as %s, but the truth does not exclude it", u, r.Outcome)
			}
			continue
		}
		fetched[u] = true
	}
	var missing, extra, wrong []string
	for _, u := range truth.MustFetch {
		r, ok := recs[u]
		if !ok || !fetched[u] {
			missing = append(missing, u)
			continue
		}
		if want := truth.Final[u]; want != "" && want != r.Outcome {
			wrong = append(wrong, u+": got "+r.Outcome+", want "+want)
		}
	}
	must := map[string]bool{}
	for _, u := range truth.MustFetch {
		must[u] = true
	}
	for u := range fetched {
		if !must[u] {
			extra = append(extra, u+" ("+recs[u].Outcome+")")
		}
	}
	report := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		sort.Strings(list)
		if len(list) > 15 {
			list = append(list[:15], "…")
		}
		t.Errorf("%s (%d):\n  %s", what, len(list), strings.Join(list, "\n  "))
	}
	report("URLs the truth says must be fetched but were not", missing)
	report("URLs fetched that the truth does not list", extra)
	report("URLs with the wrong outcome", wrong)

	log := srv.Log()
	for _, e := range log.Entries() {
		u := "http://" + e.Host + e.Path
		if reason, ok := truth.MustNotFetch[u]; ok {
			t.Errorf("requested %s, which must not be fetched (%s)", u, reason)
		}
	}
	retries := log.Retries()
	for u, n := range log.Duplicates() {
		// A URL may be requested once per attempt the crawler recorded
		// (a reset after the server saw the request is retried).
		if retries[u] == 0 && n > max(recs[u].Attempts, 1) {
			t.Errorf("%s requested %d times (%d attempts recorded)", u, n, recs[u].Attempts)
		}
	}
	if len(truth.MustFetch) == 0 {
		t.Fatal("empty ground truth: the test web is wrong")
	}
}

func TestCrawlMatchesTruthClean(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 7, Hosts: 12, PagesPerHost: 30})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 4, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
	t.Logf("%d URLs fetched as the truth says", len(truth.MustFetch))
}

func TestCrawlScopes(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 3, Hosts: 10, PagesPerHost: 20})
	for _, scope := range []string{websim.ScopeHost, websim.ScopeDomain, websim.ScopeSeeds} {
		t.Run(scope, func(t *testing.T) {
			srv.Log().Reset()
			rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 3, Scope: scope}
			truth, err := srv.Truth(rules)
			if err != nil {
				t.Fatal(err)
			}
			cfg := crawlConfig(t, srv, rules)
			runCrawl(t, cfg)
			checkTruth(t, srv, cfg.Data, truth)
		})
	}
}

func TestCrawlMatchesTruthHostile(t *testing.T) {
	srv := startWeb(t, websim.Config{
		Seed: 11, Hosts: 12, PagesPerHost: 25, Profile: websim.ProfileHostile,
		HangTime: 30 * time.Second, LargeSize: 1 << 20, BombSize: 64 << 20, SlowLatency: 20 * time.Millisecond,
	})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(3), MaxDepth: 3, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	cfg.MaxBodyBytes = 2 << 20
	// The 1 MiB pages of slow hosts take ~1 s alone; under -race on a loaded
	// machine 3 s was not always enough for them to end 200.
	cfg.Timeout = crawl.Duration(8 * time.Second)
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
	s, err := crawl.Stats(cfg.Data)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hostile crawl outcomes: %v", s.Outcomes)
}

func TestPoliteness(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 5, Hosts: 4, PagesPerHost: 12})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(4), MaxDepth: 2, Scope: websim.ScopeSeeds}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	const delay = 60 * time.Millisecond
	cfg.Delay = crawl.Duration(delay)
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
	log := srv.Log()
	gaps := 0 // hosts with two requests or more: the gaps measured
	for _, h := range log.Hosts() {
		if n := log.MaxOpen(h); n > 1 {
			t.Errorf("%s: %d requests open at once, want at most 1", h, n)
		}
		if gap, ok := log.MinGap(h); ok {
			gaps++
			if gap < delay {
				t.Errorf("%s: two requests %v apart, want at least %v", h, gap, delay)
			}
		}
	}
	if gaps == 0 {
		t.Error("no host received two requests: the politeness check measured nothing")
	}
}

// TestCrawlDelay: a robots.txt Crawl-delay above --delay sets the gap.
func TestCrawlDelay(t *testing.T) {
	const crawlDelay = 150 * time.Millisecond
	srv := startWeb(t, websim.Config{Seed: 8, Hosts: 2, PagesPerHost: 6, Robots: "crawl-delay", CrawlDelay: crawlDelay})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 2, Scope: websim.ScopeSeeds}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	cfg.Delay = crawl.Duration(10 * time.Millisecond)
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
	log := srv.Log()
	gaps := 0 // hosts with two requests or more: the gaps measured
	for _, h := range log.Hosts() {
		if gap, ok := log.MinGap(h); ok {
			gaps++
			if gap < crawlDelay {
				t.Errorf("%s: requests %v apart, want at least the Crawl-delay %v", h, gap, crawlDelay)
			}
		}
	}
	if gaps == 0 {
		t.Error("no host received two requests: the politeness check measured nothing")
	}
}

// TestPerIP: with --per-ip, hosts sharing an address share politeness: at
// most one request open per IP, delay between requests to the same IP.
func TestPerIP(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 9, Hosts: 6, PagesPerHost: 8})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(6), MaxDepth: 1, Scope: websim.ScopeSeeds}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	const delay = 20 * time.Millisecond
	cfg.Delay = crawl.Duration(delay)
	cfg.PerIP = true // every host resolves to 127.0.0.1: one politeness key
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
	entries := srv.Log().Entries()
	sort.Slice(entries, func(i, j int) bool { return entries[i].Time.Before(entries[j].Time) })
	for i := 1; i < len(entries); i++ {
		if gap := entries[i].Time.Sub(entries[i-1].Time); gap < delay {
			t.Fatalf("requests to the one IP %v apart (%s then %s), want at least %v",
				gap, entries[i-1].Host+entries[i-1].Path, entries[i].Host+entries[i].Path, delay)
		}
	}
}

// TestBloomMode: the Bloom-only seen test crawls the same set.
func TestBloomMode(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 12, Hosts: 6, PagesPerHost: 20})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 3, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	cfg.Seen = "bloom"
	cfg.ExpectedURLs = 100_000
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
}

// TestMaxPages stops at the limit, and a second run with a higher limit
// continues where the first stopped.
func TestMaxPages(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 13, Hosts: 4, PagesPerHost: 30})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 3, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawlConfig(t, srv, rules)
	cfg.MaxPages = 20
	cfg.Concurrency = 2
	runCrawl(t, cfg)
	n := len(records(t, cfg.Data))
	if n < 20 || n > 20+cfg.Concurrency+16 {
		t.Fatalf("%d URLs completed with --max-pages 20", n)
	}
	cfg.MaxPages = 0
	runCrawl(t, cfg)
	checkTruth(t, srv, cfg.Data, truth)
}

// TestRefusesPrivateByDefault: without --allow-private nothing on loopback
// is requested; every URL ends as forbidden-address.
func TestRefusesPrivateByDefault(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 14, Hosts: 2, PagesPerHost: 5})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 1}
	cfg := crawlConfig(t, srv, rules)
	cfg.AllowPrivate = false
	runCrawl(t, cfg)
	if n := srv.Log().Len(); n != 0 {
		t.Fatalf("%d requests reached a loopback server without --allow-private", n)
	}
	recs := records(t, cfg.Data)
	for _, u := range rules.Seeds {
		if _, ok := recs[u]; !ok {
			t.Errorf("seed %s has no record: every URL must end as forbidden-address", u)
		}
	}
	for u, r := range recs {
		if r.Outcome != crawl.OutcomeForbiddenAddress || !strings.Contains(r.Error, "allow-private") {
			t.Errorf("%s: outcome %s, want forbidden-address", u, r.Outcome)
		}
	}
}

// TestRobotsServerError: robots.txt answering 5xx disallows the whole host
// (RFC 9309 §2.3.1.4); the retries are counted per host, so a host with many
// URLs costs a few robots.txt requests and back-offs, not a back-off per URL.
func TestRobotsServerError(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 15, Hosts: 3, PagesPerHost: 40, Robots: "server-error"})
	rules := websim.TruthRules{Seeds: srv.SeedURLs(3), MaxDepth: 2, Scope: websim.ScopeSeeds}
	cfg := crawlConfig(t, srv, rules)
	cfg.MaxRetries = 2
	cfg.RetryDelay = crawl.Duration(20 * time.Millisecond)
	start := time.Now()
	runCrawl(t, cfg)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("crawl of hosts with failing robots.txt took %v", el)
	}
	recs := records(t, cfg.Data)
	for _, u := range rules.Seeds {
		if _, ok := recs[u]; !ok {
			t.Errorf("seed %s has no record: it must end as robots-unavailable", u)
		}
	}
	for u, r := range recs {
		if r.Outcome != crawl.OutcomeRobotsUnavailable {
			t.Errorf("%s: outcome %s, want robots-unavailable", u, r.Outcome)
		}
	}
	log := srv.Log()
	if got, want := len(log.Hosts()), len(rules.Seeds); got != want {
		t.Errorf("%d hosts asked for robots.txt, want the %d seeds' hosts", got, want)
	}
	for _, h := range log.Hosts() {
		n, pages := 0, 0
		for _, e := range log.HostEntries(h) {
			if e.Path == "/robots.txt" {
				n++
			} else {
				pages++
			}
		}
		if pages > 0 {
			t.Errorf("%s: %d page requests despite robots.txt 5xx", h, pages)
		}
		if n > cfg.MaxRetries+2 {
			t.Errorf("%s: robots.txt requested %d times, want at most %d", h, n, cfg.MaxRetries+2)
		}
	}
}
