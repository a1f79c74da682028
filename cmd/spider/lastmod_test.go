package main

import (
	"context"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestSitemapLastmodRedis: a crawl on Redis, peer-to-peer or master–worker,
// brings a page already fetched forward when its sitemap, read again,
// gives a lastmod after our copy (crawl.TestSitemapLastmodHints for the
// embedded state; here through rstate's Reschedule scripts, the node's
// owned buckets or the master's parts, and for master–worker the result
// packet that carries the hints from the worker). A first one-shot run
// fetches every page with an interval of an hour; the pages change (a
// model day a second); the test makes the sitemaps due; a continuous run
// then reads them and must fetch again pages that changed, an hour before
// their interval, none that did not, and count them in its summary.
func TestSitemapLastmodRedis(t *testing.T) {
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
	rules := []string{"--resolve-file", resolve, "--allow-private", "--delay", "0", "--max-depth", "-1",
		"--revisit", "adaptive", "--revisit-min", "300ms", "--revisit-initial", "1h", "--revisit-max", "1h"}
	ctx := context.Background()

	t.Run("peer-to-peer", func(t *testing.T) {
		data := t.TempDir()
		args := append(append([]string{"--redis", rs.URL(), "--crawl", "lmp", "--node-id", "p0", "--buckets", "64", "--data", data}, rules...), srv.SeedURLs(1)...)
		lastmodRun(t, srv, data, func() {
			if code, out, errOut := runCLI(t, append([]string{"crawl", "--quiet"}, args...)...); code != 0 {
				t.Fatalf("crawl: exit %d\n%s%s", code, out, errOut)
			}
		}, func(sitemaps []string) crawlstate.Rescheduler {
			u, _ := url.Parse(sitemaps[0])
			for _, mode := range []string{rstate.SeenBloom, rstate.SeenExact} {
				st, err := rstate.Open(ctx, rs.Client(), rstate.Options{Crawl: "lmp", Bucket: rstate.BucketName(partition.Bucket(u.Hostname(), 64)), SeenMode: mode})
				if err == nil {
					t.Cleanup(func() { st.Close() })
					return st
				}
			}
			t.Fatal("cannot open the sitemap's bucket")
			return nil
		}, func() (<-chan error, *syncBuffer, context.CancelFunc) {
			return goRunStop(t, runCrawl, append(args, "--continuous")...)
		})
	})
	t.Run("master-worker", func(t *testing.T) {
		data := t.TempDir()
		margs := append(append([]string{"--redis", rs.URL(), "--crawl", "lmm", "--data", t.TempDir()}, rules...), srv.SeedURLs(1)...)
		wargs := []string{"--redis", rs.URL(), "--crawl", "lmm", "--data", data, "--resolve-file", resolve, "--allow-private", "--concurrency", "4"}
		lastmodRun(t, srv, data, func() {
			master, out := goRun(t, runMaster, append(margs, "--quiet")...)
			stopWorker := startWorker(t, wargs)
			defer stopWorker()
			select {
			case err := <-master:
				if err != nil {
					t.Fatalf("master: %v\n%s", err, out)
				}
			case <-time.After(time.Minute):
				t.Fatalf("the master did not end\n%s", out)
			}
		}, func([]string) crawlstate.Rescheduler {
			st, err := masterworker.OpenState(ctx, rs.Client(), "lmm", masterworker.StateOptions{SeenMode: rstate.SeenBloom, MaxDepth: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st.(crawlstate.Rescheduler)
		}, func() (<-chan error, *syncBuffer, context.CancelFunc) {
			done, out, stop := goRunStop(t, runMaster, append(margs, "--continuous")...)
			// A worker that finds the first run's end marked before the
			// new master cleared it leaves at once: start it after.
			time.Sleep(2 * time.Second)
			stopWorker := startWorker(t, wargs)
			return done, out, func() { stop(); stopWorker() }
		})
	})
}

// startWorker runs spider worker with args until the returned function or
// the test's end stops it.
func startWorker(t *testing.T, args []string) func() {
	done, out, stop := goRunStop(t, runWorker, args...)
	go func() {
		if err := <-done; err != nil {
			t.Logf("worker: %v\n%s", err, out)
		}
	}()
	return stop
}

// lastmodRun is TestSitemapLastmodRedis's body for one topology: first
// runs the one-shot crawl whose records go to data; rescheduler opens the
// crawl's state to make the sitemaps due; second starts the continuous
// run (its summary in its output).
func lastmodRun(t *testing.T, srv *websim.Server, data string, first func(), rescheduler func(sitemaps []string) crawlstate.Rescheduler,
	second func() (<-chan error, *syncBuffer, context.CancelFunc)) {
	first()
	firstRecs := revisittest.Records(t, data)
	last := map[string]store.Record{}
	var sitemaps []string
	for _, r := range firstRecs {
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

	// The sitemaps due now, as their interval would make them an hour later.
	now := time.Now()
	n, err := rescheduler(sitemaps).Reschedule(context.Background(), sitemaps, func(rec frontier.Request, _ time.Time) (string, time.Time, bool) {
		return rec.Schedule, now, rec.Kind == frontier.KindSitemap
	})
	if err != nil || n == 0 {
		t.Fatalf("making the sitemaps due: %d, %v", n, err)
	}
	done, out, stop := second()
	refetched := 0
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range revisittest.Records(t, data)[len(firstRecs):] {
				t.Logf("second run: %s %s %d", r.URL, r.Outcome, r.Status)
			}
			t.Logf("output:\n%s", out)
		}
	})
	eventually(t, "a page refetched", 30*time.Second, func() bool {
		refetched = 0
		for _, r := range revisittest.Records(t, data)[len(firstRecs):] {
			if _, ok := last[r.URL]; ok && (r.Status == 200 || r.Status == 304) {
				refetched++
			}
		}
		return refetched > 0
	})
	time.Sleep(time.Second)
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("continuous crawl: %v\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the continuous crawl did not stop\n%s", out)
	}
	for _, r := range revisittest.Records(t, data)[len(firstRecs):] {
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
	t.Logf("%d pages, %d fetched again after their sitemap's lastmod (interval without it: 1 h)", len(last), refetched)
}
