package layered

import (
	"context"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestLayeredSameNodeID: two processes with one NodeID (containers that share a host
// name and run as pid 1 get the same HOST-PID) get distinct worker ids, and one whose
// coordinator lease expired and was taken by the other cannot renew it (it would
// coordinate the same rounds twice).
func TestLayeredSameNodeID(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	rs := redistest.Start(t)
	srv := startWeb(t)
	seeds := srv.SeedURLs(1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := newKeys("same")
	var cs []*Crawler
	for range 2 {
		c, err := New(testConfig(t, srv, seeds), Options{Redis: rs.Client(), Crawl: "same", NodeID: "box-1", LeaseTTL: time.Second}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	a, b := cs[0], cs[1]
	seen := map[string]bool{}
	for range 3 {
		for _, c := range cs {
			id, err := c.workerID(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("worker id %s handed out twice", id)
			}
			seen[id] = true
		}
	}
	if ok, err := a.tryCoordinate(ctx, k); err != nil || !ok {
		t.Fatalf("a cannot coordinate a new crawl: %v, %v", ok, err)
	}
	if ok, err := b.tryCoordinate(ctx, k); err != nil || ok {
		t.Fatalf("b coordinates while a holds the lease: %v, %v", ok, err)
	}
	// a's lease expires (a stalled) and b takes the role (as if b held the crawl's data
	// directory).
	rdb := rs.Client()
	if err := rdb.Set(ctx, k.coord(), b.coordValue(), time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	la, err := a.coordLock(k)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := la.Renew(ctx); err != nil || ok {
		t.Fatalf("a renewed the lease b holds under the same NodeID: %v, %v", ok, err)
	}
	lb, err := b.coordLock(k)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := lb.Renew(ctx); err != nil || !ok {
		t.Fatalf("b cannot renew its own lease: %v, %v", ok, err)
	}
}
