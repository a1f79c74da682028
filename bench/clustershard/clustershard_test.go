// Package clustershard measures how each topology's Redis keys and memory
// spread over the masters of a Redis Cluster (issue #24: "on a 3-master
// cluster no shard holds more than 45% of a master–worker crawl's keys").
//
//	SPIDER_CLUSTERSHARD=1 go test ./bench/clustershard -run TestShardTable -v -timeout 20m
//
// starts a 3-master Redis Cluster (internal/cluster/redistest) and one
// websim web, runs on them the real spider binary for the master–worker,
// peer-to-peer, layered and §0 topologies, and the package APIs for the rank
// map/reduce and the distributed index build, and prints one row per
// topology and moment: keys and MEMORY USAGE sums per master
// (crawls.PerMaster: every key the crawl owns, SCAN on each master), and
// the largest master's share. "peak" rows are the largest (by memory) of
// the snapshots taken every 300 ms while the crawl ran; "end" rows what the
// finished crawl leaves (what --expire-done or spider drop removes).
// Counts and shares do not depend on the machine's load; the crawl's
// timing decides which transient keys (the state's reply keys, kept 20 s)
// a peak snapshot catches.
package clustershard

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawls"
	"github.com/spider-crawler/spider/internal/graph"
	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/rank"
	"github.com/spider-crawler/spider/internal/websim"
)

type row struct {
	topology, phase string
	shards          []crawls.Shard
}

func (r row) String() string {
	keys, mem := crawls.Spread(r.shards)
	var b strings.Builder
	fmt.Fprintf(&b, "| %-14s | %-4s |", r.topology, r.phase)
	var tk, tm int64
	for _, s := range r.shards {
		fmt.Fprintf(&b, " %5d / %8.1f KB |", s.Total, float64(s.MemoryBytes)/1024)
		tk += s.Total
		tm += s.MemoryBytes
	}
	fmt.Fprintf(&b, " %6d / %9.1f KB | %3.0f%% | %3.0f%% |", tk, float64(tm)/1024, 100*keys, 100*mem)
	return b.String()
}

// watch takes a snapshot of crawl's keys every 300 ms until stop is
// closed and returns the one holding the most memory.
func watch(ctx context.Context, rdb redis.UniversalClient, crawl string, stop <-chan struct{}) func() []crawls.Shard {
	var mu sync.Mutex
	var best []crawls.Shard
	var bestMem int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if s, err := crawls.PerMaster(ctx, rdb, crawl); err == nil {
				var m int64
				for _, x := range s {
					m += x.MemoryBytes
				}
				mu.Lock()
				if m > bestMem {
					best, bestMem = s, m
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return func() []crawls.Shard { <-done; mu.Lock(); defer mu.Unlock(); return best }
}

func TestShardTable(t *testing.T) {
	if os.Getenv("SPIDER_CLUSTERSHARD") == "" {
		t.Skip("a measurement: SPIDER_CLUSTERSHARD=1 go test ./bench/clustershard -run TestShardTable -v")
	}
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "spider")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/spider").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := redistest.StartCluster(t, 3)
	rdb := c.Client()
	url := "redis://" + c.Addrs()[0] + "?addr=" + strings.Join(c.Addrs()[1:], "&addr=")
	srv, err := websim.Start(ctx, websim.Config{Seed: 41, Hosts: 40, PagesPerHost: 60, Latency: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	seeds := srv.SeedURLs(4)
	start := func(args ...string) (func() error, *bytes.Buffer) {
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd.Wait, &out
	}
	crawlFlags := []string{"--redis", url, "--redis-cluster", "--resolve-file", resolve, "--allow-private", "--scope", "any", "--delay", "1ms"}
	var rows []row
	measure := func(topology, crawl string, run func()) {
		stop := make(chan struct{})
		peak := watch(ctx, rdb, crawl, stop)
		run()
		close(stop)
		rows = append(rows, row{topology, "peak", peak()})
		end, err := crawls.PerMaster(ctx, rdb, crawl)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row{topology, "end", end})
		if os.Getenv("CLUSTERSHARD_DEBUG") != "" {
			_ = c.Client().ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				tags := map[string]int{}
				for _, k := range m.Keys(ctx, "*").Val() {
					if n, _, ok := crawls.Parse(k); ok && n == crawl {
						tag := k
						if i := strings.IndexByte(k, '{'); i >= 0 {
							tag = k[i : i+strings.IndexByte(k[i:], '}')+1]
						}
						tags[tag]++
					}
				}
				t.Logf("%s %s: %v", crawl, m.Options().Addr, tags)
				return nil
			})
		}
	}

	// Master–worker: one master, three workers.
	var wdirs []string
	measure("master–worker", "mw", func() {
		mwait, mout := start(append(append([]string{"master", "--crawl", "mw", "--data", filepath.Join(dir, "m"), "--quiet"}, crawlFlags...), seeds...)...)
		var waits []func() error
		var outs []*bytes.Buffer
		for i := range 3 {
			d := filepath.Join(dir, fmt.Sprintf("w%d", i))
			wdirs = append(wdirs, d)
			w, o := start("worker", "--crawl", "mw", "--data", d, "--redis", url, "--redis-cluster", "--resolve-file", resolve, "--allow-private", "--concurrency", "8")
			waits, outs = append(waits, w), append(outs, o)
		}
		if err := mwait(); err != nil {
			t.Fatalf("master: %v\n%s", err, mout)
		}
		for i, w := range waits {
			if err := w(); err != nil {
				t.Fatalf("worker: %v\n%s", err, outs[i])
			}
		}
	})

	// Peer-to-peer: three nodes.
	measure("peer-to-peer", "pp", func() {
		var waits []func() error
		var outs []*bytes.Buffer
		for i := range 3 {
			w, o := start(append(append([]string{"crawl", "--crawl", "pp", "--node-id", fmt.Sprintf("p%d", i), "--quiet",
				"--data", filepath.Join(dir, fmt.Sprintf("p%d", i)), "--concurrency", "8"}, crawlFlags...), seeds...)...)
			waits, outs = append(waits, w), append(outs, o)
		}
		for i, w := range waits {
			if err := w(); err != nil {
				t.Fatalf("peer: %v\n%s", err, outs[i])
			}
		}
	})

	// Layered: a coordinator and two workers.
	measure("layered", "ly", func() {
		args := func(d string) []string {
			return append(append([]string{"crawl", "--mode", "layered", "--crawl", "ly", "--quiet", "--data", filepath.Join(dir, d),
				"--rounds", "4", "--groups", "12", "--lease-ttl", "2s"}, crawlFlags...), seeds...)
		}
		cwait, cout := start(args("lc")...)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if ok, _ := rdb.HExists(ctx, "{spider:ly}:layered:meta", "layout").Result(); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the layered coordinator did not start\n%s", cout)
			}
		}
		w1, o1 := start(args("lw1")...)
		w2, o2 := start(args("lw2")...)
		for _, p := range []struct {
			wait func() error
			out  *bytes.Buffer
		}{{cwait, cout}, {w1, o1}, {w2, o2}} {
			if err := p.wait(); err != nil {
				t.Fatalf("layered: %v\n%s", err, p.out)
			}
		}
	})

	// The §0 protocol: one network, its center and two hosts, every one's
	// Redis the same cluster.
	measure("§0 protocol", "pr", func() {
		conf := filepath.Join(dir, "sys.yaml")
		y := fmt.Sprintf("crawl: pr\nnetworks:\n  - name: east\n    center_redis: %q\n    hosts:\n      - {id: h1, redis: %q}\n      - {id: h2, redis: %q}\n", url, url, url)
		if err := os.WriteFile(conf, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		cwait, cout := start("center", "--protocol-config", conf, "--network", "east")
		var waits []func() error
		var outs []*bytes.Buffer
		for _, h := range []string{"h1", "h2"} {
			w, o := start(append([]string{"crawl", "--dedup", "protocol", "--protocol-config", conf, "--network", "east", "--host-id", h, "--quiet",
				"--data", filepath.Join(dir, "pr-"+h), "--resolve-file", resolve, "--allow-private", "--scope", "any", "--delay", "1ms", "--concurrency", "8"}, seeds...)...)
			waits, outs = append(waits, w), append(outs, o)
		}
		for i, w := range waits {
			if err := w(); err != nil {
				t.Fatalf("§0 host: %v\n%s", err, outs[i])
			}
		}
		if err := cwait(); err != nil {
			t.Fatalf("§0 center: %v\n%s", err, cout)
		}
	})

	// Rank map/reduce: a site graph of 40,000 pages in 24 parts, three
	// workers; measured while round 0 runs (graph parts and rank slices up).
	{
		g := graph.SiteGraph(graph.SiteGraphConfig{Pages: 40000, Hosts: 400, Seed: 9})
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() { defer wg.Done(); _ = rank.RunWorker(rctx, c.Client(), rank.WorkerConfig{Crawl: "rk"}) }()
		}
		stop := make(chan struct{})
		peak := watch(ctx, rdb, "rk", stop)
		m, err := rank.NewMaster(ctx, rdb, rank.MasterConfig{Crawl: "rk", Parts: 24})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Compute(ctx, g, rank.Options{}); err != nil {
			t.Fatal(err)
		}
		close(stop)
		rows = append(rows, row{"rank", "peak", peak()})
		m.Close(ctx)
		cancel()
		wg.Wait()
		end, _ := crawls.PerMaster(ctx, rdb, "rk")
		rows = append(rows, row{"rank", "end", end})
	}

	// Distributed index build over the master–worker crawl's three data
	// directories: three mappers, the writer started once every task is
	// queued (the build's memory is the queued results).
	{
		var wg sync.WaitGroup
		for i, d := range wdirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := index.RunMapper(ctx, c.Client(), d, index.MapperOptions{Crawl: "ix", Node: fmt.Sprintf("n%d", i), TaskRecords: 25, MaxQueued: 1 << 20}); err != nil {
					t.Errorf("mapper: %v", err)
				}
			}()
		}
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if queuedAll(ctx, rdb, len(wdirs)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the mappers did not queue every task")
			}
		}
		mid, err := crawls.PerMaster(ctx, rdb, "ix")
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row{"index build", "peak", mid})
		if _, err := index.RunDistWriter(ctx, rdb, filepath.Join(dir, "ixout", index.DirName), index.DistWriterOptions{Crawl: "ix", Nodes: len(wdirs)}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		end, _ := crawls.PerMaster(ctx, rdb, "ix")
		rows = append(rows, row{"index build", "end", end})
	}

	var b strings.Builder
	fmt.Fprintf(&b, "web: %d hosts, %d pages (websim seed 41); Redis Cluster of 3 masters\n", 40, 40*60)
	fmt.Fprintf(&b, "| topology       | when | master 1: keys / memory | master 2 | master 3 | total | largest: keys | memory |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintln(&b, r.String())
	}
	t.Log("\n" + b.String())
	if p := os.Getenv("CLUSTERSHARD_OUT"); p != "" {
		_ = os.WriteFile(p, []byte(b.String()), 0o644)
	}
}

// queuedAll reports whether every node of the build planned its tasks and
// no task is waiting or being analysed.
func queuedAll(ctx context.Context, rdb redis.UniversalClient, nodes int) bool {
	p := "{spider:ix}:index:"
	plan := rdb.HGetAll(ctx, p+"plan").Val()
	if len(plan) < nodes {
		return false
	}
	for n := range plan {
		if rdb.LLen(ctx, p+"trq:"+n).Val() > 0 {
			return false
		}
	}
	for _, m := range rdb.HKeys(ctx, p+"mapnode").Val() {
		if rdb.LLen(ctx, p+"proc:"+m).Val() > 0 {
			return false
		}
	}
	return true
}
