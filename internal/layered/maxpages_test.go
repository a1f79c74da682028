package layered

import (
	"fmt"
	"maps"
	"net/url"
	"testing"

	"github.com/spider-crawler/spider/internal/crawl/limittest"
)

// TestMaxPagesExact: a layered crawl stops at exactly --max-pages records,
// and the web saw no other page request, with one to four tasks at a time;
// run again with a larger limit it resumes to exactly that many, losing
// nothing and fetching nothing twice. With the ratio rule the resumed crawl
// fetches exactly what an uninterrupted one does; with the template rule
// (which learns each site's template from the pages of the pass) a round
// cut into passes by the limit may judge a few links differently, so
// there the comparison is only logged.
func TestMaxPagesExact(t *testing.T) {
	for _, rule := range []string{NoiseRatio, NoiseTemplate} {
		for _, workers := range []int{1, 2, 4} {
			if rule == NoiseTemplate && workers != 2 {
				continue
			}
			testMaxPagesExact(t, rule, workers)
		}
	}
}

func testMaxPagesExact(t *testing.T, rule string, workers int) {
	{
		t.Run(fmt.Sprint(rule, "-workers-", workers), func(t *testing.T) {
			srv := startWeb(t)
			cfg := testConfig(t, srv, srv.SeedURLs(2))
			cfg.Concurrency = workers
			cfg.PerHost = 2
			cfg.MaxPages = 37
			runLayered(t, cfg, Options{Rounds: 4, Groups: 4, Workers: workers, NoiseRule: rule}).Close()
			first := limittest.Exact(t, srv, 37, cfg.Data)
			cfg.MaxPages = 90
			runLayered(t, cfg, Options{Rounds: 4, Groups: 4, Workers: workers, NoiseRule: rule}).Close()
			limittest.Exact(t, srv, 90, cfg.Data)
			second := limittest.Resumed(t, first, 90, cfg.Data)
			// Without a limit it goes on to the end, as a crawl never stopped would.
			cfg.MaxPages = 0
			runLayered(t, cfg, Options{Rounds: 4, Groups: 4, Workers: workers, NoiseRule: rule})
			// An uninterrupted crawl of the same web (on its own server) is the
			// reference.
			ref := startWeb(t)
			refCfg := testConfig(t, ref, ref.SeedURLs(2))
			refCfg.Concurrency, refCfg.PerHost = workers, 2
			runLayered(t, refCfg, Options{Rounds: 4, Groups: 4, Workers: workers, NoiseRule: rule}).Close()
			want := paths(limittest.RecordURLs(t, refCfg.Data))
			limittest.Resumed(t, second, len(want), cfg.Data)
			if got := paths(limittest.RecordURLs(t, cfg.Data)); !maps.Equal(got, want) {
				if rule == NoiseRatio {
					t.Errorf("resumed twice, the crawl fetched %d URLs; uninterrupted, %d", len(got), len(want))
				} else {
					t.Logf("resumed twice, the crawl fetched %d URLs; uninterrupted, %d", len(got), len(want))
				}
			}
			if n, recs := len(limittest.PageRequests(srv)), len(limittest.RecordURLs(t, cfg.Data)); n != recs {
				t.Errorf("%d page requests for %d records", n, recs)
			}
		})
	}
}

// paths maps URLs to host+path (the port differs between two servers).
func paths(urls []string) map[string]bool {
	out := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			out[raw] = true
			continue
		}
		out[u.Hostname()+u.RequestURI()] = true
	}
	return out
}
