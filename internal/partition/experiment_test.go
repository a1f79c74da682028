package partition

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// The SPEC §3 experiment: nodes A=150, B=80, C=200, D=40; then C removed; then E added
// with weight 300.
var (
	specABCD = []Member{{"A", 150}, {"B", 80}, {"C", 200}, {"D", 40}}
	specABD  = []Member{{"A", 150}, {"B", 80}, {"D", 40}}
	specABDE = []Member{{"A", 150}, {"B", 80}, {"D", 40}, {"E", 300}}
)

// tableFunc computes a bucket table from a ring.
type tableFunc struct {
	name string
	f    func(r *Ring, m int) []string
}

var tables = []tableFunc{
	{"Owners", func(r *Ring, m int) []string { return r.Owners(m) }},
	{"Balanced(0)", func(r *Ring, m int) []string { return r.Balanced(m, 0) }},
}

// websimHosts names n hosts the way internal/websim does (www.dD.test, dD.test,
// blog.dD.test, news.dD.test, siteI.dD.test with D = i mod domains).
func websimHosts(n, domains int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		d := strconv.Itoa(i % domains)
		switch i / domains {
		case 0:
			hosts[i] = "www.d" + d + ".test"
		case 1:
			hosts[i] = "d" + d + ".test"
		case 2:
			hosts[i] = "blog.d" + d + ".test"
		case 3:
			hosts[i] = "news.d" + d + ".test"
		default:
			hosts[i] = "site" + strconv.Itoa(i) + ".d" + d + ".test"
		}
	}
	return hosts
}

// shareStats returns each member's observed share (by counting weight[b] over the table)
// and the largest relative deviation |observed/expected − 1| over members.
func shareStats(r *Ring, table []string, weight []float64) (map[string]float64, float64) {
	obs := map[string]float64{}
	total := 0.0
	for b, id := range table {
		w := 1.0
		if weight != nil {
			w = weight[b]
		}
		obs[id] += w
		total += w
	}
	worst := 0.0
	for _, m := range r.Members() {
		obs[m.ID] /= total
		worst = max(worst, math.Abs(obs[m.ID]/r.Share(m.ID)-1))
	}
	return obs, worst
}

// moved counts the buckets whose owner differs between two tables.
func moved(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func mustRing(t testing.TB, ms []Member, opts ...RingOption) *Ring {
	t.Helper()
	r, err := NewRing(ms, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func formatShares(r *Ring, obs map[string]float64) string {
	var parts []string
	for _, m := range r.Members() {
		parts = append(parts, fmt.Sprintf("%s=%d %.2f%%/%.2f%% (%+.1f%%)", m.ID, m.Weight, 100*obs[m.ID], 100*r.Share(m.ID), 100*(obs[m.ID]/r.Share(m.ID)-1)))
	}
	return strings.Join(parts, "  ")
}

// urlWeights returns the number of hosts (hence URLs: websim hosts are all the same size)
// per bucket for a websim-like web of n hosts.
func urlWeights(n, m int) []float64 {
	w := make([]float64, m)
	for _, h := range websimHosts(n, max(1, n/100)) {
		w[Bucket(h, m)]++
	}
	return w
}

func weightedMoved(a, b []string, w []float64) (moved, total float64) {
	for i := range a {
		total += w[i]
		if a[i] != b[i] {
			moved += w[i]
		}
	}
	return moved, total
}

// TestSpecExperiment reproduces the SPEC §3 experiment on buckets and on the URLs of a
// websim-like web (hosts of equal size) and prints markdown tables for bench/RESULTS.md
// (go test -run TestSpecExperiment -v ./internal/partition/). It checks the goals of issue
// 4 on the Balanced(…, 0) table: bucket shares within 5% of the weight shares, buckets
// moved on a change within 5% of the ideal; and strict monotonicity of Owners.
func TestSpecExperiment(t *testing.T) {
	const m = DefaultBuckets
	rABCD, rABD, rABDE := mustRing(t, specABCD), mustRing(t, specABD), mustRing(t, specABDE)
	u1k, u10k := urlWeights(1000, m), urlWeights(10000, m)
	var out strings.Builder
	fmt.Fprintf(&out, "\nSPEC §3 weights, M=%d buckets, K=%d points per weight; URL shares over websim-like webs of 1,000 and 10,000 equal hosts\n\n", m, DefaultPointsPerWeight)
	fmt.Fprintf(&out, "| table | node | weight | weight share | bucket share | dev | URL share 1k hosts | dev | URL share 10k hosts | dev |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, tf := range []tableFunc{tables[0], tables[1]} {
		tab := tf.f(rABCD, m)
		ob, wb := shareStats(rABCD, tab, nil)
		o1, _ := shareStats(rABCD, tab, u1k)
		o10, _ := shareStats(rABCD, tab, u10k)
		for _, mem := range rABCD.Members() {
			s := rABCD.Share(mem.ID)
			fmt.Fprintf(&out, "| %s | %s | %d | %.2f%% | %.2f%% | %+.1f%% | %.2f%% | %+.1f%% | %.2f%% | %+.1f%% |\n", tf.name, mem.ID, mem.Weight, 100*s,
				100*ob[mem.ID], 100*(ob[mem.ID]/s-1), 100*o1[mem.ID], 100*(o1[mem.ID]/s-1), 100*o10[mem.ID], 100*(o10[mem.ID]/s-1))
		}
		if tf.name != "Owners" && wb > 0.05 {
			t.Errorf("%s: worst bucket share deviation %.1f%% > 5%%", tf.name, 100*wb)
		}
	}
	fmt.Fprintf(&out, "\n| table | change | buckets moved | ideal | vs ideal | buckets moved needlessly | URLs moved (10k hosts) | ideal | vs ideal |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, tf := range []tableFunc{tables[0], tables[1]} {
		t1, t2, t3 := tf.f(rABCD, m), tf.f(rABD, m), tf.f(rABDE, m)
		type change struct {
			name     string
			from, to []string
			node     string
			ideal    float64 // share of the whole that must move
			needless int
		}
		changes := []change{
			{name: "remove C", from: t1, to: t2, node: "C", ideal: rABCD.Share("C")},
			{name: "add E (300)", from: t2, to: t3, node: "E", ideal: rABDE.Share("E")},
		}
		for _, c := range changes {
			mv := moved(c.from, c.to)
			for b := range c.from {
				// Removing C, only C's buckets must move; adding E, only buckets to E.
				if c.from[b] != c.to[b] && c.from[b] != c.node && c.to[b] != c.node {
					c.needless++
				}
			}
			um, ut := weightedMoved(c.from, c.to, u10k)
			ideal := c.ideal * m
			dev := float64(mv)/ideal - 1
			fmt.Fprintf(&out, "| %s | %s | %d | %.0f | %+.1f%% | %d | %.0f | %.0f | %+.1f%% |\n", tf.name, c.name, mv, ideal, 100*dev, c.needless, um, c.ideal*ut, 100*(um/(c.ideal*ut)-1))
			switch {
			case tf.name == "Owners" && c.needless != 0:
				t.Errorf("Owners %s: %d buckets moved that need not", c.name, c.needless)
			case tf.name != "Owners" && math.Abs(dev) > 0.05:
				t.Errorf("%s %s: moved %d buckets, %.1f%% off the ideal %.0f", tf.name, c.name, mv, 100*dev, ideal)
			}
		}
	}
	t.Log(out.String())
}

// trialMembers renames the SPEC §3 members with a trial suffix, so that each trial draws
// fresh hash values for the same weights.
func trialMembers(ms []Member, trial int) []Member {
	out := make([]Member, len(ms))
	for i, m := range ms {
		out[i] = Member{ID: m.ID + "-" + strconv.Itoa(trial), Weight: m.Weight}
	}
	return out
}

// TestBalanceOverTrials shows that the figures of TestSpecExperiment are not luck: over 20
// sets of member IDs it reports the mean and worst share deviation and move excess for
// each K, for Owners and Balanced(0), and checks the goals on Balanced(0) at the default K.
func TestBalanceOverTrials(t *testing.T) {
	const m, trials = DefaultBuckets, 20
	var out strings.Builder
	fmt.Fprintf(&out, "\nover %d sets of member IDs (weights A=150 B=80 C=200 D=40, then −C, then +E=300), M=%d\n\n", trials, m)
	fmt.Fprintf(&out, "| table | K | worst share dev: mean | max | remove C: moved vs ideal, mean | max | add E: mean | max |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range []int{1, 16, 64, 128} {
		rings := make([][3]*Ring, trials)
		for tr := range rings {
			rings[tr] = [3]*Ring{
				mustRing(t, trialMembers(specABCD, tr), PointsPerWeight(k)),
				mustRing(t, trialMembers(specABD, tr), PointsPerWeight(k)),
				mustRing(t, trialMembers(specABDE, tr), PointsPerWeight(k)),
			}
		}
		for _, tf := range []tableFunc{tables[0], tables[1]} {
			var devSum, devMax, rcSum, rcMax, aeSum, aeMax float64
			for tr := range trials {
				r1, r2, r3 := rings[tr][0], rings[tr][1], rings[tr][2]
				t1, t2, t3 := tf.f(r1, m), tf.f(r2, m), tf.f(r3, m)
				_, w := shareStats(r1, t1, nil)
				rc := math.Abs(float64(moved(t1, t2))/(m*r1.Share("C-"+strconv.Itoa(tr))) - 1)
				ae := math.Abs(float64(moved(t2, t3))/(m*r3.Share("E-"+strconv.Itoa(tr))) - 1)
				devSum, devMax = devSum+w, max(devMax, w)
				rcSum, rcMax = rcSum+rc, max(rcMax, rc)
				aeSum, aeMax = aeSum+ae, max(aeMax, ae)
			}
			fmt.Fprintf(&out, "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", tf.name, k,
				100*devSum/trials, 100*devMax, 100*rcSum/trials, 100*rcMax, 100*aeSum/trials, 100*aeMax)
			if tf.name != "Owners" && k == DefaultPointsPerWeight && (devMax > 0.05 || rcMax > 0.05 || aeMax > 0.05) {
				t.Errorf("Balanced(0) at K=%d misses a goal in some trial: share dev %.1f%%, remove-C move excess %.1f%%, add-E %.1f%%", k, 100*devMax, 100*rcMax, 100*aeMax)
			}
		}
	}
	t.Log(out.String())
}
