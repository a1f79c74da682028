package websim

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
)

// mix is the splitmix64 finaliser: a cheap, well-distributed 64-bit mixer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// hash2 and hash3 derive a key from a base key and small integers.
func hash2(a, b uint64) uint64    { return mix(mix(a) ^ b*0xd6e8feb86659fd93) }
func hash3(a, b, c uint64) uint64 { return hash2(hash2(a, b), c) }

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// Purposes keep the random streams of different decisions independent. Their values
// are part of the generated web (see TestGolden): never renumber them.
const (
	keyHost    uint64 = 1
	keyPage    uint64 = 2
	keySection uint64 = 3
	keyPerm    uint64 = 4
	keyBin     uint64 = 5
)

// rng is a PCG stream with the few helpers the generator needs; it does not allocate.
type rng struct{ p rand.PCG }

func newRNG(key uint64) rng {
	var r rng
	r.p.Seed(key, mix(key^0x5851f42d4c957f2d))
	return r
}

func (r *rng) u64() uint64 { return r.p.Uint64() }

// intn returns a uniform int in [0, n); n must be > 0.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.u64(), uint64(n))
	return int(hi)
}

// between returns a uniform int in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

func (r *rng) float() float64 { return unit(r.u64()) }

func (r *rng) chance(p float64) bool { return r.float() < p }

// zipf samples indices 0..n-1 with probability proportional to 1/(i+1)^s, by binary
// search over a precomputed cumulative table (n float64s).
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), s)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return zipf{cdf: cdf}
}

func (z zipf) sample(r *rng) int {
	u := r.float()
	i := sort.SearchFloat64s(z.cdf, u)
	if i >= len(z.cdf) {
		i = len(z.cdf) - 1
	}
	return i
}
