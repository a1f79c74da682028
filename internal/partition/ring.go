package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// DefaultBuckets is the default number M of logical buckets (SPEC §4 level 1: M ≫ nodes).
const DefaultBuckets = 4096

// DefaultPointsPerWeight is the default K: a member of weight w owns w·K points of the
// ring. With K = 128 the arc share of a member of weight 40 among weights summing to 470
// is within about 1.4% (one standard deviation) of its weight share; see the package doc
// for the other limit on balance.
const DefaultPointsPerWeight = 128

// MaxPoints bounds the total number of ring points (Σ weight·K), about 256 MiB of ring.
const MaxPoints = 1 << 24

// Errors returned by NewRing.
var (
	// ErrNoMembers: a ring needs at least one member.
	ErrNoMembers = errors.New("no members")
	// ErrBadMember: a member has an empty ID, a duplicate ID or a weight below 1, or the
	// ring would exceed MaxPoints.
	ErrBadMember = errors.New("bad member")
)

// Bucket maps a host to one of m logical buckets: xxhash64(host) mod m, with ASCII
// letters lower-cased first so that "Example.COM" and "example.com" share a bucket.
// m ≤ 0 selects DefaultBuckets. The result is in [0, m).
func Bucket(host string, m int) int {
	if m <= 0 {
		m = DefaultBuckets
	}
	if hasUpper(host) {
		host = strings.ToLower(host)
	}
	return int(xxhash.Sum64String(host) % uint64(m))
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// Member is one node of the ring.
type Member struct {
	// ID names the node; it must be non-empty and unique in the ring.
	ID string
	// Weight is the node's share of the load in virtual-node units (SPEC §3: "each real
	// node has N ≥ 1 virtual nodes"); it must be ≥ 1. The node owns Weight·K ring points.
	Weight int
}

// RingOption changes how NewRing builds a ring. Every node of a crawl must build its ring
// with the same options, or the nodes disagree on ownership.
type RingOption func(*Ring)

// PointsPerWeight sets K, the ring points per unit of weight (default
// DefaultPointsPerWeight); k < 1 keeps the default.
func PointsPerWeight(k int) RingOption {
	return func(r *Ring) {
		if k >= 1 {
			r.k = k
		}
	}
}

type point struct {
	hash   uint64
	member int32 // index into Ring.members
}

// Ring is a consistent-hash ring with weighted virtual nodes. It is immutable and safe for
// concurrent use.
type Ring struct {
	k       int
	members []Member // sorted by ID
	total   int      // Σ weights
	points  []point  // sorted by (hash, member)
}

// NewRing builds the ring of members. The input order does not matter (members are sorted
// by ID) and the slice is not retained. It returns ErrNoMembers for an empty list and
// ErrBadMember for an empty or duplicate ID, a weight below 1 or more than MaxPoints points.
func NewRing(members []Member, opts ...RingOption) (*Ring, error) {
	r := &Ring{k: DefaultPointsPerWeight}
	for _, o := range opts {
		o(r)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("cannot build a ring: %w: give at least one member", ErrNoMembers)
	}
	r.members = slices.Clone(members)
	slices.SortFunc(r.members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	n := 0
	for i, m := range r.members {
		switch {
		case m.ID == "":
			return nil, fmt.Errorf("cannot build a ring: %w: a member has an empty ID", ErrBadMember)
		case m.Weight < 1:
			return nil, fmt.Errorf("cannot build a ring: %w: member %q has weight %d, want ≥ 1", ErrBadMember, m.ID, m.Weight)
		case i > 0 && r.members[i-1].ID == m.ID:
			return nil, fmt.Errorf("cannot build a ring: %w: member %q appears twice", ErrBadMember, m.ID)
		}
		r.total += m.Weight
		n += m.Weight * r.k
		if m.Weight > MaxPoints || n > MaxPoints {
			return nil, fmt.Errorf("cannot build a ring: %w: more than %d points (lower the weights or K)", ErrBadMember, MaxPoints)
		}
	}
	r.points = make([]point, 0, n)
	var buf []byte
	for mi, m := range r.members {
		buf = append(buf[:0], m.ID...)
		buf = append(buf, '#')
		base := len(buf)
		for i := range m.Weight * r.k {
			buf = strconv.AppendInt(buf[:base], int64(i), 10)
			r.points = append(r.points, point{hash: xxhash.Sum64(buf), member: int32(mi)})
		}
	}
	slices.SortFunc(r.points, func(a, b point) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return int(a.member - b.member)
	})
	return r, nil
}

// Members returns the ring's members sorted by ID; the caller owns the slice.
func (r *Ring) Members() []Member { return slices.Clone(r.members) }

// PointsPerWeight returns K.
func (r *Ring) PointsPerWeight() int { return r.k }

// Share returns id's weight share, Weight/Σ weights (0 for a non-member): the share of
// buckets the ring should give it.
func (r *Ring) Share(id string) float64 {
	i, ok := r.index(id)
	if !ok {
		return 0
	}
	return float64(r.members[i].Weight) / float64(r.total)
}

func (r *Ring) index(id string) (int, bool) {
	return slices.BinarySearchFunc(r.members, id, func(m Member, id string) int { return strings.Compare(m.ID, id) })
}

// bucketPos places bucket b on the circle.
func bucketPos(b int) uint64 {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(b))
	return xxhash.Sum64(buf[:])
}

// successor returns the index of the first point at or after pos, wrapping around.
func (r *Ring) successor(pos uint64) int {
	i, _ := slices.BinarySearchFunc(r.points, pos, func(p point, pos uint64) int {
		if p.hash < pos {
			return -1
		}
		if p.hash > pos {
			return 1
		}
		return 0
	})
	if i == len(r.points) {
		return 0
	}
	return i
}

// Owner returns the ID of the member that owns bucket (any int: the ring does not know M).
func (r *Ring) Owner(bucket int) string {
	return r.members[r.points[r.successor(bucketPos(bucket))].member].ID
}

// Owners returns the bucket → member table for buckets 0…m−1 (SPEC §4 level 2): entry b
// is Owner(b). m ≤ 0 selects DefaultBuckets. The caller owns the slice.
func (r *Ring) Owners(m int) []string {
	if m <= 0 {
		m = DefaultBuckets
	}
	out := make([]string, m)
	for b := range out {
		out[b] = r.Owner(b)
	}
	return out
}

// Balanced returns a bucket → member table for buckets 0…m−1 in which no member owns more
// than ⌈(1+slack)·m·weight/Σweights⌉ buckets (consistent hashing with bounded loads):
// every bucket first goes to its ring owner, as in Owners; a member above its cap keeps
// the cap buckets of lowest rank (a fixed hash of the bucket) and sheds the others, each
// of which walks clockwise from its own position to the first member with room. With
// slack 0 every member is within one bucket of its quota from above; the rest of the
// buckets spread over the members below quota. A change of members moves the buckets
// Owners would move plus a few shed ones (measured in the tests). m ≤ 0 selects
// DefaultBuckets; slack < 0 is taken as 0. Deterministic like Owners.
func (r *Ring) Balanced(m int, slack float64) []string {
	if m <= 0 {
		m = DefaultBuckets
	}
	slack = max(slack, 0)
	owner := make([]int32, m)
	count := make([]int, len(r.members))
	for b := range owner {
		owner[b] = r.points[r.successor(bucketPos(b))].member
		count[owner[b]]++
	}
	limit := make([]int, len(r.members))
	for i, mem := range r.members {
		limit[i] = int(math.Ceil((1 + slack) * float64(m) * float64(mem.Weight) / float64(r.total)))
	}
	// Buckets in rank order; each over-cap member sheds the highest ranks.
	order := make([]int, m)
	for b := range order {
		order[b] = b
	}
	slices.SortFunc(order, func(a, b int) int {
		ra, rb := bucketRank(a), bucketRank(b)
		if ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		return a - b
	})
	kept := make([]int, len(r.members))
	var shed []int
	for _, b := range order {
		mi := owner[b]
		if kept[mi] < limit[mi] {
			kept[mi]++
			continue
		}
		shed = append(shed, b)
	}
	for _, b := range shed {
		i := r.successor(bucketPos(b))
		for kept[r.points[i].member] >= limit[r.points[i].member] {
			i++
			if i == len(r.points) {
				i = 0
			}
		}
		owner[b] = r.points[i].member
		kept[owner[b]]++
	}
	out := make([]string, m)
	for b, mi := range owner {
		out[b] = r.members[mi].ID
	}
	return out
}

// bucketRank orders buckets for shedding, independently of their ring position.
func bucketRank(b int) uint64 {
	var buf [9]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(b))
	buf[8] = 'r'
	return xxhash.Sum64(buf[:])
}
