package crawl_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawl/limittest"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestLocalBudget: completed + reserved never exceeds the limit; a full
// budget waits for a release; a spent one says ErrLimitReached.
func TestLocalBudget(t *testing.T) {
	ctx := context.Background()
	b := crawl.NewLocalBudget(3, 1)
	for i := range 2 {
		if err := b.Reserve(ctx); err != nil {
			t.Fatalf("reserve %d: %v", i, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := b.Reserve(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third slot with 1 used and 2 held: %v, want to wait", err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Reserve(ctx) }()
	time.Sleep(10 * time.Millisecond)
	b.Release() // a retry gives its slot back: the waiter takes it
	if err := <-got; err != nil {
		t.Fatalf("waiter after a release: %v", err)
	}
	go func() { got <- b.Reserve(ctx) }()
	b.Commit()
	b.Commit()
	if err := <-got; !errors.Is(err, crawl.ErrLimitReached) {
		t.Fatalf("waiter after the limit was spent: %v, want ErrLimitReached", err)
	}
	if !b.Spent() || b.Used() != 3 {
		t.Fatalf("spent %v used %d, want true 3", b.Spent(), b.Used())
	}
	if err := crawl.NewLocalBudget(5, 5).Reserve(ctx); !errors.Is(err, crawl.ErrLimitReached) {
		t.Fatalf("a budget spent by earlier runs: %v", err)
	}
}

// TestMaxPagesExact: on a web far larger than the limit, the crawl ends
// with exactly --max-pages records and the web saw no other page request,
// at several concurrency levels with more than one request per host at a
// time; resumed with a larger limit it goes on to exactly that many,
// losing nothing and fetching nothing twice, and then to the end of the
// web as a crawl without a limit would.
func TestMaxPagesExact(t *testing.T) {
	for _, conc := range []int{1, 4, 32} {
		t.Run(fmt.Sprint("concurrency-", conc), func(t *testing.T) {
			srv := startWeb(t, websim.Config{Seed: 21, Hosts: 10, PagesPerHost: 30})
			rules := websim.TruthRules{Seeds: srv.SeedURLs(3), MaxDepth: 3, Scope: websim.ScopeAny}
			truth, err := srv.Truth(rules)
			if err != nil {
				t.Fatal(err)
			}
			cfg := crawlConfig(t, srv, rules)
			cfg.Concurrency = conc
			cfg.PerHost = 2
			cfg.MaxPages = 37
			runCrawl(t, cfg)
			first := limittest.Exact(t, srv, 37, cfg.Data)

			cfg.MaxPages = 90
			runCrawl(t, cfg)
			limittest.Exact(t, srv, 90, cfg.Data)
			limittest.Resumed(t, first, 90, cfg.Data)

			cfg.MaxPages = 0
			runCrawl(t, cfg)
			checkTruth(t, srv, cfg.Data, truth)
		})
	}
}
