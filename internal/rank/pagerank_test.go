package rank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/spider-crawler/spider/internal/graph"
)

// mustGraph builds a graph whose node i is named "n%03d" so that ids equal
// the indexes of adj.
func mustGraph(t testing.TB, adj [][]int) *graph.Graph {
	t.Helper()
	names := make([]string, len(adj))
	for i := range names {
		names[i] = fmt.Sprintf("n%03d", i)
	}
	g, err := graph.FromAdjacency(names, adj)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func cycle(n int) [][]int {
	adj := make([][]int, n)
	for i := range adj {
		adj[i] = []int{(i + 1) % n}
	}
	return adj
}

func l1(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += math.Abs(a[i] - b[i])
	}
	return s
}

func TestClosedForms(t *testing.T) {
	const d = 0.85
	star := func(k int) ([][]int, []float64) { // leaves → centre 0, centre dangling
		n := k + 1
		adj := make([][]int, n)
		for i := 1; i < n; i++ {
			adj[i] = []int{0}
		}
		rc := ((1-d)/float64(n) + d) / (1 + d - d/float64(n))
		want := []float64{rc}
		for i := 1; i < n; i++ {
			want = append(want, (1-rc)/float64(k))
		}
		return adj, want
	}
	chain := func() ([][]int, []float64) { // 0 → 1 → 2, 2 dangling
		a, b, s := (1-d)/3, d/3, 1+d+d*d
		x := a * s / (1 - b*s)
		r0 := a + b*x
		return [][]int{{1}, {2}, {}}, []float64{r0, a + d*r0 + b*x, x}
	}
	personalCycle := func(n int) []float64 { // teleport to node 0 only
		want := make([]float64, n)
		for k := range want {
			want[k] = (1 - d) * math.Pow(d, float64(k)) / (1 - math.Pow(d, float64(n)))
		}
		return want
	}
	uniformN := func(n int) []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = 1 / float64(n)
		}
		return w
	}
	starAdj, starWant := star(5)
	chainAdj, chainWant := chain()
	tele := make([]float64, 6)
	tele[0] = 3 // normalised by Compute
	for _, tc := range []struct {
		name string
		adj  [][]int
		tele []float64
		want []float64
	}{
		{"cycle", cycle(7), nil, uniformN(7)},
		{"star", starAdj, nil, starWant},
		{"dangling chain", chainAdj, nil, chainWant},
		{"all dangling", make([][]int, 4), nil, uniformN(4)},
		{"personalised cycle", cycle(6), tele, personalCycle(6)},
	} {
		for _, workers := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, workers), func(t *testing.T) {
				res, err := Compute(context.Background(), mustGraph(t, tc.adj),
					Options{Workers: workers, Tolerance: 1e-14, MaxIter: 1000, Teleport: tc.tele})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Converged {
					t.Fatalf("not converged after %d iterations (delta %g)", res.Iterations, res.Delta)
				}
				if e := l1(res.Ranks, tc.want); e > 1e-12 {
					t.Fatalf("ranks %v, want %v (L1 error %g)", res.Ranks, tc.want, e)
				}
				var sum float64
				for _, r := range res.Ranks {
					sum += r
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Fatalf("ranks sum to %v", sum)
				}
			})
		}
	}
}

func TestWorkersAgree(t *testing.T) {
	g := graph.SiteGraph(graph.SiteGraphConfig{Pages: 3000, Hosts: 40, Seed: 3})
	m := NewMatrix(g)
	ref, err := m.Compute(context.Background(), Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 8} {
		res, err := m.Compute(context.Background(), Options{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if e := l1(res.Ranks, ref.Ranks); e > 1e-13 || res.Iterations != ref.Iterations {
			t.Fatalf("%d workers: L1 %g from 1 worker, iterations %d vs %d", w, e, res.Iterations, ref.Iterations)
		}
	}
}

func TestIterationCapAndCancel(t *testing.T) {
	g := mustGraph(t, [][]int{{1}, {2}, {}})
	res, err := Compute(context.Background(), g, Options{MaxIter: 2, Tolerance: 1e-300})
	if err != nil || res.Converged || res.Iterations != 2 {
		t.Fatalf("cap: %+v %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compute(ctx, g, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if res, err := Compute(context.Background(), mustGraph(t, nil), Options{}); err != nil || len(res.Ranks) != 0 {
		t.Fatalf("empty graph: %+v %v", res, err)
	}
}

func TestBadOptions(t *testing.T) {
	g := mustGraph(t, cycle(3))
	for _, o := range []Options{
		{Damping: 1}, {Damping: -0.5}, {Damping: math.NaN()},
		{Tolerance: -1}, {Tolerance: math.Inf(1)}, {MaxIter: -1}, {Workers: -2},
		{Teleport: []float64{1}}, {Teleport: []float64{0, 0, 0}}, {Teleport: []float64{1, -1, 1}},
		{Teleport: []float64{1, math.NaN(), 1}},
	} {
		if _, err := Compute(context.Background(), g, o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("%+v: %v, want ErrBadOptions", o, err)
		}
	}
}

func TestSplitRows(t *testing.T) {
	off := []uint64{0, 10, 10, 10, 30, 31, 40}
	for parts := 1; parts <= 8; parts++ {
		rs := splitRows(off, parts)
		next := 0
		for _, r := range rs {
			if r.lo != next || r.hi <= r.lo {
				t.Fatalf("parts %d: ranges %v do not tile [0,6)", parts, rs)
			}
			next = r.hi
		}
		if next != 6 || len(rs) > parts {
			t.Fatalf("parts %d: ranges %v", parts, rs)
		}
	}
}
