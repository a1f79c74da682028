package redisview

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/server"
)

// TestView reads a peer-to-peer crawl's members from a real Redis:
// none at first (idle), then two nodes with their weights, bucket shares
// and published load.
func TestView(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	clk := &clock{time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)}
	v := New(rdb, "web", 64, nil, clk.now)

	st, err := v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Source != "peer-to-peer" || st.State != "idle" || len(st.Nodes) != 0 {
		t.Fatalf("empty crawl: %+v", st)
	}

	keys, err := cluster.NewKeys("web")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []cluster.Member{{ID: "a", Weight: 100, Load: cluster.Load{PagesPerSec: 12.5, Queue: 40}}, {ID: "b", Weight: 300, Load: cluster.Load{PagesPerSec: 30, Queue: 7}}} {
		ms := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{})
		if _, err := ms.Join(ctx, m); err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
	}
	clk.t = clk.t.Add(time.Second)
	st, err = v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "running" || len(st.Nodes) != 2 {
		t.Fatalf("two nodes: %+v", st)
	}
	a, b := st.Nodes[0], st.Nodes[1]
	if a.ID != "a" || b.ID != "b" || a.Weight != 100 || b.Weight != 300 || a.Buckets+b.Buckets != 64 || b.Buckets <= a.Buckets {
		t.Fatalf("nodes %+v", st.Nodes)
	}
	if st.PagesPerSec != 42.5 || st.Queue == nil || st.Queue.Queued != 47 {
		t.Fatalf("rate %v queue %+v", st.PagesPerSec, st.Queue)
	}
	if len(st.Series) != 2 || st.Series[1].PagesPerSec != 42.5 {
		t.Fatalf("series %+v", st.Series)
	}
}

// TestViewMasterConfig: a master–worker crawl's dashboard shows the
// rules its master published for the workers (never the master's local
// settings), read once per master epoch. The keys are written here as
// masterworker lays them out (its Master publishes them in prepare).
func TestViewMasterConfig(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	v := New(rdb, "mw", 64, nil, nil)
	publish := func(epoch int64, cfg crawl.Config) {
		t.Helper()
		b, err := cfg.RulesJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, "{spider:mw}:mw:config", b, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, "{spider:mw}:mw:stats", "epoch", epoch).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := crawl.NewConfig()
	cfg.Seeds = []string{"http://www.d0.test/"}
	cfg.MaxPages, cfg.UserAgent = 500, "mw-test/1"
	cfg.Data, cfg.Resolve, cfg.Concurrency = "/master/only", []string{"www.d0.test:80:127.0.0.1"}, 64
	publish(1, cfg)
	b, st := snapshotJSON(t, v)
	c := st.Config
	if st.Source != "master-worker" || c == nil || c.MaxPages != 500 || c.UserAgent != "mw-test/1" || len(c.Seeds) != 1 || c.Concurrency != 0 || c.DelayMS != 1000 {
		t.Fatalf("master-worker config: %s", b)
	}
	if strings.Contains(string(b), "/master/only") || strings.Contains(string(b), "127.0.0.1") {
		t.Fatalf("the master's local settings are shown: %s", b)
	}
	// Read once per epoch: a new master (epoch 2) publishes new rules.
	cfg.MaxPages = 900
	publish(1, cfg)
	if _, st = snapshotJSON(t, v); st.Config.MaxPages != 500 {
		t.Fatalf("same epoch: max pages %d, want the cached 500", st.Config.MaxPages)
	}
	publish(2, cfg)
	if _, st = snapshotJSON(t, v); st.Config.MaxPages != 900 {
		t.Fatalf("new epoch: max pages %d, want 900", st.Config.MaxPages)
	}
}

// TestViewReport: the dashboard of a crawl read from Redis shows the
// crawl-wide report its nodes publish (cluster.Publish): the pages, rows,
// outcomes and bytes of all nodes, a row per node with its pages and
// state, the topology from the nodes' roles (layered here, which has no
// status of its own in Redis), and the crawl's state, finished once every
// node published its last figures as done.
func TestViewReport(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	v := New(rdb, "lay", 64, nil, nil)
	keys, err := cluster.NewKeys("lay")
	if err != nil {
		t.Fatal(err)
	}
	pub := func(r cluster.NodeReport) {
		t.Helper()
		if err := cluster.Publish(ctx, rdb, keys, r); err != nil {
			t.Fatal(err)
		}
	}
	pub(cluster.NodeReport{Node: "coord", Role: cluster.RoleLayered, State: cluster.ReportRunning, Detail: map[string]int64{"round": 2}})
	pub(cluster.NodeReport{Node: "w1", Role: cluster.RoleWorker, State: cluster.ReportRunning, PagesPerSec: 4,
		Counts: cluster.Counts{Pages: 5, Bytes: 500, Rows: map[string]int64{"200": 4, "404": 1}, Outcomes: map[string]int64{"200": 4, "404": 1}}})
	pub(cluster.NodeReport{Node: "w2", Role: cluster.RoleWorker, State: cluster.ReportRunning, PagesPerSec: 1,
		Counts: cluster.Counts{Pages: 2, Bytes: 20, Rows: map[string]int64{"200": 1, "time-out": 1}, Outcomes: map[string]int64{"200": 1, "timeout": 1}}})
	st, err := v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Source != server.SourceLayered || st.State != "running" || st.Pages != 7 || st.Bytes != 520 || st.PagesPerSec != 5 {
		t.Fatalf("live layered crawl: source %q state %q pages %d bytes %d rate %v", st.Source, st.State, st.Pages, st.Bytes, st.PagesPerSec)
	}
	rows := map[string]int64{}
	for _, r := range st.Rows {
		rows[r.Name] = r.Count
	}
	if rows["200"] != 5 || rows["404"] != 1 || rows["time-out"] != 1 || len(st.Rows) != len(crawl.TableRows) {
		t.Fatalf("rows %+v", st.Rows)
	}
	if len(st.Nodes) != 3 || st.Nodes[0].ID != "coord" || st.Nodes[1].Fetched != 5 || st.Nodes[2].State != "running" {
		t.Fatalf("nodes %+v", st.Nodes)
	}
	if st.Report == nil || len(st.Report.Nodes) != 3 || st.Report.Final || st.Report.Nodes[0].Detail["round"] != 2 {
		t.Fatalf("report %+v", st.Report)
	}
	for _, n := range []string{"coord", "w1", "w2"} {
		r, _, _ := cluster.ReadNodeReport(ctx, rdb, keys, n)
		r.State = cluster.ReportDone
		if err := cluster.PublishFinal(ctx, rdb, keys, r); err != nil {
			t.Fatal(err)
		}
	}
	st, err = v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "finished" || !st.Report.Final || st.Pages != 7 || st.PagesPerSec != 0 || st.Control {
		t.Fatalf("ended layered crawl: state %q final %v pages %d rate %v control %v", st.State, st.Report.Final, st.Pages, st.PagesPerSec, st.Control)
	}
}
