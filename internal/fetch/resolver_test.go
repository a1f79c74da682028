package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// countingLookup answers from a table and counts calls per name.
type countingLookup struct {
	mu     sync.Mutex
	calls  map[string]int
	answer map[string][]netip.Addr
}

func (l *countingLookup) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[string]int{}
	}
	l.calls[host]++
	a, ok := l.answer[host]
	if !ok {
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	return a, nil
}

func (l *countingLookup) Calls(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[host]
}

func newTestResolver(t *testing.T, cfg ResolverConfig) *Resolver {
	t.Helper()
	r, err := NewResolver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResolverCacheTTL(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	l := &countingLookup{answer: map[string][]netip.Addr{
		"a.test": {netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("::ffff:192.0.2.1"), netip.MustParseAddr("2001:db8::1")},
	}}
	r := newTestResolver(t, ResolverConfig{TTL: time.Minute, NegativeTTL: 10 * time.Second, Lookup: l.Lookup, Now: clock.Now})
	ctx := context.Background()

	want := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}
	for i := range 3 {
		got, err := r.LookupIP(ctx, "A.test.", "80")
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("lookup %d = %v, %v; want %v (deduplicated, unmapped)", i, got, err, want)
		}
		got[0] = netip.Addr{} // the caller owns the slice
	}
	if n := l.Calls("a.test"); n != 1 {
		t.Fatalf("%d look-ups within the TTL, want 1", n)
	}
	clock.Advance(59 * time.Second)
	r.LookupIP(ctx, "a.test", "80")
	if n := l.Calls("a.test"); n != 1 {
		t.Fatalf("%d look-ups just before expiry, want 1", n)
	}
	clock.Advance(time.Second)
	r.LookupIP(ctx, "a.test", "80")
	if n := l.Calls("a.test"); n != 2 {
		t.Fatalf("%d look-ups after expiry, want 2", n)
	}
	if s := r.Stats(); s.Lookups != 2 || s.CacheHits != 3 || s.Failures != 0 {
		t.Fatalf("stats %+v, want 2 look-ups, 3 hits, 0 failures", s)
	}

	// Negative caching: a failure is remembered for NegativeTTL only.
	for range 3 {
		_, err := r.LookupIP(ctx, "missing.test", "80")
		var fe *Error
		if !errors.As(err, &fe) || fe.Outcome != OutcomeDNS || Classify(err) != OutcomeDNS {
			t.Fatalf("missing name: error %v (%T), want an *Error with outcome dns", err, err)
		}
	}
	if n := l.Calls("missing.test"); n != 1 {
		t.Fatalf("%d look-ups of a failing name within the negative TTL, want 1", n)
	}
	clock.Advance(10 * time.Second)
	r.LookupIP(ctx, "missing.test", "80")
	if n := l.Calls("missing.test"); n != 2 {
		t.Fatalf("%d look-ups of a failing name after the negative TTL, want 2", n)
	}
}

func TestResolverNoAddresses(t *testing.T) {
	r := newTestResolver(t, ResolverConfig{Lookup: func(context.Context, string) ([]netip.Addr, error) { return nil, nil }})
	_, err := r.LookupIP(context.Background(), "empty.test", "")
	if Classify(err) != OutcomeDNS || !errors.Is(err, errNoAddresses) {
		t.Fatalf("empty answer: %v, want a dns error wrapping errNoAddresses", err)
	}
	if _, err := r.LookupIP(context.Background(), "", ""); Classify(err) != OutcomeDNS {
		t.Fatalf("empty host: %v, want a dns error", err)
	}
}

func TestResolverLiteralsAndOverrides(t *testing.T) {
	var calls atomic.Int32
	over, err := ParseResolve("*.over.test:*:192.0.2.7,192.0.2.8")
	if err != nil {
		t.Fatal(err)
	}
	r := newTestResolver(t, ResolverConfig{
		Overrides: []ResolveEntry{over},
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			calls.Add(1)
			return []netip.Addr{netip.MustParseAddr("192.0.2.200")}, nil
		},
	})
	tests := []struct{ host, want string }{
		{"192.0.2.50", "[192.0.2.50]"},
		{"[2001:db8::5]", "[2001:db8::5]"},
		{"::ffff:10.0.0.1", "[10.0.0.1]"},
		{"www.over.test", "[192.0.2.7 192.0.2.8]"},
	}
	for _, tt := range tests {
		got, err := r.LookupIP(context.Background(), tt.host, "443")
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("LookupIP(%q) = %v, %v; want %s", tt.host, got, err, tt.want)
		}
	}
	if calls.Load() != 0 {
		t.Fatalf("literals and overrides caused %d look-ups", calls.Load())
	}
}

func TestResolverSingleFlight(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	r := newTestResolver(t, ResolverConfig{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		calls.Add(1)
		<-release
		return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
	}})
	const callers = 50
	joined := make(chan struct{}, callers)
	hook := func(res *Resolver, host string) {
		if res == r && host == "slow.test" {
			joined <- struct{}{}
		}
	}
	flightJoinedHook.Store(&hook)
	defer flightJoinedHook.Store(nil)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			got, err := r.LookupIP(context.Background(), "slow.test", "80")
			if err == nil && (len(got) != 1 || got[0].String() != "192.0.2.1") {
				err = fmt.Errorf("got %v", got)
			}
			errs <- err
		})
	}
	// Every caller joins the flight before it completes: the look-up is held until all
	// have (the hook), so a second look-up can only come from a broken single-flight.
	for range callers {
		<-joined
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d look-ups for %d concurrent callers, want 1", n, callers)
	}
}

func TestResolverCallerCancelDoesNotAbortSharedLookup(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	var calls atomic.Int32
	r := newTestResolver(t, ResolverConfig{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		calls.Add(1)
		started <- struct{}{}
		select {
		case <-release:
			return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.LookupIP(ctx, "shared.test", "80")
		done <- err
	}()
	<-started // the caller's look-up is in flight: cancel the caller now
	cancel()
	if err := <-done; Classify(err) != OutcomeCanceled {
		t.Fatalf("cancelled caller got %v (%s), want canceled", err, Classify(err))
	}
	close(release)
	// The look-up started by the cancelled caller still completes and is
	// cached for the others: a second caller gets its answer without a look-up
	// of its own.
	got, err := r.LookupIP(context.Background(), "shared.test", "80")
	if err != nil || len(got) != 1 {
		t.Fatalf("second caller: %v, %v", got, err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d look-ups: the cancelled caller's look-up was aborted (not cached), want 1", n)
	}
}

func TestResolverBoundsConcurrency(t *testing.T) {
	const limit = 4
	var cur, peak atomic.Int32
	full := make(chan struct{})
	var fullOnce sync.Once
	r := newTestResolver(t, ResolverConfig{MaxInFlight: limit, Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// The first look-ups wait until limit of them are in flight together, so the
		// limit is always reached (whatever the scheduling); after that, each look-up
		// takes 20 ms (time is the subject: a look-up's length), during which a broken
		// bound would let more than limit overlap.
		if n >= limit {
			fullOnce.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-ctx.Done():
			cur.Add(-1)
			return nil, ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
		cur.Add(-1)
		return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
	}})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			if _, err := r.LookupIP(context.Background(), fmt.Sprintf("h%d.test", i), "80"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p != limit {
		t.Fatalf("peak concurrent look-ups %d, want %d", p, limit)
	}
	if s := r.Stats(); s.Lookups != 32 {
		t.Fatalf("stats %+v, want 32 look-ups", s)
	}
}

func TestResolverEviction(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	r := newTestResolver(t, ResolverConfig{MaxEntries: 10, TTL: time.Minute, Now: clock.Now,
		Lookup: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil
		}})
	for i := range 100 {
		if _, err := r.LookupIP(context.Background(), fmt.Sprintf("h%d.test", i), ""); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			clock.Advance(time.Minute)
		}
	}
	r.mu.Lock()
	n := len(r.cache)
	r.mu.Unlock()
	if n > 10 {
		t.Fatalf("cache holds %d entries, bound is 10", n)
	}
}

func TestNewResolverRejectsNegative(t *testing.T) {
	if _, err := NewResolver(ResolverConfig{TTL: -1}); err == nil {
		t.Fatal("negative TTL accepted")
	}
}
