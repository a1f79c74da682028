package state

import (
	"slices"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
	bolt "go.etcd.io/bbolt"
)

// rq is a request for url at depth (priority = depth, as the fetcher sets).
func rq(url string, depth int) frontier.Request {
	return frontier.Request{URL: url, Key: "k:80", Depth: depth, Priority: depth}
}

// relinkCrawl drives a Store like the engine: pending requests by URL, so
// a test can complete them in any order.
type relinkCrawl struct {
	t       *testing.T
	s       *Store
	pending map[string]frontier.Request // URL → live pending copy
}

func newRelinkCrawl(t *testing.T, s *Store, seeds ...string) *relinkCrawl {
	c := &relinkCrawl{t: t, s: s, pending: map[string]frontier.Request{}}
	var rs []frontier.Request
	for _, u := range seeds {
		rs = append(rs, rq(u, 0))
	}
	news, err := s.Discover(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	c.add(news)
	return c
}

func (c *relinkCrawl) add(news []frontier.Request) {
	for _, r := range news {
		c.pending[r.URL] = r
	}
}

// fetch completes url's pending copy (or the stale copy r when given)
// with links to kids (each one level deeper, cut or not: the store
// decides) and returns the requests the store accepted or lowered.
func (c *relinkCrawl) fetch(url string, kids ...string) []frontier.Request {
	c.t.Helper()
	r, ok := c.pending[url]
	if !ok {
		c.t.Fatalf("%s is not pending (pending: %v)", url, c.urls())
	}
	return c.complete(r, kids...)
}

func (c *relinkCrawl) complete(r frontier.Request, kids ...string) []frontier.Request {
	c.t.Helper()
	var ds []frontier.Request
	for _, k := range kids {
		ds = append(ds, rq(k, r.Depth+1))
	}
	res, err := c.s.Complete(ctx, r, Outcome{Class: "200"}, ds)
	if err != nil {
		c.t.Fatal(err)
	}
	delete(c.pending, r.URL)
	c.add(res.New)
	return res.New
}

func (c *relinkCrawl) urls() []string {
	var out []string
	for u := range c.pending {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

func depths(rs []frontier.Request) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r.URL] = r.Depth
	}
	return out
}

// TestRelinkFetchedURL: a URL fetched at a depth, found later at a
// smaller one, passes the smaller depth on to its links: those the limit
// cut are accepted, fetched ones are relinked in turn, and nothing is
// fetched twice.
func TestRelinkFetchedURL(t *testing.T) {
	for _, mode := range []string{SeenExact, SeenBloom} {
		t.Run(mode, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{Relink: true, MaxDepth: 3, SeenMode: mode})
			c := newRelinkCrawl(t, s, "S", "T")
			// S → A(1) → B(2) → C(3) → E(4, cut); T's link to B comes last.
			c.fetch("S", "A")
			c.fetch("A", "B")
			c.fetch("B", "C")
			if got := c.fetch("C", "E"); len(got) != 0 {
				t.Fatalf("depth-4 link accepted under MaxDepth 3: %v", got)
			}
			// T(0) → B(1): B was fetched at 2; C goes to 2 (fetched: relinked),
			// E to 3: accepted, once.
			got := c.fetch("T", "B")
			if d := depths(got); len(d) != 1 || d["E"] != 3 {
				t.Fatalf("relink accepted %v, want E at depth 3", d)
			}
			if s.PendingCount() != 1 || s.SeenCount() != 6 {
				t.Errorf("pending %d seen %d, want 1 and 6 (S T A B C E; E pending)", s.PendingCount(), s.SeenCount())
			}
			// Found again at the same depth: nothing new.
			if got := c.fetch("E"); len(got) != 0 {
				t.Errorf("E's completion accepted %v", got)
			}
			if s.PendingCount() != 0 {
				t.Errorf("pending %d after the crawl", s.PendingCount())
			}
		})
	}
}

// TestRelinkWhileInFlight: a URL lowered while it is being fetched (its
// request still says the old depth) completes with links shifted to the
// new depth; the same holds after a retry rewrote its pending record.
func TestRelinkWhileInFlight(t *testing.T) {
	for _, retry := range []bool{false, true} {
		name := map[bool]string{false: "in flight", true: "retried"}[retry]
		t.Run(name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Options{Relink: true, MaxDepth: 2})
			c := newRelinkCrawl(t, s, "S", "T")
			c.fetch("S", "X")
			c.fetch("X", "A") // A pending at 2
			old := c.pending["A"]
			lowered := c.fetch("T", "A") // A lowered to 1 while "in flight"
			if d := depths(lowered); d["A"] != 1 {
				t.Fatalf("lowered %v, want A at 1", d)
			}
			if retry {
				old.Attempt++
				must(t, s.UpdatePending(ctx, old))
			}
			got := c.complete(old, "K") // K at 3 by the old depth, 2 by the new
			if d := depths(got); len(d) != 1 || d["K"] != 2 {
				t.Fatalf("completion of the old copy accepted %v, want K at 2", d)
			}
		})
	}
}

// TestRelinkSurvivesReopen: the kept links are in the database, so a
// resumed crawl relinks pages fetched before the restart.
func TestRelinkSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	opt := Options{Relink: true, MaxDepth: 2}
	s := openTest(t, dir, opt)
	c := newRelinkCrawl(t, s, "S", "T")
	c.fetch("S", "A")
	c.fetch("A", "B")
	c.fetch("B", "C") // C at 3: cut
	must(t, s.Close())
	s = openTest(t, dir, opt)
	c.s = s
	if got := depths(c.fetch("T", "B")); len(got) != 1 || got["C"] != 2 {
		t.Fatalf("after reopen, relink accepted %v, want C at 2", got)
	}
}

// TestRelinkRedirectKeepsDepth: a redirect target kept at its source's
// depth (not one deeper) stays at the source's new depth after a relink.
func TestRelinkRedirectKeepsDepth(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{Relink: true, MaxDepth: 1})
	c := newRelinkCrawl(t, s, "S", "T")
	c.fetch("S", "A")
	c.fetch("A", "B") // B at 2: cut
	// R(1) redirects to A... A was fetched at 1; a redirect from a
	// depth-0 page names A at depth 0.
	res, err := s.Complete(ctx, c.pending["T"], Outcome{Class: "30x"},
		[]frontier.Request{{URL: "A", Key: "k:80", Depth: 0, Priority: 0, Redirects: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if d := depths(res.New); len(d) != 1 || d["B"] != 1 {
		t.Fatalf("relink after a redirect accepted %v, want B at 1", d)
	}
}

// TestWithoutRelink: without the option, Complete accepts what it is
// given (the caller filters depth) and keeps no links.
func TestWithoutRelink(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{MaxDepth: 1})
	c := newRelinkCrawl(t, s, "S", "T")
	c.fetch("S", "A")
	if got := c.fetch("A", "B"); len(got) != 1 {
		t.Fatalf("accepted %v, want B (no depth filter in the store)", got)
	}
	if s.Relinks() {
		t.Error("Relinks() true without the option")
	}
}

// TestRelinkKeepsNothingAtDepthZero: a seed's links are not kept (it
// cannot be lowered); deeper pages' are.
func TestRelinkKeepsNothingAtDepthZero(t *testing.T) {
	s := openTest(t, t.TempDir(), Options{Relink: true, MaxDepth: 5})
	c := newRelinkCrawl(t, s, "S")
	c.fetch("S", "A")
	c.fetch("A", "B")
	n := 0
	if err := s.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bLinks).Stats().KeyN; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d links records, want 1 (A's)", n)
	}
}

func FuzzDecodeLinks(f *testing.F) {
	rec, err := encodeLinks(3, []frontier.Request{rq("http://a/", 4), {URL: "http://b/", Key: "b:80", Depth: 3, Redirects: 1}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add([]byte{})
	f.Add([]byte{3, 200, 1})
	f.Add(rec[:len(rec)-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		depth, kids, err := decodeLinks(b)
		if err != nil {
			return
		}
		again, err := encodeLinks(depth, kids)
		if err != nil {
			t.Fatal(err)
		}
		d2, k2, err := decodeLinks(again)
		if err != nil || d2 != depth || !slices.Equal(k2, kids) {
			t.Fatalf("round trip of %x: %d %v %v, want %d %v", b, d2, k2, err, depth, kids)
		}
	})
}
