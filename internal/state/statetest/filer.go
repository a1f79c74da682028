package statetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// Filer is implemented by back-ends (or test adapters around them) that
// judge a page before its record is written (crawlstate.Filer); Run then
// checks File with Complete's Outcome.Filed. Others skip those tests.
type Filer interface {
	File(ctx context.Context, url string, fp, sim uint64, k int) (dup string, near bool, err error)
}

// filed is what a crawl does with one page: File, then Complete with the
// decision (Outcome.Filed). It returns File's decision and checks that
// Complete hands back the same one. It may run on any goroutine: errors
// are reported with Errorf.
func filed(t *testing.T, s Backend, r frontier.Request, fp, sim uint64) (string, bool) {
	t.Helper()
	ctx := context.Background()
	dup, near, err := s.(Filer).File(ctx, r.URL, fp, sim, 3)
	if err != nil {
		t.Errorf("File %s: %v", r.URL, err)
		return "", false
	}
	res, err := s.Complete(ctx, r, state.Outcome{Class: "200", Fingerprint: fp, SimHash: sim, NearDistance: 3, URL: r.URL,
		Filed: true, DuplicateOf: dup, Near: near}, nil)
	if err != nil {
		t.Errorf("Complete %s: %v", r.URL, err)
		return dup, near
	}
	if res.DuplicateOf != dup || res.Near != near {
		t.Errorf("%s: Complete returned DuplicateOf %q Near %v; File decided %q %v", r.URL, res.DuplicateOf, res.Near, dup, near)
	}
	return dup, near
}

// testFile: File makes Complete's decision before the completion (exact
// copy, near copy, original), sees pages filed but not completed yet,
// never names a page's own URL (a refetch), and a Complete with
// Outcome.Filed makes the filing last across a reopen.
func (r *runner) testFile(t *testing.T) {
	ctx := context.Background()
	name := r.name(t)
	s := r.open(t, name, small(state.SeenExact))
	f, ok := s.(Filer)
	if !ok {
		t.Skip("the back-end has no File")
	}
	var urls []string
	for i := 0; i < 8; i++ {
		urls = append(urls, fmt.Sprintf("http://f/%d", i))
	}
	acc, err := s.Discover(ctx, Reqs(urls...))
	if err != nil {
		t.Fatal(err)
	}
	const h = uint64(0x9e3779b97f4a7c15)
	flip := func(bits ...int) uint64 {
		g := h
		for _, b := range bits {
			g ^= 1 << b
		}
		return g
	}
	check := func(what, dup string, near bool, want string, wantNear bool) {
		t.Helper()
		if dup != want || near != wantNear {
			t.Errorf("%s: DuplicateOf %q Near %v, want %q %v", what, dup, near, want, wantNear)
		}
	}
	// Three pages in flight at once: the original is filed, not completed.
	d0, n0, err := f.File(ctx, urls[0], 1, h, 3)
	must(t, err)
	check("original", d0, n0, "", false)
	d1, n1, err := f.File(ctx, urls[1], 2, flip(0, 17, 63), 3)
	must(t, err)
	check("near copy of a page in flight", d1, n1, urls[0], true)
	d2, n2, err := f.File(ctx, urls[2], 1, ^h, 3)
	must(t, err)
	check("exact copy of a page in flight", d2, n2, urls[0], false)
	for i, d := range []struct {
		dup  string
		near bool
	}{{d0, n0}, {d1, n1}, {d2, n2}} {
		res, err := s.Complete(ctx, acc[i], state.Outcome{Class: "200", URL: urls[i], Filed: true, DuplicateOf: d.dup, Near: d.near}, nil)
		must(t, err)
		check("Complete of "+urls[i], res.DuplicateOf, res.Near, d.dup, d.near)
	}
	// A repeated Complete does nothing.
	if res, err := s.Complete(ctx, acc[1], state.Outcome{Class: "200", Filed: true, DuplicateOf: urls[0], Near: true}, nil); err != nil || res.DuplicateOf != "" {
		t.Errorf("repeated Complete: %+v, %v; want an empty Result", res, err)
	}
	// The near copy's fingerprint is its own: an exact copy of it names it.
	dup, near := filed(t, s, acc[3], 2, ^h)
	check("exact copy of the near copy", dup, near, urls[1], false)
	// A refetch of the original (after a kill, or a revisit) is not a copy of itself.
	dup, near, err = f.File(ctx, urls[0], 1, h, 3)
	must(t, err)
	check("the original fetched again", dup, near, "", false)
	must(t, s.Close())
	s = r.open(t, name, small(state.SeenExact))
	dup, near = filed(t, s, acc[4], 44, flip(2, 3))
	check("near copy after a reopen", dup, near, urls[0], true)
	dup, near = filed(t, s, acc[5], 1, 0)
	check("exact copy after a reopen", dup, near, urls[0], false)
	dup, near = filed(t, s, acc[6], 66, ^h)
	check("a new page after a reopen", dup, near, "", false)
	dup, near = filed(t, s, acc[7], 77, ^h^1)
	check("near copy of that page", dup, near, urls[6], true)
	if _, _, err := s.(Filer).File(ctx, "http://f/x", 0, h, 99); err == nil {
		t.Error("File with a distance of 99 accepted")
	}
}

// testFileConcurrent: copies fetched at the same moment (File, then
// Complete with the decision): exactly one is filed as the original,
// every other names it.
func (r *runner) testFileConcurrent(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	if _, ok := s.(Filer); !ok {
		t.Skip("the back-end has no File")
	}
	var urls []string
	for i := 0; i < 16; i++ {
		urls = append(urls, fmt.Sprintf("http://fc/%d", i))
	}
	acc, err := s.Discover(ctx, Reqs(urls...))
	if err != nil {
		t.Fatal(err)
	}
	const h = uint64(0x123456789abcdef0)
	type decision struct {
		dup  string
		near bool
	}
	got := make([]decision, len(acc))
	var wg sync.WaitGroup
	for i := range acc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fp := uint64(100 + i)
			if i%4 == 3 {
				fp = 100 // exact copies of one another
			}
			dup, near := filed(t, s, acc[i], fp, h^uint64(i%3))
			got[i] = decision{dup, near}
		}()
	}
	wg.Wait()
	first := ""
	for i, d := range got {
		if d.dup == "" {
			if first != "" {
				t.Fatalf("%s and %s were both filed as originals", first, urls[i])
			}
			first = urls[i]
		}
	}
	if first == "" {
		t.Fatal("no page was filed as the original")
	}
	for i, d := range got {
		if urls[i] == first {
			continue
		}
		if d.dup == "" || d.dup == urls[i] {
			t.Errorf("%s: DuplicateOf %q, want another page", urls[i], d.dup)
		}
		if !d.near && d.dup != "" {
			// An exact copy names the owner of its fingerprint.
			if i%4 != 3 && i != 0 {
				t.Errorf("%s: an exact copy of %s, but its fingerprint is its own", urls[i], d.dup)
			}
		}
		if d.near && d.dup != first {
			t.Errorf("%s: a near copy of %q, want the original %s", urls[i], d.dup, first)
		}
	}
}
