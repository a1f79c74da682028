package rstate

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/spider-crawler/spider/internal/dedup"
)

// MaxBloomBits is the largest filter a Store accepts: a Redis string holds at
// most 2^32 bits (512 MiB).
const MaxBloomBits = 1 << 32

// bloomShape returns the filter's bits m (a multiple of 64) and hash count k
// for expected URLs at false-positive rate p, with the formulas of
// dedup.NewBloom: m = ceil(-n·ln p / (ln 2)²), k = round((m/n)·ln 2) in
// [1, 64]. It fails when m exceeds MaxBloomBits.
func bloomShape(expected uint64, p float64) (m uint64, k int, err error) {
	n := float64(max(expected, 1))
	mf := math.Ceil(-n * math.Log(p) / (math.Ln2 * math.Ln2))
	words := max(uint64(math.Ceil(mf/64)), 1)
	if words > MaxBloomBits/64 {
		return 0, 0, fmt.Errorf("cannot size the Bloom filter: %d expected URLs at rate %g need %.0f bits, and a Redis string holds at most 2^32; use more buckets, a higher FPRate or exact mode", expected, p, mf)
	}
	m = words * 64
	k = int(math.Round(float64(m) / n * math.Ln2))
	return m, max(1, min(k, 64)), nil
}

// appendBitArgs appends the k bit positions of key in a filter of m bits,
// as decimal strings: g_i = ⌊(H1 + i·H2) · m / 2^64⌋ for i = 0..k-1, the
// double hashing of dedup.Bloom (Lemire's multiply-shift instead of mod m).
func appendBitArgs(args []any, key dedup.Key, m uint64, k int) []any {
	h := key.H1
	for i := 0; i < k; i++ {
		pos, _ := bits.Mul64(h, m)
		args = append(args, strconv.FormatUint(pos, 10))
		h += key.H2
	}
	return args
}

// estimatedFPRate is the false-positive rate of a filter of m bits and k
// hashes holding n keys: (1 - e^(-k·n/m))^k.
func estimatedFPRate(m uint64, k int, n int64) float64 {
	if m == 0 {
		return 1
	}
	return math.Pow(1-math.Exp(-float64(k)*float64(n)/float64(m)), float64(k))
}
