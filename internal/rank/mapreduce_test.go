package rank

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/graph"
)

// startWorkers runs n workers until the returned stop function is called;
// stop returns the first error of a worker other than a clean exit.
func startWorkers(t *testing.T, rdb redis.UniversalClient, crawl string, n int, cfg WorkerConfig) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cfg
			c.Crawl = crawl
			c.Idle = 20 * time.Millisecond
			if err := RunWorker(ctx, rdb, c); err != nil && !errors.Is(err, context.Canceled) {
				errs <- err
			}
		}()
	}
	return func() error {
		cancel()
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}
}

func TestMapReduceAgreesWithMemory(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	g := graph.SiteGraph(graph.SiteGraphConfig{Pages: 4000, Hosts: 60, Seed: 7})
	tele, _ := TeleportPrefix(g, "http://h000003.test/")
	for _, tc := range []struct {
		name    string
		workers int
		opt     Options
	}{
		{"1 worker", 1, Options{}},
		{"3 workers", 3, Options{}},
		{"3 workers personalised", 3, Options{Teleport: tele, Damping: 0.7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			want, err := Compute(ctx, g, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			stop := startWorkers(t, rdb, "agree", tc.workers, WorkerConfig{})
			m, err := NewMaster(ctx, rdb, MasterConfig{Crawl: "agree", Parts: 7})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Compute(ctx, g, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if e := l1(got.Ranks, want.Ranks); e >= 1e-9 || got.Iterations != want.Iterations || !got.Converged {
				t.Fatalf("map/reduce vs memory: L1 %g, iterations %d vs %d, converged %v", e, got.Iterations, want.Iterations, got.Converged)
			}
		})
	}
	// every per-run and per-round key is gone; only the state remains
	keys, err := rdb.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(keys, []string{"{spider:agree}:rank:state"}) {
		t.Fatalf("keys left behind: %v", keys)
	}
}

func TestWorkerDiesHoldingTask(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := graph.SiteGraph(graph.SiteGraphConfig{Pages: 1500, Seed: 2})
	want, err := Compute(ctx, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := NewMaster(ctx, rdb, MasterConfig{Crawl: "crash", Parts: 4, Lease: 300 * time.Millisecond, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	// A worker that claims a task in round 2 and vanishes without answering.
	claimed := make(chan task, 1)
	ghostDone := make(chan error, 1)
	go func() {
		ghostDone <- RunWorker(ctx, rdb, WorkerConfig{Crawl: "crash", Idle: 10 * time.Millisecond, afterClaim: func(t task) bool {
			if t.round == 2 {
				claimed <- t
				return true
			}
			return false
		}})
	}()
	var stop func() error
	go func() {
		<-claimed // the healthy worker joins once the ghost holds a lease
		stop = startWorkers(t, rdb, "crash", 1, WorkerConfig{})
	}()
	got, err := m.Compute(ctx, g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-ghostDone; err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if e := l1(got.Ranks, want.Ranks); e >= 1e-9 {
		t.Fatalf("L1 %g after a worker death", e)
	}
	if n := counterValue(t, reg, "spider_rank_tasks_requeued_total"); n < 1 {
		t.Fatalf("requeued %v tasks, want the ghost's task requeued", n)
	}
}

func TestDuplicateAndLateResults(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k, _ := newKeys("dup")
	tk := task{run: "r1", round: 0, part: 0}
	blob := encodeResult(&result{dangling: 0.5})
	run := func() int {
		n, err := complete(ctx, rdb, k, tk, blob)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := run(); n != -1 {
		t.Fatalf("result for a round that is over: %d, want -1", n)
	}
	rdb.Set(ctx, k.ranks("r1", 0, 0), encodeRanks([]float64{1}), 0)
	if n := run(); n != 1 {
		t.Fatalf("first result: %d, want 1", n)
	}
	if n := run(); n != 0 {
		t.Fatalf("second result: %d, want 0 (duplicate ignored)", n)
	}
	if l, _ := rdb.LLen(ctx, k.done("r1", 0)).Result(); l != 1 {
		t.Fatalf("done list has %d entries, want 1", l)
	}
	// a re-queued copy of a task whose result is in is skipped by claim
	rdb.RPush(ctx, k.todo(), tk.String())
	if _, err := claimScript.Run(ctx, rdb, []string{k.todo(), k.leases(), k.state()}, k.p).StringSlice(); !errors.Is(err, redis.Nil) {
		t.Fatalf("claim of a finished task: %v, want nothing", err)
	}
}

func TestMasterLockAndWorkerExit(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := NewMaster(ctx, rdb, MasterConfig{Crawl: "lock"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMaster(ctx, rdb, MasterConfig{Crawl: "lock"}); !errors.Is(err, ErrMasterBusy) {
		t.Fatalf("second master: %v, want ErrMasterBusy", err)
	}
	done := make(chan error, 1)
	waiting := make(chan struct{})
	logger := slog.New(&onMessage{msg: "rank worker: waiting for tasks", seen: waiting})
	go func() {
		done <- RunWorker(ctx, rdb, WorkerConfig{Crawl: "lock", Idle: 10 * time.Millisecond, Logger: logger})
	}()
	// The worker has read the session (running) and waits for tasks: only now may the
	// session end, or the worker would start after it and wait for the next master.
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("worker returned before waiting for tasks: %v", err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("worker after done: %v, want a clean exit", err)
	}
	// a worker started after the session ended waits for the next master
	wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer wcancel()
	if err := RunWorker(wctx, rdb, WorkerConfig{Crawl: "lock", Idle: 10 * time.Millisecond}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("late worker: %v, want it to wait for the next session", err)
	}
	// the lock was released: a new master may start
	m2, err := NewMaster(ctx, rdb, MasterConfig{Crawl: "lock"})
	if err != nil {
		t.Fatal(err)
	}
	m2.Close(ctx)
	for _, c := range []MasterConfig{{Crawl: "bad name"}, {Lease: time.Microsecond}, {Parts: -1}} {
		if _, err := NewMaster(ctx, rdb, c); err == nil {
			t.Errorf("NewMaster(%+v) succeeded", c)
		}
	}
}

func TestBlobsRoundTrip(t *testing.T) {
	p := &part{n: 10, lo: 2, hi: 5, off: []uint32{0, 2, 2, 3}, tgt: []uint32{0, 9, 4}}
	got, err := decodePart(encodePart(p))
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("part: %+v %v", got, err)
	}
	r := []float64{0.1, math.SmallestNonzeroFloat64, 0}
	gr, err := decodeRanks(encodeRanks(r))
	if err != nil || !reflect.DeepEqual(gr, r) {
		t.Fatalf("ranks: %v %v", gr, err)
	}
	res := &result{dangling: 0.25, ids: []uint32{1, 7}, sums: []float64{0.5, 1e-17}}
	gres, err := decodeResult(encodeResult(res), 10)
	if err != nil || !reflect.DeepEqual(gres, res) {
		t.Fatalf("result: %+v %v", gres, err)
	}
	if _, err := decodeResult(encodeResult(res), 5); !errors.Is(err, errBlob) {
		t.Fatalf("result with ids beyond n: %v", err)
	}
	b := encodePart(p)
	b[10] ^= 1
	if _, err := decodePart(b); !errors.Is(err, errBlob) {
		t.Fatalf("flipped part: %v", err)
	}
	// A well-formed part (checksum and all, as anyone who can write the
	// Redis key can make) that claims 2^32-1 nodes is refused before a
	// worker sizes its accumulators by it (36 GiB).
	huge := &part{n: 1<<32 - 1, lo: 0, hi: 2, off: []uint32{0, 1, 1}, tgt: []uint32{7}}
	if _, err := decodePart(encodePart(huge)); !errors.Is(err, errBlob) || !strings.Contains(err.Error(), "accepts") {
		t.Fatalf("part of 2^32-1 nodes: %v, want it refused", err)
	}
	for _, s := range []string{"", "a:b:c", "r:1", "r:-1:0", ":1:2"} {
		if _, err := parseTask(s); err == nil {
			t.Errorf("parseTask(%q) succeeded", s)
		}
	}
}

func FuzzDecodeBlobs(f *testing.F) {
	f.Add(encodePart(&part{n: 3, lo: 0, hi: 2, off: []uint32{0, 1, 2}, tgt: []uint32{1, 2}}))
	f.Add(encodeRanks([]float64{0.5, 0.5}))
	f.Add(encodeResult(&result{dangling: 0.1, ids: []uint32{0, 2}, sums: []float64{0.2, 0.3}}))
	f.Add([]byte("RKP1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := decodePart(b); err == nil {
			if !reflect.DeepEqual(encodePart(p), b) {
				t.Fatal("part does not re-encode to the same bytes")
			}
			for i := 0; i+1 < len(p.off); i++ {
				if p.off[i] > p.off[i+1] || int(p.off[i+1]) > len(p.tgt) {
					t.Fatal("accepted bad offsets")
				}
			}
		}
		if r, err := decodeRanks(b); err == nil && !reflect.DeepEqual(encodeRanks(r), b) && !hasNaN(r) {
			t.Fatal("ranks do not re-encode to the same bytes")
		}
		if r, err := decodeResult(b, 1<<20); err == nil {
			if len(r.ids) != len(r.sums) {
				t.Fatal("ids and sums differ in length")
			}
		}
		if tk, err := parseTask(string(b)); err == nil {
			if again, err := parseTask(tk.String()); err != nil || again != tk {
				t.Fatal("task does not round trip")
			}
		}
	})
}

func hasNaN(r []float64) bool {
	for _, v := range r {
		if v != v {
			return true
		}
	}
	return false
}

// counterValue reads a counter from a registry.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// onMessage is a slog handler that closes seen the first time a record with message msg
// is logged: a test's event for a point a component reaches, with no hook in it.
type onMessage struct {
	msg  string
	seen chan struct{}
	once sync.Once
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *onMessage) WithGroup(string) slog.Handler      { return h }
