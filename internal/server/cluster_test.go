package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
)

// TestRedisView reads a peer-to-peer crawl's members from a real Redis:
// none at first (idle), then two nodes with their weights, bucket shares
// and published load.
func TestRedisView(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	clk := &clock{time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)}
	v := NewRedisView(rdb, "web", 64, nil, clk.now)

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

// TestRedisViewMasterConfig: a master–worker crawl's dashboard shows the
// rules its master published for the workers (never the master's local
// settings), read once per master epoch. The keys are written here as
// masterworker lays them out (its Master publishes them in prepare).
func TestRedisViewMasterConfig(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	v := NewRedisView(rdb, "mw", 64, nil, nil)
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
