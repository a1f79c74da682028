package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Result packets of the distributed build travel from mappers to the single
// writer through a Redis list. A packet is binary (JSON would double the
// traffic and the writer's decoding time, which bounds the build):
//
//	"SPK" u8 version
//	u8 kind: 'D' documents, 'E' end of a task attempt
//	uv len, tag; uv len, attempt; uv packet number within the attempt
//	'D': uv items, then per item:
//	     uv len, URL; uv fetched-at (Unix ns); uv record offset;
//	     u8 has-cluster-info; with it (an indexable page, dupes.go): uv
//	     depth; uv fingerprint; uv SimHash; uv len, canonical URL; uv len,
//	     final URL;
//	     u8 has-doc;
//	     with a doc: uv len, title; uv len, stored text; uv len, snippet
//	     marks; uv length;
//	     uv terms, per term: uv len, term; uv short-field and uv
//	     main-text frequency (BM25F); uv positions; position deltas; then uv len, final
//	     URL; uv anchors, per anchor: uv len, target URL; uv len, text
//	'E': uv packets the attempt sent before this one
const (
	packetMagic   = "SPK"
	packetVersion = 4
)

// ErrPacket is wrapped by errors decoding a result packet.
var ErrPacket = errors.New("malformed index result packet")

// packet is one decoded result packet.
type packet struct {
	kind    byte
	tag     string
	attempt string
	seq     int
	items   []packetItem
	count   int // 'E': packets sent before it
}

// packetItem is one URL's outcome: a document, or a deletion when doc is
// nil.
type packetItem struct {
	url     string
	fetched int64
	offset  int64
	doc     *Doc
	final   string   // the page's final URL (anchor targets)
	anchors []anchor // the page's links' anchor texts
	// dup is what the duplicate clusters need of an indexable page (nil:
	// the record is not indexable), so that the writer computes them as
	// the embedded build does.
	dup *clusterPage
}

func encodePacket(p *packet) []byte {
	b := append([]byte(packetMagic), packetVersion, p.kind)
	b = appendBytes(b, []byte(p.tag))
	b = appendBytes(b, []byte(p.attempt))
	b = binary.AppendUvarint(b, uint64(p.seq))
	if p.kind == 'E' {
		return binary.AppendUvarint(b, uint64(p.count))
	}
	b = binary.AppendUvarint(b, uint64(len(p.items)))
	for _, it := range p.items {
		b = appendBytes(b, []byte(it.url))
		b = binary.AppendUvarint(b, uint64(it.fetched))
		b = binary.AppendUvarint(b, uint64(it.offset))
		if c := it.dup; c != nil {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(c.depth))
			b = binary.AppendUvarint(b, c.fp)
			b = binary.AppendUvarint(b, c.sim)
			b = appendBytes(b, []byte(c.canonical))
			b = appendBytes(b, []byte(c.final))
		} else {
			b = append(b, 0)
		}
		if it.doc == nil {
			b = append(b, 0)
			continue
		}
		d := it.doc
		b = append(b, 1)
		b = appendBytes(b, []byte(d.Title))
		b = appendBytes(b, d.Text)
		b = appendBytes(b, d.Marks)
		b = binary.AppendUvarint(b, uint64(d.Len))
		b = binary.AppendUvarint(b, uint64(len(d.Terms)))
		for _, t := range d.Terms {
			b = appendBytes(b, []byte(t.Term))
			b = binary.AppendUvarint(b, uint64(t.Short))
			b = binary.AppendUvarint(b, uint64(t.Body))
			b = binary.AppendUvarint(b, uint64(len(t.Pos)))
			prev := uint32(0)
			for _, p := range t.Pos {
				b = binary.AppendUvarint(b, uint64(p-prev))
				prev = p
			}
		}
		b = appendBytes(b, []byte(it.final))
		b = binary.AppendUvarint(b, uint64(len(it.anchors)))
		for _, an := range it.anchors {
			b = appendBytes(b, []byte(an.target))
			b = appendBytes(b, []byte(an.text))
		}
	}
	return b
}

// decodePacket decodes a packet, checking every length against the input
// so that no input can make it allocate more than a small multiple of its
// size or panic.
func decodePacket(b []byte) (*packet, error) {
	bad := func(what string) (*packet, error) {
		return nil, fmt.Errorf("%w: %s", ErrPacket, what)
	}
	if len(b) < 5 || string(b[:3]) != packetMagic {
		return bad("no packet magic")
	}
	if b[3] != packetVersion {
		return bad(fmt.Sprintf("version %d, this spider reads %d (run the same spider version everywhere)", b[3], packetVersion))
	}
	p := &packet{kind: b[4]}
	r := reader{b: b, off: 5}
	p.tag = string(r.bytes())
	p.attempt = string(r.bytes())
	p.seq = int(r.uvarint() & (1<<31 - 1))
	switch p.kind {
	case 'E':
		p.count = int(r.uvarint() & (1<<31 - 1))
	case 'D':
		n := r.uvarint()
		if n > uint64(len(b)) {
			return bad("item count exceeds the packet")
		}
		for range n {
			var it packetItem
			it.url = string(r.bytes())
			it.fetched = int64(r.uvarint() & (1<<63 - 1))
			it.offset = int64(r.uvarint() & (1<<63 - 1))
			if r.err || r.off >= len(b) {
				return bad("truncated item")
			}
			switch b[r.off] {
			case 0:
				r.off++
			case 1:
				r.off++
				c := &clusterPage{url: it.url}
				c.depth = int(r.uvarint() & (1<<31 - 1))
				c.fp, c.sim = r.uvarint(), r.uvarint()
				c.canonical, c.final = string(r.bytes()), string(r.bytes())
				it.dup = c
			default:
				return bad("bad cluster-info flag")
			}
			if r.err || r.off >= len(b) {
				return bad("truncated item")
			}
			has := b[r.off]
			r.off++
			if has == 1 {
				d := &Doc{URL: it.url}
				if it.fetched > 0 {
					d.Fetched = time.Unix(0, it.fetched).UTC()
				}
				d.Title = string(r.bytes())
				d.Text = append([]byte(nil), r.bytes()...)
				if m := r.bytes(); len(m) > 0 {
					d.Marks = append([]byte(nil), m...)
				}
				d.Len = int(r.uvarint() & (1<<31 - 1))
				nt := r.uvarint()
				if nt > uint64(len(b)) {
					return bad("term count exceeds the packet")
				}
				d.Terms = make([]TermPositions, 0, nt)
				for range nt {
					t := string(r.bytes())
					sh, bo := r.uvarint(), r.uvarint()
					np := r.uvarint()
					if r.err || sh+bo == 0 || sh >= 1<<31 || bo >= 1<<31 {
						return bad("bad term frequency")
					}
					if np > uint64(len(b)-r.off) {
						return bad("bad position count")
					}
					pos := make([]uint32, np)
					var last uint64
					for k := range pos {
						last += r.uvarint()
						if last >= 1<<31 {
							return bad("position out of range")
						}
						pos[k] = uint32(last)
						if k > 0 && pos[k] <= pos[k-1] {
							return bad("positions not ascending")
						}
					}
					if n := len(d.Terms); n > 0 && d.Terms[n-1].Term >= t {
						return bad("terms not sorted")
					}
					d.Terms = append(d.Terms, TermPositions{Term: t, Pos: pos, Short: uint32(sh), Body: uint32(bo)})
				}
				it.final = string(r.bytes())
				na := r.uvarint()
				if r.err || na > uint64(len(b)-r.off) {
					return bad("bad anchor count")
				}
				for range na {
					it.anchors = append(it.anchors, anchor{target: string(r.bytes()), text: string(r.bytes())})
				}
				it.doc = d
			} else if has != 0 {
				return bad("bad document flag")
			}
			if r.err {
				return bad("truncated item")
			}
			p.items = append(p.items, it)
		}
	default:
		return bad(fmt.Sprintf("unknown kind %q", p.kind))
	}
	if r.err {
		return bad("truncated")
	}
	if r.off != len(b) {
		return bad("trailing bytes")
	}
	if p.tag == "" || p.attempt == "" {
		return bad("missing task tag or attempt")
	}
	return p, nil
}
