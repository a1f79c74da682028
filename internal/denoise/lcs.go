package denoise

import "math/bits"

// DefaultMaxLen is the longest prefix of a string (in bytes) the LCS looks
// at. URLs longer than this are compared on their first DefaultMaxLen bytes:
// the structure that tells URL shapes apart sits at the front, and the cap
// keeps one comparison at len/64 machine words per byte of the other string.
const DefaultMaxLen = 256

// LCS returns the length of the longest common subsequence of a and b,
// compared byte by byte. It is the bit-parallel algorithm of Allison and
// Dix (1986) in Hyyrö's form (2004): one pass over b, updating a bit vector
// of len(a) bits with an addition, so a comparison costs
// O(len(b)·⌈len(a)/64⌉) word operations instead of the O(len(a)·len(b))
// cells of the dynamic programme of SPEC §2. The result equals the
// dynamic programme's c[m,n] (tested against it). It does not truncate; use
// a Pattern or Similarity for capped comparisons.
func LCS(a, b string) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a // fewer words for the bit vector
	}
	if len(a) <= 64 {
		return lcs64(a, b)
	}
	return NewPattern(a, len(a)).LCS(b)
}

// lcs64 is LCS for len(a) ≤ 64: one machine word, match masks on the stack.
func lcs64(a, b string) int {
	var pm [256]uint64
	for i := 0; i < len(a); i++ {
		pm[a[i]] |= 1 << uint(i)
	}
	v := ^uint64(0)
	for i := 0; i < len(b); i++ {
		m := pm[b[i]]
		u := v & m
		v = (v + u) | (v &^ m)
	}
	mask := ^uint64(0)
	if len(a) < 64 {
		mask = 1<<uint(len(a)) - 1
	}
	return len(a) - bits.OnesCount64(v&mask)
}

// Pattern holds the match masks of one string so that it can be compared
// with many others without rebuilding them (single-pass clustering compares
// each URL with every cluster leader). A Pattern is read-only after
// NewPattern and safe for concurrent use.
type Pattern struct {
	s     string
	words int
	// pm[c*words+k] is word k of the mask of positions of byte c in s.
	pm []uint64
}

// NewPattern prepares s, truncated to maxLen bytes (maxLen ≤ 0 means
// DefaultMaxLen).
func NewPattern(s string, maxLen int) *Pattern {
	if maxLen <= 0 {
		maxLen = DefaultMaxLen
	}
	if len(s) > maxLen {
		s = s[:maxLen]
	}
	w := (len(s) + 63) / 64
	p := &Pattern{s: s, words: w, pm: make([]uint64, 256*max(w, 1))}
	for i := 0; i < len(s); i++ {
		p.pm[int(s[i])*w+i/64] |= 1 << uint(i%64)
	}
	return p
}

// Len is the length of the (truncated) pattern string.
func (p *Pattern) Len() int { return len(p.s) }

// String returns the (truncated) pattern string.
func (p *Pattern) String() string { return p.s }

// LCS returns the length of the longest common subsequence of the pattern
// and b (b is not truncated; callers cap it).
func (p *Pattern) LCS(b string) int {
	m := len(p.s)
	if m == 0 || len(b) == 0 {
		return 0
	}
	if p.words == 1 {
		v := ^uint64(0)
		for i := 0; i < len(b); i++ {
			mk := p.pm[int(b[i])]
			v = (v + (v & mk)) | (v &^ mk)
		}
		mask := ^uint64(0)
		if m < 64 {
			mask = 1<<uint(m) - 1
		}
		return m - bits.OnesCount64(v&mask)
	}
	var buf [DefaultMaxLen / 64]uint64
	var v []uint64
	if p.words <= len(buf) {
		v = buf[:p.words]
	} else {
		v = make([]uint64, p.words)
	}
	for k := range v {
		v[k] = ^uint64(0)
	}
	for i := 0; i < len(b); i++ {
		mk := p.pm[int(b[i])*p.words : int(b[i])*p.words+p.words]
		var carry uint64
		for k := range v {
			u := v[k] & mk[k]
			sum, c := bits.Add64(v[k], u, carry)
			carry = c
			v[k] = sum | (v[k] &^ mk[k])
		}
	}
	zeros := 0
	for k, w := range v {
		if k == len(v)-1 && m%64 != 0 {
			w |= ^uint64(0) << uint(m%64) // bits past the end count as ones
		}
		zeros += 64 - bits.OnesCount64(w)
	}
	return zeros
}

// Similarity is the URL similarity of SPEC §2: the mean of
// LCS(a,b)/len(a) and LCS(a,b)/len(b), in [0, 1], after truncating both
// strings to maxLen bytes (≤ 0: DefaultMaxLen). Two empty strings are
// identical (1); an empty and a non-empty string share nothing (0).
func Similarity(a, b string, maxLen int) float64 {
	if maxLen <= 0 {
		maxLen = DefaultMaxLen
	}
	if len(a) > maxLen {
		a = a[:maxLen]
	}
	if len(b) > maxLen {
		b = b[:maxLen]
	}
	return ratio(LCS(a, b), len(a), len(b))
}

// Similarity compares the pattern with b (truncated to maxLen bytes) as the
// package-level Similarity does.
func (p *Pattern) Similarity(b string, maxLen int) float64 {
	if maxLen <= 0 {
		maxLen = DefaultMaxLen
	}
	if len(b) > maxLen {
		b = b[:maxLen]
	}
	return ratio(p.LCS(b), len(p.s), len(b))
}

func ratio(l, la, lb int) float64 {
	switch {
	case la == 0 && lb == 0:
		return 1
	case la == 0 || lb == 0:
		return 0
	}
	return (float64(l)/float64(la) + float64(l)/float64(lb)) / 2
}

// lcsDP is the dynamic programme of SPEC §2 (c[i][j] over prefixes, two
// rows kept). The tests check LCS against it.
func lcsDP(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
