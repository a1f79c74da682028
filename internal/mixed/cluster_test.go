package mixed_test

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/protocol"
	"github.com/spider-crawler/spider/internal/websim"
)

// clusterSites is the number of sites of TestRedisCluster's web (20 pages each): the
// keys per master of a larger crawl for bench/RESULTS.md.
var clusterSites = flag.Int("cluster-sites", 12, "TestRedisCluster: sites of the web (20 pages each)")

// TestRedisCluster: the §0 protocol with its nodes' Redis on Redis Clusters of 3
// masters, beside single servers (a mixed configuration): network n1's center and
// n2's host h1 share one cluster, n1's host h1 has a cluster of its own, n1/h2, n2's
// center and n2/h2 have a redis-server each. The crawl is checked as TestTwoNetworks
// checks it (every URL of the truth fetched, none by two hosts, no request repeated),
// and each cluster's keys of the crawl are spread over its masters: no master holds
// more than 45 % of them (a layout that put a node's keys under one hash tag would
// hold them all on one master), nor more than 60 % of the finish_URL and claims
// entries (URLs are spread by hash, so a crawl this small is only roughly even).
func TestRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two Redis Clusters and a crawl take about 20 s")
	}
	s := newClusterSystem(t, 2, 2, websim.Config{Seed: 73, Hosts: *clusterSites, PagesPerHost: 20},
		map[string]string{"n1": "A", "n2/h1": "A", "n1/h1": "B"})
	for _, n := range []string{"n1", "n2"} {
		s.startCenter(n, 0)
		for _, h := range []string{"h1", "h2"} {
			s.startHost(n, h, 0)
		}
	}
	s.wait(2 * time.Minute)
	per := s.check(0)
	t.Logf("pages per host: %v; URLs of the truth: %d", per, len(s.truth.MustFetch))
	for _, n := range []string{"n1", "n2"} {
		if s.stat(n, "urls_passed") == 0 {
			t.Errorf("%s passed no URL", n)
		}
	}
	seen := map[*redistest.Cluster]string{}
	for addr, cl := range s.clusters {
		seen[cl] += " " + addr
	}
	for cl, nodes := range seen {
		keys, entries, mem := spread(t, cl, "spider:proto:"+s.cfg.Crawl+":*")
		t.Logf("cluster of%s: keys per master %v, finish_URL and claims entries per master %v, MEMORY USAGE per master %v bytes", nodes, keys, entries, mem)
		checkShare(t, "keys", nodes, keys, 0.45)
		checkShare(t, "finish_URL and claims entries", nodes, entries, 0.60)
	}
}

// spread counts, on each master of cl, the keys matching pattern, the entries of those
// that are finish_URL sets or claims hashes, and the keys' MEMORY USAGE.
func spread(t *testing.T, cl *redistest.Cluster, pattern string) (keys, entries, mem []int64) {
	t.Helper()
	ctx := context.Background()
	for _, srv := range cl.Servers {
		c := srv.Client()
		var nk, ne, nm int64
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			nk++
			nm += c.MemoryUsage(ctx, k).Val()
			switch {
			case strings.HasSuffix(k, ":finish_URL"):
				ne += c.SCard(ctx, k).Val()
			case strings.HasSuffix(k, ":claims"):
				ne += c.HLen(ctx, k).Val()
			}
		}
		if err := iter.Err(); err != nil {
			t.Fatal(err)
		}
		c.Close()
		keys, entries, mem = append(keys, nk), append(entries, ne), append(mem, nm)
	}
	return keys, entries, mem
}

func checkShare(t *testing.T, what, nodes string, per []int64, most float64) {
	t.Helper()
	var total, top int64
	for _, n := range per {
		total += n
		top = max(top, n)
	}
	if total == 0 {
		t.Errorf("cluster of%s holds no %s", nodes, what)
		return
	}
	if share := float64(top) / float64(total); share > most {
		t.Errorf("cluster of%s: one master holds %.0f %% of the %s (%v), want at most %.0f %%", nodes, 100*share, what, per, 100*most)
	}
}

// TestClusterLosesMaster: a Redis Cluster that loses a master (no replica takes over)
// mid-crawl makes the nodes that need it exit with an error naming that Redis, at
// once (a host that cannot complete a fetched task) or within redis_timeout after the
// cluster went down, instead of hanging: first host n1/h1's own cluster, then the
// center's (which n1/h2 needs too).
func TestClusterLosesMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two Redis Clusters, each losing a master")
	}
	s := newClusterSystem(t, 1, 2, websim.Config{Seed: 74, Hosts: 12, PagesPerHost: 40, Latency: 2 * time.Millisecond},
		map[string]string{"n1": "A", "n1/h1": "B"})
	s.cfg.RedisTimeout = protocol.Duration(2 * time.Second)
	s.crawl.Delay = crawl.Duration(20 * time.Millisecond)
	s.startCenter("n1", 0)
	s.startHost("n1", "h1", 0)
	s.startHost("n1", "h2", 0)
	s.progress(40)

	// Within the cluster's node time-out (3 s) and redis_timeout (2 s), with room for a
	// loaded machine.
	const bound = 30 * time.Second
	exits := func(name, want string) {
		t.Helper()
		s.mu.Lock()
		ch := s.errs[name]
		s.mu.Unlock()
		select {
		case err := <-ch:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s ended with %v, want an error naming %s", name, err, want)
			} else {
				t.Logf("%s: %v", name, err)
			}
			s.mu.Lock()
			delete(s.running, name)
			s.mu.Unlock()
		case <-time.After(bound):
			t.Fatalf("%s still runs %v after its Redis Cluster lost a master", name, bound)
		}
	}
	s.clusters["n1/h1"].Servers[1].Kill()
	exits("n1/h1", "this host's Redis")
	s.clusters["n1"].Servers[2].Kill()
	exits("n1", "this center's Redis")
	exits("n1/h2", "the center's Redis")
}

// TestRedisClusterRestarts: on the layout of TestRedisCluster, host n1/h1 (its own
// cluster) and center n1 (a cluster shared with n2/h1) are killed mid-crawl and started
// again: the host's tasks in processing go back to their parts' task_pool, the center
// reads its rounds back, and still every URL is fetched, none by two hosts, with at
// most the requests in flight at the host's kill repeated.
func TestRedisClusterRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two Redis Clusters and a crawl with restarts")
	}
	s := newClusterSystem(t, 2, 2, websim.Config{Seed: 75, Hosts: 12, PagesPerHost: 20, Latency: 5 * time.Millisecond},
		map[string]string{"n1": "A", "n2/h1": "A", "n1/h1": "B"})
	urls := len(s.truth.MustFetch)
	for _, n := range []string{"n1", "n2"} {
		s.startCenter(n, 0)
		for _, h := range []string{"h1", "h2"} {
			s.startHost(n, h, 0)
		}
	}
	s.progress(urls * 20 / 100)
	s.kill("n1/h1")
	s.kill("n1")
	time.Sleep(300 * time.Millisecond) // the outage
	s.startCenter("n1", 0)
	s.progress(urls * 40 / 100)
	s.startHost("n1", "h1", 0)
	s.wait(2 * time.Minute)
	s.check(s.crawl.Concurrency) // the host's fetches in flight at its kill
}
