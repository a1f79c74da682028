package index

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestProximityMeasure(t *testing.T) {
	bonus := func(d float64) float64 { return math.Log(0.3+math.Exp(-d)) - math.Log(0.3) }
	for _, c := range []struct {
		name string
		pos  []termPos
		want float64
	}{
		{"no occurrence", nil, 0},
		{"one term only", []termPos{{1, 0}, {2, 0}, {5, 0}}, 0},
		{"side by side", []termPos{{3, 0}, {4, 1}}, bonus(1)},
		{"closest pair counts", []termPos{{0, 0}, {10, 1}, {20, 0}, {22, 2}, {40, 1}}, bonus(2)},
		{"same term between", []termPos{{0, 0}, {1, 0}, {2, 0}, {9, 1}}, bonus(7)},
	} {
		if got := proximity(c.pos); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: proximity %g, want %g", c.name, got, c.want)
		}
	}
	if b := bonus(1); !(b > 0.79 && b < 0.81) {
		t.Errorf("bonus of adjacent terms %g, the documentation says 0.80", b)
	}
}

// TestProximityRescores: two pages with the same words, as often and as
// long, tie on BM25F; the page where the query's words stand together
// comes first with a proximity weight, and Explain and Hit.Proximity say
// why. A weight out of range is a query error.
func TestProximityRescores(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	w := openWriter(t, dir, 8)
	filler := strings.Repeat("lorem ipsum dolor ", 10)
	commitPages(t, w, []page{
		{"http://p.test/apart", "", "alpha " + filler + " beta"},
		{"http://p.test/together", "", filler + " alpha beta"},
		{"http://p.test/other", "", "gamma delta " + filler},
	})
	ix := openIndex(t, dir)
	for _, c := range []struct {
		weight float64
		first  string
	}{{0, "http://p.test/apart"}, {1, "http://p.test/together"}} {
		res, err := ix.Search(context.Background(), Request{Query: "alpha beta", ProximityWeight: c.weight, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 2 || res.Total != 2 {
			t.Fatalf("weight %g: %d hits, total %d", c.weight, len(res.Hits), res.Total)
		}
		h := res.Hits[0]
		if h.URL != c.first {
			t.Errorf("weight %g: first %s, want %s", c.weight, h.URL, c.first)
		}
		if res.Hits[0].BM25 != res.Hits[1].BM25 {
			t.Errorf("weight %g: BM25F %g and %g, the test wants a tie", c.weight, res.Hits[0].BM25, res.Hits[1].BM25)
		}
		if c.weight > 0 {
			if want := c.weight * proximity([]termPos{{0, 0}, {1, 1}}); math.Abs(h.Proximity-want) > 1e-9 || math.Abs(h.Score-h.BM25-h.Proximity) > 1e-9 {
				t.Errorf("proximity %g (want %g), score %g, BM25F %g", h.Proximity, want, h.Score, h.BM25)
			}
			if !strings.Contains(h.Explain, "+ proximity ") {
				t.Errorf("explain does not show the proximity term:\n%s", h.Explain)
			}
		} else if h.Proximity != 0 || strings.Contains(h.Explain, "proximity") {
			t.Errorf("weight 0: proximity %g, explain %s", h.Proximity, h.Explain)
		}
	}
	// One word: nothing to be close to.
	res, err := ix.Search(context.Background(), Request{Query: "alpha", ProximityWeight: 1})
	if err != nil || len(res.Hits) != 2 || res.Hits[0].Proximity != 0 {
		t.Fatalf("one word: %+v %v", res, err)
	}
	for _, bad := range []float64{-1, MaxProximityWeight + 1, math.NaN()} {
		if _, err := ix.Search(context.Background(), Request{Query: "alpha beta", ProximityWeight: bad}); !errors.Is(err, ErrQuery) {
			t.Errorf("weight %g: %v, want ErrQuery", bad, err)
		}
	}
}
