package index

import (
	"math"
	"slices"
)

// ProximityWindow is how many of the best BM25F (+ PageRank) candidates a
// search with a proximity weight rescores: the second phase of a
// two-phase ranking, like Elasticsearch's rescore window or Vespa's
// second-phase ranking. A page outside the window is not rescored, so it
// cannot overtake the pages in it.
const ProximityWindow = 100

// proximityAlpha is α of the MinDist proximity measure below: Tao and
// Zhai's recommended 0.3.
const proximityAlpha = 0.3

// proximity is the term-proximity score of one page: Tao and Zhai's
// MinDist measure (SIGIR 2007), the distance δ between the closest two
// occurrences of different query terms, made a bonus
//
//	ln(α + e^−δ) − ln α      (α = 0.3)
//
// which is ln(1 + e⁻¹/0.3) ≈ 0.80 for two terms side by side, 0.37 at
// distance 2, 0.16 at 3 and below 0.01 from 6 on; 0 when fewer than two of the
// query's terms occur in the page. pos are the occurrences (title and
// main text, as indexed: the title's positions end titleGap before the
// text's, so a pair across the two is not close), sorted by position,
// one per position.
func proximity(pos []termPos) float64 {
	best := math.MaxInt
	for i := 1; i < len(pos); i++ {
		if pos[i].term != pos[i-1].term {
			best = min(best, pos[i].pos-pos[i-1].pos)
		}
	}
	if best == math.MaxInt {
		return 0
	}
	return math.Log(proximityAlpha+math.Exp(-float64(best))) - math.Log(proximityAlpha)
}

// rescore adds weight × proximity to the score of each candidate (best
// first, as the heap gives them) and sorts them again, ties as worse
// orders them. terms are the query's positive terms (at least two
// distinct ones for any page to score). skips lets the position look-ups
// use the skip indexes; the result does not depend on it.
func rescore(snap *snapshot, all []scored, terms []string, weight float64, skips bool) error {
	terms = slices.Compact(slices.Sorted(slices.Values(terms)))
	if weight == 0 || len(terms) < 2 || len(all) == 0 {
		return nil
	}
	pos, err := hitPositions(snap, all, terms, skips)
	if err != nil {
		return err
	}
	for i := range all {
		all[i].prox = weight * proximity(normaliseMatches(pos[i]))
		all[i].score += all[i].prox
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return nil
}
