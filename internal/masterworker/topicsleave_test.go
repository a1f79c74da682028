package masterworker_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestTopicsClusterNodeLeaves: a crawl node told to leave (Worker.Leave,
// spider worker's Ctrl-C) while its fetches are in flight (websim answers
// after 150 ms) takes no more tasks, lets the coordinator take its queued
// tasks back, finishes and answers its fetches, and leaves: Run returns
// nil, the other node crawls the rest, and websim saw every page of the
// truth requested exactly once and no request abandoned (a fetch
// abandoned in flight is requested again by the other node: that is what
// cancelling Run does). Nothing was taken back as from a dead node.
func TestTopicsClusterNodeLeaves(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 11, Hosts: 9, Domains: 3, PagesPerHost: 16, Latency: 150 * time.Millisecond}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc5", t.TempDir(), t.TempDir(), 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	stay, d1 := f.node(t, "tc5", 3)
	leaver, d2 := f.node(t, "tc5", 3)
	g.Go(func() error { return stay.Run(gctx) })
	deadline := time.Now().Add(30 * time.Second)
	for { // the staying node joins first: the leaving one is worker 2
		if _, win, _ := masterworker.TopicWindows(m); len(win) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first node did not join")
		}
		time.Sleep(5 * time.Millisecond)
	}
	left := make(chan error, 1)
	go func() { left <- leaver.Run(gctx) }()

	// Leave with fetches in flight and tasks waiting on its queue (its
	// loops all busy: an idle one would have taken them). Two queued at
	// least: a fetch that ends between this check and Leave lets its loop
	// start one of them before Leave (a loop that takes one after Leave
	// hands it back).
	deadline = time.Now().Add(time.Minute)
	for leaver.Fetched() < 5 || masterworker.InFlight(leaver) == 0 || masterworker.NodeQueue(t, f.rdb, "tc5", 2) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the leaving node never had fetches in flight and tasks queued (fetched %d)", leaver.Fetched())
		}
		time.Sleep(2 * time.Millisecond)
	}
	inFlight, before := masterworker.InFlight(leaver), leaver.Fetched()
	leaver.Leave()
	leaver.Leave() // a second call changes nothing
	select {
	case err := <-left:
		if err != nil {
			t.Fatalf("the leaving node: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the leaving node did not leave")
	}
	after := leaver.Fetched()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, []string{d1, d2}, 0)
	requestedOnce(t, f.srv)
	s := m.Stats()
	t.Logf("left with %d fetches in flight: %d answered before, %d after the leave; %d queued tasks taken back; stats %+v", inFlight, before, after, s.Returned, s)
	if s.Returned == 0 {
		t.Errorf("stats %+v: the tasks queued on the leaving node were not taken back", s)
	}
	if s.Requeued != 0 || s.Expired != 0 {
		t.Errorf("stats %+v: tasks of the leaving node were taken back as from a dead node", s)
	}
	// spider status reads the counters from the stats hash.
	if st, err := masterworker.ReadStatus(context.Background(), f.rdb, "tc5"); err != nil {
		t.Fatal(err)
	} else if st.Master["returned"] != s.Returned || st.Master["requeued"] != s.Requeued {
		t.Errorf("stats hash returned %d, requeued %d; the master counted %d and %d", st.Master["returned"], st.Master["requeued"], s.Returned, s.Requeued)
	}
	if stay.Fetched() == 0 {
		t.Error("the staying node fetched nothing")
	}
	if masterworker.InFlight(leaver) != 0 {
		t.Errorf("the node left with %d fetches in flight", masterworker.InFlight(leaver))
	}
}

// TestTopicsClusterSlowNode: a slow crawl node (concurrency 1, so a window
// of 2 tasks, and 5 requests/s) owns more ready hosts than its window holds
// (3 of 20; the fast node has concurrency 4);
// the coordinator (--max-inflight 4) leases no URL for it while its window
// is full, so no task waits in the coordinator holding a slot and the fast
// node keeps getting work; nothing is repeated, nothing lost.
func TestTopicsClusterSlowNode(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 12, Hosts: 20, Domains: 3, PagesPerHost: 5, Latency: 20 * time.Millisecond}, "")
	f.maxInFlight = 4
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc6", t.TempDir(), t.TempDir(), 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	slow, d1 := f.nodeWith(t, "tc6", 1, func(c *crawl.Config) { c.MaxRate = 5 })
	g.Go(func() error { return slow.Run(gctx) })
	// The slow node joins first, so it has work number 1.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, win, _ := masterworker.TopicWindows(m); len(win) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow node did not join")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fast, d2 := f.node(t, "tc6", 4)
	g.Go(func() error { return fast.Run(gctx) })

	var mu sync.Mutex
	maxOut := map[int]int{}
	maxWaiting, over := 0, ""
	seen := map[int]bool{} // the work numbers on the ring: a third one means a node was declared dead and came back
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			out, win, waiting := masterworker.TopicWindows(m)
			mu.Lock()
			maxWaiting = max(maxWaiting, waiting)
			for id := range win {
				seen[id] = true
			}
			for id, n := range out {
				maxOut[id] = max(maxOut[id], n)
				if n > win[id] && over == "" {
					over = "node " + strconv.Itoa(id) + ": " + strconv.Itoa(n) + " tasks out, window " + strconv.Itoa(win[id])
				}
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := g.Wait()
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	// Requeued above 0, or more than two work numbers seen, means a node
	// was declared dead meanwhile (a late heartbeat on a loaded machine):
	// its tasks in flight are fetched again and the ring changes.
	mu.Lock()
	t.Logf("coordinator: %+v; work numbers seen on the ring: %v", m.Stats(), slices.Sorted(maps.Keys(seen)))
	mu.Unlock()
	f.check(t, []string{d1, d2}, 0)

	// The precondition: the slow node (1) owns more hosts than its window.
	ring, err := partition.NewRing([]partition.Member{{ID: "1", Weight: 1}, {ID: "2", Weight: 4}})
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]bool{}
	for _, u := range f.truth.MustFetch {
		if ring.Owner(partition.Bucket(hostname(u), partition.DefaultBuckets)) == "1" {
			hosts[hostname(u)] = true
		}
	}
	if len(hosts) <= 2 {
		t.Fatalf("the slow node owns %d hosts, not more than its window of 2: pick another websim seed", len(hosts))
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("slow node: %d hosts, %d pages, at most %d out; fast node: %d pages, at most %d out; at most %d waiting in the coordinator",
		len(hosts), slow.Fetched(), maxOut[1], fast.Fetched(), maxOut[2], maxWaiting)
	if maxWaiting != 0 {
		t.Errorf("up to %d leased tasks waited in the coordinator for a node with no room", maxWaiting)
	}
	if over != "" {
		t.Errorf("a window overflowed: %s", over)
	}
	if maxOut[2] < 2 {
		t.Errorf("the fast node had at most %d tasks out: it was starved (want the 2 slots the slow node cannot hold)", maxOut[2])
	}
	if fast.Fetched() <= slow.Fetched() {
		t.Errorf("the fast node fetched %d pages, the slow one %d", fast.Fetched(), slow.Fetched())
	}
}

// requestedOnce is stricter than fixture.check, which forgives a request
// repeated after an abandoned one (status 0): no page was requested twice,
// none abandoned.
func requestedOnce(t *testing.T, srv *websim.Server) {
	t.Helper()
	count := map[string]int{}
	for _, e := range srv.Log().Entries() {
		if strings.HasPrefix(e.Path, "/robots") {
			continue
		}
		count[e.URL]++
		if e.Status == 0 {
			t.Errorf("%s: a request abandoned in flight", e.URL)
		}
	}
	for u, n := range count {
		if n > 1 {
			t.Errorf("%s requested %d times", u, n)
		}
	}
}

// TestWorkerLeaves: the plain topology shares the graceful leave: a worker
// told to leave while fetching finishes and answers its fetches, Run
// returns nil, the other worker crawls the rest; no page requested twice,
// none abandoned, nothing taken back as from a dead worker.
func TestWorkerLeaves(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 33, Hosts: 8, PagesPerHost: 20, Latency: 100 * time.Millisecond},
		websim.TruthRules{MaxDepth: 3, Scope: websim.ScopeAny})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw-leave")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	stay, d1 := f.worker(t, "mw-leave", 3)
	leaver, d2 := f.worker(t, "mw-leave", 3)
	g.Go(func() error { return stay.Run(gctx) })
	left := make(chan error, 1)
	go func() { left <- leaver.Run(gctx) }()
	deadline := time.Now().Add(time.Minute)
	for leaver.Fetched() < 5 || masterworker.InFlight(leaver) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the leaving worker never had fetches in flight (fetched %d)", leaver.Fetched())
		}
		time.Sleep(2 * time.Millisecond)
	}
	before := leaver.Fetched()
	leaver.Leave()
	select {
	case err := <-left:
		if err != nil {
			t.Fatalf("the leaving worker: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the leaving worker did not leave")
	}
	if leaver.Fetched() <= before {
		t.Errorf("the leaving worker answered no fetch after Leave (%d before, %d after)", before, leaver.Fetched())
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, []string{d1, d2}, 0)
	requestedOnce(t, f.srv)
	if s := m.Stats(); s.Requeued != 0 || s.Expired != 0 {
		t.Errorf("stats %+v: the leaving worker's tasks were taken back as from a dead worker", s)
	}
}

// TestWorkerLeaveTimeout: a leaving worker whose fetches outlast
// Options.LeaveTimeout (websim answers after 1.5 s, the bound is 200 ms)
// cuts them off: Run returns soon after the bound with an error that wraps
// context.Canceled (spider worker exits 130) and says the fetches were cut
// off; their tasks are handed back and the other worker fetches every
// page, none lost.
func TestWorkerLeaveTimeout(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 34, Hosts: 4, PagesPerHost: 4, Latency: 1500 * time.Millisecond},
		websim.TruthRules{MaxDepth: 2, Scope: websim.ScopeAny})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := f.master(t, "mw-leave-cut")
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	stay, d1 := f.worker(t, "mw-leave-cut", 3)
	leaver, d2 := f.workerWith(t, "mw-leave-cut", 3, func(o *masterworker.Options) { o.LeaveTimeout = 200 * time.Millisecond })
	left := make(chan error, 1)
	go func() { left <- leaver.Run(gctx) }()
	deadline := time.Now().Add(time.Minute)
	for masterworker.InFlight(leaver) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the leaving worker never had a fetch in flight")
		}
		time.Sleep(2 * time.Millisecond)
	}
	g.Go(func() error { return stay.Run(gctx) })
	leaver.Leave()
	start := time.Now()
	// No t.Fatal before g.Wait: the master must not be closed (test
	// clean-up) while it runs.
	select {
	case err := <-left:
		if !errors.Is(err, context.Canceled) || err == nil || !strings.Contains(err.Error(), "cut off") {
			t.Errorf("the worker cut off by the leave time-out: Run returned %v, want an error wrapping context.Canceled that says the fetches were cut off", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Run returned %s after Leave: the 200 ms bound did not cut the 1.5 s fetches off", took)
		}
	case <-time.After(20 * time.Second):
		t.Error("the leaving worker did not return")
		cancel()
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, []string{d1, d2}, 0)
}

// TestReportLoadConcurrent: a crawl node's load is reported by its
// heartbeat and, at once, by Leave (so the coordinator stops routing to it
// without waiting for the next beat): the two may run together, and the
// rate they compute must not race (go test -race).
func TestReportLoadConcurrent(t *testing.T) {
	f := newFixture(t, websim.Config{Seed: 35, Hosts: 1, PagesPerHost: 1}, websim.TruthRules{MaxDepth: 0, Scope: websim.ScopeAny})
	cfg := f.cfg
	cfg.Data = t.TempDir()
	fetcher, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := masterworker.NewWorker(fetcher, f.rdb, opts("mw-load"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var g errgroup.Group
	for range 2 {
		g.Go(func() error {
			for range 50 {
				if err := masterworker.ReportLoad(context.Background(), w); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestTopicsClusterStop: spider control stop on a topics crawl while tasks
// wait on a crawl node's own queue srq:N: the coordinator takes them back
// as never fetched (as a plain master takes back srq), the node finishes
// its fetch in flight and exits, and the coordinator returns ErrStopped
// promptly with no task taken back as from a dead node; the queue is
// empty afterwards.
func TestTopicsClusterStop(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 13, Hosts: 9, Domains: 3, PagesPerHost: 16, Latency: 300 * time.Millisecond}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc7", t.TempDir(), t.TempDir(), 1)
	stopped := make(chan error, 1)
	go func() { stopped <- m.Run(ctx) }()
	node, _ := f.node(t, "tc7", 1) // a window of 2: one fetching, one queued
	var g errgroup.Group
	g.Go(func() error { return node.Run(ctx) })
	deadline := time.Now().Add(time.Minute)
	for masterworker.NodeQueue(t, f.rdb, "tc7", 1) == 0 || masterworker.InFlight(node) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the node never had a task queued behind its fetch")
		}
		time.Sleep(2 * time.Millisecond)
	}
	keys, err := cluster.NewKeys("tc7")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.NewControl(f.rdb, keys).Set(ctx, cluster.ControlStopping); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, masterworker.ErrStopped) {
			t.Errorf("the stopped coordinator returned %v, want ErrStopped", err)
		}
	case <-time.After(20 * time.Second):
		cancel()
		<-stopped
		t.Fatal("the coordinator did not stop within 20 s")
	}
	if err := g.Wait(); err != nil {
		t.Errorf("the stopped node: %v", err)
	}
	if s := m.Stats(); s.Requeued != 0 || s.Expired != 0 {
		t.Errorf("stats %+v: the stopped node's queued tasks were taken back as from a dead node, not as never fetched", s)
	}
	if n := masterworker.NodeQueue(t, f.rdb, "tc7", 1); n != 0 {
		t.Errorf("%d tasks left on the node's queue after the stop", n)
	}
}
