package crawl

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestPipelineEndsTurnAtAnswer: the host's turn ends when its answer has
// been read, not when its page has been processed. The first page to reach
// its state commit is held there (a hook) until websim's access log shows
// the host's next page request, which arrived after the held page's
// request: with the turn ending only at Finish (one connection per host)
// that request could never come and the test fails. The crawl then runs to
// the end with a delay, and the server's log shows one connection per host
// at a time, gaps of at least the delay, every URL of the truth fetched
// and none twice.
func TestPipelineEndsTurnAtAnswer(t *testing.T) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 3, Hosts: 2, PagesPerHost: 25})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// Seeds: host 0's index and two more of its pages, so that the host
	// has URLs queued while the first page is held before its commit.
	first, err := srv.Truth(websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 1, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	host := hostName(t, srv.SeedURLs(1)[0])
	seeds := srv.SeedURLs(2)
	for _, u := range first.MustFetch {
		if len(seeds) < 4 && hostName(t, u) == host && strings.HasSuffix(u, ".html") {
			seeds = append(seeds, u)
		}
	}
	if len(seeds) < 4 {
		t.Fatalf("web too small: seeds %v", seeds)
	}
	rules := websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}

	const delay = 30 * time.Millisecond
	cfg := NewConfig()
	cfg.Data = t.TempDir()
	cfg.Seeds, cfg.MaxDepth, cfg.Scope = rules.Seeds, rules.MaxDepth, rules.Scope
	cfg.Resolve, cfg.AllowPrivate = srv.Resolve(), true
	cfg.Delay, cfg.PerHost, cfg.Concurrency = Duration(delay), 1, 4
	cfg.Timeout = Duration(5 * time.Second)
	eng, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var once sync.Once
	heldAnswer := make(chan error, 1)
	eng.hooks.beforeFinish = func(req frontier.Request) {
		if hostName(t, req.URL) != host {
			return
		}
		once.Do(func() {
			// Held before the commit: wait for the host's next page request.
			path := pathOf(t, req.URL)
			wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
			defer wcancel()
			heldAnswer <- srv.Log().WaitFor(wctx, func(es []websim.Entry) bool {
				var at time.Time
				for _, e := range es {
					switch {
					case e.Host != host || e.Path == "/robots.txt":
					case e.Path == path:
						at = e.Time
					case !at.IsZero() && e.Time.After(at):
						return true
					}
				}
				return false
			})
		})
	}
	if err := eng.Run(ctx); err != nil {
		t.Fatalf("crawl failed: %v", err)
	}
	select {
	case err := <-heldAnswer:
		if err != nil {
			t.Fatalf("no request to %s started while its previous page waited for its commit: %v", host, err)
		}
	default:
		t.Fatal("the hook never held a page")
	}

	log := srv.Log()
	for _, h := range log.Hosts() {
		if n := log.MaxOpen(h); n > 1 {
			t.Errorf("%s: %d requests open at once, want 1", h, n)
		}
		if gap, ok := log.MinGap(h); ok && gap < delay {
			t.Errorf("%s: two requests %v apart, want ≥ %v", h, gap, delay)
		}
	}
	if d := log.Duplicates(); len(d) > 0 {
		t.Errorf("URLs requested more than once: %v", d)
	}
	got := map[string]bool{}
	rs, err := store.OpenRecords(cfg.Data, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if _, err := rs.Iterate(func(r store.Record) error { got[r.URL] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, u := range truth.MustFetch {
		if !got[u] {
			t.Errorf("%s: in the truth, not recorded", u)
		}
	}
	if len(got) < len(truth.MustFetch) {
		t.Errorf("%d URLs recorded, truth has %d", len(got), len(truth.MustFetch))
	}
}

func hostName(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname()
}

func pathOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.RequestURI()
}
