package cluster

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestRedisCluster runs the coordinator scenario and the fenced writes against a Redis
// Cluster of three masters: a bucket's keys share a slot (hash tag {bN}), buckets spread
// over all masters, and multi-key fenced scripts run.
func TestRedisCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	rdb := c.Client()
	ctx := testCtx(t)
	keys := mustKeys(t, "rc")

	slotsOf := func(b int) []int64 {
		var out []int64
		for _, k := range []string{keys.Owner(b), keys.Fence(b), keys.Bucket(b, "pending"), keys.Bucket(b, "seen")} {
			s, err := rdb.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	masters := map[int64]bool{}
	for b := range 64 {
		s := slotsOf(b)
		for _, x := range s[1:] {
			if x != s[0] {
				t.Fatalf("bucket %d keys in slots %v", b, s)
			}
		}
		masters[s[0]*3/16384] = true
	}
	if len(masters) != 3 {
		t.Fatalf("64 buckets land on %d of 3 masters", len(masters))
	}
	m1, _ := rdb.ClusterKeySlot(ctx, keys.Members()).Result()
	m2, _ := rdb.ClusterKeySlot(ctx, keys.Epoch()).Result()
	m3, _ := rdb.ClusterKeySlot(ctx, keys.Info()).Result()
	if m1 != m2 || m1 != m3 {
		t.Fatalf("membership keys in slots %d %d %d", m1, m2, m3)
	}

	// A fenced script touching two keys of one bucket, plus leases renewed in pipelines
	// that span the masters.
	l := mustLeases(t, rdb, keys, "a", LeasesConfig{TTL: testTTL})
	buckets := make([]int, 64)
	for i := range buckets {
		buckets[i] = i
	}
	got, busy, err := l.AcquireMany(ctx, buckets)
	if err != nil || len(got) != 64 || len(busy) != 0 {
		t.Fatalf("AcquireMany on a cluster: %d, %d, %v", len(got), len(busy), err)
	}
	move := NewFencedScript(`local v = redis.call('LPOP', KEYS[1]); if v then redis.call('SADD', KEYS[2], v) end; return v`)
	for _, ls := range got {
		pending, seen := keys.Bucket(ls.Bucket, "pending"), keys.Bucket(ls.Bucket, "seen")
		rdb.RPush(ctx, pending, "u")
		if v, err := move.Run(ctx, rdb, keys, "a", ls, []string{pending, seen}); err != nil || v != "u" {
			t.Fatalf("fenced two-key script on bucket %d: %v, %v", ls.Bucket, v, err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}

	runRebalance(t, func() redis.UniversalClient { return rdb })
}
