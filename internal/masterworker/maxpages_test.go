package masterworker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/crawl/limittest"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/rstate"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestMaxPagesExact: a master on the Redis state (as spider master runs)
// and two workers stop at exactly --max-pages records over the workers'
// data directories, and the web saw no other page request, at several
// concurrency levels with two requests per host at a time; a new master
// with a larger limit resumes to exactly that many, losing nothing and
// fetching nothing twice.
func TestMaxPagesExact(t *testing.T) {
	// Worker loops block on srq, each holding a connection of the test's
	// one Redis client (pool: 10 per CPU), so two workers of more than 6
	// loops on a 2-CPU machine would starve the master's commands.
	for _, conc := range []int{1, 3, 6} {
		t.Run(fmt.Sprint("concurrency-", conc), func(t *testing.T) {
			f := newFixture(t, websim.Config{Seed: 35, Hosts: 10, PagesPerHost: 30, Latency: time.Millisecond},
				websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
			f.cfg.Delay = 0
			f.cfg.PerHost = 2
			f.cfg.Concurrency = conc
			name := fmt.Sprint("mwmax", conc)
			var dirs []string
			run := func(limit int64) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				f.cfg.MaxPages = limit
				st, err := rstate.Open(ctx, f.rdb, rstate.Options{Crawl: name, Bucket: "mw", SeenMode: "exact"})
				if err != nil {
					t.Fatal(err)
				}
				m := f.masterOn(t, name, masterworker.RetryState(st))
				g, gctx := errgroup.WithContext(ctx)
				g.Go(func() error { return m.Run(gctx) })
				masterworker.WaitNotDone(t, f.rdb, name)
				for range 2 {
					w, dir := f.worker(t, name, conc)
					dirs = append(dirs, dir)
					g.Go(func() error { return w.Run(gctx) })
				}
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				t.Logf("limit %d: master %+v", limit, m.Stats())
				m.Close()
			}
			run(37)
			first := limittest.Exact(t, f.srv, 37, dirs...)
			run(90)
			limittest.Exact(t, f.srv, 90, dirs...)
			limittest.Resumed(t, first, 90, dirs...)
		})
	}
}
