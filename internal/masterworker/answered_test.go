package masterworker_test

import (
	"context"
	"slices"
	"sync"
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

// TestWorkerDiesAfterAnswered: a worker killed after it told the master a
// task's answer was read, before its result: the host's turn has ended,
// the lease has not; the task is queued again when the worker is declared
// dead and fetched by another worker, so no URL is lost.
func TestWorkerDiesAfterAnswered(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 42, Hosts: 6, PagesPerHost: 20, Latency: 5 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw-ans-dies")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })

	victim, url := masterworker.AnsweredVictim(t, f.rdb, "mw-ans-dies")
	// The packet is popped before its turn ends: wait for the count.
	for deadline := time.Now().Add(10 * time.Second); m.Stats().Answers != 1; {
		if time.Now().After(deadline) {
			t.Errorf("the victim's answered packet did not end its host's turn: %+v", m.Stats())
			break
		}
		time.Sleep(time.Millisecond)
	}
	var dirs []string
	for range 2 {
		w, dir := f.worker(t, "mw-ans-dies", 4)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 0)
	if _, ok := fetched(t, dirs)[url]; !ok {
		t.Errorf("the dead worker's task %s was never fetched", url)
	}
	s := m.Stats()
	if s.Requeued < 1 {
		t.Errorf("the dead worker's task was not re-queued: %+v", s)
	}
	if n, _ := f.rdb.LLen(ctx, victim).Result(); n != 0 {
		t.Errorf("the dead worker's processing list still holds %d tasks", n)
	}
	t.Logf("master: %+v", s)
}

// TestWorkerAbandonsAfterAnswered: a worker stopped (its context
// cancelled) while it processes a page whose answered packet it sent
// gives that task back to the master as a retry, not to srq (where
// another worker would fetch it outside its host's turn); the master
// queues it again and the crawl completes, politely.
func TestWorkerAbandonsAfterAnswered(t *testing.T) {
	const delay = 50 * time.Millisecond
	f := newFixture(t, websim.Config{Seed: 43, Hosts: 4, PagesPerHost: 12, Latency: 5 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	f.cfg.Delay = crawl.Duration(delay)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw-ans-abandon")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })

	// One fetch loop: a second one could be cut off mid-fetch, and such a
	// task goes back to srq under its host's turn (not this test's case).
	quitter, qdir := f.worker(t, "mw-ans-abandon", 1)
	qctx, quit := context.WithCancel(gctx)
	var once sync.Once
	masterworker.SetBeforeResult(quitter, func(string) {
		once.Do(quit)
		<-qctx.Done()
	})
	quitDone := make(chan error, 1)
	go func() { quitDone <- quitter.Run(qctx) }()
	select {
	case err := <-quitDone:
		t.Logf("the quitting worker ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the quitting worker did not end")
	}
	dirs := []string{qdir}
	for range 2 {
		w, dir := f.worker(t, "mw-ans-abandon", 4)
		dirs = append(dirs, dir)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 1) // the abandoned page is fetched again
	log := f.srv.Log()
	for _, h := range log.Hosts() {
		if n := log.MaxOpen(h); n > 1 {
			t.Errorf("%s: %d requests open at once, want 1", h, n)
		}
		if gap, ok := log.MinGap(h); ok && gap < delay {
			t.Errorf("%s: requests %v apart, want at least %v", h, gap, delay)
		}
	}
	s := m.Stats()
	if s.Requeued < 1 {
		t.Errorf("the abandoned task was not given back and queued again: %+v", s)
	}
	t.Logf("master: %+v", s)
}
