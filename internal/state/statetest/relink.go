package statetest

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// Relinker is implemented by back-ends that support state.Options.Relink;
// Relinks reports whether the store was opened with it. The relink part of
// the contract is skipped for a back-end without the method.
type Relinker interface{ Relinks() bool }

// relinkOpen opens a store with Relink and MaxDepth, or skips t when the
// back-end cannot relink.
func (r *runner) relinkOpen(t *testing.T, mode string, maxDepth int) Backend {
	t.Helper()
	opt := small(mode)
	opt.Relink, opt.MaxDepth = true, maxDepth
	s := r.open(t, r.name(t), opt)
	rl, ok := s.(Relinker)
	if !ok {
		t.Skip("the back-end does not implement Relinks")
	}
	if !rl.Relinks() {
		t.Fatal("Relinks() = false for a store opened with Options.Relink")
	}
	return s
}

// rq is a request for url at depth (priority = depth, as the fetcher sets).
func rq(url string, depth int) frontier.Request {
	return frontier.Request{URL: "http://" + url + ".test/", Key: url + ".test:80", Depth: depth, Priority: depth}
}

// relinkCrawl drives a store as the engine does, with pending requests by
// name so that a test completes them in any order.
type relinkCrawl struct {
	t       *testing.T
	s       Backend
	pending map[string]frontier.Request // URL → live pending copy
	fetched map[string]int              // URL → completions
}

func newRelinkCrawl(t *testing.T, s Backend, seeds ...string) *relinkCrawl {
	t.Helper()
	c := &relinkCrawl{t: t, s: s, pending: map[string]frontier.Request{}, fetched: map[string]int{}}
	var rs []frontier.Request
	for _, u := range seeds {
		rs = append(rs, rq(u, 0))
	}
	news, err := s.Discover(context.Background(), rs)
	must(t, err)
	c.add(news)
	return c
}

func (c *relinkCrawl) add(news []frontier.Request) {
	for _, r := range news {
		c.pending[r.URL] = r
	}
}

// fetch completes the pending copy of name with links to kids, each one
// level deeper, cut or not (the store decides), and returns by name the
// depths of what the store accepted or lowered.
func (c *relinkCrawl) fetch(name string, kids ...string) map[string]int {
	c.t.Helper()
	r, ok := c.pending[rq(name, 0).URL]
	if !ok {
		c.t.Fatalf("%s is not pending (pending: %v)", name, slices.Sorted(maps.Keys(c.pending)))
	}
	return c.complete(r, kids...)
}

func (c *relinkCrawl) complete(r frontier.Request, kids ...string) map[string]int {
	c.t.Helper()
	var ds []frontier.Request
	for _, k := range kids {
		ds = append(ds, rq(k, r.Depth+1))
	}
	res, err := c.s.Complete(context.Background(), r, state.Outcome{Class: "200"}, ds)
	must(c.t, err)
	delete(c.pending, r.URL)
	c.fetched[r.URL]++
	c.add(res.New)
	out := map[string]int{}
	for _, n := range res.New {
		out[n.URL[len("http://"):len(n.URL)-len(".test/")]] = n.Depth
	}
	return out
}

// testRelinkFetched: a URL fetched at a depth, found later at a smaller
// one, passes the smaller depth on to its links: those the limit cut are
// accepted, fetched ones are relinked in turn, and nothing is fetched
// twice (state.Options.Relink).
func (r *runner) testRelinkFetched(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			s := r.relinkOpen(t, mode, 3)
			c := newRelinkCrawl(t, s, "s", "t")
			// s → a(1) → b(2) → c(3) → e(4, cut); t's link to b comes last.
			c.fetch("s", "a")
			c.fetch("a", "b")
			c.fetch("b", "c")
			if got := c.fetch("c", "e"); len(got) != 0 {
				t.Fatalf("depth-4 link accepted under MaxDepth 3: %v", got)
			}
			checkCounts(t, s, Counts{Pending: 1, Seen: 5, PagesStored: -1})
			// t(0) → b(1): b was fetched at 2; c goes to 2 (fetched:
			// relinked), e to 3: accepted, once.
			if got := c.fetch("t", "b"); len(got) != 1 || got["e"] != 3 {
				t.Fatalf("relink accepted %v, want e at depth 3", got)
			}
			checkCounts(t, s, Counts{Pending: 1, Seen: 6, PagesStored: -1})
			// Found again at the same depth, or deeper: nothing.
			if got, err := s.Discover(context.Background(), []frontier.Request{rq("b", 1), rq("c", 3)}); err != nil || len(got) != 0 {
				t.Fatalf("rediscovery at the relinked depths returned %v, %v", got, err)
			}
			if got := c.fetch("e"); len(got) != 0 {
				t.Errorf("e's completion accepted %v", got)
			}
			checkCounts(t, s, Counts{Pending: 0, Seen: 6, PagesStored: -1})
			if p := LoadAll(t, s); len(p) != 0 {
				t.Errorf("pending %v after the crawl", URLs(p))
			}
			for u, n := range c.fetched {
				if n != 1 {
					t.Errorf("%s completed %d times", u, n)
				}
			}
			// A plain Discover relinks too: a (fetched at 1) found at 0
			// passes depth 1 on to b, which has it already: nothing new.
			d, err := s.Discover(context.Background(), []frontier.Request{rq("a", 0)})
			if err != nil || len(d) != 0 {
				t.Fatalf("a at depth 0: %v, %v; want nothing", d, err)
			}
		})
	}
}

// testRelinkInFlight: a URL lowered while it is being fetched (its request
// still says the old depth) completes with its links shifted to the new
// depth; the same holds after a retry rewrote its pending record.
func (r *runner) testRelinkInFlight(t *testing.T) {
	for _, mode := range modes {
		for _, retry := range []bool{false, true} {
			name := mode + map[bool]string{false: "-in-flight", true: "-retried"}[retry]
			t.Run(name, func(t *testing.T) {
				s := r.relinkOpen(t, mode, 2)
				c := newRelinkCrawl(t, s, "s", "t")
				c.fetch("s", "x")
				c.fetch("x", "a") // a pending at 2
				old := c.pending[rq("a", 0).URL]
				if got := c.fetch("t", "a"); got["a"] != 1 {
					t.Fatalf("lowered %v, want a at 1", got)
				}
				if retry {
					old.Attempt++
					must(t, s.UpdatePending(context.Background(), old))
				}
				// k at 3 by the old depth, 2 by the new.
				got := c.complete(old, "k")
				if len(got) != 1 || got["k"] != 2 {
					t.Fatalf("completion of the old copy accepted %v, want k at 2", got)
				}
				checkCounts(t, s, Counts{Pending: 1, Seen: 5, PagesStored: -1})
			})
		}
	}
}

// testRelinkRedirect: a redirect target kept at its source's depth (not
// one deeper) passes its new depth on after a relink.
func (r *runner) testRelinkRedirect(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			s := r.relinkOpen(t, mode, 1)
			c := newRelinkCrawl(t, s, "s", "t")
			c.fetch("s", "a")
			c.fetch("a", "b") // b at 2: cut
			// t redirects to a: the target keeps t's depth, 0.
			red := rq("a", 0)
			red.Redirects = 1
			res, err := s.Complete(context.Background(), c.pending[rq("t", 0).URL], state.Outcome{Class: "30x"}, []frontier.Request{red})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.New) != 1 || res.New[0].URL != rq("b", 0).URL || res.New[0].Depth != 1 || res.New[0].Priority != 1 {
				t.Fatalf("relink after a redirect accepted %+v, want b at depth 1", res.New)
			}
		})
	}
}
