package dedup

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Where a Cache found a URL (SPEC §2 S402/S403).
const (
	// New: the URL was in no list and not in the store: it was added to the
	// visit list and is to be crawled.
	New Hit = iota
	// InVisit: found in the visit list (this round's URLs).
	InVisit
	// InCache: found in the cache list (URLs of earlier rounds kept by
	// weight).
	InCache
	// InStore: found only in the full stored URL set (S403).
	InStore
)

// Hit says where Cache.Check found a URL.
type Hit uint8

func (h Hit) String() string {
	switch h {
	case InVisit:
		return "visit"
	case InCache:
		return "cache"
	case InStore:
		return "store"
	}
	return "new"
}

// URLSet is the full stored URL set a Cache falls back to (S403): every URL
// ever stored for crawling. Contains must be safe for the Cache's caller to
// call from one goroutine.
type URLSet interface {
	Contains(ctx context.Context, url string) (bool, error)
}

// Entry is one URL record of the cache (SPEC §2: URL, repeat count, last
// visit time).
type Entry struct {
	URL  string
	Rep  int
	Last time.Time
}

// DefaultCacheSize is the cache list's default capacity.
const DefaultCacheSize = 1 << 20

// Cache is the cache-based URL de-duplication of SPEC §2 S400: a visit
// list (this round's URLs, unbounded within a round) and a cache list of
// bounded size holding URLs of earlier rounds, each with its repeat count
// and last visit time, backed by the full stored URL set.
//
// The cache list is ordered by weight = rep × t_norm, with t = last − init
// (init: the Cache's start time) and t_norm = (t − min)/(max − min) over the
// cache list (1 for every entry when max = min). Because min moves as
// entries come and go, the order of two entries can change without either
// being touched, so no heap can keep it; instead the list may grow to
// Capacity + Capacity/8 entries, and then all weights are computed and the
// lowest-weight entries are evicted down to Capacity (amortised O(log n)
// per insertion). An evicted URL is still in the stored set, so eviction
// costs a slower look-up, never a wrong answer.
//
// A Cache is not safe for concurrent use: the reduce of S400 runs in one
// goroutine.
type Cache struct {
	capacity int
	init     time.Time
	store    URLSet
	visit    map[string]*Entry
	cache    map[string]*Entry
	stats    CacheStats
}

// CacheStats counts look-ups by outcome and evictions.
type CacheStats struct {
	Lookups, Visit, Cache, Store, New, Evicted int64
}

// NewCache returns an empty cache of capacity entries (≤ 0:
// DefaultCacheSize) whose time origin is init, falling back to store (nil:
// no stored set, every URL missing from both lists is new).
func NewCache(capacity int, init time.Time, store URLSet) *Cache {
	if capacity <= 0 {
		capacity = DefaultCacheSize
	}
	return &Cache{capacity: capacity, init: init, store: store, visit: map[string]*Entry{}, cache: map[string]*Entry{}}
}

// Admit puts url in the visit list with rep = 1 and last = now (S401), or,
// if it is already there, leaves it as it is.
func (c *Cache) Admit(url string, now time.Time) {
	if _, ok := c.visit[url]; ok {
		return
	}
	if e, ok := c.cache[url]; ok { // a URL admitted again moves to the visit list
		delete(c.cache, url)
		e.Last = now
		c.visit[url] = e
		return
	}
	c.visit[url] = &Entry{URL: url, Rep: 1, Last: now}
}

// Rotate starts a new round: every visit-list entry moves to the cache
// list, which is then trimmed to capacity by weight.
func (c *Cache) Rotate() {
	for u, e := range c.visit {
		c.cache[u] = e
	}
	clear(c.visit)
	c.trim(c.capacity)
}

// Check is S402/S403 for one URL seen at now: found in the visit list or
// the cache list, its repeat count and time are updated and the list is
// returned; else the stored set is asked: present, the URL enters the cache
// list (rep 2: it was stored once and seen again) and InStore is returned;
// absent, it enters the visit list with rep 1 and New is returned. The
// caller stores New URLs (they are the next round's input). An error comes
// only from the stored set; the lists are then unchanged.
func (c *Cache) Check(ctx context.Context, url string, now time.Time) (Hit, error) {
	c.stats.Lookups++
	if e, ok := c.visit[url]; ok {
		e.Rep++
		e.Last = now
		c.stats.Visit++
		return InVisit, nil
	}
	if e, ok := c.cache[url]; ok {
		e.Rep++
		e.Last = now
		c.stats.Cache++
		return InCache, nil
	}
	if c.store != nil {
		ok, err := c.store.Contains(ctx, url)
		if err != nil {
			return New, fmt.Errorf("cannot look up %s in the stored URL set: %w", url, err)
		}
		if ok {
			c.cache[url] = &Entry{URL: url, Rep: 2, Last: now}
			c.stats.Store++
			if len(c.cache) > c.capacity+c.capacity/8 {
				c.trim(c.capacity)
			}
			return InStore, nil
		}
	}
	c.visit[url] = &Entry{URL: url, Rep: 1, Last: now}
	c.stats.New++
	return New, nil
}

// Stats returns the counters so far.
func (c *Cache) Stats() CacheStats { return c.stats }

// Len returns the sizes of the visit list and the cache list.
func (c *Cache) Len() (visit, cache int) { return len(c.visit), len(c.cache) }

// Weight returns an entry's weight rep × t_norm given the bounds of t over
// the cache list (tmin, tmax as durations since init).
func Weight(e Entry, init time.Time, tmin, tmax time.Duration) float64 {
	t := e.Last.Sub(init)
	norm := 1.0
	if tmax > tmin {
		norm = float64(t-tmin) / float64(tmax-tmin)
	}
	return float64(e.Rep) * norm
}

// CacheList returns the cache list ordered by weight, highest first (ties:
// more recent first, then by URL), with each entry's weight.
func (c *Cache) CacheList() ([]Entry, []float64) {
	es := make([]Entry, 0, len(c.cache))
	for _, e := range c.cache {
		es = append(es, *e)
	}
	ws := c.weights(es)
	idx := make([]int, len(es))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case ws[a] != ws[b]:
			if ws[a] > ws[b] {
				return -1
			}
			return 1
		case !es[a].Last.Equal(es[b].Last):
			return es[b].Last.Compare(es[a].Last)
		}
		if es[a].URL < es[b].URL {
			return -1
		}
		return 1
	})
	oe, ow := make([]Entry, len(es)), make([]float64, len(es))
	for i, k := range idx {
		oe[i], ow[i] = es[k], ws[k]
	}
	return oe, ow
}

func (c *Cache) weights(es []Entry) []float64 {
	if len(es) == 0 {
		return nil
	}
	tmin, tmax := es[0].Last.Sub(c.init), es[0].Last.Sub(c.init)
	for _, e := range es[1:] {
		t := e.Last.Sub(c.init)
		tmin, tmax = min(tmin, t), max(tmax, t)
	}
	ws := make([]float64, len(es))
	for i, e := range es {
		ws[i] = Weight(e, c.init, tmin, tmax)
	}
	return ws
}

// trim evicts the lowest-weight cache-list entries until at most n remain.
func (c *Cache) trim(n int) {
	if len(c.cache) <= n {
		return
	}
	es, _ := c.CacheList()
	for _, e := range es[n:] {
		delete(c.cache, e.URL)
		c.stats.Evicted++
	}
}
