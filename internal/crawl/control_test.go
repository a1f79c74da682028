package crawl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/websim"
)

// waitFor polls cond (every 10 ms) until it holds, and fails the test when the deadline
// passes first.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestControl drives a running engine: pause (nothing more completes),
// add a seed of another host while paused, resume (the seed is fetched),
// stop (Run returns nil with URLs still pending, and a new run resumes).
func TestControl(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 21, Hosts: 3, PagesPerHost: 60})
	seeds := srv.SeedURLs(2)
	rules := websim.TruthRules{Seeds: seeds[:1], MaxDepth: -1, Scope: websim.ScopeHost}
	cfg := crawlConfig(t, srv, rules)
	cfg.Concurrency = 2
	cfg.Delay = crawl.Duration(30 * time.Millisecond)
	eng, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if got := eng.RunState(); got != crawl.StateIdle {
		t.Fatalf("state before Run = %q, want %q", got, crawl.StateIdle)
	}
	if err := eng.Pause(); !errors.Is(err, crawl.ErrNotRunning) {
		t.Fatalf("Pause before Run: %v, want ErrNotRunning", err)
	}
	if _, err := eng.AddSeeds(ctx, seeds[1:]); !errors.Is(err, crawl.ErrNotRunning) {
		t.Fatalf("AddSeeds before Run: %v, want ErrNotRunning", err)
	}

	runErr := make(chan error, 1)
	go func() { runErr <- eng.Run(ctx) }()
	waitFor(t, "first pages", time.Minute, func() bool { return eng.Progress().Fetched >= 3 })

	if err := eng.Pause(); err != nil {
		t.Fatal(err)
	}
	if got := eng.RunState(); got != crawl.StatePaused {
		t.Fatalf("state after Pause = %q", got)
	}
	waitFor(t, "fetches in flight to finish", 30*time.Second, func() bool { return eng.Progress().InFlight == 0 })
	before := eng.Progress().Fetched
	time.Sleep(400 * time.Millisecond) // time is the subject: a paused crawl stays idle for a while
	if after := eng.Progress().Fetched; after != before {
		t.Fatalf("paused crawl completed %d more URLs", after-before)
	}

	if _, err := eng.AddSeeds(ctx, []string{"mailto:someone@example.org"}); err == nil {
		t.Fatal("AddSeeds accepted a mailto: URL")
	}
	n, err := eng.AddSeeds(ctx, []string{seeds[1], seeds[0]})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("AddSeeds: %d new, want 1 (the first seed was already seen)", n)
	}
	if err := eng.Resume(); err != nil {
		t.Fatal(err)
	}
	if got := eng.RunState(); got != crawl.StateRunning {
		t.Fatalf("state after Resume = %q", got)
	}
	waitFor(t, "the added seed", time.Minute, func() bool { _, ok := records(t, cfg.Data)[seeds[1]]; return ok })

	eng.Stop()
	eng.Stop() // idempotent
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatalf("Run after Stop: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after Stop")
	}
	if got := eng.RunState(); got != crawl.StateStopping {
		t.Fatalf("state after Stop = %q", got)
	}
	if q := eng.Progress().Queued; q == 0 {
		t.Fatal("nothing left pending: the crawl finished before Stop could be tested")
	}
	stoppedAt := len(records(t, cfg.Data))
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	// The stopped crawl resumes where it stopped.
	cfg.Delay = 0
	runCrawl(t, cfg)
	if got := len(records(t, cfg.Data)); got <= stoppedAt {
		t.Fatalf("resumed crawl added nothing (%d records, %d at stop)", got, stoppedAt)
	}
}

// TestStopBeforeRun: a Stop before Run makes Run return at once.
func TestStopBeforeRun(t *testing.T) {
	srv := startWeb(t, websim.Config{Seed: 22, Hosts: 1, PagesPerHost: 20})
	cfg := crawlConfig(t, srv, websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: -1, Scope: websim.ScopeHost})
	eng, err := crawl.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	eng.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := eng.Progress().Fetched; got != 0 {
		t.Fatalf("stopped engine fetched %d URLs", got)
	}
}
