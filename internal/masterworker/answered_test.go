package masterworker_test

import (
	"context"
	"slices"
	"strings"
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
	gaps := hostGaps(t, f.srv.Log(), delay)
	if len(gaps) < 10 {
		t.Fatalf("only %d gaps measured, want at least 10", len(gaps))
	}
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

// hostGaps checks websim's log for politeness (one request open per host,
// every gap from an answer's end to the host's next page request at least
// delay) and returns those gaps, sorted. robots.txt is left out: it is
// fetched under the page's lease, just before the page.
func hostGaps(t *testing.T, log *websim.AccessLog, delay time.Duration) []time.Duration {
	t.Helper()
	var gaps []time.Duration
	for _, h := range log.Hosts() {
		if n := log.MaxOpen(h); n > 1 {
			t.Errorf("%s: %d requests open at once across workers, want 1", h, n)
		}
		var prev *websim.Entry
		for _, e := range log.HostEntries(h) {
			if e.Path == "/robots.txt" {
				continue
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
	slices.Sort(gaps)
	return gaps
}

// TestHostTurnAnsweredOrNot measures the host's turn with and without
// answered packets, on a plain master–worker crawl and on a topics crawl
// (crawl nodes with their own queues srq:N: the same politeness rule).
// Each page costs the workers 150 ms after its answer was read. With the
// packets, the median gap at the server from an answer to the host's next
// request stays below delay + half the processing; without them (the
// turn ends with the result) it is at least delay + processing, which
// shows the test tells the two apart. No gap is ever below the delay.
func TestHostTurnAnsweredOrNot(t *testing.T) {
	const (
		delay   = 100 * time.Millisecond
		process = 150 * time.Millisecond
	)
	web := websim.Config{Seed: 44, Hosts: 6, Domains: 3, PagesPerHost: 8, Latency: 20 * time.Millisecond}
	for _, tc := range []struct {
		name             string
		topics, answered bool
	}{
		{"plain/answered", false, true},
		{"plain/without", false, false},
		{"topics/answered", true, true},
		{"topics/without", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			crawlName := "mw-turn-" + strings.ReplaceAll(tc.name, "/", "-")
			var (
				m     *masterworker.Master
				check func(dirs []string)
				log   *websim.AccessLog
				nodes []*masterworker.Worker
				dirs  []string
			)
			g, gctx := errgroup.WithContext(ctx)
			if tc.topics {
				f := newTopicsFixture(t, web, "")
				f.cfg.Delay = crawl.Duration(delay)
				m, _ = f.coordinator(t, crawlName, t.TempDir(), t.TempDir(), 2)
				g.Go(func() error { return m.Run(gctx) })
				// 8 fetch loops per node: with 4, a host's next task waits on
				// srq:N while the node's loops process earlier pages (median
				// 195 ms with the packets, 310 ms without, in one run): the
				// node's capacity, not the host's turn.
				for range 2 {
					w, dir := f.node(t, crawlName, 8)
					nodes, dirs = append(nodes, w), append(dirs, dir)
				}
				check, log = func(dirs []string) { f.check(t, dirs, 0) }, f.srv.Log()
			} else {
				f := newFixture(t, web, websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
				f.cfg.Delay = crawl.Duration(delay)
				m = f.master(t, crawlName)
				g.Go(func() error { return m.Run(gctx) })
				for range 2 {
					w, dir := f.worker(t, crawlName, 4)
					nodes, dirs = append(nodes, w), append(dirs, dir)
				}
				check, log = func(dirs []string) { f.check(t, dirs, 0) }, f.srv.Log()
			}
			for _, w := range nodes {
				masterworker.SetBeforeResult(w, func(string) { time.Sleep(process) })
				if !tc.answered {
					masterworker.NoAnswered(w)
				}
				g.Go(func() error { return w.Run(gctx) })
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			check(dirs)
			gaps := hostGaps(t, log, delay)
			if len(gaps) < 10 {
				t.Fatalf("only %d gaps measured, want at least 10", len(gaps))
			}
			median := gaps[len(gaps)/2]
			s := m.Stats()
			t.Logf("median gap %v over %d gaps (min %v, max %v); master %+v", median, len(gaps), gaps[0], gaps[len(gaps)-1], s)
			if tc.answered {
				if limit := delay + process/2; median >= limit {
					t.Errorf("median gap from an answer to the host's next request %v, want below %v (the delay, not delay + processing); gaps %v", median, limit, gaps)
				}
				if s.Answers == 0 {
					t.Errorf("no host turn was ended by an answered packet: %+v", s)
				}
				return
			}
			if median < delay+process {
				t.Errorf("without answered packets the median gap is %v, want at least delay + processing %v: the test does not see the turn", median, delay+process)
			}
			if s.Answers != 0 {
				t.Errorf("%d host turns ended by answered packets that were not sent", s.Answers)
			}
		})
	}
}

// TestTopicsNodeDiesAfterAnswered: a crawl node of a topics crawl killed
// after it sent the answered packet of the task it took, before its
// result: the host's turn has ended, the lease has not. The coordinator's
// reaper takes its processing list back (releaseTasks) and queues the
// task again after its turn (RequeueAfterTurn), so another node fetches
// it: no URL is lost. (Released as an ordinary failed attempt, the URL
// was lost: the frontier ignores a retry once the turn ended.)
func TestTopicsNodeDiesAfterAnswered(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 45, Hosts: 9, Domains: 3, PagesPerHost: 10, Latency: time.Millisecond}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc-ans-dies", t.TempDir(), t.TempDir(), 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	w, dir := f.node(t, "tc-ans-dies", 2)
	g.Go(func() error { return w.Run(gctx) })
	victim, url := masterworker.TopicAnsweredVictim(t, f.rdb, "tc-ans-dies", 1)
	for deadline := time.Now().Add(10 * time.Second); m.Stats().Answers < 1; {
		if time.Now().After(deadline) {
			t.Errorf("the victim's answered packet did not end its host's turn: %+v", m.Stats())
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, []string{dir}, 0)
	if _, ok := fetched(t, []string{dir})[url]; !ok {
		t.Errorf("the dead node's task %s (worker %d) was never fetched", url, victim)
	}
	if s := m.Stats(); s.Requeued < 1 {
		t.Errorf("stats %+v: the dead node's task was not taken back", s)
	}
}

// TestTopicsNodeAbandonsAfterAnswered: a crawl node stopped (its context
// cancelled) while it processes a page whose answered packet it sent
// gives that task back to the coordinator as a retry (leaveTopics →
// giveBackAnswered), not to its queue srq:N; the coordinator queues it
// again after the host's turn and the other node fetches it, politely.
func TestTopicsNodeAbandonsAfterAnswered(t *testing.T) {
	const delay = 50 * time.Millisecond
	f := newTopicsFixture(t, websim.Config{Seed: 46, Hosts: 6, Domains: 3, PagesPerHost: 10, Latency: 5 * time.Millisecond}, "")
	f.cfg.Delay = crawl.Duration(delay)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc-ans-abandon", t.TempDir(), t.TempDir(), 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })

	// One fetch loop, as in TestWorkerAbandonsAfterAnswered.
	quitter, qdir := f.node(t, "tc-ans-abandon", 1)
	qctx, quit := context.WithCancel(gctx)
	var once sync.Once
	var abandoned string
	masterworker.SetBeforeResult(quitter, func(url string) {
		once.Do(func() { abandoned = url; quit() })
		<-qctx.Done()
	})
	quitDone := make(chan error, 1)
	go func() { quitDone <- quitter.Run(qctx) }()
	w, dir := f.node(t, "tc-ans-abandon", 2)
	g.Go(func() error { return w.Run(gctx) })
	select {
	case err := <-quitDone:
		t.Logf("the quitting node ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the quitting node did not end")
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, []string{qdir, dir}, 1) // the abandoned page is fetched again
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
	if _, ok := fetched(t, []string{dir})[abandoned]; !ok {
		t.Errorf("the abandoned task %s was not fetched by the other node", abandoned)
	}
	t.Logf("coordinator: %+v; abandoned %s", s, abandoned)
}
