package robots

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fakeServer answers robots.txt fetches from a table that tests change.
type fakeServer struct {
	mu      sync.Mutex
	status  map[string]int // robots URL → status; absent = 200
	err     map[string]error
	body    map[string]string
	fetched []string
	calls   atomic.Int64
}

func newFakeServer() *fakeServer {
	return &fakeServer{status: map[string]int{}, err: map[string]error{}, body: map[string]string{}}
}

func (s *fakeServer) fetch(ctx context.Context, u *url.URL) (int, []byte, error) {
	s.calls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	key := u.String()
	s.fetched = append(s.fetched, key)
	if err := s.err[key]; err != nil {
		return 0, nil, err
	}
	st, ok := s.status[key]
	if !ok {
		st = 200
	}
	return st, []byte(s.body[key]), nil
}

func (s *fakeServer) set(robotsURL string, status int, body string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[robotsURL], s.body[robotsURL], s.err[robotsURL] = status, body, err
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func get(t *testing.T, c *Cache, raw string) *Robots {
	t.Helper()
	r, err := c.Get(context.Background(), mustURL(t, raw))
	if err != nil {
		t.Fatalf("Get(%q): %v", raw, err)
	}
	return r
}

func TestKey(t *testing.T) {
	cases := []struct{ in, key, robots string }{
		{"http://Example.COM/a?b", "http://example.com:80", "http://example.com/robots.txt"},
		{"http://example.com:80/x", "http://example.com:80", "http://example.com:80/robots.txt"},
		{"https://example.com/x", "https://example.com:443", "https://example.com/robots.txt"},
		{"https://u:p@example.com:8443/x", "https://example.com:8443", "https://example.com:8443/robots.txt"},
		{"http://[::1]:8080/", "http://[::1]:8080", "http://[::1]:8080/robots.txt"},
		{"http://[::1]/", "http://[::1]:80", "http://[::1]/robots.txt"},
	}
	for _, tc := range cases {
		key, ru := Key(mustURL(t, tc.in))
		if key != tc.key || ru.String() != tc.robots {
			t.Errorf("Key(%q) = %q, %q; want %q, %q", tc.in, key, ru, tc.key, tc.robots)
		}
	}
}

func TestCacheHitsAndKeys(t *testing.T) {
	srv := newFakeServer()
	srv.set("http://a.test/robots.txt", 200, "user-agent: *\ndisallow: /private\n", nil)
	c := NewCache(srv.fetch, CacheOptions{})
	r := get(t, c, "http://a.test/x")
	if r.Allowed("spider", mustURL(t, "http://a.test/private/1")) {
		t.Fatal("rules not applied")
	}
	if get(t, c, "http://A.test:80/y?z") != r {
		t.Fatal("same host:port did not hit the cache")
	}
	if get(t, c, "https://a.test/") == r || get(t, c, "http://a.test:8080/") == r {
		t.Fatal("other scheme or port shared an entry")
	}
	s := c.Stats()
	want := CacheStats{Entries: 3, Hits: 1, Misses: 3, Fetches: 3}
	if s != want {
		t.Fatalf("Stats() = %+v; want %+v", s, want)
	}
	if srv.fetched[1] != "https://a.test/robots.txt" || srv.fetched[2] != "http://a.test:8080/robots.txt" {
		t.Fatalf("fetched %q", srv.fetched)
	}
}

func TestCacheExpiry(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	srv := newFakeServer()
	const robotsURL = "http://a.test/robots.txt"
	srv.set(robotsURL, 200, "user-agent: *\ndisallow: /v1\n", nil)
	c := NewCache(srv.fetch, CacheOptions{TTL: time.Hour, ErrorTTL: time.Minute, StaleMax: -1, Now: clk.Now})

	get(t, c, "http://a.test/")
	clk.Add(59 * time.Minute)
	get(t, c, "http://a.test/")
	if n := srv.calls.Load(); n != 1 {
		t.Fatalf("%d fetches before TTL; want 1", n)
	}
	srv.set(robotsURL, 200, "user-agent: *\ndisallow: /v2\n", nil)
	clk.Add(2 * time.Minute)
	r := get(t, c, "http://a.test/")
	if n := srv.calls.Load(); n != 2 || r.Group("x").Allowed("/v2") {
		t.Fatalf("after TTL: %d fetches, /v2 allowed %v; want refetch with new rules", n, r.Group("x").Allowed("/v2"))
	}

	// Unreachable: disallow all, retried after ErrorTTL (StaleMax disabled).
	clk.Add(2 * time.Hour)
	srv.set(robotsURL, 503, "", nil)
	if r := get(t, c, "http://a.test/"); r.Kind() != KindUnreachable {
		t.Fatalf("503 gave %v", r.Kind())
	}
	clk.Add(30 * time.Second)
	get(t, c, "http://a.test/")
	if n := srv.calls.Load(); n != 3 {
		t.Fatalf("%d fetches within ErrorTTL; want 3", n)
	}
	srv.set(robotsURL, 404, "", nil)
	clk.Add(31 * time.Second)
	if r := get(t, c, "http://a.test/"); r.Kind() != KindUnavailable {
		t.Fatalf("after ErrorTTL got %v; want a refetch giving unavailable", r.Kind())
	}
	if s := c.Stats(); s.Fetches != 4 || s.Unreachable != 1 || s.StaleServed != 0 {
		t.Fatalf("Stats() = %+v", s)
	}
}

func TestCacheStale(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	srv := newFakeServer()
	const robotsURL = "http://a.test/robots.txt"
	srv.set(robotsURL, 200, "user-agent: *\ndisallow: /private\n", nil)
	c := NewCache(srv.fetch, CacheOptions{TTL: time.Hour, ErrorTTL: time.Minute, StaleMax: 48 * time.Hour, Now: clk.Now})
	good := get(t, c, "http://a.test/")

	// The file becomes unreachable: the last good copy stands in.
	clk.Add(2 * time.Hour)
	srv.set(robotsURL, 0, "", errors.New("connection refused"))
	if r := get(t, c, "http://a.test/"); r != good {
		t.Fatalf("unreachable refetch gave %v; want the stale good copy", r.Kind())
	}
	clk.Add(30 * time.Second)
	get(t, c, "http://a.test/")
	if n := srv.calls.Load(); n != 2 {
		t.Fatalf("stale copy not kept for ErrorTTL: %d fetches", n)
	}
	// Past StaleMax, unreachable means disallow all.
	clk.Add(47 * time.Hour)
	if r := get(t, c, "http://a.test/"); r.Kind() != KindUnreachable {
		t.Fatalf("past StaleMax got %v; want unreachable", r.Kind())
	}
	if s := c.Stats(); s.StaleServed != 1 || s.Unreachable != 2 {
		t.Fatalf("Stats() = %+v", s)
	}
}

func TestCacheLRU(t *testing.T) {
	srv := newFakeServer()
	c := NewCache(srv.fetch, CacheOptions{MaxEntries: 2})
	get(t, c, "http://a.test/")
	get(t, c, "http://b.test/")
	get(t, c, "http://a.test/") // a is now the most recent
	get(t, c, "http://c.test/") // evicts b
	get(t, c, "http://a.test/")
	if n := srv.calls.Load(); n != 3 {
		t.Fatalf("%d fetches; want 3 (a kept)", n)
	}
	get(t, c, "http://b.test/")
	if n := srv.calls.Load(); n != 4 {
		t.Fatalf("%d fetches; want 4 (b evicted)", n)
	}
	if s := c.Stats(); s.Entries != 2 || s.Evictions != 2 {
		t.Fatalf("Stats() = %+v", s)
	}
}

func TestCacheSingleFlight(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	fetch := func(ctx context.Context, u *url.URL) (int, []byte, error) {
		calls.Add(1)
		<-release
		return 200, []byte("user-agent: *\ndisallow: /x\n"), nil
	}
	c := NewCache(fetch, CacheOptions{})
	const n = 50
	results := make(chan *Robots, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Get(context.Background(), mustURL(t, fmt.Sprintf("http://a.test/p%d", i)))
			if err != nil {
				t.Error(err)
			}
			results <- r
		}()
	}
	// Wait until every goroutine is a miss waiting on the one fetch (polled every
	// millisecond; the deadline fails the test).
	for deadline := time.Now().Add(10 * time.Second); c.Stats().Misses < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d callers missed the cache after 10 s", c.Stats().Misses, n)
		}
	}
	close(release)
	wg.Wait()
	close(results)
	var first *Robots
	for r := range results {
		if first == nil {
			first = r
		}
		if r != first {
			t.Fatal("callers got different Robots")
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d fetches; want 1", calls.Load())
	}
}

func TestCacheContext(t *testing.T) {
	release := make(chan struct{})
	fetch := func(ctx context.Context, u *url.URL) (int, []byte, error) {
		select {
		case <-release:
			return 200, []byte("user-agent: *\ndisallow: /x\n"), nil
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
	c := NewCache(fetch, CacheOptions{})
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(done, mustURL(t, "http://a.test/")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context = %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, mustURL(t, "http://a.test/")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get past its deadline = %v", err)
	}
	// The fetch was not cancelled with the caller: it completes and is
	// cached for the next caller.
	close(release)
	r := get(t, c, "http://a.test/")
	if r.Kind() != KindParsed || r.Group("x").Allowed("/x") {
		t.Fatalf("got %v; want the parsed rules", r.Kind())
	}
	if s := c.Stats(); s.Fetches != 1 {
		t.Fatalf("Stats() = %+v; want 1 fetch", s)
	}
}

func TestCacheFetchTimeout(t *testing.T) {
	fetch := func(ctx context.Context, u *url.URL) (int, []byte, error) {
		<-ctx.Done()
		return 0, nil, ctx.Err()
	}
	c := NewCache(fetch, CacheOptions{FetchTimeout: 10 * time.Millisecond})
	if r := get(t, c, "http://slow.test/"); r.Kind() != KindUnreachable {
		t.Fatalf("timed-out fetch gave %v; want unreachable", r.Kind())
	}
}

func TestCacheConcurrent(t *testing.T) {
	srv := newFakeServer()
	c := NewCache(srv.fetch, CacheOptions{MaxEntries: 8})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				u := mustURL(t, fmt.Sprintf("http://h%d.test/x", (i*7+g)%20))
				r, err := c.Get(context.Background(), u)
				if err != nil || !r.Allowed("spider", u) {
					t.Errorf("Get(%s) = %v, %v", u, r, err)
					return
				}
				_ = c.Stats()
			}
		}()
	}
	wg.Wait()
	s := c.Stats()
	if s.Entries > 8 || s.Hits+s.Misses != 1600 {
		t.Fatalf("Stats() = %+v", s)
	}
}
