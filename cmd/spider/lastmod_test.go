package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestSitemapLastmodPeer: a peer-to-peer crawl on Redis brings a page
// already fetched forward when its sitemap, read again, gives a lastmod
// after our copy (the crawl.TestSitemapLastmodHints of the embedded state,
// through rstate's Reschedule script and the node's owned buckets). A
// first one-shot run fetches every page with an interval of an hour; the
// pages change (a model day a second); the test makes the sitemaps due in
// their bucket; a continuous run then reads them and must fetch again
// pages that changed, an hour before their interval, and count them in its
// summary.
func TestSitemapLastmodPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawls on Redis")
	}
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 5, Hosts: 1, PagesPerHost: 12, ChangeDay: time.Second, DisappearShare: -1, Sitemaps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := redistest.Start(t)
	data := t.TempDir()
	args := append([]string{"crawl", "--redis", rs.URL(), "--crawl", "lm", "--node-id", "p0", "--buckets", "64", "--data", data,
		"--resolve-file", resolve, "--allow-private", "--delay", "0", "--quiet", "--max-depth", "-1",
		"--revisit", "adaptive", "--revisit-min", "300ms", "--revisit-initial", "1h", "--revisit-max", "1h"}, srv.SeedURLs(1)...)
	if code, out, errOut := runCLI(t, args...); code != 0 {
		t.Fatalf("crawl: exit %d\n%s%s", code, out, errOut)
	}
	first := records(t, data)
	last := map[string]store.Record{}
	var sitemaps []string
	for _, r := range first {
		switch {
		case r.Outcome == "sitemap":
			sitemaps = append(sitemaps, r.URL)
		case r.Status == 200:
			last[r.URL] = r
		}
	}
	if len(sitemaps) == 0 {
		t.Fatal("the first run read no sitemap")
	}
	time.Sleep(1500 * time.Millisecond) // the pages change

	// The sitemaps due now, in their bucket (as their interval would make
	// them an hour later).
	u, _ := url.Parse(sitemaps[0])
	ctx := context.Background()
	var st *rstate.Store
	for _, mode := range []string{rstate.SeenBloom, rstate.SeenExact} {
		if st, err = rstate.Open(ctx, rs.Client(), rstate.Options{Crawl: "lm", Bucket: rstate.BucketName(partition.Bucket(u.Hostname(), 64)), SeenMode: mode}); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	n, err := st.Reschedule(ctx, sitemaps, func(rec frontier.Request, _ time.Time) (string, time.Time, bool) {
		return rec.Schedule, now, rec.Kind == frontier.KindSitemap
	})
	st.Close()
	if err != nil || n == 0 {
		t.Fatalf("making the sitemaps due: %d, %v", n, err)
	}

	var run2 []string // the same crawl, continuous, with its summary
	for _, a := range args[1:] {
		if a != "--quiet" {
			run2 = append(run2, a)
		}
	}
	done, out, stop := goRunStop(t, runCrawl, append(run2, "--continuous")...)
	var refetched []string
	eventually(t, "a page refetched", 30*time.Second, func() bool {
		refetched = refetched[:0]
		recs := records(t, data)
		for _, r := range recs[len(first):] {
			if _, ok := last[r.URL]; ok && (r.Status == 200 || r.Status == 304) {
				refetched = append(refetched, r.URL)
			}
		}
		return len(refetched) > 0
	})
	time.Sleep(time.Second)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("continuous crawl: %v\n%s", err, out)
	}
	for _, r := range records(t, data)[len(first):] {
		prev, ok := last[r.URL]
		if !ok || r.Status != 200 && r.Status != 304 {
			continue
		}
		if ch, _ := srv.Web.ChangesBetween(r.URL, prev.FetchedAt.Add(-150*time.Millisecond), r.FetchedAt.Add(150*time.Millisecond)); len(ch) == 0 {
			t.Errorf("%s fetched again with no change since our copy: its sitemap lastmod never runs ahead of its versions", r.URL)
		}
	}
	if !strings.Contains(out.String(), "revisits brought forward by a sitemap's lastmod: ") {
		t.Errorf("the summary does not count the pages brought forward:\n%s", out)
	}
	t.Logf("%d pages, %d fetched again after their sitemap's lastmod (interval without it: 1 h)", len(last), len(refetched))
}

// records reads a data directory's records in file order.
func records(t *testing.T, dir string) []store.Record {
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
