package server

import (
	"context"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
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
