package masterworker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/partition"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/topics"
	"github.com/spider-crawler/spider/internal/websim"
)

// topicsFixture is a websim of three registrable domains, one topic each
// (alpha, beta, gamma), crawled by a coordinator and crawl nodes.
type topicsFixture struct {
	*fixture
	tc          *topics.Config
	domains     map[string]string // topic → its domain ("d0")
	maxInFlight int               // the coordinator's --max-inflight (0: its default)
}

// newTopicsFixture writes the topics file; blockedSeed, when not empty,
// adds a topic "blocked" whose one seed robots.txt disallows.
func newTopicsFixture(t *testing.T, web websim.Config, blockedSeed string) *topicsFixture {
	t.Helper()
	f := newFixture(t, web, websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeDomain})
	seeds := []string{f.srv.URL("www.d0.test", "/"), f.srv.URL("www.d1.test", "/"), f.srv.URL("www.d2.test", "/")}
	truth, err := f.srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: -1, Scope: websim.ScopeDomain})
	if err != nil {
		t.Fatal(err)
	}
	f.truth, f.cfg.Seeds = truth, nil
	words := func(tp websim.Topic) string {
		en, _ := websim.TopicWords(tp)
		return "[" + strings.Join(en, ", ") + "]"
	}
	yml := `period: 2s
tick: 100ms
base_slice: 40ms
topics:
  - name: alpha
    priority: 2
    seeds: [` + f.srv.URL("www.d0.test", "/") + `]
    patterns: ["http://(test,d0,"]
    terms: ` + words(websim.TopicTax) + `
  - name: beta
    priority: 1
    seeds: [` + f.srv.URL("www.d1.test", "/") + `]
    patterns: ["http://(test,d1,"]
    terms: ` + words(websim.TopicFinance) + `
  - name: gamma
    priority: 0
    seeds: [` + f.srv.URL("www.d2.test", "/") + `]
    patterns: ["http://(test,d2,"]
    terms: ` + words(websim.TopicSports) + `
`
	if blockedSeed != "" {
		yml += `  - name: blocked
    priority: 1
    seeds: [` + blockedSeed + `]
    terms: [nothing]
`
	}
	path := filepath.Join(t.TempDir(), "topics.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	f.cfg.Topics = path
	f.cfg.Scope = "domain"
	f.cfg.MaxDepth = -1
	tc, err := crawl.LoadTopics(&f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &topicsFixture{fixture: f, tc: tc, domains: map[string]string{"alpha": "d0", "beta": "d1", "gamma": "d2"}}
}

// coordinator makes the master of a topics crawl whose state and task
// records live in stateDir and data (a coordinator made again on the same
// directories resumes).
func (f *topicsFixture) coordinator(t *testing.T, name, stateDir, data string, waitNodes int) (*masterworker.Master, *crawl.Fetcher) {
	t.Helper()
	cfg := f.cfg
	cfg.Data = data
	st, err := state.Open(stateDir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fetcher, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fetcher.Close() })
	seeds, err := fetcher.SeedRequests()
	if err != nil {
		t.Fatal(err)
	}
	sched, err := crawl.NewTopicScheduler(cfg, f.tc, st, fetcher, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := masterworker.NewMaster(cfg, sched, seeds, f.rdb, opts(name), f.maxInFlight, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.UseTopics(masterworker.TopicsOptions{Config: f.tc, Fetcher: fetcher, WaitNodes: waitNodes}); err != nil {
		t.Fatal(err)
	}
	return m, fetcher
}

// node makes a crawl node: it checks its topics file and scores pages.
func (f *topicsFixture) node(t *testing.T, name string, concurrency int) (*masterworker.Worker, string) {
	t.Helper()
	return f.nodeWith(t, name, concurrency, nil)
}

// nodeWith is node with its configuration changed by edit (nil: none)
// before its fetcher is made.
func (f *topicsFixture) nodeWith(t *testing.T, name string, concurrency int, edit func(*crawl.Config)) (*masterworker.Worker, string) {
	t.Helper()
	ctx := context.Background()
	cfg, err := masterworker.LoadConfig(ctx, f.rdb, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := masterworker.CheckTopics(ctx, f.rdb, name, f.tc, "topics.yaml"); err != nil {
		t.Fatal(err)
	}
	cfg.SetLocal(f.cfg)
	cfg.Data = t.TempDir()
	if edit != nil {
		edit(&cfg)
	}
	fetcher, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := masterworker.NewWorker(fetcher, f.rdb, opts(name), concurrency, nil)
	if err != nil {
		t.Fatal(err)
	}
	scorer, err := crawl.TopicScorer(f.tc, fetcher)
	if err != nil {
		t.Fatal(err)
	}
	w.UseTopics(scorer)
	t.Cleanup(func() { w.Close() })
	return w, cfg.Data
}

// topicPages is each topic's page count in the coordinator's status.
func topicPages(st *topics.Status) map[string]int64 {
	out := map[string]int64{}
	for _, ts := range st.Tasks {
		out[ts.Name] = ts.Pages
	}
	return out
}

// TestTopicsCluster: a coordinator and two crawl nodes fetch every page of
// the topics' sites exactly once, each node only the hosts of its logical
// nodes (membership stable: the coordinator waits for both), every page
// charged to its topic; a topic whose seed robots.txt disallows ends with
// no page and a note, and the crawl ends.
func TestTopicsCluster(t *testing.T) {
	var blockedHits atomic.Int64
	blocked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.Write([]byte("User-agent: *\nDisallow: /\n"))
			return
		}
		blockedHits.Add(1)
		w.Write([]byte("<html>forbidden fruit</html>"))
	}))
	defer blocked.Close()
	f := newTopicsFixture(t, websim.Config{Seed: 7, Hosts: 9, Domains: 3, PagesPerHost: 12, Latency: time.Millisecond}, blocked.URL+"/")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc1", t.TempDir(), t.TempDir(), 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	var dirs []string
	var nodes []*masterworker.Worker
	for range 2 {
		w, dir := f.node(t, "tc1", 2)
		dirs, nodes = append(dirs, dir), append(nodes, w)
		g.Go(func() error { return w.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, dirs, 0)
	if blockedHits.Load() != 0 {
		t.Errorf("the disallowed site got %d page requests", blockedHits.Load())
	}

	// Each node fetched only hosts of its logical nodes on the ring of both.
	ring, err := partition.NewRing([]partition.Member{{ID: strconv.Itoa(nodes[0].ID()), Weight: 2}, {ID: strconv.Itoa(nodes[1].ID()), Weight: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs {
		recs := fetched(t, []string{d})
		if len(recs) == 0 {
			t.Errorf("node %d fetched nothing: the ring did not spread the hosts", nodes[i].ID())
		}
		for u := range recs {
			host := hostname(u)
			if owner := ring.Owner(partition.Bucket(host, partition.DefaultBuckets)); owner != strconv.Itoa(nodes[i].ID()) {
				t.Errorf("node %d fetched %s, whose logical node is node %s's", nodes[i].ID(), u, owner)
			}
		}
	}

	// Every page charged to its topic: the status's pages per topic are
	// the pages of its domain.
	st := m.TopicStatus()
	if st == nil {
		t.Fatal("no topics status")
	}
	want := map[string]int64{}
	for u, r := range fetched(t, dirs) {
		if r.Outcome == crawl.OutcomeRobots {
			continue
		}
		for tp, d := range f.domains {
			if strings.Contains(hostname(u), "."+d+".test") || strings.HasPrefix(hostname(u), d+".test") {
				want[tp]++
			}
		}
	}
	got := topicPages(st)
	for tp := range f.domains {
		if got[tp] != want[tp] || want[tp] == 0 {
			t.Errorf("topic %s: %d pages in the status, %d fetched on its domain", tp, got[tp], want[tp])
		}
	}
	for _, ts := range st.Tasks {
		if ts.Name == "blocked" && (ts.Pages != 0 || ts.Blocked == 0 || ts.Note == "") {
			t.Errorf("blocked topic: %d pages, %d blocked, note %q; want 0 pages, the refusals and a note", ts.Pages, ts.Blocked, ts.Note)
		}
	}
	// The published status has both nodes with their logical nodes.
	pub, ok, err := masterworker.ReadTopicStatus(ctx, f.rdb, "tc1")
	if err != nil || !ok {
		t.Fatalf("topics status in Redis: ok %v, err %v", ok, err)
	}
	if len(pub.Nodes) != 2 || pub.Nodes[0].Buckets+pub.Nodes[1].Buckets != partition.DefaultBuckets {
		t.Errorf("published nodes %+v: want 2 owning %d logical nodes", pub.Nodes, partition.DefaultBuckets)
	}
}

func hostname(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	if i := strings.IndexAny(u, "/:"); i >= 0 {
		u = u[:i]
	}
	return u
}

// TestTopicsClusterNodeDies: a crawl node dies holding tasks (one taken,
// one queued on its own queue); the coordinator takes both back once, its
// logical nodes move to the other node, and every page is fetched exactly
// once (the dead node fetched nothing).
func TestTopicsClusterNodeDies(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 8, Hosts: 9, Domains: 3, PagesPerHost: 10, Latency: time.Millisecond}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc2", t.TempDir(), t.TempDir(), 2)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	w, dir := f.node(t, "tc2", 2)
	g.Go(func() error { return w.Run(gctx) })
	masterworker.TopicVictim(t, f.rdb, "tc2", 1)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, []string{dir}, 0)
	if s := m.Stats(); s.Requeued < 1 {
		t.Errorf("stats %+v: the dead node's tasks were not taken back", s)
	}
}

// TestTopicsClusterJoin: a crawl node joining a running topics crawl gets
// logical nodes and work; nothing is fetched twice.
func TestTopicsClusterJoin(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 9, Hosts: 9, Domains: 3, PagesPerHost: 16, Latency: 10 * time.Millisecond}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, _ := f.coordinator(t, "tc3", t.TempDir(), t.TempDir(), 1)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	first, d1 := f.node(t, "tc3", 1)
	g.Go(func() error { return first.Run(gctx) })
	if err := f.srv.Log().WaitFor(ctx, func(e []websim.Entry) bool { return len(e) >= 20 }); err != nil {
		t.Fatal(err)
	}
	second, d2 := f.node(t, "tc3", 2)
	g.Go(func() error { return second.Run(gctx) })
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	f.check(t, []string{d1, d2}, 0)
	if second.Fetched() == 0 {
		t.Errorf("the joining node fetched nothing (the first fetched %d)", first.Fetched())
	}
}

// TestTopicsCoordinatorRestart: a coordinator stopped mid-crawl and
// started again on the same data directory resumes the task records
// (pages per topic) from the extendible hash table, and the crawl
// completes.
func TestTopicsCoordinatorRestart(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 10, Hosts: 9, Domains: 3, PagesPerHost: 12, Latency: 5 * time.Millisecond}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stateDir, data := filepath.Join(t.TempDir(), "state"), t.TempDir()
	nodeCtx, stopNode := context.WithCancel(ctx)
	defer stopNode()
	nodeErr := make(chan error, 1)

	runCtx, stopRun := context.WithCancel(ctx)
	m1, fetcher1 := f.coordinator(t, "tc4", stateDir, data, 1)
	done1 := make(chan error, 1)
	go func() { done1 <- m1.Run(runCtx) }()
	w, dir := f.node(t, "tc4", 2)
	go func() { nodeErr <- w.Run(nodeCtx) }()
	if err := f.srv.Log().WaitFor(ctx, func(e []websim.Entry) bool { return len(e) >= 30 }); err != nil {
		t.Fatal(err)
	}
	stopRun()
	if err := <-done1; err == nil {
		t.Fatal("the first coordinator run finished the crawl before it was stopped: make the web larger")
	}
	before := topicPages(m1.TopicStatus())
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	fetcher1.Close() // the data directory's lock
	var sum int64
	for _, n := range before {
		sum += n
	}
	if sum == 0 {
		t.Fatal("no page charged before the restart")
	}

	m2, _ := f.coordinator(t, "tc4", stateDir, data, 1)
	resumed := topicPages(m2.TopicStatus())
	for tp, n := range before {
		if resumed[tp] != n {
			t.Errorf("topic %s: %d pages before the restart, %d resumed", tp, n, resumed[tp])
		}
	}
	if err := m2.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-nodeErr; err != nil {
		t.Fatal(err)
	}
	after := topicPages(m2.TopicStatus())
	var total int64
	for tp, n := range after {
		if n < before[tp] {
			t.Errorf("topic %s: %d pages after the restart, fewer than %d before", tp, n, before[tp])
		}
		total += n
	}
	if total != sum+m2.Stats().Results {
		t.Errorf("%d pages charged in all, want %d before the restart + %d results after", total, sum, m2.Stats().Results)
	}
	recs := fetched(t, []string{dir})
	for _, u := range f.truth.MustFetch {
		if _, ok := recs[u]; !ok {
			t.Errorf("%s never fetched", u)
		}
	}
}

// TestTopicsCoordinatorAppliesOverride: a running coordinator applies a
// priority spider control wrote (SetTopicPriority) on its next daemon tick
// and publishes it in topics:status, with the file's priority beside it.
func TestTopicsCoordinatorAppliesOverride(t *testing.T) {
	f := newTopicsFixture(t, websim.Config{Seed: 7, Hosts: 9, Domains: 3, PagesPerHost: 12, Latency: time.Millisecond}, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Waiting for 2 crawl nodes that never come: the crawl stays running.
	m, _ := f.coordinator(t, "tc9", t.TempDir(), t.TempDir(), 2)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	defer func() { stop(); <-done }()
	prio := func() (int, int, bool) {
		st, ok, err := masterworker.ReadTopicStatus(ctx, f.rdb, "tc9")
		if err != nil || !ok {
			return 0, 0, false
		}
		for _, tk := range st.Tasks {
			if tk.Name == "beta" {
				return tk.Priority, tk.FilePriority, true
			}
		}
		return 0, 0, false
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, _, ok := prio(); !ok; _, _, ok = prio() {
		if time.Now().After(deadline) {
			t.Fatal("the coordinator published no topics status")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := masterworker.SetTopicPriority(ctx, f.rdb, "tc9", "beta", 7); err != nil {
		t.Fatal(err)
	}
	for {
		p, fp, _ := prio()
		if p == 7 {
			if fp != 1 {
				t.Errorf("beta's file priority %d, want 1", fp)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("beta's priority is still %d, want 7 after the override", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
