package layered

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestLayeredRedisCluster runs a distributed layered crawl (a coordinator
// and a worker) on a real Redis Cluster of three masters: every step runs
// (a transaction or script across slots would fail there), the crawl
// records what an embedded crawl does, its report equals the coordinator's
// records, and its keys spread: of every key the crawl writes (those of
// this package, each counted once, from the masters' keyspace events; the
// crawl-wide control and report keys of package cluster, four at most,
// are not counted), no master holds more than 45%, where one hash tag for
// every key put them all on one master.
func TestLayeredRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	rc := redistest.StartCluster(t, 3)
	rdb := rc.Client()
	// More domains than startWeb's, so that a pass has tasks in most
	// shards (tasks are by registrable domain: a crawl of a few domains has
	// as few task keys).
	srv, err := websim.Start(context.Background(), websim.Config{
		Seed: 5, Hosts: 32, Domains: 32, PagesPerHost: 12, Enable: websim.FeatureRedirects, TroubleShare: 0.5,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(8)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Every key the crawl writes, on the master that holds it: each master
	// publishes its keyspace events (notify-keyspace-events), and every key
	// named by one is counted once, however briefly it lived.
	var mu sync.Mutex
	seen := map[string]string{}    // key → master
	outBytes := map[string]int64{} // master → bytes of the task outputs written there
	err = rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if err := c.ConfigSet(ctx, "notify-keyspace-events", "KA").Err(); err != nil {
			return err
		}
		sub := c.PSubscribe(ctx, "__keyspace@0__:*")
		if _, err := sub.Receive(ctx); err != nil {
			return err
		}
		t.Cleanup(func() { sub.Close() })
		addr := c.Options().Addr
		go func() {
			for m := range sub.Channel() {
				key := strings.TrimPrefix(m.Channel, "__keyspace@0__:")
				if strings.HasPrefix(key, "{spider:lcl}:layered:") || strings.HasPrefix(key, "spider:lcl:{ly-") {
					mu.Lock()
					seen[key] = addr
					mu.Unlock()
				}
				// A task's output, the bulk of the memory: its size as it
				// is written (the coordinator deletes it once ingested).
				if m.Payload == "set" && strings.Contains(key, ":out:") {
					if n, err := c.MemoryUsage(ctx, key).Result(); err == nil {
						mu.Lock()
						outBytes[addr] += n
						mu.Unlock()
					}
				}
			}
		}()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A delay between a host's requests keeps each task busy a while, so a
	// pass's tasks wait in their shards as in a crawl of real sites.
	coordCfg := testConfig(t, srv, seeds)
	coordCfg.Delay = crawl.Duration(20 * time.Millisecond)
	workerCfg := testConfig(t, srv, seeds)
	workerCfg.Delay = coordCfg.Delay
	coord, err := New(coordCfg, Options{Rounds: 3, Groups: 24, NoiseRule: NoiseRatio, Redis: rdb, Crawl: "lcl", NodeID: "coord", LeaseTTL: 2 * time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	worker, err := New(workerCfg, Options{Rounds: 3, Groups: 24, NoiseRule: NoiseRatio, Redis: rdb, Crawl: "lcl", NodeID: "worker", LeaseTTL: 2 * time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	cdone := make(chan error, 1)
	go func() { cdone <- coord.Run(ctx) }()
	for n, _ := rdb.HExists(ctx, newKeys("lcl").meta(), metaLayout).Result(); !n; n, _ = rdb.HExists(ctx, newKeys("lcl").meta(), metaLayout).Result() {
		time.Sleep(10 * time.Millisecond) // the coordinator created the crawl
	}
	wdone := make(chan error, 1)
	go func() { wdone <- worker.Run(ctx) }()
	if err := <-cdone; err != nil {
		t.Fatalf("coordinator: %v", err)
	}
	if err := <-wdone; err != nil {
		t.Fatalf("worker: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // the last events

	// Exact: the URLs an embedded crawl of the same settings records.
	embCfg := testConfig(t, srv, seeds)
	runLayered(t, embCfg, Options{Rounds: 3, Groups: 24, NoiseRule: NoiseRatio})
	got, want := lastRecords(t, coordCfg.Data), lastRecords(t, embCfg.Data)
	for u := range want {
		if _, ok := got[u]; !ok {
			t.Errorf("missing on the cluster: %s", u)
		}
	}
	for u := range got {
		if _, ok := want[u]; !ok {
			t.Errorf("fetched on the cluster only: %s", u)
		}
	}
	if worker.fetchedN.Load() == 0 || coord.fetchedN.Load() == 0 {
		t.Errorf("worker fetched %d URLs, coordinator %d: both should work", worker.fetchedN.Load(), coord.fetchedN.Load())
	}
	rep, err := cluster.ReadReports(ctx, rdb, "lcl")
	if err != nil {
		t.Fatal(err)
	}
	recs := lastRecords(t, coordCfg.Data)
	if rep.State != cluster.ReportDone || !rep.Final() || rep.Totals.Pages != int64(len(recs)) || len(rep.Nodes) != 3 {
		t.Errorf("report: state %q, final %v, %d URLs, %d nodes; want done, final, %d URLs (the coordinator's records), 3 nodes",
			rep.State, rep.Final(), rep.Totals.Pages, len(rep.Nodes), len(recs))
	}

	mu.Lock()
	defer mu.Unlock()
	perMaster := map[string]int{}
	for _, addr := range seen {
		perMaster[addr]++
	}
	if len(perMaster) == 0 {
		t.Fatal("no key event was seen")
	}
	var shares []string
	for addr, n := range perMaster {
		share := float64(n) / float64(len(seen))
		shares = append(shares, fmt.Sprintf("%s %d (%.0f%%)", addr, n, 100*share))
		if share > 0.45 {
			t.Errorf("master %s held %d of the crawl's %d keys (%.0f%%)", addr, n, len(seen), 100*share)
		}
	}
	if len(perMaster) < 3 {
		t.Errorf("the crawl's keys were on %d masters of 3", len(perMaster))
	}
	var outTotal int64
	for _, n := range outBytes {
		outTotal += n
	}
	for addr, n := range outBytes {
		shares = append(shares, fmt.Sprintf("outputs on %s: %d bytes (%.0f%%)", addr, n, 100*float64(n)/float64(outTotal)))
	}
	t.Logf("%d keys; per master: %v", len(seen), shares)
}
