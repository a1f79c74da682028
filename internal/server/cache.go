package server

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Defaults of the search result cache.
const (
	DefaultCacheSize = 4096
	DefaultCacheTTL  = 10 * time.Second
)

// resultCache keeps recent search results (an LRU bounded in entries,
// each valid for a TTL and only while the index's Stats are unchanged) and
// merges identical searches running at the same time into one
// (singleflight): popular queries, which dominate a search engine's load,
// then cost one index search per TTL. Results are shared: callers must
// not modify them.
type resultCache struct {
	size int
	ttl  time.Duration
	now  func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *cacheEntry, most recent first
	group   singleflight.Group
}

type cacheEntry struct {
	key     string
	stats   IndexStats
	expires time.Time
	res     *SearchResult
}

func newResultCache(size int, ttl time.Duration) *resultCache {
	return &resultCache{size: size, ttl: ttl, now: time.Now, entries: map[string]*list.Element{}}
}

func cacheKey(req SearchRequest) string {
	return fmt.Sprintf("%d\x00%d\x00%g\x00%t\x00%s", req.Offset, req.Limit, req.RankWeight, req.Explain, req.Query)
}

// get returns a cached result for req under the index's current stats,
// or runs search once for all concurrent callers of the same req.
func (c *resultCache) get(ctx context.Context, req SearchRequest, stats IndexStats, search func(context.Context) (*SearchResult, error)) (*SearchResult, error) {
	key := cacheKey(req)
	now := c.now()
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		if e.stats == stats && now.Before(e.expires) {
			c.lru.MoveToFront(el)
			c.mu.Unlock()
			hit := *e.res
			hit.Took, hit.Cached = 0, true // no time spent in the index
			return &hit, nil
		}
		c.lru.Remove(el)
		delete(c.entries, key)
	}
	c.mu.Unlock()
	v, err, _ := c.group.Do(key, func() (any, error) {
		// Detached from the first caller's cancellation: others may wait
		// on this search; the server's time limit still applies.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), searchTimeout)
		defer cancel()
		res, err := search(sctx)
		if err != nil {
			return nil, err
		}
		c.put(key, stats, res)
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*SearchResult), nil
}

func (c *resultCache) put(key string, stats IndexStats, res *SearchResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.lru.Remove(el)
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, stats: stats, expires: c.now().Add(c.ttl), res: res})
	for c.lru.Len() > c.size {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cacheEntry).key)
	}
}
