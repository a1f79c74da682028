package fetch

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// LookupFunc resolves a host name to its addresses; it is what a Resolver
// caches. It must honour ctx.
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// ResolverConfig configures a Resolver. The zero value is usable.
type ResolverConfig struct {
	// TTL is how long a successful answer is reused. Default 5 minutes.
	TTL time.Duration
	// NegativeTTL is how long a failed look-up is remembered, so a dead name
	// is not asked for again by every worker. Default 30 seconds.
	NegativeTTL time.Duration
	// MaxInFlight bounds the look-ups running at once (different names; one
	// name is looked up once at a time whatever the number of callers).
	// Default 64.
	MaxInFlight int
	// MaxEntries bounds the cache; when full, expired entries are dropped,
	// then arbitrary ones. Default 100,000.
	MaxEntries int
	// LookupTimeout bounds one look-up, whatever the callers' contexts.
	// Default 10 seconds.
	LookupTimeout time.Duration
	// Overrides are consulted before the cache (see ResolveEntry).
	Overrides []ResolveEntry
	// Lookup does the actual resolution. Default: the system resolver
	// (net.DefaultResolver.LookupNetIP with network "ip").
	Lookup LookupFunc
	// Now is the clock used for expiry. Default time.Now.
	Now func() time.Time
}

// Resolver is a concurrency-safe DNS cache (SPEC §3 "DNS": a global cache,
// asynchronous look-ups, many in flight). Overrides come first, then cached
// answers, then one look-up per name shared by all its callers. Use
// NewResolver; the zero value is not usable.
type Resolver struct {
	cfg       ResolverConfig
	overrides *resolveTable
	sem       chan struct{}
	group     singleflight.Group

	mu    sync.Mutex
	cache map[string]dnsEntry

	lookups atomic.Uint64
	hits    atomic.Uint64
	fails   atomic.Uint64
}

type dnsEntry struct {
	addrs   []netip.Addr
	err     error
	expires time.Time
}

// NewResolver returns a Resolver with cfg's defaults filled in. It returns an
// error for negative durations or sizes.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	if cfg.TTL < 0 || cfg.NegativeTTL < 0 || cfg.LookupTimeout < 0 || cfg.MaxInFlight < 0 || cfg.MaxEntries < 0 {
		return nil, fmt.Errorf("cannot create resolver: TTL, NegativeTTL, LookupTimeout, MaxInFlight and MaxEntries must not be negative")
	}
	if cfg.TTL == 0 {
		cfg.TTL = 5 * time.Minute
	}
	if cfg.NegativeTTL == 0 {
		cfg.NegativeTTL = 30 * time.Second
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 64
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 100_000
	}
	if cfg.LookupTimeout == 0 {
		cfg.LookupTimeout = 10 * time.Second
	}
	if cfg.Lookup == nil {
		cfg.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Overrides = slices.Clone(cfg.Overrides)
	return &Resolver{
		cfg:       cfg,
		overrides: newResolveTable(cfg.Overrides),
		sem:       make(chan struct{}, cfg.MaxInFlight),
		cache:     make(map[string]dnsEntry),
	}, nil
}

// LookupIP returns the addresses to connect to for host on port, in the
// order they should be tried. An IP literal (bracketed or not) is returned
// as is; otherwise a matching override wins (an empty port matches any
// override), then a fresh cached answer, then a look-up. Failures are
// *Error values with Outcome OutcomeDNS (or the ctx outcome when ctx ends
// first) and are cached for NegativeTTL. The returned slice is the caller's.
func (r *Resolver) LookupIP(ctx context.Context, host, port string) ([]netip.Addr, error) {
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ".")
	if host == "" {
		return nil, &Error{Outcome: OutcomeDNS, Op: "resolve an empty host name", Err: errNoAddresses}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	if e, ok := r.overrides.best(host, port); ok {
		return slices.Clone(e.Addrs), nil
	}
	r.mu.Lock()
	e, ok := r.cache[host]
	r.mu.Unlock()
	if ok && r.cfg.Now().Before(e.expires) {
		r.hits.Add(1)
		return slices.Clone(e.addrs), e.err
	}
	ch := r.group.DoChan(host, func() (any, error) {
		// A flight that ended between the check above and DoChan has
		// already cached its answer.
		r.mu.Lock()
		e, ok := r.cache[host]
		r.mu.Unlock()
		if ok && r.cfg.Now().Before(e.expires) {
			r.hits.Add(1)
			return e, nil
		}
		return r.lookup(ctx, host), nil
	})
	callFlightJoinedHook(r, host)
	select {
	case res := <-ch:
		e := res.Val.(dnsEntry)
		return slices.Clone(e.addrs), e.err
	case <-ctx.Done():
		return nil, newError("resolve "+host, ctx.Err())
	}
}

// lookup runs one look-up for host, detached from the cancellation of the
// caller that started it (other callers may be waiting for it), and caches
// the result.
func (r *Resolver) lookup(ctx context.Context, host string) dnsEntry {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.LookupTimeout)
	defer cancel()
	var e dnsEntry
	select {
	case r.sem <- struct{}{}:
		r.lookups.Add(1)
		addrs, err := r.cfg.Lookup(lctx, host)
		<-r.sem
		e.addrs = dedupAddrs(addrs)
		switch {
		case err != nil:
			e.err = err
		case len(e.addrs) == 0:
			e.err = errNoAddresses
		}
	case <-lctx.Done():
		e.err = fmt.Errorf("too many look-ups in flight: %w", lctx.Err())
	}
	ttl := r.cfg.TTL
	if e.err != nil {
		r.fails.Add(1)
		e.addrs = nil
		e.err = &Error{Outcome: OutcomeDNS, Op: "resolve " + host, Err: e.err}
		ttl = r.cfg.NegativeTTL
	}
	now := r.cfg.Now()
	e.expires = now.Add(ttl)
	r.mu.Lock()
	if len(r.cache) >= r.cfg.MaxEntries {
		r.evictLocked(now)
	}
	r.cache[host] = e
	r.mu.Unlock()
	return e
}

// evictLocked drops expired entries, then arbitrary ones until the cache is
// at most 90% full.
func (r *Resolver) evictLocked(now time.Time) {
	for h, e := range r.cache {
		if !now.Before(e.expires) {
			delete(r.cache, h)
		}
	}
	target := r.cfg.MaxEntries * 9 / 10
	for h := range r.cache {
		if len(r.cache) <= target {
			break
		}
		delete(r.cache, h)
	}
}

func dedupAddrs(addrs []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		if a.IsValid() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// ResolverStats are cumulative counters of a Resolver.
type ResolverStats struct {
	Lookups   uint64 // look-ups actually performed (cache misses, after single-flight)
	CacheHits uint64 // answers served from the cache (positive or negative)
	Failures  uint64 // look-ups that failed or found no address
}

// Stats returns the resolver's counters so far.
func (r *Resolver) Stats() ResolverStats {
	return ResolverStats{Lookups: r.lookups.Load(), CacheHits: r.hits.Load(), Failures: r.fails.Load()}
}
