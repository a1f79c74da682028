package crawls

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Shard is one Redis master's share of a crawl's keys (PerMaster).
type Shard struct {
	Addr string `json:"addr"`
	// Keys counts the crawl's keys on this master, by kind.
	Keys  map[string]int64 `json:"keys"`
	Total int64            `json:"keys_total"`
	// MemoryBytes is the sum of MEMORY USAGE over every key counted (not
	// an estimate from samples, as List's is).
	MemoryBytes int64 `json:"memory_bytes"`
}

// PerMaster counts crawl name's keys (those Parse gives to the crawl, of
// every kind) and sums their MEMORY USAGE on each master of rdb: how a
// Redis Cluster holds the crawl. The result is sorted by address; a plain
// client gives one Shard. It reads every key of the crawl (one MEMORY
// USAGE each): meant for measurements and tests, not for a busy server.
func PerMaster(ctx context.Context, rdb redis.UniversalClient, name string) ([]Shard, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var out []Shard
	err := forEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		s := Shard{Addr: c.Options().Addr, Keys: map[string]int64{}}
		for _, pattern := range []string{"{spider:*", "spider:*"} {
			var cursor uint64
			for {
				keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
				if err != nil {
					return fmt.Errorf("cannot scan the keys of %s: %w", s.Addr, err)
				}
				pipe := c.Pipeline()
				var mine []*redis.IntCmd
				var kinds []string
				for _, k := range keys {
					if n, kind, ok := Parse(k); ok && n == name {
						mine = append(mine, pipe.MemoryUsage(ctx, k))
						kinds = append(kinds, kind)
					}
				}
				if len(mine) > 0 {
					_, _ = pipe.Exec(ctx) // a key that expired meanwhile answers nil
					for i, cmd := range mine {
						if cmd.Err() != nil {
							continue
						}
						s.Keys[kinds[i]]++
						s.Total++
						s.MemoryBytes += cmd.Val()
					}
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
		mu.Lock()
		out = append(out, s)
		mu.Unlock()
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, err
}

// Spread is the largest share of keys and of memory any one shard holds
// (0 to 1); both 0 when there is nothing.
func Spread(shards []Shard) (keys, memory float64) {
	var tk, tm, mk, mm int64
	for _, s := range shards {
		tk += s.Total
		tm += s.MemoryBytes
		mk = max(mk, s.Total)
		mm = max(mm, s.MemoryBytes)
	}
	if tk > 0 {
		keys = float64(mk) / float64(tk)
	}
	if tm > 0 {
		memory = float64(mm) / float64(tm)
	}
	return keys, memory
}
