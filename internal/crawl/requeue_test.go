package crawl_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// TestRequeueAfterTurn: a lease whose turn EndTurn ended, given back
// without a result (a master–worker worker died after reporting the
// answer read), is queued again with Attempt+1 by RequeueAfterTurn and
// handed out again after the host's delay; Release(lease, true) would
// lose it (the frontier's Done ignores a Retry after EndTurn).
func TestRequeueAfterTurn(t *testing.T) {
	const delay = 200 * time.Millisecond
	ctx := context.Background()
	s, _ := newScheduler(t, "http://a.test/1", delay)
	if err := s.Start(ctx, []frontier.Request{{URL: "http://a.test/1", Key: "a.test"}}); err != nil {
		t.Fatal(err)
	}
	l1, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.EndTurn(l1, crawl.Visit{Request: l1.Request})
	ended := time.Now()
	if err := s.RequeueAfterTurn(l1); err != nil {
		t.Fatal(err)
	}
	nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l2, err := s.Next(nctx)
	if err != nil {
		t.Fatalf("the URL given back was not queued again: %v", err)
	}
	if l2.Request.URL != l1.Request.URL || l2.Request.Attempt != l1.Request.Attempt+1 {
		t.Errorf("Next handed out %s attempt %d, want %s attempt %d", l2.Request.URL, l2.Request.Attempt, l1.Request.URL, l1.Request.Attempt+1)
	}
	if gap := time.Since(ended); gap < delay-10*time.Millisecond {
		t.Errorf("handed out again %v after the turn ended, want the host's delay %v", gap, delay)
	}
	if err := s.Finish(ctx, l2, crawl.Visit{Request: l2.Request, Outcome: "200"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(nctx); !errors.Is(err, frontier.ErrDrained) {
		t.Errorf("Next after the last Finish = %v, want ErrDrained", err)
	}
}

// TestCopyLoweredWhileOut: a URL's depth is lowered while a copy of it is
// out and its host's turn has ended (the pipeline, a master–worker task
// whose answer was read); Next hands the new copy out while the old one is
// in flight. When the old copy then comes back without a result
// (RequeueAfterTurn: its worker died), the URL must still be fetched: the
// copy queued again is stale (the old depth), so the new one must not
// have been dropped. The kill test of `spider worker` lost URLs this way.
func TestCopyLoweredWhileOut(t *testing.T) {
	ctx := context.Background()
	s, st := newScheduler(t, "http://a.test/x", 0) // no delay: the new copy is handed out at once
	const u = "http://a.test/x"
	if err := s.Start(ctx, []frontier.Request{{URL: u, Key: "a.test", Depth: 3}}); err != nil {
		t.Fatal(err)
	}
	old, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.EndTurn(old, crawl.Visit{Request: old.Request})
	// Found again nearer the seeds while the old copy is out: the state
	// lowers the pending URL's depth and the new copy is queued.
	lowered, err := st.Discover(ctx, []frontier.Request{{URL: u, Key: "a.test", Depth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(lowered) != 1 || lowered[0].Depth != 1 {
		t.Fatalf("Discover at a smaller depth returned %+v, want the URL at depth 1", lowered)
	}
	if err := s.Enqueue(lowered); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if l, err := s.Next(wctx); err == nil {
		t.Fatalf("Next handed out %s at depth %d while another copy is in flight", l.Request.URL, l.Request.Depth)
	}
	if err := s.RequeueAfterTurn(old); err != nil {
		t.Fatal(err)
	}
	nctx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	l, err := s.Next(nctx)
	if err != nil {
		t.Fatalf("the URL was lost: Next = %v", err)
	}
	if l.Request.URL != u || l.Request.Depth != 1 {
		t.Errorf("Next handed out %s at depth %d, want %s at depth 1", l.Request.URL, l.Request.Depth, u)
	}
	if err := s.Finish(ctx, l, crawl.Visit{Request: l.Request, Outcome: "200"}); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Next(nctx); !errors.Is(err, frontier.ErrDrained) {
		t.Errorf("Next after the last Finish = %v (%v), want ErrDrained", err, l)
	}
}

// newScheduler returns a scheduler on a new embedded state (closed with the
// test) with seed and the host delay given, and the state.
func newScheduler(t *testing.T, seed string, delay time.Duration) (*crawl.Scheduler, *state.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawl.NewConfig()
	cfg.Data = dir
	cfg.Seeds = []string{seed}
	cfg.Delay = crawl.Duration(delay)
	s, err := crawl.NewScheduler(cfg, st, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, st
}
