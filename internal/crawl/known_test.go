package crawl

import (
	"fmt"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
)

func TestKnownLinks(t *testing.T) {
	k := newKnownLinks(2)
	r := func(u string, depth, redirects int) frontier.Request {
		return frontier.Request{URL: u, Depth: depth, Redirects: redirects}
	}
	k.add([]frontier.Request{r("a", 2, 0), r("b", 3, 0)})
	for _, tc := range []struct {
		name string
		in   frontier.Request
		keep bool
	}{
		{"known at the same depth", r("a", 2, 0), false},
		{"known at a smaller depth", r("a", 5, 0), false},
		{"shallower than known: may lower the pending depth", r("a", 1, 0), true},
		{"unknown", r("c", 2, 0), true},
		{"a redirect target is always reported", r("b", 3, 1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := k.filter([]frontier.Request{tc.in})
			if (len(got) == 1) != tc.keep {
				t.Errorf("filter(%+v) = %v, keep %v", tc.in, got, tc.keep)
			}
			if tc.in.Redirects == 0 && k.has(tc.in.URL, tc.in.Depth) == tc.keep {
				t.Errorf("has(%q, %d) = %v; filter keeps it: %v", tc.in.URL, tc.in.Depth, !tc.keep, tc.keep)
			}
		})
	}
	in := []frontier.Request{r("x", 1, 0), r("a", 2, 0), r("y", 1, 0)}
	if got := k.filter(in); len(got) != 2 || got[0].URL != "x" || got[1].URL != "y" || in[1].URL != "a" {
		t.Errorf("filter kept %v of %v (the input must not change)", got, in)
	}
	// Two generations of 2: "a" and "b" survive one rollover, not two.
	k.add([]frontier.Request{r("c", 1, 0), r("d", 1, 0)})
	if got := k.filter([]frontier.Request{r("b", 3, 0)}); len(got) != 0 {
		t.Errorf("b forgotten after one rollover")
	}
	k.add([]frontier.Request{r("e", 1, 0), r("f", 1, 0)})
	if got := k.filter([]frontier.Request{r("b", 3, 0)}); len(got) != 1 {
		t.Errorf("b still known after two rollovers: the cache is not bounded")
	}
}

// BenchmarkKnownLinks filters the 440 navigation links of a documentation
// page against a crawl of 1,700 URLs, as Finish does for every page of
// bench/static.sh's web.
func BenchmarkKnownLinks(b *testing.B) {
	k := newKnownLinks(knownLinksMax)
	all := make([]frontier.Request, 1700)
	for i := range all {
		all[i] = frontier.Request{URL: fmt.Sprintf("http://127.0.0.%d:8081/s/%d/a/%d.html", 11+i%4, i/84, i), Depth: 1}
	}
	k.add(all)
	page := all[:440]
	b.ReportAllocs()
	for b.Loop() {
		if got := k.filter(page); len(got) != 0 {
			b.Fatalf("%d links kept", len(got))
		}
	}
}
