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
	tc      *topics.Config
	domains map[string]string // topic → its domain ("d0")
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
func (f *topicsFixture) coordinator(t *testing.T, name, stateDir, data string, waitNodes int) *masterworker.Master {
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
	m, err := masterworker.NewMaster(cfg, sched, seeds, f.rdb, opts(name), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.UseTopics(masterworker.TopicsOptions{Config: f.tc, Fetcher: fetcher, WaitNodes: waitNodes}); err != nil {
		t.Fatal(err)
	}
	return m
}

// node makes a crawl node: it checks its topics file and scores pages.
func (f *topicsFixture) node(t *testing.T, name string, concurrency int) (*masterworker.Worker, string) {
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
	m := f.coordinator(t, "tc1", t.TempDir(), t.TempDir(), 2)
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
