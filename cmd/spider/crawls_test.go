package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

func seedKeys(t *testing.T, rdb redis.UniversalClient, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := rdb.Set(context.Background(), k, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUnknownCrawl: status and serve --redis of a crawl no key carries, or
// of a name that could reach another crawl's keys, are exit 2 on one line
// naming the crawls there are; of an existing crawl, exit 0.
func TestUnknownCrawl(t *testing.T) {
	rs := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	code, _, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "typo")
	if code != 2 || !strings.Contains(errOut, `no crawl named "typo" on this Redis; crawls: none (spider crawls --redis URL lists them)`) {
		t.Errorf("status of a crawl on an empty Redis: exit %d\n%s", code, errOut)
	}
	ctx := context.Background()
	rdb.HSet(ctx, "{spider:news}:mw:stats", "epoch", 1, "fetched", 3)
	seedKeys(t, rdb, "spider:blog:{b1}:pending", "spider:proto:shop:NET:pool")
	for _, args := range [][]string{
		{"status", "--redis", rs.URL(), "--crawl", "typo"},
		{"serve", "--redis", rs.URL(), "--crawl", "typo", "--addr", "127.0.0.1:0"},
		{"drop", "--redis", rs.URL(), "--crawl", "typo"},
	} {
		code, out, errOut := runCLI(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errOut, `no crawl named "typo" on this Redis; crawls: blog, news, shop`) {
			t.Errorf("%q: exit %d\n%s%s\nwant exit 2 and one line naming blog, news, shop", args, code, out, errOut)
		}
	}
	for _, name := range []string{"news:x", "a*", "b}", "{spider:news}", ""} {
		code, _, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", name)
		if code != 2 || !strings.Contains(errOut, "crawl name") {
			t.Errorf("status --crawl %q: exit %d\n%s; want exit 2 refusing the name", name, code, errOut)
		}
	}
	if code, out, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "news"); code != 0 || !strings.Contains(out, "3 URLs done") {
		t.Errorf("status of an existing crawl: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCrawlsAndDrop: crawls lists every crawl with its topology, state,
// nodes and keys; drop refuses a running crawl and one whose liveness is
// unknown without --force, removes only its own crawl's keys and says how
// many of each kind; --after gives the keys a time to live instead.
func TestCrawlsAndDrop(t *testing.T) {
	ctx := context.Background()
	rs := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	now := time.Now().UnixMilli()
	rdb.HSet(ctx, "{spider:live}:mw:workers", "1", strconv.FormatInt(now, 10))
	rdb.HSet(ctx, "{spider:live}:mw:stats", "fetched", 7)
	rdb.HSet(ctx, "{spider:old}:mw:stats", "fetched", 275)
	seedKeys(t, rdb, "{spider:old}:mw:done", "{spider:old}:mw:srq", "{spider:old}:rank:t1", "{spider:old}:index:x",
		"spider:old:{b1}:pending", // not a topology of its own here: p2p keys of the same name
		"{spider:older}:mw:done", "spider:proto:sh:NET:pool", "spider:proto:sh:h1:pool")
	code, out, errOut := runCLI(t, "crawls", "--redis", rs.URL(), "--json")
	if code != 0 {
		t.Fatalf("crawls: exit %d\n%s%s", code, out, errOut)
	}
	checkJSON(t, "crawls --json", "CrawlList", out)
	var list crawlsOutput
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list.Crawls {
		got = append(got, fmt.Sprintf("%s/%s/%s/%d/%d/%d", c.Name, c.Topology, c.State, c.Nodes, c.URLsDone, c.Total))
	}
	want := "live/master-worker/running/1/7/2 old/master-worker/done/0/275/6 older/master-worker/done/0/-1/1 sh/protocol/unknown/0/-1/2"
	if strings.Join(got, " ") != want {
		t.Errorf("crawls --json (name/topology/state/nodes/urls/keys):\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if code, out, _ := runCLI(t, "crawls", "--redis", rs.URL()); code != 0 || !strings.Contains(out, "memory (estimate)") || !strings.Contains(out, "old    master-worker  done") {
		t.Errorf("crawls: exit %d\n%s", code, out)
	}

	for _, name := range []string{"live", "sh"} {
		code, _, errOut := runCLI(t, "drop", "--redis", rs.URL(), "--crawl", name)
		if code != 2 || !strings.Contains(errOut, "--force") {
			t.Errorf("drop of %s without --force: exit %d\n%s; want exit 2 naming --force", name, code, errOut)
		}
	}
	if n := rdb.Exists(ctx, "{spider:live}:mw:workers", "spider:proto:sh:h1:pool").Val(); n != 2 {
		t.Errorf("a refused drop removed keys: %d of 2 left", n)
	}
	code, out, errOut = runCLI(t, "drop", "--redis", rs.URL(), "--crawl", "old")
	if code != 0 || !strings.Contains(out, `crawl "old" dropped: 6 keys removed (index 1, master-worker 3, peer-to-peer 1, rank 1)`) {
		t.Errorf("drop old: exit %d\n%s%s", code, out, errOut)
	}
	if n := rdb.DBSize(ctx).Val(); n != 5 {
		t.Errorf("%d keys left after dropping old, want the 5 of live, older and sh", n)
	}
	if code, out, errOut := runCLI(t, "drop", "--redis", rs.URL(), "--crawl", "live", "--force", "--json"); code != 0 || !strings.Contains(out, `"keys_total": 2`) {
		t.Errorf("drop live --force: exit %d\n%s%s", code, out, errOut)
	} else {
		checkJSON(t, "drop --json", "DropResult", out)
	}
	code, out, errOut = runCLI(t, "drop", "--redis", rs.URL(), "--crawl", "older", "--after", "2h")
	if code != 0 || !strings.Contains(out, "1 keys (master-worker 1) expire in 2h0m0s") {
		t.Errorf("drop --after: exit %d\n%s%s", code, out, errOut)
	}
	if ttl := rdb.PTTL(ctx, "{spider:older}:mw:done").Val(); ttl < time.Hour || ttl > 2*time.Hour {
		t.Errorf("TTL after drop --after 2h: %s", ttl)
	}
	if ttl := rdb.PTTL(ctx, "spider:proto:sh:h1:pool").Val(); ttl != -1 {
		t.Errorf("another crawl's key got TTL %s", ttl)
	}
}

// TestDropWrongPassword: the message never prints the password.
func TestDropWrongPassword(t *testing.T) {
	rs := redistest.Start(t, redistest.Password("right-pw-5521"))
	for _, args := range [][]string{{"drop", "--crawl", "a"}, {"crawls"}} {
		args = append(args, "--redis", fmt.Sprintf("redis://:wrong-pw-3390@%s/0", rs.Addr()))
		code, out, errOut := runCLI(t, args...)
		if code != 3 || strings.Contains(out+errOut, "wrong-pw-3390") || !strings.Contains(errOut, "password") {
			t.Errorf("%q with a wrong password: exit %d\n%s%s\nwant exit 3 hinting at the password without printing it", args[0], code, out, errOut)
		}
	}
}

// TestDropRedisGone: Redis goes away after drop listed the crawl and before
// its deletions answer (writes paused, then the server killed): exit 3,
// never "dropped", the count removed so far and that running it again
// finishes.
func TestDropRedisGone(t *testing.T) {
	ctx := context.Background()
	rs := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	for i := range 50 {
		seedKeys(t, rdb, fmt.Sprintf("spider:gone:{b%d}:pending", i))
	}
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "20000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(t, "drop", "--redis", rs.URL(), "--crawl", "gone")
		done <- result{code, out, errOut}
	}()
	// The drop lists the crawl (reads pass the pause), then its DEL waits.
	// Kill the server once a client waits on a paused write.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info := rdb.Info(ctx, "clients").Val()
		if strings.Contains(info, "paused_clients:1") || strings.Contains(info, "blocked_clients:1") {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("no client seen waiting on the pause; killing anyway:\n%s", info)
			break
		}
	}
	rs.Kill()
	r := <-done
	if r.code != 3 || strings.Contains(r.out, "dropped") ||
		!strings.Contains(r.errOut, "0 of its 50 keys removed before the error; run the same command again to finish") {
		t.Errorf("drop with Redis gone: exit %d\n%s%s\nwant exit 3, 0 of 50 removed, run again", r.code, r.out, r.errOut)
	}
}

// TestDropCluster: on a 3-master Redis Cluster, crawls counts the keys of
// every master and drop removes a crawl whose keys lie on all of them,
// leaving another crawl's keys.
func TestDropCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx := context.Background()
	c := redistest.StartCluster(t, 3)
	rdb := c.Client()
	const n = 300
	for i := range n {
		seedKeys(t, rdb, fmt.Sprintf("spider:wide:{b%d}:pending", i))
	}
	seedKeys(t, rdb, "{spider:wide}:rank:t", "spider:keep:{b1}:pending", "spider:keep:{b2}:pending")
	addrs := c.Addrs()
	url := "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
	code, out, errOut := runCLI(t, "crawls", "--redis", url, "--redis-cluster", "--json")
	var list crawlsOutput
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Crawls) != 2 || list.Crawls[1].Total != n+1 {
		t.Fatalf("crawls on the cluster: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "drop", "--redis", url, "--redis-cluster", "--crawl", "wide")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d keys removed (peer-to-peer %d, rank 1)", n+1, n)) {
		t.Errorf("drop on the cluster: exit %d\n%s%s", code, out, errOut)
	}
	var left atomic.Int64 // ForEachMaster calls at once
	rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		left.Add(m.DBSize(ctx).Val())
		return nil
	})
	if left := left.Load(); left != 2 {
		t.Errorf("%d keys left on the cluster, want keep's 2", left)
	}
}
