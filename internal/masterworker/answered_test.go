package masterworker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestHostTurnEndsAtAnswer (issue #22): a host's turn ends when a worker
// has read its answer, not when the result has come back to the master.
// Each page costs the workers 150 ms after its answer was read (parse,
// store: here a hook before the result is sent); with --delay 100ms the
// gap websim sees from an answer's end to the host's next request stays
// close to the delay (median below delay + half the processing), never
// below it, with one connection per host; before, every gap was delay +
// processing + the round trip through nrq (≥ 250 ms).
func TestHostTurnEndsAtAnswer(t *testing.T) {
	const (
		delay   = 100 * time.Millisecond
		process = 150 * time.Millisecond
	)
	f := newFixture(t, websim.Config{Seed: 41, Hosts: 3, PagesPerHost: 8, Latency: 20 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	f.cfg.Delay = crawl.Duration(delay)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw-answer")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	var dirs []string
	for range 2 {
		w, dir := f.worker(t, "mw-answer", 4)
		masterworker.SetBeforeResult(w, func(string) { time.Sleep(process) })
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 0)
	log := f.srv.Log()
	var gaps []time.Duration
	for _, h := range log.Hosts() {
		if n := log.MaxOpen(h); n > 1 {
			t.Errorf("%s: %d requests open at once across workers, want 1", h, n)
		}
		var prev *websim.Entry
		for _, e := range log.HostEntries(h) {
			if e.Path == "/robots.txt" {
				continue // fetched under the page's lease, before it
			}
			if prev != nil {
				gap := e.Time.Sub(prev.End)
				if gap < delay {
					t.Errorf("%s: %s requested %v after the answer of %s ended, want at least the delay %v", h, e.Path, gap, prev.Path, delay)
				}
				gaps = append(gaps, gap)
			}
			prev = &e
		}
	}
	if len(gaps) < 10 {
		t.Fatalf("only %d gaps measured, want at least 10", len(gaps))
	}
	slices.Sort(gaps)
	median := gaps[len(gaps)/2]
	if limit := delay + process/2; median >= limit {
		t.Errorf("median gap from an answer to the host's next request %v, want below %v (the delay %v, not delay + processing %v + round trip); gaps %v",
			median, limit, delay, process, gaps)
	}
	s := m.Stats()
	if s.Answers == 0 {
		t.Errorf("no host turn was ended by an answered packet: %+v", s)
	}
	if s.Stale != 0 || s.Bad != 0 || s.Requeued != 0 {
		t.Errorf("clean run with stale/bad/requeued tasks: %+v", s)
	}
	t.Logf("median gap %v over %d gaps (min %v, max %v); master %+v", median, len(gaps), gaps[0], gaps[len(gaps)-1], s)
}
