package crawl_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// TestCommitMetrics: a scheduler over the embedded state exports the
// state's group-commit counters, and they count the writes made.
func TestCommitMetrics(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawl.NewConfig()
	cfg.Data = dir
	reg := prometheus.NewRegistry()
	s, err := crawl.NewScheduler(cfg, st, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seed := frontier.Request{URL: "http://a.test/", Key: "a.test"}
	if err := s.Start(ctx, []frontier.Request{seed}); err != nil {
		t.Fatal(err)
	}
	l, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, l, crawl.Visit{Request: l.Request, Outcome: "200"}); err != nil {
		t.Fatal(err)
	}
	commits, calls := st.CommitStats()
	if commits < 1 || calls != 2 { // the seed's Discover and the Complete
		t.Errorf("CommitStats = %d commits, %d calls; want ≥ 1 commits carrying 2 calls", commits, calls)
	}
	metrics, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range metrics {
		got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
	}
	if got["spider_state_commits_total"] != float64(commits) || got["spider_state_commit_calls_total"] != float64(calls) {
		t.Errorf("exported commits %v, calls %v; want %d, %d", got["spider_state_commits_total"], got["spider_state_commit_calls_total"], commits, calls)
	}
}
