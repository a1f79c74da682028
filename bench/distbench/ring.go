package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/spider-crawler/spider/internal/partition"
)

// parseMembers parses "A=150,B=80" into ring members.
func parseMembers(s string) ([]partition.Member, error) {
	var out []partition.Member
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, w, ok := strings.Cut(part, "=")
		weight, err := strconv.Atoi(strings.TrimSpace(w))
		id = strings.TrimSpace(id)
		if !ok || err != nil || weight < 1 || id == "" {
			return nil, fmt.Errorf("cannot read member %q: want NAME=WEIGHT with a weight ≥ 1, e.g. A=150", part)
		}
		for _, m := range out {
			if m.ID == id {
				return nil, fmt.Errorf("cannot use member %q twice in %q", id, s)
			}
		}
		out = append(out, partition.Member{ID: id, Weight: weight})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cannot use an empty member list %q", s)
	}
	return out, nil
}

// memberString writes members back as "A=150,B=80".
func memberString(ms []partition.Member) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.ID + "=" + strconv.Itoa(m.Weight)
	}
	return strings.Join(parts, ",")
}

// weightShares maps each member to weight / Σ weights.
func weightShares(ms []partition.Member) map[string]float64 {
	total := 0
	for _, m := range ms {
		total += m.Weight
	}
	out := make(map[string]float64, len(ms))
	for _, m := range ms {
		out[m.ID] = float64(m.Weight) / float64(total)
	}
	return out
}

// tableKind names a way to turn a ring into a bucket table.
type tableKind string

const (
	// kindBalanced is what a p2p node uses (Ring.Balanced with slack 0).
	kindBalanced tableKind = "Balanced(0)"
	// kindOwners is the plain consistent-hash ring (Ring.Owners).
	kindOwners tableKind = "Owners"
)

// bucketTable computes the bucket → member table of members over m buckets
// with the ring options a p2p node uses.
func bucketTable(ms []partition.Member, m int, kind tableKind) ([]string, error) {
	r, err := partition.NewRing(ms, partition.PointsPerWeight(partition.DefaultPointsPerWeight))
	if err != nil {
		return nil, fmt.Errorf("cannot build the ring of %s: %w", memberString(ms), err)
	}
	if kind == kindOwners {
		return r.Owners(m), nil
	}
	return r.Balanced(m, 0), nil
}

// shareRow is one member's observed share against its weight share.
type shareRow struct {
	ID       string
	Weight   int
	Expected float64 // weight share
	Observed float64
}

// Dev is the relative deviation observed/expected − 1.
func (r shareRow) Dev() float64 {
	if r.Expected == 0 {
		return 0
	}
	return r.Observed/r.Expected - 1
}

// shares compares counts per member with the weight shares; members are in
// the order of ms. Counts of names that are not members are ignored (and
// reported by the caller).
func shares(ms []partition.Member, counts map[string]float64) []shareRow {
	exp := weightShares(ms)
	total := 0.0
	for _, m := range ms {
		total += counts[m.ID]
	}
	rows := make([]shareRow, len(ms))
	for i, m := range ms {
		rows[i] = shareRow{ID: m.ID, Weight: m.Weight, Expected: exp[m.ID]}
		if total > 0 {
			rows[i].Observed = counts[m.ID] / total
		}
	}
	return rows
}

// worstDev is the largest |deviation| over rows.
func worstDev(rows []shareRow) float64 {
	w := 0.0
	for _, r := range rows {
		w = max(w, math.Abs(r.Dev()))
	}
	return w
}

// tableCounts counts the buckets of each member in a table, each bucket
// weighted by weight[b] (nil: 1 each).
func tableCounts(table []string, weight []float64) map[string]float64 {
	out := map[string]float64{}
	for b, id := range table {
		w := 1.0
		if weight != nil {
			w = weight[b]
		}
		out[id] += w
	}
	return out
}

// change is the comparison of two bucket tables.
type change struct {
	Moved    float64 // fraction of (weighted) buckets whose owner changed
	Ideal    float64 // the least fraction any assignment following the weights must move
	Needless float64 // fraction that moved between members present in both lists and
	// whose move neither left a removed member nor reached an added one
}

// Dev is Moved/Ideal − 1.
func (c change) Dev() float64 {
	if c.Ideal == 0 {
		return 0
	}
	return c.Moved/c.Ideal - 1
}

// compareTables measures the change from table a (members before) to table
// b (members after), each bucket weighted by weight[b] (nil: 1 each). The
// ideal is the total-variation distance between the two weight-share
// distributions: what a perfectly balanced assignment must move.
func compareTables(before, after []partition.Member, a, b []string, weight []float64) change {
	inBefore, inAfter := map[string]bool{}, map[string]bool{}
	for _, m := range before {
		inBefore[m.ID] = true
	}
	for _, m := range after {
		inAfter[m.ID] = true
	}
	var c change
	total := 0.0
	for i := range a {
		w := 1.0
		if weight != nil {
			w = weight[i]
		}
		total += w
		if a[i] == b[i] {
			continue
		}
		c.Moved += w
		if inAfter[a[i]] && inBefore[b[i]] {
			c.Needless += w
		}
	}
	if total > 0 {
		c.Moved /= total
		c.Needless /= total
	}
	sb, sa := weightShares(before), weightShares(after)
	ids := map[string]bool{}
	for id := range sb {
		ids[id] = true
	}
	for id := range sa {
		ids[id] = true
	}
	for id := range ids {
		c.Ideal += math.Abs(sb[id] - sa[id])
	}
	c.Ideal /= 2
	return c
}

// hostWeights counts, per bucket, the hosts (or URLs) of a list of host
// names with their counts: the weight of each bucket in a crawl of them.
func hostWeights(hostCounts map[string]int, m int) []float64 {
	w := make([]float64, m)
	for h, n := range hostCounts {
		w[partition.Bucket(h, m)] += float64(n)
	}
	return w
}

// sortedKeys returns the keys of a map, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
