package frontier

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func req(url, key string, prio int) Request {
	return Request{URL: url, Key: key, Priority: prio}
}

func TestDequeMatchesSliceModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var q deque
	var model []int
	for i := 0; i < 20000; i++ {
		switch op := r.IntN(10); {
		case op < 5:
			q.pushBack(item{seq: uint64(i)})
			model = append(model, i)
		case op < 6:
			q.pushFront(item{seq: uint64(i)})
			model = append([]int{i}, model...)
		default:
			if len(model) == 0 {
				continue
			}
			if got := q.peek().seq; got != uint64(model[0]) {
				t.Fatalf("step %d: peek %d, want %d", i, got, model[0])
			}
			if got := q.popFront().seq; got != uint64(model[0]) {
				t.Fatalf("step %d: pop %d, want %d", i, got, model[0])
			}
			model = model[1:]
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", i, q.len(), len(model))
		}
	}
}

func TestWRRProportions(t *testing.T) {
	s := newWRR([]int{4, 3, 2, 1})
	counts := make([]int, 4)
	all := func(int) bool { return true }
	if first := s.pick(all); first != 0 {
		t.Fatalf("first pick %d, want the heaviest queue 0", first)
	}
	counts[0]++
	for i := 1; i < 1000; i++ {
		counts[s.pick(all)]++
	}
	for i, want := range []int{400, 300, 200, 100} {
		if counts[i] != want {
			t.Errorf("queue %d picked %d times of 1000, want %d", i, counts[i], want)
		}
	}
	if got := s.pick(func(i int) bool { return i == 3 }); got != 3 {
		t.Errorf("only queue 3 non-empty: picked %d", got)
	}
	if got := s.pick(func(int) bool { return false }); got != -1 {
		t.Errorf("no queue non-empty: picked %d", got)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"negative front queues", Config{FrontQueues: -1}},
		{"weights length", Config{FrontQueues: 2, Weights: []int{1}}},
		{"zero weight", Config{FrontQueues: 2, Weights: []int{1, 0}}},
		{"negative per key", Config{PerKey: -2}},
		{"negative budget", Config{MemoryBudget: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, err := New(tt.cfg); err == nil {
				_ = f.Close()
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}

func TestPushValidation(t *testing.T) {
	f, _ := newTestFrontier(t, Config{})
	bad := []Request{
		{Key: "k"},
		{URL: "u"},
		{URL: "u", Key: "k", Depth: -1},
		{URL: "u", Key: "k", Priority: -1},
		{URL: "u", Key: "k", Priority: 1 << 20},
		{URL: "u", Key: "k", Attempt: 1 << 16},
		{URL: "u", Key: "k", Redirects: -1},
	}
	for _, r := range bad {
		if err := f.Push(r); err == nil {
			t.Errorf("Push(%+v) accepted", r)
		}
	}
	if err := f.PushAll([]Request{req("a", "k", 0), {URL: "b"}}); err == nil {
		t.Error("PushAll accepted an invalid request")
	}
	if st := f.Stats(); st.Queued != 0 {
		t.Errorf("PushAll with an invalid request queued %d URLs", st.Queued)
	}
}

func TestLeaseCarriesRequest(t *testing.T) {
	for _, want := range []Request{
		{URL: "http://a/x", Key: "a:80", Depth: 7, Priority: 9, Seq: 42, Attempt: 2, Redirects: 1, Topic: "tax"},
		// A revisit's schedule and a sitemap's kind travel through the queue
		// (the fetcher's conditional GET reads the schedule).
		{URL: "http://a/y", Key: "a:80", Depth: 1, Priority: 1, Seq: 43, Kind: KindSitemap, Schedule: "\x01\x02sched"},
		{URL: "http://a/z", Key: "a:80", Seq: 44, Schedule: "s"},
	} {
		f, _ := newTestFrontier(t, Config{})
		if err := f.Push(want); err != nil {
			t.Fatal(err)
		}
		l := mustNext(t, f)
		if l.Request != want {
			t.Fatalf("lease request %+v, want %+v", l.Request, want)
		}
	}
}

// TestPolitenessPerKey1 follows one key through leases on a fake clock: never
// two leases at once, and each start at least Delay after the previous Done.
func TestPolitenessPerKey1(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second})
	for i := 0; i < 3; i++ {
		must(t, f.Push(req(fmt.Sprintf("http://a/%d", i), "a:80", 0)))
	}
	must(t, f.Push(req("http://b/0", "b:80", 0)))
	ctx := context.Background()
	a0 := mustNext(t, f)
	b0 := mustNext(t, f)
	if a0.Request.Key == b0.Request.Key {
		t.Fatalf("two leases for key %s at once", a0.Request.Key)
	}
	pending := nextAsync(f, ctx)
	expectBlocked(t, pending) // a is leased, b has nothing else

	clk.Advance(300 * time.Millisecond) // the fetch of a0 takes 300ms
	doneAt := clk.Now()
	f.Done(a0, DoneInfo{})
	clk.waitTimer(t)
	expectBlocked(t, pending)
	clk.Advance(999 * time.Millisecond)
	expectBlocked(t, pending)
	clk.Advance(time.Millisecond)
	a1 := receive(t, pending)
	if a1.Request.URL != "http://a/1" {
		t.Fatalf("got %s, want http://a/1 (FIFO per key)", a1.Request.URL)
	}
	if gap := a1.Start.Sub(doneAt); gap < time.Second {
		t.Fatalf("start %v after the previous Done, want ≥ 1s", gap)
	}
	f.Done(b0, DoneInfo{})
	if st := f.Stats(); st.Leased != 1 || st.Queued != 1 || st.Keys != 1 {
		t.Fatalf("stats %+v, want 1 leased, 1 queued, 1 key", st)
	}
}

func TestRetryPutsBackAtHead(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second})
	must(t, f.PushAll([]Request{req("http://a/1", "a:80", 0), req("http://a/2", "a:80", 0)}))
	l := mustNext(t, f)
	f.Done(l, DoneInfo{Retry: true})
	pending := nextAsync(f, context.Background())
	clk.waitTimer(t)
	clk.Advance(time.Second)
	again := receive(t, pending)
	if again.Request.URL != "http://a/1" || again.Request.Attempt != 1 {
		t.Fatalf("after Retry got %s attempt %d, want http://a/1 attempt 1", again.Request.URL, again.Request.Attempt)
	}
	f.Done(again, DoneInfo{})
	if st := f.Stats(); st.Queued != 1 {
		t.Fatalf("queued %d, want 1", st.Queued)
	}
}

func TestDoneDelayAndCrawlDelay(t *testing.T) {
	tests := []struct {
		name      string
		keyDelay  time.Duration
		doneDelay time.Duration
		wantGap   time.Duration
	}{
		{"config delay", 0, 0, time.Second},
		{"crawl-delay above config", 5 * time.Second, 0, 5 * time.Second},
		{"crawl-delay below config is ignored", 100 * time.Millisecond, 0, time.Second},
		{"retry-after", 0, 10 * time.Second, 10 * time.Second},
		{"retry-after shorter than delay", 3 * time.Second, time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, clk := newTestFrontier(t, Config{Delay: time.Second})
			if tt.keyDelay > 0 {
				f.SetKeyDelay("a:80", tt.keyDelay)
			}
			must(t, f.PushAll([]Request{req("http://a/1", "a:80", 0), req("http://a/2", "a:80", 0)}))
			l := mustNext(t, f)
			done := clk.Now()
			f.Done(l, DoneInfo{Delay: tt.doneDelay})
			pending := nextAsync(f, context.Background())
			clk.waitTimer(t)
			clk.Advance(tt.wantGap - time.Millisecond)
			expectBlocked(t, pending)
			clk.Advance(time.Millisecond)
			l2 := receive(t, pending)
			if gap := l2.Start.Sub(done); gap != tt.wantGap {
				t.Fatalf("gap %v, want %v", gap, tt.wantGap)
			}
		})
	}
}

func TestSetKeyDelayWhileWaiting(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second})
	must(t, f.PushAll([]Request{req("http://a/1", "a:80", 0), req("http://a/2", "a:80", 0)}))
	l := mustNext(t, f)
	f.Done(l, DoneInfo{})
	pending := nextAsync(f, context.Background())
	clk.waitTimer(t)
	f.SetKeyDelay("a:80", 4*time.Second) // robots.txt arrives with Crawl-delay: 4
	clk.Advance(time.Second)
	clk.waitTimer(t) // woke up, re-armed for the new delay
	expectBlocked(t, pending)
	clk.Advance(3 * time.Second)
	receive(t, pending)
}

func TestPerKeyConcurrency(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second, PerKey: 2})
	for i := 0; i < 4; i++ {
		must(t, f.Push(req(fmt.Sprintf("http://a/%d", i), "a:80", 0)))
	}
	l0 := mustNext(t, f)
	pending := nextAsync(f, context.Background())
	clk.waitTimer(t)
	expectBlocked(t, pending)
	clk.Advance(time.Second)
	l1 := receive(t, pending)
	if gap := l1.Start.Sub(l0.Start); gap < time.Second {
		t.Fatalf("starts %v apart, want ≥ 1s", gap)
	}
	// Two leases out: a third must wait for a Done even after the delay.
	pending = nextAsync(f, context.Background())
	clk.Advance(5 * time.Second)
	expectBlocked(t, pending)
	f.Done(l0, DoneInfo{})
	receive(t, pending)
}

// TestPolitenessRealClock runs 8 workers on the real clock and checks that a
// key never has two leases at once and that each start follows the previous
// Done by at least the delay.
func TestPolitenessRealClock(t *testing.T) {
	const delay = 15 * time.Millisecond
	f, err := New(Config{Delay: delay, SpillDir: t.TempDir()})
	must(t, err)
	defer f.Close()
	const keys, perKey = 4, 8
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			must(t, f.Push(req(fmt.Sprintf("http://k%d/%d", k, i), fmt.Sprintf("k%d:80", k), 0)))
		}
	}
	var mu sync.Mutex
	lastDone := map[string]time.Time{}
	active := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, err := f.Next(context.Background())
				if errors.Is(err, ErrDrained) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				key := l.Request.Key
				mu.Lock()
				active[key]++
				if active[key] > 1 {
					t.Errorf("two leases for %s at once", key)
				}
				if prev, ok := lastDone[key]; ok && l.Start.Sub(prev) < delay {
					t.Errorf("%s started %v after the previous Done, want ≥ %v", key, l.Start.Sub(prev), delay)
				}
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) // time is the subject: a random fetch time
				mu.Lock()
				active[key]--
				lastDone[key] = time.Now() // before Done: Done's own clock reads later
				mu.Unlock()
				f.Done(l, DoneInfo{})
			}
		}()
	}
	wg.Wait()
}

// TestPriorityAcrossKeys: with one back queue, the router picks the highest
// priority URL first; with many back queues, ties in ready time go to the
// higher priority.
func TestPriorityAcrossKeys(t *testing.T) {
	for _, b := range []int{1, 0} {
		t.Run(fmt.Sprintf("B=%d", b), func(t *testing.T) {
			f, _ := newTestFrontier(t, Config{BackQueues: b, Delay: NoDelay})
			for i := 0; i < 5; i++ {
				must(t, f.Push(req(fmt.Sprintf("http://low%d/", i), fmt.Sprintf("low%d:80", i), 3)))
			}
			must(t, f.Push(req("http://mid/", "mid:80", 1)))
			must(t, f.Push(req("http://high/", "high:80", 0)))
			l := mustNext(t, f)
			if l.Request.URL != "http://high/" {
				t.Fatalf("first lease %s, want http://high/", l.Request.URL)
			}
			f.Done(l, DoneInfo{})
			l = mustNext(t, f)
			if l.Request.URL != "http://mid/" {
				t.Fatalf("second lease %s, want http://mid/", l.Request.URL)
			}
			f.Done(l, DoneInfo{})
		})
	}
}

// TestNoStarvation: a steady stream of high-priority URLs does not starve the
// low-priority ones; they get about their weight's share.
func TestNoStarvation(t *testing.T) {
	f, _ := newTestFrontier(t, Config{BackQueues: 1, Delay: NoDelay})
	for i := 0; i < 20; i++ {
		must(t, f.Push(req(fmt.Sprintf("http://low%d/", i), fmt.Sprintf("low%d:80", i), 3)))
	}
	low := 0
	for i := 0; i < 100; i++ {
		must(t, f.Push(req(fmt.Sprintf("http://high%d/", i), fmt.Sprintf("high%d:80", i), 0)))
		l := mustNext(t, f)
		if strings.Contains(l.Request.URL, "low") {
			low++
		}
		f.Done(l, DoneInfo{})
	}
	// Weights 4 (queue 0) and 1 (queue 3): one draw in five is low priority.
	if low != 20 {
		t.Fatalf("%d low-priority leases among 100, want 20", low)
	}
}

func TestDrainedAndConcurrentProducers(t *testing.T) {
	f, err := New(Config{Delay: NoDelay, MemoryBudget: 64, SpillDir: t.TempDir()})
	must(t, err)
	defer f.Close()
	// Each URL at depth < maxDepth discovers 3 children (a tree), pushed
	// before Done as the engine does.
	const maxDepth = 6
	total := 0
	for d, n := 0, 1; d <= maxDepth; d, n = d+1, n*3 {
		total += n
	}
	must(t, f.Push(Request{URL: "r", Key: "k0"}))
	var completed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, err := f.Next(context.Background())
				if errors.Is(err, ErrDrained) {
					if got := completed.Load(); got != int64(total) {
						t.Errorf("ErrDrained after %d of %d URLs", got, total)
					}
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				if l.Request.Depth < maxDepth {
					var kids []Request
					for c := 0; c < 3; c++ {
						kids = append(kids, Request{URL: fmt.Sprintf("%s.%d", l.Request.URL, c), Key: fmt.Sprintf("k%d", rand.IntN(20)), Depth: l.Request.Depth + 1, Priority: c})
					}
					if err := f.PushAll(kids); err != nil {
						t.Error(err)
					}
				}
				completed.Add(1)
				f.Done(l, DoneInfo{})
			}
		}()
	}
	wg.Wait()
	if got := completed.Load(); got != int64(total) {
		t.Fatalf("completed %d, want %d", got, total)
	}
}

func TestSpillFIFOAndRefill(t *testing.T) {
	dir := t.TempDir()
	f, _ := newTestFrontier(t, Config{Delay: NoDelay, MemoryBudget: 10, SpillDir: dir, FrontQueues: 1})
	f.spill.segmentBytes = 100 // several segments
	const n = 200
	for i := 0; i < n; i++ {
		must(t, f.Push(Request{URL: fmt.Sprintf("http://a/%03d", i), Key: "a:80", Seq: uint64(i)}))
	}
	st := f.Stats()
	if st.Queued != 10 || st.Spilled != n-10 {
		t.Fatalf("stats %+v, want 10 in memory and %d spilled", st, n-10)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "spill-*.seg")); len(files) < 5 {
		t.Fatalf("%d spill segments, want several", len(files))
	}
	for i := 0; i < n; i++ {
		l := mustNext(t, f)
		if l.Request.Seq != uint64(i) {
			t.Fatalf("lease %d has Seq %d: order not FIFO", i, l.Request.Seq)
		}
		if q := f.Stats().Queued; q > 10 {
			t.Fatalf("%d URLs in memory, budget 10", q)
		}
		f.Done(l, DoneInfo{})
		if i == n/2 {
			// New pushes go behind the spilled ones.
			must(t, f.Push(Request{URL: "http://a/late", Key: "a:80", Seq: n}))
		}
	}
	if l := mustNext(t, f); l.Request.Seq != n {
		t.Fatalf("late push came out as Seq %d", l.Request.Seq)
	} else {
		f.Done(l, DoneInfo{})
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "spill-*.seg")); len(files) != 0 {
		t.Fatalf("spent spill files left: %v", files)
	}
	if _, err := f.Next(context.Background()); !errors.Is(err, ErrDrained) {
		t.Fatalf("Next after everything = %v, want ErrDrained", err)
	}
}

// TestSpillConcurrent: 4 producers and 4 consumers through a tiny memory
// budget and small spill segments: no URL lost, none duplicated, FIFO per
// producer, key and priority.
func TestSpillConcurrent(t *testing.T) {
	f, err := New(Config{Delay: NoDelay, MemoryBudget: 50, BackQueues: 8, SpillDir: t.TempDir()})
	must(t, err)
	defer f.Close()
	f.spill.segmentBytes = 512
	const producers, perProducer, keys = 4, 1500, 30
	var (
		mu      sync.Mutex
		seen    = map[string]bool{}
		lastSeq = map[string]uint64{} // producer/key/priority → last seq
		wg      sync.WaitGroup
		pushed  atomic.Int64
	)
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				k, prio := i%keys, (i/keys)%4
				r := Request{URL: fmt.Sprintf("p%d/%d", p, i), Key: fmt.Sprintf("k%d", k), Priority: prio, Seq: uint64(i + 1), Topic: fmt.Sprintf("p%d", p)}
				if err := f.Push(r); err != nil {
					t.Error(err)
					return
				}
				pushed.Add(1)
			}
		}()
	}
	var consumers sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Int64
	for c := 0; c < 4; c++ {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			for {
				allPushed := pushed.Load() == producers*perProducer
				l, err := f.Next(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrDrained) {
						t.Error(err)
					}
					if errors.Is(err, ErrDrained) && !allPushed {
						time.Sleep(100 * time.Microsecond) // producers still running: poll again
						continue
					}
					return
				}
				r := l.Request
				mu.Lock()
				if seen[r.URL] {
					t.Errorf("duplicate %s", r.URL)
				}
				seen[r.URL] = true
				stream := fmt.Sprintf("%s/%s/%d", r.Topic, r.Key, r.Priority)
				if r.Seq <= lastSeq[stream] {
					t.Errorf("stream %s: Seq %d after %d", stream, r.Seq, lastSeq[stream])
				}
				lastSeq[stream] = r.Seq
				mu.Unlock()
				got.Add(1)
				f.Done(l, DoneInfo{})
			}
		}()
	}
	wg.Wait()
	consumers.Wait()
	if n := got.Load(); n != producers*perProducer {
		t.Fatalf("consumed %d URLs, want %d", n, producers*perProducer)
	}
	if st := f.Stats(); st.Queued != 0 || st.Spilled != 0 || st.Leased != 0 {
		t.Fatalf("stats after drain %+v", st)
	}
}

func TestNextContextCancel(t *testing.T) {
	f, _ := newTestFrontier(t, Config{})
	must(t, f.Push(req("http://a/", "a:80", 0)))
	l := mustNext(t, f) // the lease keeps the frontier from draining
	ctx, cancel := context.WithCancel(context.Background())
	pending := nextAsync(f, ctx)
	expectBlocked(t, pending)
	cancel()
	select {
	case r := <-pending:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Next after cancel = %v, want context.Canceled", r.err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Next ignored the cancelled context")
	}
	f.Done(l, DoneInfo{})
}

func TestCloseWakesNext(t *testing.T) {
	f, _ := newTestFrontier(t, Config{})
	must(t, f.Push(req("http://a/", "a:80", 0)))
	l := mustNext(t, f)
	pending := nextAsync(f, context.Background())
	expectBlocked(t, pending)
	must(t, f.Close())
	if r := <-pending; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Next after Close = %v, want ErrClosed", r.err)
	}
	f.Done(l, DoneInfo{}) // ignored
	if err := f.Push(req("http://b/", "b:80", 0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Push after Close = %v", err)
	}
}

func TestPauseResume(t *testing.T) {
	f, _ := newTestFrontier(t, Config{})
	must(t, f.Push(req("http://a/", "a:80", 0)))
	f.Pause()
	if !f.Stats().Paused {
		t.Fatal("Stats does not report the pause")
	}
	pending := nextAsync(f, context.Background())
	expectBlocked(t, pending)
	f.Resume()
	receive(t, pending)
}

func TestDrainedImmediately(t *testing.T) {
	f, _ := newTestFrontier(t, Config{})
	if _, err := f.Next(context.Background()); !errors.Is(err, ErrDrained) {
		t.Fatalf("Next on an empty frontier = %v, want ErrDrained", err)
	}
}

func TestDoneTwiceIsIgnored(t *testing.T) {
	f, _ := newTestFrontier(t, Config{Delay: NoDelay})
	must(t, f.PushAll([]Request{req("http://a/1", "a:80", 0), req("http://a/2", "a:80", 0)}))
	l := mustNext(t, f)
	f.Done(l, DoneInfo{})
	f.Done(l, DoneInfo{Retry: true})
	f.Done(nil, DoneInfo{})
	if st := f.Stats(); st.Leased != 0 || st.Queued != 1 {
		t.Fatalf("stats %+v after a double Done", st)
	}
	other, _ := newTestFrontier(t, Config{})
	other.Done(l, DoneInfo{})
}

// TestIdleKeysForgotten: a key's state is kept while its politeness time is
// in the future and dropped after.
func TestIdleKeysForgotten(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second})
	must(t, f.Push(req("http://a/", "a:80", 0)))
	f.Done(mustNext(t, f), DoneInfo{})
	f.mu.Lock()
	n := len(f.keys)
	f.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d keys right after Done, want 1 (politeness time pending)", n)
	}
	// A new URL for the key within the delay must still wait.
	must(t, f.Push(req("http://a/2", "a:80", 0)))
	pending := nextAsync(f, context.Background())
	clk.waitTimer(t)
	clk.Advance(time.Second)
	f.Done(receive(t, pending), DoneInfo{})
	clk.Advance(2 * time.Second)
	if _, err := f.Next(context.Background()); !errors.Is(err, ErrDrained) {
		t.Fatal(err)
	}
	f.mu.Lock()
	n = len(f.keys)
	f.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d keys kept after their delay passed", n)
	}
}

func TestStaleSpillFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "spill-p00-0000000001.seg")
	other := filepath.Join(dir, "keep.txt")
	must(t, os.WriteFile(stale, []byte("junk"), 0o600))
	must(t, os.WriteFile(other, []byte("mine"), 0o600))
	f, err := New(Config{SpillDir: dir})
	must(t, err)
	defer f.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("stale spill file kept")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("unrelated file removed")
	}
}

func TestTemporarySpillDir(t *testing.T) {
	f, err := New(Config{MemoryBudget: 1, Delay: NoDelay})
	must(t, err)
	must(t, f.PushAll([]Request{req("a", "k", 0), req("b", "k", 0)}))
	dir := f.spill.dir
	if dir == "" {
		t.Fatal("no temporary spill directory was made")
	}
	must(t, f.Close())
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("temporary spill directory not removed by Close")
	}
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	f, _ := newTestFrontier(t, Config{Registerer: reg, MemoryBudget: 1})
	must(t, f.PushAll([]Request{req("a", "k", 0), req("b", "k", 0)}))
	mfs, err := reg.Gather()
	must(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"spider_frontier_pushed_total", "spider_frontier_spilled_total", "spider_frontier_urls", "spider_frontier_leases"} {
		if !slices.Contains(names, want) {
			t.Errorf("metric %s not registered (have %v)", want, names)
		}
	}
	if _, err := New(Config{Registerer: reg}); err == nil {
		t.Error("a second frontier on the same registry must fail to register")
	}
	must(t, f.Close())
	mfs, _ = reg.Gather()
	if len(mfs) != 0 {
		t.Errorf("metrics left registered after Close: %d", len(mfs))
	}
}

func TestStatsReadyKeys(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second})
	for k := 0; k < 3; k++ {
		for i := 0; i < 2; i++ {
			must(t, f.Push(req(fmt.Sprintf("http://k%d/%d", k, i), fmt.Sprintf("k%d", k), 0)))
		}
	}
	l := mustNext(t, f)
	f.Done(l, DoneInfo{})
	st := f.Stats()
	if st.BackQueues != 3 || st.ReadyKeys != 2 || st.Keys != 3 || st.Queued != 5 {
		t.Fatalf("stats %+v, want 3 back queues, 2 ready keys, 3 keys, 5 queued", st)
	}
	clk.Advance(time.Second)
	if st := f.Stats(); st.ReadyKeys != 3 {
		t.Fatalf("ready keys %d after the delay, want 3", st.ReadyKeys)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStrictLevels checks the Strict barrier: a priority-1 URL is not handed
// out while a priority-0 URL is queued or leased, even on another key, and
// a URL pushed at the current level during the level is served in it.
func TestStrictLevels(t *testing.T) {
	f, err := New(Config{FrontQueues: 3, Strict: true, Delay: NoDelay, PerKey: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.PushAll([]Request{
		{URL: "http://a/0", Key: "a", Priority: 0, Seq: 1},
		{URL: "http://b/1", Key: "b", Priority: 1, Seq: 2},
		{URL: "http://c/0", Key: "c", Priority: 0, Seq: 3},
	}))
	l1, err := f.Next(ctx)
	must(err)
	l2, err := f.Next(ctx)
	must(err)
	for _, l := range []*Lease{l1, l2} {
		if l.Request.Priority != 0 {
			t.Fatalf("level 0 served %s first", l.Request.URL)
		}
	}
	// Level 0 is leased: level 1 must wait.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if l, err := f.Next(short); err == nil {
		t.Fatalf("barrier broken: %s handed out while level 0 is leased", l.Request.URL)
	}
	cancel()
	f.Done(l1, DoneInfo{})
	// A redirect target found during level 0 joins level 0.
	must(f.Push(Request{URL: "http://d/0", Key: "d", Priority: 0, Seq: 4}))
	l3, err := f.Next(ctx)
	must(err)
	if l3.Request.URL != "http://d/0" {
		t.Fatalf("got %s, want the level-0 URL pushed during level 0", l3.Request.URL)
	}
	f.Done(l2, DoneInfo{})
	f.Done(l3, DoneInfo{})
	l4, err := f.Next(ctx)
	must(err)
	if l4.Request.URL != "http://b/1" {
		t.Fatalf("got %s, want level 1 after level 0 drained", l4.Request.URL)
	}
	f.Done(l4, DoneInfo{})
	if _, err := f.Next(ctx); err != ErrDrained {
		t.Fatalf("Next = %v, want ErrDrained", err)
	}
}

func TestDrop(t *testing.T) {
	f, err := New(Config{Delay: NoDelay, BackQueues: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rs []Request
	for i, k := range []string{"a", "b", "c", "a", "b", "c", "d"} {
		rs = append(rs, Request{URL: fmt.Sprintf("http://%s/%d", k, i), Key: k, Seq: uint64(i + 1)})
	}
	if err := f.PushAll(rs); err != nil {
		t.Fatal(err)
	}
	// Route some into back queues first, so Drop meets both kinds of queue.
	l, err := f.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Drop(func(k string) bool { return k == "b" || k == "c" }); n != 4 {
		t.Fatalf("Drop removed %d URLs, want 4", n)
	}
	f.Done(l, DoneInfo{})
	var got []string
	for {
		l, err := f.Next(context.Background())
		if err == ErrDrained {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.Request.Key)
		f.Done(l, DoneInfo{})
	}
	slices.Sort(got)
	if strings.Join(got, "") != "ad" {
		t.Fatalf("after Drop and one lease of a, served keys %v; want the other a and d", got)
	}
	if st := f.Stats(); st.Queued != 0 || st.Keys != 0 {
		t.Fatalf("stats after draining: %+v", st)
	}
}
