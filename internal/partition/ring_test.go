package partition

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestBucket(t *testing.T) {
	tests := []struct {
		host string
		m    int
		want int
	}{
		// Golden values: every node of a crawl, whatever its build, must agree on them.
		{"www.d0.test", 4096, Bucket("WWW.D0.TEST", 4096)},
		{"example.com", 0, Bucket("example.com", DefaultBuckets)},
		{"example.com", -5, Bucket("example.com", DefaultBuckets)},
		{"", 1, 0},
		{"anything", 1, 0},
	}
	for _, tc := range tests {
		if got := Bucket(tc.host, tc.m); got != tc.want {
			t.Errorf("Bucket(%q, %d) = %d, want %d", tc.host, tc.m, got, tc.want)
		}
	}
	golden := map[string]int{}
	for _, h := range []string{"www.d0.test", "d1.test", "example.com", "例子.中国", "a"} {
		golden[h] = Bucket(h, 4096)
	}
	if got, want := fmt.Sprint(golden), goldenBuckets; got != want {
		t.Errorf("Bucket golden values changed (nodes of different builds would disagree):\n got  %s\n want %s", got, want)
	}
}

// goldenBuckets pins Bucket's hash: xxhash64 of the lower-cased host mod M.
const goldenBuckets = "map[a:3675 d1.test:978 example.com:649 www.d0.test:2677 例子.中国:3576]"

func TestBucketSpread(t *testing.T) {
	const m = 64
	counts := make([]int, m)
	hosts := websimHosts(64000, 640)
	for _, h := range hosts {
		b := Bucket(h, m)
		if b < 0 || b >= m {
			t.Fatalf("Bucket(%q, %d) = %d out of range", h, m, b)
		}
		counts[b]++
	}
	// χ² with 63 degrees of freedom: 99.9% quantile ≈ 103.4.
	exp := float64(len(hosts)) / m
	chi := 0.0
	for _, c := range counts {
		chi += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	if chi > 103.4 {
		t.Fatalf("bucket counts of websim host names fail χ² (%.1f > 103.4): %v", chi, counts)
	}
}

func TestNewRingErrors(t *testing.T) {
	tests := []struct {
		name    string
		members []Member
		want    error
	}{
		{"nil", nil, ErrNoMembers},
		{"empty", []Member{}, ErrNoMembers},
		{"empty id", []Member{{"", 1}}, ErrBadMember},
		{"zero weight", []Member{{"a", 0}}, ErrBadMember},
		{"negative weight", []Member{{"a", 1}, {"b", -3}}, ErrBadMember},
		{"duplicate", []Member{{"a", 1}, {"b", 2}, {"a", 3}}, ErrBadMember},
		{"too many points", []Member{{"a", MaxPoints}}, ErrBadMember},
		{"too many points in all", []Member{{"a", MaxPoints / 200}, {"b", MaxPoints / 200}}, ErrBadMember},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRing(tc.members)
			if !errors.Is(err, tc.want) || r != nil {
				t.Fatalf("NewRing returned a ring: %t, err %v; want no ring, %v", r != nil, err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "cannot ") {
				t.Errorf("error %q does not start with \"cannot\"", err)
			}
		})
	}
}

func TestOneMemberOwnsAll(t *testing.T) {
	r := mustRing(t, []Member{{"solo", 1}})
	for _, tab := range [][]string{r.Owners(100), r.Balanced(100, 0), r.Balanced(100, 0.5)} {
		for b, id := range tab {
			if id != "solo" {
				t.Fatalf("bucket %d owned by %q, want solo", b, id)
			}
		}
	}
	if r.Share("solo") != 1 || r.Share("other") != 0 {
		t.Fatalf("Share = %v, %v; want 1, 0", r.Share("solo"), r.Share("other"))
	}
}

func digest(tab []string) string {
	h := sha256.Sum256([]byte(strings.Join(tab, ",")))
	return hex.EncodeToString(h[:8])
}

func TestDeterminism(t *testing.T) {
	base := mustRing(t, specABCD)
	wantO, wantB := digest(base.Owners(0)), digest(base.Balanced(0, 0))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		ms := slices.Clone(specABCD)
		rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		r := mustRing(t, ms)
		if got := digest(r.Owners(0)); got != wantO {
			t.Fatalf("Owners depends on input order %v: %s vs %s", ms, got, wantO)
		}
		if got := digest(r.Balanced(0, 0)); got != wantB {
			t.Fatalf("Balanced depends on input order %v: %s vs %s", ms, got, wantB)
		}
	}
	// Pinned: a change of the point or bucket hash scheme splits a crawl of mixed builds.
	if wantO != goldenOwners || wantB != goldenBalanced {
		t.Errorf("table digests changed: Owners %s (want %s), Balanced %s (want %s)", wantO, goldenOwners, wantB, goldenBalanced)
	}
	if len(base.Owners(0)) != DefaultBuckets {
		t.Fatalf("Owners(0) has %d entries, want %d", len(base.Owners(0)), DefaultBuckets)
	}
	for b, id := range base.Owners(300) {
		if base.Owner(b) != id {
			t.Fatalf("Owners(300)[%d] = %s, Owner(%d) = %s", b, id, b, base.Owner(b))
		}
	}
	if !slices.Equal(base.Members(), []Member{{"A", 150}, {"B", 80}, {"C", 200}, {"D", 40}}) {
		t.Fatalf("Members = %v, want sorted by ID", base.Members())
	}
	if base.PointsPerWeight() != DefaultPointsPerWeight || mustRing(t, specABCD, PointsPerWeight(0)).PointsPerWeight() != DefaultPointsPerWeight {
		t.Fatal("PointsPerWeight default not applied")
	}
	if mustRing(t, specABCD, PointsPerWeight(7)).PointsPerWeight() != 7 {
		t.Fatal("PointsPerWeight(7) not applied")
	}
}

const (
	goldenOwners   = "da9daa37c54d1c6b"
	goldenBalanced = "9ac954213063ba20"
)

// checkBalancedCaps checks that no member exceeds its cap in a Balanced table and that
// every bucket has an owner from the ring.
func checkBalancedCaps(t testing.TB, r *Ring, m int, slack float64, tab []string) {
	t.Helper()
	count := map[string]int{}
	for _, id := range tab {
		count[id]++
	}
	total := 0
	for _, mem := range r.Members() {
		limit := int(math.Ceil((1 + slack) * float64(m) * r.Share(mem.ID)))
		if count[mem.ID] > limit {
			t.Fatalf("Balanced(%d, %v): %s owns %d buckets, cap %d", m, slack, mem.ID, count[mem.ID], limit)
		}
		total += count[mem.ID]
	}
	if total != m || len(tab) != m {
		t.Fatalf("Balanced(%d, %v) assigns %d of %d buckets to members", m, slack, total, m)
	}
}

func TestBalancedCaps(t *testing.T) {
	for _, slack := range []float64{-1, 0, 0.02, 0.1, 3} {
		for _, m := range []int{1, 7, 100, 4096} {
			r := mustRing(t, specABCD)
			checkBalancedCaps(t, r, m, max(slack, 0), r.Balanced(m, slack))
		}
	}
	// A large slack never caps: the table is the plain ring's.
	r := mustRing(t, specABCD)
	if !slices.Equal(r.Balanced(4096, 10), r.Owners(4096)) {
		t.Fatal("Balanced with slack 10 differs from Owners")
	}
}

// FuzzRing checks the ring's invariants on arbitrary member lists: Owners is monotone on
// removing a member (only its buckets move), Balanced respects its caps.
func FuzzRing(f *testing.F) {
	f.Add("A,B,C,D", []byte{150, 80, 200, 40}, uint16(4096), uint8(0))
	f.Add("x", []byte{1}, uint16(1), uint8(5))
	f.Add("n1,n2,n3", []byte{1, 1, 255}, uint16(97), uint8(2))
	f.Fuzz(func(t *testing.T, ids string, weights []byte, m uint16, slackPct uint8) {
		var ms []Member
		for i, id := range strings.Split(ids, ",") {
			if i >= len(weights) || i >= 8 {
				break
			}
			ms = append(ms, Member{ID: id, Weight: int(weights[i])})
		}
		r, err := NewRing(ms, PointsPerWeight(4))
		if err != nil {
			return
		}
		mm := int(m%2048) + 1
		slack := float64(slackPct%50) / 100
		checkBalancedCaps(t, r, mm, slack, r.Balanced(mm, slack))
		if len(ms) < 2 {
			return
		}
		gone := r.Members()[0].ID
		r2, err := NewRing(r.Members()[1:], PointsPerWeight(4))
		if err != nil {
			t.Fatalf("ring without %q: %v", gone, err)
		}
		before, after := r.Owners(mm), r2.Owners(mm)
		for b := range before {
			if before[b] != gone && before[b] != after[b] {
				t.Fatalf("removing %q moved bucket %d from %q to %q", gone, b, before[b], after[b])
			}
			if after[b] == gone {
				t.Fatalf("bucket %d still owned by removed %q", b, gone)
			}
		}
	})
}

func BenchmarkNewRing(b *testing.B) {
	for range b.N {
		if _, err := NewRing(specABCD); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOwners(b *testing.B) {
	r := mustRing(b, specABCD)
	b.ResetTimer()
	for range b.N {
		_ = r.Owners(DefaultBuckets)
	}
}

func BenchmarkBalanced(b *testing.B) {
	r := mustRing(b, specABCD)
	b.ResetTimer()
	for range b.N {
		_ = r.Balanced(DefaultBuckets, 0)
	}
}

func BenchmarkBucket(b *testing.B) {
	for range b.N {
		_ = Bucket("news.d17.test", DefaultBuckets)
	}
}
