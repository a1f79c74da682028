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
	dir := t.TempDir()
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawl.NewConfig()
	cfg.Data = dir
	cfg.Seeds = []string{"http://a.test/1"}
	cfg.Delay = crawl.Duration(delay)
	s, err := crawl.NewScheduler(cfg, st, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
