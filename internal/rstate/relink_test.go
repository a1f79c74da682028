package rstate_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/rstate"
)

// page is a request for http://<name>.test/ at depth (priority = depth).
func page(name string, depth int) frontier.Request {
	return frontier.Request{URL: "http://" + name + ".test/", Key: name + ".test:80", Depth: depth, Priority: depth}
}

// depthsOf maps URLs to depths.
func depthsOf(rs []frontier.Request) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r.URL] = r.Depth
	}
	return out
}

// relinkSetup crawls s(0) → a(1) → {b(2), c(3: beyond MaxDepth 2)} in a
// store with Relink, so that a is fetched with b pending and c kept only.
func relinkSetup(t *testing.T, st *rstate.Store) {
	t.Helper()
	ctx := context.Background()
	seeds, err := st.Discover(ctx, []frontier.Request{page("s", 0), page("t", 0)})
	if err != nil || len(seeds) != 2 {
		t.Fatalf("seeds: %v, %v", seeds, err)
	}
	res, err := st.Complete(ctx, seeds[0], crawlstate.Outcome{Class: "200"}, []frontier.Request{page("a", 1)})
	if err != nil || len(res.New) != 1 {
		t.Fatalf("complete s: %+v, %v", res, err)
	}
	res, err = st.Complete(ctx, res.New[0], crawlstate.Outcome{Class: "200"}, []frontier.Request{page("b", 2), page("c", 3)})
	if err != nil || len(res.New) != 1 || res.New[0].URL != page("b", 0).URL {
		t.Fatalf("complete a: %+v, %v; want b only (c is beyond MaxDepth)", res, err)
	}
}

func stats(t *testing.T, st *rstate.Store) rstate.Stats {
	t.Helper()
	s, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRelinkOneCall: a relink retried under OneCall (a lost reply) returns
// the first run's result and applies nothing twice; the relink is not
// lost to the retry (without OneCall a second run finds the URL already
// lowered and relinks nothing).
func TestRelinkOneCall(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			st, err := rstate.Open(ctx, srv.Client(), rstate.Options{Crawl: "onecall-" + mode, SeenMode: mode,
				ExpectedURLs: 1000, Relink: true, MaxDepth: 2})
			if err != nil {
				t.Fatal(err)
			}
			relinkSetup(t, st)
			want := map[string]int{page("b", 0).URL: 1, page("c", 0).URL: 2} // b lowered, c accepted
			cctx := st.OneCall(ctx)
			first, err := st.Discover(cctx, []frontier.Request{page("a", 0)})
			if err != nil || fmt.Sprint(depthsOf(first)) != fmt.Sprint(want) {
				t.Fatalf("relink of a: %v, %v; want %v", depthsOf(first), err, want)
			}
			before := stats(t, st)
			again, err := st.Discover(cctx, []frontier.Request{page("a", 0)})
			if err != nil || !slices.Equal(again, first) {
				t.Fatalf("retried relink: %+v, %v; want the first run's %+v", again, err, first)
			}
			if after := stats(t, st); after != before {
				t.Fatalf("retry changed the bucket: %+v, was %+v", after, before)
			}
			if got, err := st.Discover(ctx, []frontier.Request{page("a", 0)}); err != nil || len(got) != 0 {
				t.Fatalf("a new call after the relink: %v, %v; want nothing", got, err)
			}
		})
	}
}

// TestDiscoverRelinkReturnsLinks: DiscoverRelink and CompleteRelink hand
// the relinked links to the caller (to route to their buckets) instead of
// discovering them, shifted and within MaxDepth.
func TestDiscoverRelinkReturnsLinks(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			st, err := rstate.Open(ctx, srv.Client(), rstate.Options{Crawl: "route-" + mode, SeenMode: mode,
				ExpectedURLs: 1000, Relink: true, MaxDepth: 2})
			if err != nil {
				t.Fatal(err)
			}
			relinkSetup(t, st)
			seen := stats(t, st).Seen
			acc, relink, err := st.DiscoverRelink(ctx, []frontier.Request{page("a", 0)})
			want := map[string]int{page("b", 0).URL: 1, page("c", 0).URL: 2}
			if err != nil || len(acc) != 0 || fmt.Sprint(depthsOf(relink)) != fmt.Sprint(want) {
				t.Fatalf("DiscoverRelink: accepted %v relink %v, %v; want relink %v", acc, depthsOf(relink), err, want)
			}
			if s := stats(t, st); s.Seen != seen {
				t.Fatalf("DiscoverRelink discovered the links itself: seen %d, was %d", s.Seen, seen)
			}
			for _, r := range relink {
				if r.Priority != r.Depth {
					t.Errorf("%s: priority %d not shifted with depth %d", r.URL, r.Priority, r.Depth)
				}
			}
			// In flight: b, pending at 2, is lowered to 1 and then completed
			// by its depth-2 copy: nothing is discovered here, every kept
			// link comes back shifted (x, y at 3 → 2; z at 4 → 3, cut).
			old := mustPending(t, st, page("b", 0).URL)
			if got, err := st.Discover(ctx, []frontier.Request{page("b", 1)}); err != nil || len(got) != 1 || got[0].Depth != 1 {
				t.Fatalf("lowering b: %v, %v", got, err)
			}
			var res crawlstate.Result
			res, relink, err = st.CompleteRelink(ctx, old, crawlstate.Outcome{Class: "200"},
				[]frontier.Request{page("x", 3), page("y", 3), page("z", 4)}, []frontier.Request{page("x", 3)})
			want = map[string]int{page("x", 0).URL: 2, page("y", 0).URL: 2}
			if err != nil || len(res.New) != 0 || fmt.Sprint(depthsOf(relink)) != fmt.Sprint(want) {
				t.Fatalf("CompleteRelink of a copy lowered in flight: new %v relink %v, %v; want relink %v", res.New, depthsOf(relink), err, want)
			}
		})
	}
}

func mustPending(t *testing.T, st *rstate.Store, url string) frontier.Request {
	t.Helper()
	var out frontier.Request
	err := st.LoadPending(context.Background(), func(r frontier.Request) error {
		if r.URL == url {
			out = r
		}
		return nil
	})
	if err != nil || out.URL == "" {
		t.Fatalf("%s not pending (%v)", url, err)
	}
	return out
}

// TestNoRelinkKeepsNothing: without Relink the links hash stays empty and a
// fetched URL found shallower is left alone.
func TestNoRelinkKeepsNothing(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	st, err := rstate.Open(ctx, srv.Client(), rstate.Options{Crawl: "norelink", ExpectedURLs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if st.Relinks() {
		t.Fatal("Relinks() without the option")
	}
	seeds, err := st.Discover(ctx, []frontier.Request{page("s", 0)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Complete(ctx, seeds[0], crawlstate.Outcome{Class: "200"}, []frontier.Request{page("a", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Complete(ctx, res.New[0], crawlstate.Outcome{Class: "200"}, []frontier.Request{page("b", 7)}); err != nil {
		t.Fatal(err)
	}
	if n := srv.Client().HLen(ctx, st.Prefix()+"links").Val(); n != 0 {
		t.Fatalf("%d kept-links records without Relink", n)
	}
	acc, relink, err := st.DiscoverRelink(ctx, []frontier.Request{page("a", 0)})
	if err != nil || len(acc)+len(relink) != 0 {
		t.Fatalf("DiscoverRelink without Relink: %v %v %v", acc, relink, err)
	}
}

// BenchmarkRelinkMemory measures the Redis memory (INFO used_memory) that
// Relink costs: 10,000 pages at depth ≥ 1 completed with 20 links each
// (about 55-byte URLs), with and without Relink; the difference per page
// is the kept-links record. Run it with -benchtime=1x.
func BenchmarkRelinkMemory(b *testing.B) {
	const n = 10_000
	for _, mode := range []string{rstate.SeenExact, rstate.SeenBloom} {
		b.Run(mode, func(b *testing.B) {
			var used [2]int64
			for i, relink := range []bool{false, true} {
				ctx := context.Background()
				srv := redistest.Start(b)
				c := srv.Client()
				s, err := rstate.Open(ctx, c, rstate.Options{Crawl: "mem", SeenMode: mode, ExpectedURLs: 2 * n * 21, Relink: relink, MaxDepth: 5})
				if err != nil {
					b.Fatal(err)
				}
				known := preload(b, s, "known", 20_000)
				pending := preload(b, s, "todo", n)
				var wg sync.WaitGroup
				var next atomic.Int64
				for w := 0; w < 16; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
							if _, err := s.Complete(ctx, pending[i], crawlstate.Outcome{Class: "200"}, links(known, i)); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				keys, err := c.Keys(ctx, s.Prefix()+"call:*").Result()
				if err != nil {
					b.Fatal(err)
				}
				if len(keys) > 0 {
					c.Del(ctx, keys...)
				}
				used[i] = usedMemory(b, c)
			}
			b.ReportMetric(float64(used[1]-used[0])/n, "B/kept-page")
		})
	}
}
