package rank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/spider-crawler/spider/internal/graph"
)

// Defaults of Options.
const (
	DefaultDamping   = 0.85
	DefaultTolerance = 1e-10
	DefaultMaxIter   = 100
)

// ErrBadOptions is wrapped by every error about an unusable Options value.
var ErrBadOptions = errors.New("bad rank options")

// Options configures a PageRank computation. The zero value uses the
// defaults: damping 0.85, tolerance 1e-10, 100 iterations, one goroutine per
// CPU, uniform teleport.
type Options struct {
	// Damping is the probability of following a link, in (0, 1); 0 means
	// DefaultDamping.
	Damping float64
	// Tolerance stops the iteration once the L1 change of the rank vector
	// falls below it; 0 means DefaultTolerance, negative is an error.
	Tolerance float64
	// MaxIter caps the iterations; 0 means DefaultMaxIter.
	MaxIter int
	// Workers is the number of goroutines of the in-memory form; 0 means
	// runtime.GOMAXPROCS(0). The map/reduce master ignores it.
	Workers int
	// Teleport, when not nil, is the personalisation vector (topic-sensitive
	// PageRank): one non-negative weight per node, normalised to sum 1; the
	// random surfer jumps only to nodes of positive weight. nil is uniform.
	Teleport []float64
}

// withDefaults validates o and fills in its defaults for a graph of n nodes.
// The returned teleport vector is normalised (nil for uniform).
func (o Options) withDefaults(n int) (Options, error) {
	if o.Damping == 0 {
		o.Damping = DefaultDamping
	}
	if !(o.Damping > 0 && o.Damping < 1) {
		return o, fmt.Errorf("%w: damping %v is outside (0, 1): use e.g. 0.85", ErrBadOptions, o.Damping)
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	if !(o.Tolerance > 0) || math.IsInf(o.Tolerance, 0) {
		return o, fmt.Errorf("%w: tolerance %v must be a positive number such as 1e-10", ErrBadOptions, o.Tolerance)
	}
	if o.MaxIter == 0 {
		o.MaxIter = DefaultMaxIter
	}
	if o.MaxIter < 0 {
		return o, fmt.Errorf("%w: iteration cap %d must be positive", ErrBadOptions, o.MaxIter)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Workers < 0 {
		return o, fmt.Errorf("%w: %d workers: use a positive number", ErrBadOptions, o.Workers)
	}
	if o.Teleport != nil {
		if len(o.Teleport) != n {
			return o, fmt.Errorf("%w: teleport vector has %d entries for %d nodes", ErrBadOptions, len(o.Teleport), n)
		}
		var sum float64
		for i, w := range o.Teleport {
			if !(w >= 0) || math.IsInf(w, 0) {
				return o, fmt.Errorf("%w: teleport weight %v of node %d is not a finite non-negative number", ErrBadOptions, w, i)
			}
			sum += w
		}
		if sum == 0 {
			return o, fmt.Errorf("%w: the teleport vector selects no node (all weights are zero)", ErrBadOptions)
		}
		t := make([]float64, n)
		for i, w := range o.Teleport {
			t[i] = w / sum
		}
		o.Teleport = t
	}
	return o, nil
}

// Result is the outcome of a PageRank computation.
type Result struct {
	// Ranks holds one score per node id; the scores sum to 1.
	Ranks []float64
	// Iterations is the number of iterations run.
	Iterations int
	// Delta is the L1 change of the last iteration.
	Delta float64
	// Converged reports whether Delta fell below the tolerance before the
	// iteration cap.
	Converged bool
}

// Matrix is a graph prepared for the pull iteration: the in-links of every
// node (transposed CSR, sources ascending) and every node's out-degree.
// It is read-only and may be shared by concurrent Compute calls.
type Matrix struct {
	n      int
	outDeg []uint32
	inOff  []uint64
	inSrc  []uint32
}

// NewMatrix transposes g for the pull iteration (4 bytes per edge, 12 per
// node besides g itself).
func NewMatrix(g *graph.Graph) *Matrix {
	m := &Matrix{n: g.N(), outDeg: make([]uint32, g.N())}
	for u := range m.outDeg {
		m.outDeg[u] = uint32(g.OutDegree(u))
	}
	m.inOff, m.inSrc = g.Transpose()
	return m
}

// Edges returns the number of edges of the matrix.
func (m *Matrix) Edges() int { return len(m.inSrc) }

// Compute runs PageRank on g in memory; see Matrix.Compute.
func Compute(ctx context.Context, g *graph.Graph, opt Options) (Result, error) {
	return NewMatrix(g).Compute(ctx, opt)
}

// contribution is what one node sends along each out-link. The map/reduce
// worker uses the same expression so both forms round alike.
func contribution(rank float64, outDeg uint32) float64 { return rank / float64(outDeg) }

// update is the PageRank formula for one node: the teleport share, the
// dangling share (spread uniformly over all n nodes) and the damped in-link
// sum. The map/reduce master uses the same function.
func update(d, tele, dangling, invN, in float64) float64 {
	return (1-d)*tele + d*(in+dangling*invN)
}

// Compute runs the power iteration
//
//	r'[v] = (1-d)·t[v] + d·(Σ_{u→v} r[u]/out(u) + D/N)
//
// from the uniform vector, where t is the teleport vector and D the rank held
// by dangling nodes (no out-links), spread uniformly. It stops when the L1
// change Σ|r'-r| falls below the tolerance or after MaxIter iterations, and
// returns ctx's error if ctx ends first. Rows are split into contiguous
// ranges of about equal edge counts, one goroutine each; every goroutine
// writes only its own rows and partial sums, which are added in range order,
// so the result does not depend on scheduling (no atomics, no locks).
func (m *Matrix) Compute(ctx context.Context, opt Options) (Result, error) {
	n := m.n
	opt, err := opt.withDefaults(n)
	if err != nil {
		return Result{}, err
	}
	if n == 0 {
		return Result{Converged: true}, nil
	}
	ranges := splitRows(m.inOff, opt.Workers)
	rank := make([]float64, n)
	next := make([]float64, n)
	contrib := make([]float64, n)
	for i := range rank {
		rank[i] = 1 / float64(n)
	}
	uniform := 1 / float64(n)
	invN := 1 / float64(n)
	d := opt.Damping
	partial := make([]float64, len(ranges))
	var res Result
	for res.Iterations < opt.MaxIter {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("cannot finish PageRank: %w", err)
		}
		parallel(ranges, func(c int, lo, hi int) {
			var dang float64
			for u := lo; u < hi; u++ {
				if deg := m.outDeg[u]; deg > 0 {
					contrib[u] = contribution(rank[u], deg)
				} else {
					contrib[u] = 0
					dang += rank[u]
				}
			}
			partial[c] = dang
		})
		var dangling float64
		for _, p := range partial {
			dangling += p
		}
		parallel(ranges, func(c int, lo, hi int) {
			var delta float64
			for v := lo; v < hi; v++ {
				in := gather(contrib, m.inSrc[m.inOff[v]:m.inOff[v+1]])
				t := uniform
				if opt.Teleport != nil {
					t = opt.Teleport[v]
				}
				r := update(d, t, dangling, invN, in)
				next[v] = r
				delta += math.Abs(r - rank[v])
			}
			partial[c] = delta
		})
		res.Delta = 0
		for _, p := range partial {
			res.Delta += p
		}
		rank, next = next, rank
		res.Iterations++
		if res.Delta < opt.Tolerance {
			res.Converged = true
			break
		}
	}
	res.Ranks = rank
	return res, nil
}

// rowRange is a half-open range of node ids.
type rowRange struct{ lo, hi int }

// splitRows cuts [0, n) into at most parts contiguous ranges holding about
// the same number of in-edges plus nodes each.
func splitRows(inOff []uint64, parts int) []rowRange {
	n := len(inOff) - 1
	if parts < 1 {
		parts = 1
	}
	if parts > n {
		parts = max(n, 1)
	}
	total := inOff[n] + uint64(n)
	out := make([]rowRange, 0, parts)
	lo := 0
	for p := 1; p <= parts && lo < n; p++ {
		if p == parts {
			out = append(out, rowRange{lo, n})
			break
		}
		goal := total * uint64(p) / uint64(parts)
		hi := lo + 1
		for hi < n && inOff[hi]+uint64(hi) < goal {
			hi++
		}
		out = append(out, rowRange{lo, hi})
		lo = hi
	}
	if len(out) == 0 {
		out = append(out, rowRange{0, n})
	}
	return out
}

// parallel runs fn for every range, one goroutine per range (the caller's
// goroutine takes the first), and waits for all.
func parallel(ranges []rowRange, fn func(c, lo, hi int)) {
	if len(ranges) == 1 {
		fn(0, ranges[0].lo, ranges[0].hi)
		return
	}
	var wg sync.WaitGroup
	for c := 1; c < len(ranges); c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(c, ranges[c].lo, ranges[c].hi)
		}()
	}
	fn(0, ranges[0].lo, ranges[0].hi)
	wg.Wait()
}

// gather returns Σ contrib[s] over src. Four independent accumulators let
// the loads of one node's in-links overlap instead of waiting on each add;
// they are combined in a fixed order, so the sum is still deterministic.
func gather(contrib []float64, src []uint32) float64 {
	var a0, a1, a2, a3 float64
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s := src[i : i+4 : i+4]
		a0 += contrib[s[0]]
		a1 += contrib[s[1]]
		a2 += contrib[s[2]]
		a3 += contrib[s[3]]
	}
	for ; i < len(src); i++ {
		a0 += contrib[src[i]]
	}
	return (a0 + a1) + (a2 + a3)
}
