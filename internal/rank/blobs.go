package rank

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
)

// The map/reduce messages are small binary blobs (little endian), each
// ending with a CRC-32C of the bytes before it. They are hand-written rather
// than JSON or gob because a round moves one float64 per node each way and
// JSON would triple that (and lose the exact bits unless printed with 17
// digits).
//
//	part    "RKP1" n u32, lo u32, hi u32, edges u32,
//	        (hi-lo+1) × u32 offsets relative to the part, edges × u32 targets
//	ranks   "RKR1" count u32, count × f64
//	result  "RKS1" dangling f64, count u32, count × u32 ids (ascending),
//	        count × f64 sums

// errBlob is wrapped by every decoding error of a map/reduce message.
var errBlob = errors.New("malformed map/reduce message")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// part is one range of source nodes with their out-links: what a worker
// caches across the rounds of a run.
type part struct {
	n      int      // nodes of the whole graph
	lo, hi int      // source ids [lo, hi)
	off    []uint32 // hi-lo+1 offsets into targets
	tgt    []uint32
}

// result is a worker's answer for one task: the rank held by the part's
// dangling nodes and, for every node the part links to, the sum of the
// contributions it receives from the part.
type result struct {
	dangling float64
	ids      []uint32
	sums     []float64
}

func seal(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// open checks the magic and checksum of b and returns its body.
func open(b []byte, magic string) ([]byte, error) {
	if len(b) < len(magic)+4 {
		return nil, fmt.Errorf("%w: %d bytes", errBlob, len(b))
	}
	if string(b[:4]) != magic {
		return nil, fmt.Errorf("%w: magic %q, want %q", errBlob, b[:4], magic)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBlob)
	}
	return body[4:], nil
}

func encodePart(p *part) []byte {
	b := make([]byte, 0, 20+4*(len(p.off)+len(p.tgt))+4)
	b = append(b, "RKP1"...)
	for _, v := range []int{p.n, p.lo, p.hi, len(p.tgt)} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	for _, o := range p.off {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	for _, t := range p.tgt {
		b = binary.LittleEndian.AppendUint32(b, t)
	}
	return seal(b)
}

// MaxGraphNodes bounds the node count of a graph part a rank worker
// accepts from Redis (2^28 pages: 2.3 GiB of accumulators), so that whoever
// can write the crawl's Redis keys cannot make a worker allocate 36 GiB.
const MaxGraphNodes = 1 << 28

func decodePart(b []byte) (*part, error) {
	body, err := open(b, "RKP1")
	if err != nil {
		return nil, err
	}
	if len(body) < 16 {
		return nil, fmt.Errorf("%w: short part header", errBlob)
	}
	u := func(i int) uint64 { return uint64(binary.LittleEndian.Uint32(body[4*i:])) }
	n, lo, hi, m := u(0), u(1), u(2), u(3)
	if lo > hi || hi > n {
		return nil, fmt.Errorf("%w: part range [%d,%d) of %d nodes", errBlob, lo, hi, n)
	}
	if n > MaxGraphNodes {
		// A worker allocates its accumulators by the node count before any
		// value arrives: a blob from Redis must not size them at will.
		return nil, fmt.Errorf("%w: part claims %d nodes, more than the %d a worker accepts", errBlob, n, MaxGraphNodes)
	}
	if uint64(len(body)) != 16+4*(hi-lo+1)+4*m {
		return nil, fmt.Errorf("%w: part of %d bytes does not match its header", errBlob, len(body))
	}
	p := &part{n: int(n), lo: int(lo), hi: int(hi), off: make([]uint32, hi-lo+1), tgt: make([]uint32, m)}
	at := 16
	for i := range p.off {
		p.off[i] = binary.LittleEndian.Uint32(body[at:])
		at += 4
	}
	for i := range p.tgt {
		p.tgt[i] = binary.LittleEndian.Uint32(body[at:])
		if uint64(p.tgt[i]) >= n {
			return nil, fmt.Errorf("%w: target %d beyond %d nodes", errBlob, p.tgt[i], n)
		}
		at += 4
	}
	if p.off[0] != 0 || uint64(p.off[len(p.off)-1]) != m {
		return nil, fmt.Errorf("%w: part offsets do not span its %d edges", errBlob, m)
	}
	for i := 1; i < len(p.off); i++ {
		if p.off[i] < p.off[i-1] {
			return nil, fmt.Errorf("%w: part offsets decrease", errBlob)
		}
	}
	return p, nil
}

func encodeRanks(r []float64) []byte {
	b := make([]byte, 0, 8+8*len(r)+4)
	b = append(b, "RKR1"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r)))
	for _, v := range r {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return seal(b)
}

func decodeRanks(b []byte) ([]float64, error) {
	body, err := open(b, "RKR1")
	if err != nil {
		return nil, err
	}
	if len(body) < 4 {
		return nil, fmt.Errorf("%w: short ranks header", errBlob)
	}
	n := uint64(binary.LittleEndian.Uint32(body))
	if uint64(len(body)) != 4+8*n {
		return nil, fmt.Errorf("%w: ranks of %d bytes for %d values", errBlob, len(body), n)
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[4+8*i:]))
	}
	return r, nil
}

func encodeResult(r *result) []byte {
	b := make([]byte, 0, 16+12*len(r.ids)+4)
	b = append(b, "RKS1"...)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.dangling))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.ids)))
	for _, id := range r.ids {
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	for _, s := range r.sums {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s))
	}
	return seal(b)
}

// decodeResult parses a result for a graph of n nodes.
func decodeResult(b []byte, n int) (*result, error) {
	body, err := open(b, "RKS1")
	if err != nil {
		return nil, err
	}
	if len(body) < 12 {
		return nil, fmt.Errorf("%w: short result header", errBlob)
	}
	r := &result{dangling: math.Float64frombits(binary.LittleEndian.Uint64(body))}
	c := uint64(binary.LittleEndian.Uint32(body[8:]))
	if uint64(len(body)) != 12+12*c {
		return nil, fmt.Errorf("%w: result of %d bytes for %d pairs", errBlob, len(body), c)
	}
	r.ids = make([]uint32, c)
	r.sums = make([]float64, c)
	for i := range r.ids {
		r.ids[i] = binary.LittleEndian.Uint32(body[12+4*i:])
		if int(r.ids[i]) >= n || i > 0 && r.ids[i] <= r.ids[i-1] {
			return nil, fmt.Errorf("%w: result ids out of range or order", errBlob)
		}
	}
	at := 12 + 4*int(c)
	for i := range r.sums {
		r.sums[i] = math.Float64frombits(binary.LittleEndian.Uint64(body[at+8*i:]))
	}
	return r, nil
}

func sortUint32(s []uint32) { slices.Sort(s) }
