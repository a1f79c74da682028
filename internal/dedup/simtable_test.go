package dedup

import (
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSimTablesLayout(t *testing.T) {
	tests := []struct {
		k, tables       int
		minBits, maxBit int
	}{
		{1, 2, 32, 32},
		{2, 6, 32, 32},
		{3, 10, 25, 26},
		{4, 35, 27, 28},
	}
	for _, tt := range tests {
		st, err := NewSimTables(tt.k)
		if err != nil {
			t.Fatal(err)
		}
		if st.Len() != tt.tables || st.Distance() != tt.k {
			t.Errorf("k=%d: %d tables, distance %d; want %d, %d", tt.k, st.Len(), st.Distance(), tt.tables, tt.k)
		}
		seen := map[uint64]bool{}
		for _, m := range st.masksForTest() {
			if n := bits.OnesCount64(m); n < tt.minBits || n > tt.maxBit {
				t.Errorf("k=%d: a table keys on %d bits, want %d to %d", tt.k, n, tt.minBits, tt.maxBit)
			}
			if seen[m] {
				t.Errorf("k=%d: two tables key on the same bits %x", tt.k, m)
			}
			seen[m] = true
		}
	}
	for _, k := range []int{-1, 0, MaxNearDistance + 1} {
		if _, err := NewSimTables(k); err == nil {
			t.Errorf("NewSimTables(%d) accepted", k)
		}
	}
}

// Every hash within distance k of h shares at least one table key with h:
// flipping any k bits leaves some table's blocks untouched.
func TestSimTablesFindEveryNeighbour(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for k := 1; k <= MaxNearDistance; k++ {
		st, _ := NewSimTables(k)
		for trial := 0; trial < 20000; trial++ {
			h := r.Uint64()
			g := h
			for _, b := range r.Perm(64)[:1+r.IntN(k)] {
				g ^= 1 << b
			}
			shared := false
			for i := 0; i < st.Len(); i++ {
				if string(st.AppendKey(nil, i, h)) == string(st.AppendKey(nil, i, g)) {
					shared = true
					break
				}
			}
			if !shared {
				t.Fatalf("k=%d: %016x and %016x (distance %d) share no table key", k, h, g, HammingDistance(h, g))
			}
		}
	}
}

// SimIndex.Find answers what a linear scan over every filed hash answers.
func TestSimIndexMatchesLinearScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for k := 1; k <= MaxNearDistance; k++ {
		x, err := NewSimIndex(k)
		if err != nil {
			t.Fatal(err)
		}
		var filed []uint64
		for i := 0; i < 3000; i++ {
			h := r.Uint64() | 1
			if i > 0 && r.IntN(3) == 0 { // a neighbour of an earlier hash
				h = filed[r.IntN(len(filed))]
				for _, b := range r.Perm(64)[:r.IntN(k+3)] {
					h ^= 1 << b
				}
				if h == 0 {
					h = 1
				}
			}
			wantID, wantD, wantOK := 0, k+1, false
			for j, f := range filed {
				if d := HammingDistance(f, h); d < wantD {
					wantID, wantD, wantOK = j, d, true
				}
			}
			id, d, ok := x.Find(h)
			if ok != wantOK || ok && (id != wantID || d != wantD) {
				t.Fatalf("k=%d: Find(%016x) = %d, %d, %v; linear scan: %d, %d, %v", k, h, id, d, ok, wantID, wantD, wantOK)
			}
			x.Add(h, len(filed))
			filed = append(filed, h)
		}
	}
}

func TestSimIndexZeroIsNoHash(t *testing.T) {
	x, _ := NewSimIndex(3)
	x.Add(0, 1)
	if _, _, ok := x.Find(0); ok {
		t.Fatal("0 (no hash) was found")
	}
	if _, _, ok := x.Find(1); ok {
		t.Fatal("0 was filed: 1 is within distance 3 of it")
	}
}

func TestPageSimHashShortTexts(t *testing.T) {
	short := []string{"", "   ", "hello", "hello hello", "one two three four five six seven eight nine", "Home | About | Contact"}
	for _, s := range short {
		if h := PageSimHash(s); h != 0 {
			t.Errorf("PageSimHash(%q) = %x, want 0 (too short to judge)", s, h)
		}
	}
	long := "one two three four five six seven eight nine ten"
	if PageSimHash(long) == 0 {
		t.Errorf("PageSimHash(%q) = 0: ten words are %d shingles", long, 10-ShingleSize+1)
	}
	// Two one-word pages are never near-duplicates, however alike.
	if a, b := PageSimHash("hello"), PageSimHash("hello!"); a != 0 || b != 0 {
		t.Error("one-word pages got hashes")
	}
}

func TestClusters(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	base := strings.Join(randomText(r, 2000), " ")
	dated := "Updated 2024-05-01. " + base
	other := strings.Join(randomText(r, 300), " ")
	texts := []string{base, dated, other, base, "", "", "x"}
	fps := make([]uint64, len(texts))
	sims := make([]uint64, len(texts))
	for i, s := range texts {
		fps[i], sims[i] = Fingerprint([]byte(s)), PageSimHash(s)
	}
	fps[4], fps[5] = 0, 0 // no fingerprint: never exact duplicates
	root, near, err := Clusters(fps, sims, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 0, 2, 0, 4, 5, 6}
	wantNear := []bool{false, true, false, false, false, false, false}
	for i := range want {
		if root[i] != want[i] || near[i] != wantNear[i] {
			t.Errorf("page %d: root %d near %v, want %d %v", i, root[i], near[i], want[i], wantNear[i])
		}
	}
	root, near, _ = Clusters(fps, sims, 0) // near-duplicates off
	if root[1] != 1 || near[1] || root[3] != 0 {
		t.Errorf("k=0: root %v near %v; want exact duplicates only", root, near)
	}
	if _, _, err := Clusters(fps, sims[:1], 3); err == nil {
		t.Error("mismatched lengths accepted")
	}
}

// A chain of pages each a few bits from the last joins the first page's
// cluster only while it is near the first page (only first pages are
// filed).
func TestClustersChainDoesNotDrift(t *testing.T) {
	h := uint64(0x0123456789abcdef)
	sims := []uint64{h}
	for i := 0; i < 20; i++ {
		h ^= 1 << (3 * i)
		sims = append(sims, h)
	}
	root, _, _ := Clusters(make([]uint64, len(sims)), sims, 3)
	for i, s := range sims {
		if root[i] == 0 && HammingDistance(s, sims[0]) > 3 {
			t.Fatalf("page %d at distance %d from page 0 joined its cluster", i, HammingDistance(s, sims[0]))
		}
	}
}

func BenchmarkSimIndexFind(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x, _ := NewSimIndex(3)
	for i := 0; i < 200000; i++ {
		x.Add(r.Uint64(), i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.Find(r.Uint64())
	}
}

// Truncate forgets the last hashes added, across resizes too: Find then
// answers as an index that never had them.
func TestSimIndexTruncate(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x, _ := NewSimIndex(3)
	var hs []uint64
	for i := 0; i < 500; i++ {
		h := r.Uint64() | 1
		hs = append(hs, h)
		x.Add(h, i)
	}
	for _, n := range []int{480, 300, 17, 0} { // within and across resizes
		x.Truncate(n)
		if x.Len() != n {
			t.Fatalf("Len %d after Truncate(%d)", x.Len(), n)
		}
		for i, h := range hs {
			id, _, ok := x.Find(h)
			if i < n && (!ok || id != i) {
				t.Fatalf("after Truncate(%d): hash %d not found (%d, %v)", n, i, id, ok)
			}
			if i >= n && ok && id >= n {
				t.Fatalf("after Truncate(%d): forgotten hash %d found as %d", n, i, id)
			}
		}
		for i := n; i < n+5 && i < len(hs); i++ { // the index still grows
			x.Add(hs[i], i)
		}
		x.Truncate(n)
	}
}
