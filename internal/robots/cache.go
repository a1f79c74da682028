package robots

import (
	"container/list"
	"context"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// FetchFunc fetches robotsURL (scheme://host[:port]/robots.txt), following
// redirects (RFC 9309 §2.3.1.2: at least five), and returns the final HTTP
// status and body. A non-nil err means the file could not be reached (DNS,
// connection, time-out): it is treated as unreachable (disallow all). It must
// honour ctx.
type FetchFunc func(ctx context.Context, robotsURL *url.URL) (status int, body []byte, err error)

// CacheOptions configures a Cache. The zero value gives the defaults.
type CacheOptions struct {
	// TTL is how long parsed and unavailable (4xx) results are kept.
	// Default 24h (RFC 9309 §2.4: "Crawlers SHOULD NOT use the cached
	// version for more than 24 hours, unless the robots.txt file is
	// unreachable.").
	TTL time.Duration
	// ErrorTTL is how long an unreachable result (5xx, 429, network error)
	// is kept before the file is fetched again. Default 5m.
	ErrorTTL time.Duration
	// StaleMax is how long after its fetch a parsed or unavailable result
	// may stand in for an unreachable one (RFC 9309 §2.3.1.4 allows using
	// "a cached copy" of a file that became unreachable; Google does so for
	// 30 days). While it does, it is rechecked every ErrorTTL. Default 30
	// days; negative disables.
	StaleMax time.Duration
	// MaxEntries bounds the number of hosts kept; the least recently used
	// are evicted. Default 100,000.
	MaxEntries int
	// FetchTimeout bounds one fetch. The fetch runs on behalf of every
	// caller waiting for the same host, so it is not cancelled with any one
	// caller's context, only by this time-out. Default 1m.
	FetchTimeout time.Duration
	// Logger receives debug records of fetches; nil discards them.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now. For tests.
	Now func() time.Time
}

// CacheStats counts the work of a Cache since it was created.
type CacheStats struct {
	Entries     int    // hosts currently cached
	Hits        uint64 // Get calls answered from a fresh entry
	Misses      uint64 // Get calls that needed a fetch (their own or a shared one)
	Fetches     uint64 // FetchFunc calls
	Unreachable uint64 // fetches that ended unreachable (5xx, 429, network error)
	StaleServed uint64 // unreachable fetches answered with the previous good copy
	Evictions   uint64 // entries dropped to respect MaxEntries
}

// Cache keeps the robots.txt of each scheme://host:port, fetching it once
// (concurrent Gets for the same key share one fetch) and again after it
// expires. It is safe for concurrent use.
type Cache struct {
	fetch  FetchFunc
	opts   CacheOptions
	log    *slog.Logger
	flight singleflight.Group

	mu      sync.Mutex
	entries map[string]*entry
	lru     *list.List // of *entry, most recently used first
	stats   CacheStats
}

type entry struct {
	key     string
	robots  *Robots
	expires time.Time
	good    *Robots   // last parsed or unavailable result, for StaleMax
	goodAt  time.Time // when good was fetched
	elem    *list.Element
}

// Log keys.
const (
	logKey    = "robots_key"
	logStatus = "status"
	logKind   = "kind"
	logBytes  = "bytes"
	logErr    = "err"
)

// NewCache returns a Cache that fetches with fetch. Zero options take their
// defaults (see CacheOptions).
func NewCache(fetch FetchFunc, opts CacheOptions) *Cache {
	if opts.TTL <= 0 {
		opts.TTL = 24 * time.Hour
	}
	if opts.ErrorTTL <= 0 {
		opts.ErrorTTL = 5 * time.Minute
	}
	if opts.StaleMax == 0 {
		opts.StaleMax = 30 * 24 * time.Hour
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100_000
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Cache{fetch: fetch, opts: opts, log: log, entries: make(map[string]*entry), lru: list.New()}
}

// Key returns the cache key of u, "scheme://host:port" with scheme and host
// lower-cased and the port explicit (80 for http, 443 for https), and the URL
// of its robots.txt.
func Key(u *url.URL) (key string, robotsURL *url.URL) {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	hostport := host
	if strings.IndexByte(host, ':') >= 0 {
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport += ":" + port
	}
	ru := &url.URL{Scheme: scheme, Host: strings.ToLower(u.Host), Path: "/robots.txt"}
	return scheme + "://" + hostport, ru
}

// Get returns the robots.txt rules for u's scheme, host and port, from the
// cache or by fetching them. Fetch failures are not errors: they give
// Unreachable() rules (or the previous good copy, see StaleMax). The only
// errors are ctx's, when ctx ends before the answer is known; the fetch then
// goes on for the other callers and the cache.
func (c *Cache) Get(ctx context.Context, u *url.URL) (*Robots, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key, robotsURL := Key(u)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && c.opts.Now().Before(e.expires) {
		c.lru.MoveToFront(e.elem)
		c.stats.Hits++
		r := e.robots
		c.mu.Unlock()
		return r, nil
	}
	c.stats.Misses++
	c.mu.Unlock()

	ch := c.flight.DoChan(key, func() (any, error) {
		return c.load(context.WithoutCancel(ctx), key, robotsURL), nil
	})
	select {
	case res := <-ch:
		return res.Val.(*Robots), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load fetches the robots.txt of key and stores the outcome, unless a fetch
// that ended after the caller's look-up already did.
func (c *Cache) load(ctx context.Context, key string, robotsURL *url.URL) *Robots {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && c.opts.Now().Before(e.expires) {
		r := e.robots
		c.mu.Unlock()
		return r
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.opts.FetchTimeout)
	defer cancel()
	status, body, err := c.fetch(ctx, robotsURL)
	var r *Robots
	if err != nil {
		r = Unreachable()
		c.log.DebugContext(ctx, "robots.txt unreachable", logKey, key, logErr, err)
	} else {
		r = FromResponse(status, body)
		c.log.DebugContext(ctx, "robots.txt fetched", logKey, key, logStatus, status, logKind, r.Kind(), logBytes, len(body))
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	c.stats.Fetches++
	e := c.entries[key]
	if e == nil {
		e = &entry{key: key}
		e.elem = c.lru.PushFront(e)
		c.entries[key] = e
	} else {
		c.lru.MoveToFront(e.elem)
	}
	if r.Kind() == KindUnreachable {
		c.stats.Unreachable++
		e.expires = now.Add(c.opts.ErrorTTL)
		e.robots = r
		if e.good != nil && c.opts.StaleMax > 0 && now.Sub(e.goodAt) < c.opts.StaleMax {
			e.robots = e.good
			c.stats.StaleServed++
		}
	} else {
		e.expires = now.Add(c.opts.TTL)
		e.robots, e.good, e.goodAt = r, r, now
	}
	for c.lru.Len() > c.opts.MaxEntries {
		old := c.lru.Back().Value.(*entry)
		c.lru.Remove(old.elem)
		delete(c.entries, old.key)
		c.stats.Evictions++
	}
	return e.robots
}

// Stats returns a snapshot of the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries = len(c.entries)
	return s
}
