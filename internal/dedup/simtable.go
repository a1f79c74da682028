package dedup

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// Near-duplicate lookup with permuted tables (Manku, Jain and Das Sarma,
// "Detecting near-duplicates for web crawling", WWW 2007).
//
// Two 64-bit SimHashes at Hamming distance at most k differ in at most k
// bits, so if the 64 bits are split into b blocks, at least b−k blocks are
// equal in both. SimTables has one table per choice of b−k blocks out of b
// (C(b, k) tables); a hash is filed in every table under its bits in that
// table's blocks (the key, the rest masked out). Every hash within distance
// k of h shares a key with h in at least one table, so a lookup reads C(b, k)
// keys and checks the few hashes filed under them. b is chosen so that keys
// keep at least 24 of the 64 bits: a key then holds about N/2^24 of N
// unrelated pages (under 1 at 10 M pages per table), so the cost of a lookup
// does not grow with the crawl.
//
//	k   blocks   tables   key bits
//	1   2        2        32
//	2   4        6        32
//	3   5        10       25–26
//	4   7        35       27–28

// MaxNearDistance is the largest Hamming distance SimTables supports; larger
// distances would need hundreds of tables per page.
const MaxNearDistance = 4

// MinSimHashShingles is the number of word shingles (ShingleSize words
// each) a text needs for PageSimHash to hash it: a shorter text (an empty
// page, one word, a line of navigation) says too little to be called a
// near-duplicate of anything.
const MinSimHashShingles = 8

// PageSimHash is SimHash for near-duplicate detection: SimHash(text), or 0
// (no hash: never a duplicate) when text has fewer than MinSimHashShingles
// shingles (ShingleSize+MinSimHashShingles−1 words, of those SimHash keeps:
// numbers and dates are not counted). It never returns 0
// for a text long enough (0 is mapped to 1).
func PageSimHash(text string) uint64 {
	h, shingles := simHash(text)
	if shingles < MinSimHashShingles {
		return 0
	}
	if h == 0 {
		return 1
	}
	return h
}

// SimTables is the table layout for one distance k: which bits of a hash
// each table keys on. It is immutable and safe for concurrent use.
type SimTables struct {
	k     int
	masks []uint64
}

var simLayouts [MaxNearDistance + 1]*SimTables

func init() {
	for k := 1; k <= MaxNearDistance; k++ {
		simLayouts[k] = newSimTables(k)
	}
}

// NewSimTables returns the layout for distance k, 1 ≤ k ≤ MaxNearDistance.
func NewSimTables(k int) (*SimTables, error) {
	if k < 1 || k > MaxNearDistance {
		return nil, fmt.Errorf("cannot build near-duplicate tables for distance %d: use 1 to %d (0 switches near-duplicate detection off)", k, MaxNearDistance)
	}
	return simLayouts[k], nil
}

func newSimTables(k int) *SimTables {
	b := k + 1
	for 64*(b-k)/b < 24 {
		b++
	}
	// Block i covers bits [lo[i], lo[i+1]).
	lo := make([]int, b+1)
	for i := 0; i <= b; i++ {
		lo[i] = i * 64 / b
	}
	block := func(i int) uint64 {
		n := lo[i+1] - lo[i]
		return (uint64(1)<<n - 1) << lo[i]
	}
	t := &SimTables{k: k}
	// Every choice of b−k blocks, in lexicographic order.
	var choose func(start, left int, m uint64)
	choose = func(start, left int, m uint64) {
		if left == 0 {
			t.masks = append(t.masks, m)
			return
		}
		for i := start; i <= b-left; i++ {
			choose(i+1, left-1, m|block(i))
		}
	}
	choose(0, b-k, 0)
	return t
}

// Distance is the Hamming distance the layout finds (k).
func (t *SimTables) Distance() int { return t.k }

// Len is the number of tables.
func (t *SimTables) Len() int { return len(t.masks) }

// SimKeyLen is the length of a key made by SimTables.AppendKey.
const SimKeyLen = 10

// AppendKey appends table i's key for h to dst: SimKeyLen bytes, the
// distance k, the table number i, then h with the bits outside table i's
// blocks cleared (8 bytes, big endian). Keys of different distances never
// collide, so tables of several distances may share one store.
func (t *SimTables) AppendKey(dst []byte, i int, h uint64) []byte {
	dst = append(dst, byte(t.k), byte(i))
	return binary.BigEndian.AppendUint64(dst, h&t.masks[i])
}

// Near reports whether a and b are within the layout's distance.
func (t *SimTables) Near(a, b uint64) bool { return bits.OnesCount64(a^b) <= t.k }

// SimIndex is an in-memory near-duplicate index over SimTables: Add files a
// hash under an id, Find returns the id of a filed hash within the distance.
// Each table is a chained hash table over its keys (a head per bucket, a
// link per entry, 4 bytes each, buckets doubling with the entries), so a
// filed hash costs about 16 + 10 × C(b, k) bytes (116 at k = 3) and a
// lookup visits about one entry per table whatever the number filed. Not
// safe for concurrent use.
type SimIndex struct {
	t     *SimTables
	hs    []uint64  // entry → hash
	ids   []int     // entry → id
	heads [][]int32 // table → bucket → first entry + 1 (0: none)
	next  [][]int32 // table → entry → next entry of its bucket + 1
	grown int       // entries when the buckets were last resized
}

// NewSimIndex returns an empty index for distance k (1 ≤ k ≤
// MaxNearDistance).
func NewSimIndex(k int) (*SimIndex, error) {
	t, err := NewSimTables(k)
	if err != nil {
		return nil, err
	}
	x := &SimIndex{t: t, heads: make([][]int32, t.Len()), next: make([][]int32, t.Len())}
	for i := range x.heads {
		x.heads[i] = make([]int32, 16)
	}
	return x, nil
}

// Len is the number of hashes filed.
func (x *SimIndex) Len() int { return len(x.hs) }

// bucket is the bucket of table i's key of h among n buckets (a power of 2).
func (x *SimIndex) bucket(i int, h uint64, n int) int {
	return int(fmix64((h&x.t.masks[i])^uint64(i)<<58) & uint64(n-1))
}

// Add files h under id. A hash of 0 (no hash) is not filed.
func (x *SimIndex) Add(h uint64, id int) {
	if h == 0 {
		return
	}
	e := int32(len(x.hs))
	x.hs = append(x.hs, h)
	x.ids = append(x.ids, id)
	if len(x.hs) > len(x.heads[0]) {
		x.rehash(2 * len(x.heads[0]))
		return
	}
	for i := range x.heads {
		b := x.bucket(i, h, len(x.heads[i]))
		x.next[i] = append(x.next[i], x.heads[i][b])
		x.heads[i][b] = e + 1
	}
}

// rehash rebuilds every table with n buckets.
func (x *SimIndex) rehash(n int) {
	for i := range x.heads {
		x.heads[i] = make([]int32, n)
		x.next[i] = x.next[i][:0]
		for e, h := range x.hs {
			b := x.bucket(i, h, n)
			x.next[i] = append(x.next[i], x.heads[i][b])
			x.heads[i][b] = int32(e) + 1
		}
	}
	x.grown = len(x.hs)
}

// Truncate forgets the hashes filed after the first n (the last ones
// added), as if they had never been added.
func (x *SimIndex) Truncate(n int) {
	if n < 0 || n >= len(x.hs) {
		return
	}
	if n < x.grown {
		// Entries added before the last resize: rebuild.
		x.hs, x.ids = x.hs[:n], x.ids[:n]
		x.rehash(len(x.heads[0]))
		return
	}
	for e := len(x.hs) - 1; e >= n; e-- {
		for i := range x.heads {
			x.heads[i][x.bucket(i, x.hs[e], len(x.heads[i]))] = x.next[i][e]
			x.next[i] = x.next[i][:e]
		}
	}
	x.hs, x.ids = x.hs[:n], x.ids[:n]
}

// Find returns the id of a filed hash nearest to h (ties: the smallest
// id) and its distance, or ok false when none is within the distance or h
// is 0.
func (x *SimIndex) Find(h uint64) (id, dist int, ok bool) {
	if h == 0 {
		return 0, 0, false
	}
	best, bestD := 0, x.t.k+1
	for i := range x.heads {
		key := h & x.t.masks[i]
		for e := x.heads[i][x.bucket(i, h, len(x.heads[i]))]; e != 0; e = x.next[i][e-1] {
			f := x.hs[e-1]
			if f&x.t.masks[i] != key {
				continue
			}
			d := bits.OnesCount64(f ^ h)
			if d < bestD || d == bestD && x.ids[e-1] < best {
				best, bestD = x.ids[e-1], d
			}
		}
	}
	if bestD > x.t.k {
		return 0, 0, false
	}
	return best, bestD, true
}

// Clusters groups pages into duplicate clusters in the given order: page i
// joins the cluster of the first earlier page with the same non-zero
// fingerprint fps[i] (an exact duplicate), else, with k > 0, of an earlier
// page whose SimHash sims[i] is within distance k (a near-duplicate; the
// nearest, ties by order), else starts its own. It returns, for each page,
// the index of its cluster's first page (itself for a first page) and
// whether it joined by SimHash alone. Only first pages are filed in the
// tables, so a chain of small steps does not grow a cluster without limit.
// fps and sims must have the same length; 0 means none.
func Clusters(fps, sims []uint64, k int) (root []int, near []bool, err error) {
	if len(fps) != len(sims) {
		return nil, nil, fmt.Errorf("cannot cluster pages: %d fingerprints for %d SimHashes", len(fps), len(sims))
	}
	var idx *SimIndex
	if k > 0 {
		if idx, err = NewSimIndex(k); err != nil {
			return nil, nil, err
		}
	}
	root, near = make([]int, len(fps)), make([]bool, len(fps))
	firstFP := make(map[uint64]int)
	for i := range fps {
		root[i] = i
		if fps[i] != 0 {
			if j, ok := firstFP[fps[i]]; ok {
				root[i] = root[j]
				continue
			}
			firstFP[fps[i]] = i
		}
		if idx != nil {
			if j, _, ok := idx.Find(sims[i]); ok {
				root[i], near[i] = j, true
				continue
			}
			idx.Add(sims[i], i)
		}
	}
	return root, near, nil
}

// masksForTest exposes the layout's masks.
func (t *SimTables) masksForTest() []uint64 { return slices.Clone(t.masks) }
