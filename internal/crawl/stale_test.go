package crawl_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// TestStaleCopyKeepsTurn: a frontier copy of a URL that is already
// completed is dropped by Scheduler.Next without a request, and the host
// keeps its turn: the next real URL of the host starts one delay after the
// previous request, not two.
func TestStaleCopyKeepsTurn(t *testing.T) {
	const delay = time.Second
	ctx := context.Background()
	dir := t.TempDir()
	// A relinking state: levels overlap only on one (NewScheduler), and
	// overlapping levels are what leave stale copies in the frontier.
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{Relink: true, MaxDepth: 5})
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawl.NewConfig()
	cfg.Data = dir
	cfg.Seeds = []string{"http://a.test/1"}
	cfg.Delay = crawl.Duration(delay)
	cfg.DelayFrom = crawl.DelayFromStart // levels overlap by default (StrictLevels unset)
	s, err := crawl.NewScheduler(cfg, st, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := frontier.Request{URL: "http://a.test/1", Key: "a.test"}
	if err := s.Start(ctx, []frontier.Request{first}); err != nil {
		t.Fatal(err)
	}
	l1, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A second copy of /1 queued ahead of /2, which /1's answer discovers.
	if err := s.Enqueue([]frontier.Request{first}); err != nil {
		t.Fatal(err)
	}
	second := frontier.Request{URL: "http://a.test/2", Key: "a.test", Depth: 1}
	if err := s.Finish(ctx, l1, crawl.Visit{Request: l1.Request, Outcome: "200", Discovered: []frontier.Request{second}}); err != nil {
		t.Fatal(err)
	}
	l2, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Request.URL != second.URL {
		t.Fatalf("Next handed out %s, want %s (the stale copy of /1 dropped)", l2.Request.URL, second.URL)
	}
	// One delay after /1; the stale copy costing a turn would make it two.
	if gap := l2.Start.Sub(l1.Start); gap < delay || gap >= delay+delay/2 {
		t.Errorf("/2 started %s after /1, want one delay (%s)", gap, delay)
	}
}
