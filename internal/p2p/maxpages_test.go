package p2p_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/crawl/limittest"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestMaxPagesExact: three peers stop at exactly --max-pages records over
// their data directories, a limit over the whole crawl, and the web saw no
// other page request, at several concurrency levels with two requests per
// host at a time; the peers started again with a larger limit resume to
// exactly that many, losing nothing and fetching nothing twice.
func TestMaxPagesExact(t *testing.T) {
	for _, conc := range []int{1, 4, 8} {
		t.Run(fmt.Sprint("concurrency-", conc), func(t *testing.T) {
			f := newFixture(t, websim.Config{Seed: 53, Hosts: 12, PagesPerHost: 30, Latency: time.Millisecond},
				websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny})
			f.cfg.Delay = 0
			f.cfg.PerHost = 2
			f.cfg.Concurrency = conc
			name := fmt.Sprint("pmax", conc)
			var dirs []string
			run := func(limit int64) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				f.cfg.MaxPages = limit
				g, gctx := errgroup.WithContext(ctx)
				for i := range 3 {
					n, dir := f.node(t, steadyOptions(name, fmt.Sprintf("n%d", i), 100))
					dirs = append(dirs, dir)
					g.Go(func() error { return n.Run(gctx) })
				}
				start := time.Now()
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				t.Logf("limit %d: %v", limit, time.Since(start))
			}
			run(37)
			first := limittest.Exact(t, f.srv, 37, dirs...)
			run(90)
			limittest.Exact(t, f.srv, 90, dirs...)
			limittest.Resumed(t, first, 90, dirs...)
		})
	}
}
