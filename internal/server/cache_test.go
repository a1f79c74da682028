package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// countingSearcher counts searches; its Stats can be changed.
type countingSearcher struct {
	n     atomic.Int64
	stats IndexStats
}

func (c *countingSearcher) Search(_ context.Context, req SearchRequest) (*SearchResult, error) {
	c.n.Add(1)
	return &SearchResult{Total: 1, Hits: []Hit{{URL: "http://a.test/" + req.Query}}, Took: time.Millisecond}, nil
}
func (c *countingSearcher) Stats() IndexStats { return c.stats }

func TestResultCache(t *testing.T) {
	cs := &countingSearcher{stats: IndexStats{Docs: 1}}
	s := newTestServer(t, Options{Searcher: cs, CacheSize: 2, CacheTTL: time.Minute})
	clk := &clock{time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)}
	s.cache.lru.now = clk.now
	ctx := context.Background()
	search := func(q string, offset int) *SearchResult {
		t.Helper()
		res, err := s.search(ctx, SearchRequest{Query: q, Offset: offset, Limit: 10, RankWeight: -1}, cs.Stats())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	steps := []struct {
		what   string
		do     func()
		q      string
		offset int
		want   int64 // searches so far
	}{
		{"first", nil, "a", 0, 1},
		{"repeat: cached", nil, "a", 0, 1},
		{"other page", nil, "a", 10, 2},
		{"third key evicts the oldest", nil, "b", 0, 3},
		{"evicted", nil, "a", 0, 4},
		{"index changed", func() { cs.stats.Docs = 2 }, "a", 0, 5},
		{"cached again", nil, "a", 0, 5},
		{"expired", func() { clk.t = clk.t.Add(2 * time.Minute) }, "a", 0, 6},
	}
	var prev int64
	for _, st := range steps {
		if st.do != nil {
			st.do()
		}
		res := search(st.q, st.offset)
		if got := cs.n.Load(); got != st.want {
			t.Fatalf("%s: %d searches, want %d", st.what, got, st.want)
		}
		if cached := cs.n.Load() == prev; res.Cached != cached || (res.Took == 0) != cached {
			t.Fatalf("%s: Cached %v Took %s", st.what, res.Cached, res.Took)
		}
		prev = cs.n.Load()
		if res.Hits[0].URL != "http://a.test/"+st.q {
			t.Fatalf("%s: wrong result %+v", st.what, res.Hits)
		}
	}
	off := newTestServer(t, Options{Searcher: cs, CacheSize: -1})
	before := cs.n.Load()
	for range 3 {
		if _, err := off.search(ctx, SearchRequest{Query: "a", Limit: 10}, cs.Stats()); err != nil {
			t.Fatal(err)
		}
	}
	if cs.n.Load()-before != 3 {
		t.Fatal("CacheSize -1 still caches")
	}
}

func TestLRUBounds(t *testing.T) {
	v1, v2 := IndexStats{Docs: 1}, IndexStats{Docs: 2}
	c := newLRU[string](3, 100, time.Minute)
	clk := &clock{time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)}
	c.now = clk.now
	type step struct {
		what    string
		do      func()
		present []string // keys expected cached (under v1 unless noted)
		absent  []string
		entries int
		bytes   int64
	}
	steps := []step{
		{"three fit", func() { c.put("a", v1, "A", 10); c.put("b", v1, "B", 10); c.put("c", v1, "C", 10) }, []string{"a", "b", "c"}, nil, 3, 30},
		{"fourth evicts the least recently used (a was read last, b is oldest)", func() { c.get("a", v1); c.put("d", v1, "D", 10) }, []string{"a", "c", "d"}, []string{"b"}, 3, 30},
		{"byte bound evicts", func() { c.put("e", v1, "E", 95) }, []string{"e"}, []string{"a", "c", "d"}, 1, 95},
		{"larger than the bound: not cached", func() { c.put("f", v1, "F", 101) }, []string{"e"}, []string{"f"}, 1, 95},
		{"replacing a key counts its bytes once", func() { c.put("e", v1, "E2", 20); c.put("e", v1, "E3", 30) }, []string{"e"}, nil, 1, 30},
		{"expired", func() { clk.t = clk.t.Add(2 * time.Minute) }, nil, []string{"e"}, 0, 0},
	}
	for _, st := range steps {
		st.do()
		for _, k := range st.present {
			if _, ok := c.get(k, v1); !ok {
				t.Errorf("%s: %s not cached", st.what, k)
			}
		}
		for _, k := range st.absent {
			if _, ok := c.get(k, v1); ok {
				t.Errorf("%s: %s still cached", st.what, k)
			}
		}
		if n, b := c.len(); n != st.entries || b != st.bytes {
			t.Errorf("%s: %d entries, %d bytes; want %d, %d", st.what, n, b, st.entries, st.bytes)
		}
	}
	c.put("x", v1, "X", 1)
	c.put("y", v1, "Y", 1)
	if _, ok := c.get("x", v2); ok {
		t.Fatal("an entry of the previous index version was served")
	}
	if n, b := c.len(); n != 0 || b != 0 {
		t.Fatalf("a new index version left %d entries, %d bytes", n, b)
	}
}

// TestResponseCache: the search page and the API answer a repeated
// request from the response cache with the same bytes (but for the
// "cached" note), an ETag and 304 on If-None-Match; a new index version
// drops them; the look-ups are counted on /metrics.
func TestResponseCache(t *testing.T) {
	cs := &countingSearcher{stats: IndexStats{Docs: 1}}
	reg := prometheus.NewRegistry()
	s := newTestServer(t, Options{Searcher: cs, Registry: reg})
	h := s.Handler()
	for _, tc := range []struct {
		target, fresh, cached string
	}{
		{"/?q=crawler", " ms)", "(cached)"},
		{"/api/search?q=crawler&limit=3", `"cached": false`, `"cached": true`},
	} {
		before := cs.n.Load()
		first := do(t, h, "GET", tc.target, "", nil)
		second := do(t, h, "GET", tc.target, "", nil)
		// The same query with other white space is the same answer.
		third := do(t, h, "GET", strings.Replace(tc.target, "q=crawler", "q=+crawler%20%20", 1), "", nil)
		if first.Code != 200 || second.Code != 200 || third.Code != 200 {
			t.Fatalf("%s: %d %d %d", tc.target, first.Code, second.Code, third.Code)
		}
		// The page's first search may hit the result cache that the
		// page filled for the API; either way the index ran at most once.
		if n := cs.n.Load() - before; n > 1 {
			t.Errorf("%s: %d searches for one query", tc.target, n)
		}
		if !strings.Contains(second.Body.String(), tc.cached) || second.Body.String() != third.Body.String() {
			t.Errorf("%s: repeated answers differ or are not marked cached:\n%s\n%s", tc.target, second.Body, third.Body)
		}
		if tc.target[1] == '?' && !strings.Contains(first.Body.String(), tc.fresh) {
			t.Errorf("%s: first answer not marked fresh:\n%s", tc.target, first.Body)
		}
		etag := first.Header().Get("ETag")
		if !strings.HasPrefix(etag, `W/"`) || second.Header().Get("ETag") != etag || second.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("%s: ETag %q then %q, Cache-Control %q", tc.target, etag, second.Header().Get("ETag"), second.Header().Get("Cache-Control"))
		}
		if w := do(t, h, "GET", tc.target, "", map[string]string{"If-None-Match": etag}); w.Code != 304 || w.Body.Len() != 0 {
			t.Errorf("%s: If-None-Match: %d, %d bytes", tc.target, w.Code, w.Body.Len())
		}
		if w := do(t, h, "GET", tc.target, "", map[string]string{"If-None-Match": `W/"other"`}); w.Code != 200 || w.Body.String() != second.Body.String() {
			t.Errorf("%s: other ETag: %d", tc.target, w.Code)
		}
	}
	// A new index version: answered afresh; the ETag is the content's,
	// so it still matches while the page did not change.
	etag := do(t, h, "GET", "/?q=crawler", "", nil).Header().Get("ETag")
	cs.stats.Docs = 2
	before := cs.n.Load()
	if w := do(t, h, "GET", "/?q=crawler", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), " ms)") || w.Header().Get("ETag") != etag {
		t.Fatalf("after an index change: %d %s\n%s", w.Code, w.Header().Get("ETag"), w.Body)
	}
	if cs.n.Load() != before+1 {
		t.Fatal("an index change did not cause a new search")
	}
	if w := do(t, h, "GET", "/?q=crawler", "", map[string]string{"If-None-Match": etag}); w.Code != 304 {
		t.Fatalf("unchanged page after an index change: %d, want 304", w.Code)
	}
	// Errors are not cached.
	for range 2 {
		if w := do(t, h, "GET", "/?q=crawler&p=x", "", nil); w.Code != 400 || w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("ETag") != "" {
			t.Fatalf("bad page number: %d %v", w.Code, w.Header())
		}
	}
	m := do(t, h, "GET", "/metrics", "", nil).Body.String()
	for _, want := range []string{
		`spider_search_cache_requests_total{cache="page",result="hit"} `,
		`spider_search_cache_requests_total{cache="page",result="miss"} `,
		`spider_search_cache_requests_total{cache="api",result="hit"} `,
		`spider_search_cache_requests_total{cache="result",result="miss"} `,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if !strings.Contains(m, `spider_search_cache_requests_total{cache="api",result="hit"} 4`) {
		t.Errorf("api hits not counted as 4:\n%s", grepLines(m, "spider_search_cache"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCacheConcurrent: many clients, few queries, the index changing
// meanwhile: every answer is the right one (run with -race).
func TestCacheConcurrent(t *testing.T) {
	cs := &versionedSearcher{}
	s := newTestServer(t, Options{Searcher: cs, CacheSize: 3})
	h := s.Handler()
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 200 {
				q := fmt.Sprintf("q%d", (c+i)%5)
				target := "/?q=" + q
				if i%2 == 1 {
					target = "/api/search?q=" + q
				}
				if i == 100 && c == 0 {
					cs.version.Add(1)
				}
				w := do(t, h, "GET", target, "", nil)
				if w.Code != 200 || !strings.Contains(w.Body.String(), "http://a.test/"+q+"/v") {
					t.Errorf("%s: %d %s", target, w.Code, w.Body)
					return
				}
			}
		})
	}
	wg.Wait()
	// After the change every answer comes from the new version.
	v := cs.version.Load()
	for _, target := range []string{"/?q=q1", "/api/search?q=q1"} {
		if w := do(t, h, "GET", target, "", nil); !strings.Contains(w.Body.String(), fmt.Sprintf("http://a.test/q1/v%d", v)) {
			t.Errorf("%s: stale answer after the index changed:\n%s", target, w.Body)
		}
	}
}

// versionedSearcher's hits name the index version, which Stats reports.
type versionedSearcher struct{ version atomic.Int64 }

func (v *versionedSearcher) Search(_ context.Context, req SearchRequest) (*SearchResult, error) {
	u := fmt.Sprintf("http://a.test/%s/v%d", req.Query, v.version.Load())
	return &SearchResult{Total: 1, Hits: []Hit{{URL: u, Title: req.Query}}, Took: time.Millisecond}, nil
}
func (v *versionedSearcher) Stats() IndexStats {
	return IndexStats{Docs: 1, Segments: int(v.version.Load())}
}

func FuzzNormaliseQuery(f *testing.F) {
	for _, s := range []string{"", "a", " a  b ", "a\tb", "分布式\u3000爬虫", "\"a  b\" OR c", "a\u00a0b", "\xff  \xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		n := normaliseQuery(q)
		if normaliseQuery(n) != n {
			t.Fatalf("not idempotent: %q → %q → %q", q, n, normaliseQuery(n))
		}
		if strings.Join(strings.Fields(q), " ") != n {
			t.Fatalf("%q → %q, want the words joined by one space", q, n)
		}
	})
}

// blockingSearcher holds every search until release is closed and
// records how many ran at once.
type blockingSearcher struct {
	release      chan struct{}
	running, max atomic.Int64
}

func (b *blockingSearcher) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	n := b.running.Add(1)
	defer b.running.Add(-1)
	for m := b.max.Load(); n > m && !b.max.CompareAndSwap(m, n); m = b.max.Load() {
	}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &SearchResult{Total: 1, Hits: []Hit{{URL: "http://a.test/" + req.Query}}}, nil
}
func (b *blockingSearcher) Stats() IndexStats { return IndexStats{Docs: 1} }

// TestMaxSearches: no more than MaxSearches searches run at once, the
// others wait their turn; one that cannot get a turn in time gets a 504.
func TestMaxSearches(t *testing.T) {
	bs := &blockingSearcher{release: make(chan struct{})}
	s := newTestServer(t, Options{Searcher: bs, MaxSearches: 2})
	waiting := make(chan struct{}, 16)
	hook := func(srv *Server) {
		if srv == s {
			waiting <- struct{}{}
		}
	}
	slotWaitHook.Store(&hook)
	defer slotWaitHook.Store(nil)
	var wg sync.WaitGroup
	codes := make([]int, 6)
	for i := range codes {
		wg.Go(func() { codes[i] = do(t, s.Handler(), "GET", fmt.Sprintf("/api/search?q=q%d", i), "", nil).Code })
	}
	// Four searches must find both slots taken and wait (the hook); the searcher holds the
	// two running ones until release, so a broken bound shows as fewer waiters and more
	// running.
	timeout := time.After(10 * time.Second) // bounds a broken bound; not a synchronisation
	for n := 0; n < 4; n++ {
		select {
		case <-waiting:
		case <-timeout:
			t.Fatalf("%d searches waited for a slot within 10 s, want 4 (%d running)", n, bs.running.Load())
		}
	}
	// The two holding the slots reach the searcher (polled: they are past the slots).
	for deadline := time.Now().Add(10 * time.Second); bs.running.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := bs.running.Load(); got != 2 {
		t.Fatalf("%d searches running, want 2", got)
	}
	// Without the cache the request's own deadline applies: a search
	// that waits past it fails as busy, with 504.
	nc := newTestServer(t, Options{Searcher: bs, MaxSearches: 1, CacheSize: -1})
	nc.slots <- struct{}{} // the one slot is taken
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := nc.search(ctx, SearchRequest{Query: "late", Limit: 10}, bs.Stats())
	if err == nil || !strings.Contains(err.Error(), "busy") || statusOf(err) != 504 {
		t.Fatalf("busy search: %v (status %d)", err, statusOf(err))
	}
	close(bs.release)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: %d", i, c)
		}
	}
	if bs.max.Load() != 2 {
		t.Errorf("at most %d searches ran at once, want 2", bs.max.Load())
	}
}
