package crawl_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestSitemapLastmodHints crawls websim's changing pages with sitemaps
// whose <lastmod> is each page's current version, in two runs. The first
// fetches every page and sitemap with an interval of an hour
// (RevisitInitial = RevisitMax = 1 h). Then, while the pages change
// (ChangeDay: a model day a second), the test makes only the sitemaps due
// (through the state's Rescheduler) and runs a continuous crawl: the
// sitemaps are read again and list URLs already seen, which the state's
// Discover drops. A page fetched again in that run was brought forward by
// its sitemap lastmod, an hour before its interval: the test fails if the
// hints of seen URLs never reach the schedule. Each such refetch must
// follow a change of the page after our copy (websim's truth: a lastmod
// never runs ahead of the version), come no sooner than RevisitMin after
// the previous fetch, happen once per page, and be counted; pages that did
// not change are not fetched again.
//
// "lying sitemap" gives every page a lastmod of the answer's time (a site
// that says everything changed every time): each page is fetched again at
// most once for it (once per lastmod, not before RevisitMin).
func TestSitemapLastmodHints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 12 s")
	}
	t.Run("true lastmod", func(t *testing.T) { sitemapHints(t, 0) })
	t.Run("lying sitemap", func(t *testing.T) { sitemapHints(t, 1) })
}

func sitemapHints(t *testing.T, lies float64) {
	wc := websim.Config{Seed: 5, Hosts: 2, PagesPerHost: 15, ChangeDay: time.Second, DisappearShare: -1, Sitemaps: true, SitemapLieShare: lies}
	srv := startWeb(t, wc)
	cfg := crawlConfig(t, srv, websim.TruthRules{Seeds: srv.SeedURLs(wc.Hosts), MaxDepth: -1, Scope: websim.ScopeSeeds})
	cfg.Revisit = crawl.RevisitAdaptive
	const minGap = 300 * time.Millisecond
	cfg.RevisitMin = crawl.Duration(minGap)
	cfg.RevisitInitial = crawl.Duration(time.Hour)
	cfg.RevisitMax = crawl.Duration(time.Hour)
	cfg.Sitemaps = true
	// One-shot: ends when done. A page that changed between its fetch
	// and its sitemap's read is brought forward already (c1.Hinted).
	c1 := runFor(t, cfg, time.Minute, nil)
	first := len(allRecords(t, cfg.Data))

	time.Sleep(1500 * time.Millisecond) // the pages change
	st, err := state.Open(filepath.Join(cfg.Data, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	n, err := st.Reschedule(context.Background(), allURLs(t, cfg.Data), func(rec frontier.Request, due time.Time) (string, time.Time, bool) {
		return rec.Schedule, now, rec.Kind == frontier.KindSitemap
	})
	if err != nil || n == 0 {
		t.Fatalf("making the sitemaps due: %d, %v", n, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Continuous = true
	start := time.Now()
	c := runFor(t, cfg, 3*time.Second, nil)

	web := srv.Web
	all := allRecords(t, cfg.Data)
	last := map[string]store.Record{}
	for _, r := range all[:first] {
		if r.Status == 200 {
			last[r.URL] = r
		}
	}
	const slack = 150 * time.Millisecond // a request reaches the server after its record's time
	var sitemapReads, refetches, misses int
	var lags []time.Duration
	// The pages a lastmod can bring forward are those that changed before
	// the sitemaps were read again (the last read: the stricter count);
	// a change later in the run is in no sitemap this run reads. (Counting
	// to the end of the run made the test depend on how long the second
	// run took to start: with a 36 MB Bloom snapshot to load under -race,
	// about 2 s in which more pages changed before the reads.)
	var readAt time.Time
	for _, r := range all[first:] {
		if r.Outcome == crawl.OutcomeSitemap && r.FetchedAt.After(readAt) {
			readAt = r.FetchedAt
		}
	}
	changed := 0
	for u, r := range last {
		if ch, _ := web.ChangesBetween(u, r.FetchedAt.Add(slack), readAt); len(ch) > 0 {
			changed++
		}
	}
	again := map[string]int{}
	for _, r := range all[first:] {
		if r.Outcome == crawl.OutcomeSitemap {
			sitemapReads++
			continue
		}
		prev, ok := last[r.URL]
		if !ok || r.Status != 200 && r.Status != 304 {
			continue
		}
		refetches++
		again[r.URL]++
		if again[r.URL] > 1 {
			t.Errorf("%s fetched %d times in the second run: a lastmod moves a fetch once", r.URL, again[r.URL])
		}
		if gap := r.FetchedAt.Sub(prev.FetchedAt); gap < minGap-slack {
			t.Errorf("%s refetched %s after the previous fetch, sooner than --revisit-min %s", r.URL, gap, minGap)
		}
		changes, _ := web.ChangesBetween(r.URL, prev.FetchedAt.Add(-slack), r.FetchedAt.Add(slack))
		if len(changes) == 0 {
			misses++
			if lies == 0 {
				t.Errorf("%s refetched with no change since %s, though its sitemap lastmod never runs ahead of its versions", r.URL, prev.FetchedAt.Format(time.StampMilli))
			}
			continue
		}
		lags = append(lags, r.FetchedAt.Sub(start))
	}
	slices.Sort(lags)
	var med time.Duration
	if len(lags) > 0 {
		med = lags[len(lags)/2]
	}
	t.Logf("%d pages fetched in the first run, %d changed before the sitemaps were read again; second run: %d sitemap reads, %d refetches (%d with no change); median start of the run → refetch %s (interval without the hint: 1 h); counts %+v (first run: %d hints)",
		len(last), changed, sitemapReads, refetches, misses, med, c, c1.Hinted)
	if sitemapReads == 0 {
		t.Fatal("the sitemaps were not read again")
	}
	if c.Hinted > int64(refetches) || c.Hinted+c1.Hinted < int64(refetches) {
		t.Errorf("%d refetches, %d hints counted (%d in the first run): want one hint per refetch", refetches, c.Hinted, c1.Hinted)
	}
	if lies == 0 && refetches < max(3, changed/2) {
		t.Errorf("%d of the %d pages that changed were fetched again: want most, brought forward by their sitemap lastmod", refetches, changed)
	}
	if lies > 0 && refetches < len(last)/2 {
		t.Errorf("a lying sitemap brought %d of %d pages forward, want most (once each)", refetches, len(last))
	}
}

// allURLs lists the URLs of a data directory's records, once each.
func allURLs(t *testing.T, dir string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range allRecords(t, dir) {
		if !seen[r.URL] {
			seen[r.URL] = true
			out = append(out, r.URL)
		}
	}
	return out
}
