package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of Redis Cluster.
const clusterSlots = 16384

// Cluster is a Redis Cluster of masters without replicas, each a Server of its own.
type Cluster struct {
	t testing.TB
	// Servers are the masters; Servers[i] serves slots [i·16384/N, (i+1)·16384/N).
	Servers []*Server
}

// StartCluster starts masters redis-server processes with cluster mode on, gives each an
// equal range of the 16384 slots (CLUSTER ADDSLOTSRANGE), introduces them to each other
// (CLUSTER MEET) and waits until every node reports cluster_state:ok and sees the whole
// slot map. It works for any masters ≥ 1 (redis-cli --cluster create needs 3). Options are
// applied to every server. Skips or fails like Start when redis-server is missing.
func StartCluster(t testing.TB, masters int, opts ...Option) *Cluster {
	t.Helper()
	if masters < 1 {
		t.Fatalf("cannot start a cluster of %d masters: want at least 1", masters)
	}
	opts = append(opts, Args(
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "3000",
		"--cluster-require-full-coverage", "yes",
	))
	c := &Cluster{t: t}
	for range masters {
		c.Servers = append(c.Servers, Start(t, opts...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.create(ctx); err != nil {
		t.Fatalf("cannot create a redis cluster of %d masters: %v", masters, err)
	}
	c.WaitOK()
	return c
}

func (c *Cluster) create(ctx context.Context) error {
	n := len(c.Servers)
	for i, s := range c.Servers {
		rdb := redis.NewClient(s.options())
		defer rdb.Close()
		// Distinct config epochs, as redis-cli --cluster create assigns them, so that the
		// nodes need no epoch collision round.
		if err := rdb.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("cannot set the config epoch of %s: %w", s.Addr(), err)
		}
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("cannot assign slots %d–%d to %s: %w", lo, hi, s.Addr(), err)
		}
	}
	first := redis.NewClient(c.Servers[0].options())
	defer first.Close()
	for _, s := range c.Servers[1:] {
		if err := first.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(s.Port())).Err(); err != nil {
			return fmt.Errorf("cannot introduce %s to %s: %w", s.Addr(), c.Servers[0].Addr(), err)
		}
	}
	return nil
}

// WaitOK waits (up to 30 s) until every running node reports cluster_state:ok, knows all
// the others and maps all 16384 slots; use it after restarting a node.
func (c *Cluster) WaitOK() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = c.ready(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("redis cluster not ready after 30s: %v", err)
}

func (c *Cluster) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range c.Servers {
		if !s.Running() {
			continue
		}
		rdb := redis.NewClient(s.options())
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil {
			rdb.Close()
			return fmt.Errorf("%s: %w", s.Addr(), err)
		}
		slots, err := rdb.ClusterSlots(ctx).Result()
		rdb.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Addr(), err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: %w: state not ok", s.Addr(), errNotReady)
		}
		if !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Servers))+"\r\n") {
			return fmt.Errorf("%s: %w: does not know all %d nodes yet", s.Addr(), errNotReady, len(c.Servers))
		}
		covered, masters := 0, map[string]bool{}
		for _, r := range slots {
			covered += int(r.End-r.Start) + 1
			if len(r.Nodes) > 0 {
				masters[r.Nodes[0].Addr] = true
			}
		}
		if covered != clusterSlots || len(masters) != len(c.Servers) {
			return fmt.Errorf("%s: %w: sees %d slots on %d masters", s.Addr(), errNotReady, covered, len(masters))
		}
	}
	return nil
}

// Addrs returns the masters' addresses, "127.0.0.1:PORT" each.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Client returns a new cluster client seeded with every master's address, closed when the
// test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	cfg := c.Servers[0].cfg
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Password: cfg.password})
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
