package server

import (
	"container/list"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// Defaults of the search caches.
const (
	DefaultCacheSize  = 4096
	DefaultCacheBytes = 64 << 20
	DefaultCacheTTL   = time.Minute
)

// lru is a least-recently-used map bounded in entries and in bytes whose
// entries belong to one version of the index: the first get or put under
// other IndexStats empties it (a new segment, a merge, an incremental
// build change the stats), and an entry older than ttl is not served (the
// bound on staleness the stats cannot see, such as a new PageRank file).
// It is safe for concurrent use; values are shared, callers must not
// modify them.
type lru[V any] struct {
	maxEntries int
	maxBytes   int64
	ttl        time.Duration
	now        func() time.Time

	mu      sync.Mutex
	stats   IndexStats
	bytes   int64
	entries map[string]*list.Element
	order   list.List // of *lruEntry[V], most recent first
}

type lruEntry[V any] struct {
	key     string
	expires time.Time
	size    int64
	val     V
}

func newLRU[V any](maxEntries int, maxBytes int64, ttl time.Duration) *lru[V] {
	return &lru[V]{maxEntries: maxEntries, maxBytes: maxBytes, ttl: ttl, now: time.Now, entries: map[string]*list.Element{}}
}

// sync empties the cache when stats differ from its entries' stats; c.mu
// is held.
func (c *lru[V]) sync(stats IndexStats) {
	if stats != c.stats {
		clear(c.entries)
		c.order.Init()
		c.bytes, c.stats = 0, stats
	}
}

// get returns key's value if it is cached under stats and fresh.
func (c *lru[V]) get(key string, stats IndexStats) (V, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sync(stats)
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*lruEntry[V])
		if now.Before(e.expires) {
			c.order.MoveToFront(el)
			return e.val, true
		}
		c.remove(el)
	}
	var zero V
	return zero, false
}

// put caches val (size bytes, its key included by the caller or not:
// the bound is approximate) under stats, evicting the least recently used
// entries beyond the bounds. A value larger than the byte bound is not
// cached.
func (c *lru[V]) put(key string, stats IndexStats, val V, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sync(stats)
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	if size > c.maxBytes {
		return
	}
	c.entries[key] = c.order.PushFront(&lruEntry[V]{key: key, expires: c.now().Add(c.ttl), size: size, val: val})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *lru[V]) remove(el *list.Element) {
	e := c.order.Remove(el).(*lruEntry[V])
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// len is the number of entries and their bytes.
func (c *lru[V]) len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len(), c.bytes
}

// cacheCounters counts lookups of one cache by result (hit or miss).
type cacheCounters struct{ hit, miss prometheus.Counter }

func (c cacheCounters) count(hit bool) {
	if hit {
		c.hit.Inc()
	} else {
		c.miss.Inc()
	}
}

// resultCache keeps recent search results (an lru) and merges identical
// searches running at the same time into one (singleflight): popular
// queries, which dominate a search engine's load, then cost one index
// search per index version and TTL. The search page and the API share
// it. Results are shared: callers must not modify them.
type resultCache struct {
	lru     *lru[*SearchResult]
	group   singleflight.Group
	counter cacheCounters
}

func newResultCache(size int, ttl time.Duration, counter cacheCounters) *resultCache {
	// The entry bound is what limits this cache: a result is one page of
	// hits, a few kilobytes.
	return &resultCache{lru: newLRU[*SearchResult](size, 1<<62, ttl), counter: counter}
}

func cacheKey(req SearchRequest) string {
	return strconv.Itoa(req.Offset) + "\x00" + strconv.Itoa(req.Limit) + "\x00" +
		strconv.FormatFloat(req.RankWeight, 'g', -1, 64) + "\x00" + strconv.FormatBool(req.Explain) + "\x00" + req.Query
}

// get returns a cached result for req under the index's current stats,
// or runs search once for all concurrent callers of the same req.
func (c *resultCache) get(ctx context.Context, req SearchRequest, stats IndexStats, search func(context.Context) (*SearchResult, error)) (*SearchResult, error) {
	key := cacheKey(req)
	if res, ok := c.lru.get(key, stats); ok {
		c.counter.count(true)
		hit := *res
		hit.Took, hit.Cached = 0, true // no time spent in the index
		return &hit, nil
	}
	c.counter.count(false)
	v, err, _ := c.group.Do(key, func() (any, error) {
		// Detached from the first caller's cancellation: others may wait
		// on this search; the server's time limit still applies.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), searchTimeout)
		defer cancel()
		res, err := search(sctx)
		if err != nil {
			return nil, err
		}
		c.lru.put(key, stats, res, 1)
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*SearchResult), nil
}

// response is a rendered 200 answer of the search page or the API,
// served again byte for byte while the index does not change.
type response struct {
	body        []byte
	contentType string
	etag        string // weak: W/"…", over body
}

// responseCache keeps rendered answers by normalised request (see
// pageKey and apiKey), bounded in entries and bytes. A hit costs a map
// look-up and a write: no search, no template, no JSON encoding.
type responseCache struct {
	lru       *lru[*response]
	page, api cacheCounters
}

func newResponseCache(size int, bytes int64, ttl time.Duration, page, api cacheCounters) *responseCache {
	return &responseCache{lru: newLRU[*response](size, bytes, ttl), page: page, api: api}
}

func (c *responseCache) get(key string, stats IndexStats) (*response, bool) {
	r, ok := c.lru.get(key, stats)
	c.counters(key).count(ok)
	return r, ok
}

func (c *responseCache) put(key string, stats IndexStats, r *response) {
	c.lru.put(key, stats, r, int64(len(key)+len(r.body)+len(r.etag)+64))
}

func (c *responseCache) counters(key string) cacheCounters {
	if key != "" && key[0] == 'a' {
		return c.api
	}
	return c.page
}

// pageKey identifies a search page: everything that changes its bytes.
func pageKey(query string, page int, signals bool) string {
	return "p" + strconv.Itoa(page) + "\x00" + strconv.FormatBool(signals) + "\x00" + query
}

// apiKey identifies an /api/search answer.
func apiKey(req SearchRequest) string { return "a" + cacheKey(req) }
