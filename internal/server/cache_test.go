package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
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
	s.cache.now = clk.now
	ctx := context.Background()
	search := func(q string, offset int) *SearchResult {
		t.Helper()
		res, err := s.search(ctx, SearchRequest{Query: q, Offset: offset, Limit: 10, RankWeight: -1})
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
		if _, err := off.search(ctx, SearchRequest{Query: "a", Limit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if cs.n.Load()-before != 3 {
		t.Fatal("CacheSize -1 still caches")
	}
}
