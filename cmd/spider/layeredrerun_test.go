package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/layered"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestLayeredRunAgain runs a finished layered crawl again, as
// docs/crawling.md ("Revisit rounds") says it may be run, in both
// back-ends (embedded, and one process coordinating on a redis-server):
//
//   - failures: websim's busy pages answer 503 twice, then 200. The first
//     run fails them (--max-retries 0); run again at once, nothing is due
//     (no request, "nothing was due yet"); once their back-off has passed,
//     a run without revisit flags retries them (one request each, nothing
//     else fetched again); --retry-failed then makes them due at once and
//     stores them.
//   - revisit fixed: a crawl with --revisit fixed (interval 500 ms) run
//     again after the interval revisits every page it fetched, once (a
//     conditional GET: websim's pages have validators, and do not change
//     in a model day of 24 h).
//
// The back-off of a 5xx is a minute, so the test moves the failures' due
// time into the past in the schedule (Reschedule, the due index only)
// instead of waiting. Before the fix, the Redis run without revisit flags
// saw the crawl marked finished and exited at once.
func TestLayeredRunAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 12 crawls")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	for _, backend := range []string{"embedded", "redis"} {
		// args is the command of a layered crawl of srv into data.
		args := func(t *testing.T, srv *websim.Server, data string, extra ...string) []string {
			a := []string{"crawl", "--mode", "layered", "--data", data, "--rounds", "5", "--groups", "2", "--delay", "0",
				"--max-retries", "0", "--scope", "seeds", "--resolve-file", revisittest.ResolveFile(t, t.TempDir(), srv), "--allow-private"}
			if backend == "redis" {
				a = append(a, "--redis", rs.URL(), "--crawl", strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
			}
			return append(append(a, extra...), srv.SeedURLs(2)...)
		}
		t.Run(backend+"/failures", func(t *testing.T) {
			srv := revisittest.StartWeb(t, websim.Config{Seed: 31, Hosts: 2, PagesPerHost: 8, ChineseShare: -1,
				Enable: websim.FeatureUnavailable, TroubleShare: 1, BusyCount: 2})
			data := t.TempDir()
			run := runner(bin, args(t, srv, data))
			out, _ := run()
			busy := lastWith(t, data, 503)
			if len(busy) == 0 || !strings.Contains(out, fmt.Sprintf("%d failed URL", len(busy))) {
				t.Fatalf("first run: %d URLs answered 503 (want some, each counted as a failure to retry); output:\n%s", len(busy), out)
			}
			fetched := len(revisittest.Records(t, data))

			// At once: nothing is due.
			from := time.Now()
			out, err := run()
			if err != nil || !strings.Contains(out, "nothing was due yet") {
				t.Fatalf("run again at once: err %v, output:\n%s", err, out)
			}
			if got := requestedSince(srv, from); len(got) > 0 {
				t.Errorf("run again before any back-off passed: requests %v", got)
			}

			// The back-off passed: each failure is retried, nothing else.
			backdate(t, data, busy)
			from = time.Now()
			out, _ = run()
			got := requestedSince(srv, from)
			for _, u := range busy {
				if got[pathOf(u)] != 1 {
					t.Errorf("%s requested %d times by a run after its back-off passed, want 1", u, got[pathOf(u)])
				}
				delete(got, pathOf(u))
			}
			if len(got) > 0 {
				t.Errorf("a run without revisit flags requested URLs that were not due: %v", got)
			}
			if want := fmt.Sprintf("retries of failed URLs: %d", len(busy)); !strings.Contains(out, want) {
				t.Errorf("run after the back-off: output lacks %q:\n%s", want, out)
			}
			if n := len(revisittest.Records(t, data)); n != fetched+len(busy) {
				t.Errorf("run after the back-off added %d records, want %d (one per retried URL)", n-fetched, len(busy))
			}

			// --retry-failed: due at once (their back-off is a few minutes now).
			out, err = run("--retry-failed")
			if err != nil || !strings.Contains(out, fmt.Sprintf("retries of failed URLs: %d", len(busy))) {
				t.Fatalf("--retry-failed: err %v, output:\n%s", err, out)
			}
			if ok := lastWith(t, data, 200); len(revisittest.Missing(setOf(busy), setOf(ok))) > 0 {
				t.Errorf("--retry-failed did not store %v", revisittest.Missing(setOf(busy), setOf(ok)))
			}
		})
		t.Run(backend+"/revisit fixed", func(t *testing.T) {
			srv := revisittest.StartWeb(t, websim.Config{Seed: 32, Hosts: 2, PagesPerHost: 8, ChineseShare: -1, ChangeDay: 24 * time.Hour, DisappearShare: -1})
			data := t.TempDir()
			run := runner(bin, args(t, srv, data, "--revisit", "fixed", "--revisit-initial", "500ms", "--revisit-min", "500ms", "--revisit-max", "500ms"))
			if out, err := run(); err != nil {
				t.Fatalf("first run: %v\n%s", err, out)
			}
			pages := lastWith(t, data, 200)
			if len(pages) < 10 {
				t.Fatalf("first run stored %d pages", len(pages))
			}
			time.Sleep(600 * time.Millisecond) // every page is due
			from := time.Now()
			out, err := run()
			if err != nil {
				t.Fatalf("run again: %v\n%s", err, out)
			}
			got := requestedSince(srv, from)
			for _, u := range pages {
				if got[pathOf(u)] != 1 {
					t.Errorf("%s requested %d times by a run after its revisit was due, want 1", u, got[pathOf(u)])
				}
			}
			if want := fmt.Sprintf("revisits: %d (", len(pages)); !strings.Contains(out, want) {
				t.Errorf("run again: output lacks %q:\n%s", want, out)
			}
		})
	}
}

// lastWith returns the URLs of data whose last record has the status,
// sorted.
func lastWith(t *testing.T, data string, status int) []string {
	t.Helper()
	last := map[string]int{}
	for _, r := range revisittest.Records(t, data) {
		last[r.URL] = r.Status
	}
	var out []string
	for u, s := range last {
		if s == status {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

func setOf(urls []string) map[string]bool {
	m := make(map[string]bool, len(urls))
	for _, u := range urls {
		m[u] = true
	}
	return m
}

// pathOf is a URL's host and request URI, as websim's access log names a
// request.
func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Hostname() + u.RequestURI()
}

// requestedSince counts the page requests (robots.txt left out) srv saw
// since from, by host and path.
func requestedSince(srv *websim.Server, from time.Time) map[string]int {
	out := map[string]int{}
	for _, e := range srv.Log().Entries() {
		if !e.Time.Before(from) && e.Path != "/robots.txt" {
			out[e.Host+e.Path]++
		}
	}
	return out
}

// backdate makes the revisit records of urls in the layered crawl's
// schedule in data due a second ago, as if their back-off had passed (no
// crawl may hold data).
func backdate(t *testing.T, data string, urls []string) {
	t.Helper()
	st, err := state.Open(filepath.Join(data, layered.DirName, "schedule"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	past := time.Now().Add(-time.Second)
	n, err := st.Reschedule(context.Background(), urls, func(rec frontier.Request, _ time.Time) (string, time.Time, bool) {
		return rec.Schedule, past, true
	})
	if err != nil || n != len(urls) {
		t.Fatalf("backdate: %d of %d records moved: %v", n, len(urls), err)
	}
}
