package index

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	mathbits "math/bits"
	"sync"
)

// Dynamic pruning of the top-k for conjunctive queries (one word, or words
// that must all match: the common case).
//
// Each term with at least skipMinDF postings in a segment gets a skip
// index, built by one walk of its postings the first time a query (or the
// warm-up that Open starts) needs it, and kept with the segment: for every
// skipBlock postings the byte offset of the block, the document before it,
// its last document, its largest term frequency and its shortest document.
// From the last two, BM25's monotonicity (the score grows with tf and
// shrinks with the document length) bounds the score of every posting of
// the block for any average length, so the bound stays valid when other
// segments change avgdl.
//
// A block is skipped without decoding when the sum of its bound and the
// other terms' bounds plus the largest PageRank term cannot beat the
// current k-th hit: a candidate enters the heap only with a score strictly
// above it (documents come in (segment, id) order and ties keep the
// earlier). Skipped blocks still count towards Result.Total when the
// segment deletes nothing (the block's size); otherwise their documents are
// decoded to leave the deleted ones out. Terms of a conjunction other than
// the rarest jump over whole blocks whose last document lies before the
// candidate. Scores are summed in the same order as the exhaustive
// evaluation, so the hits (ties included) are identical; a property test
// checks this against eval on random corpora.
const (
	skipBlock = 128
	skipMinDF = 512
)

// skipEntry describes one block of a postings list.
type skipEntry struct {
	off      int   // byte offset of the block's first posting
	prevDoc  int32 // document before the block (-1 for the first)
	lastDoc  int32
	maxTF    int32 // largest main-text frequency
	maxShort int32 // largest short-field frequency
	minDL    int32
}

// skipIndex is a term's skip entries in one segment.
type skipIndex []skipEntry

// Document maps. A term in at least one document in mapDensity of a
// segment also gets, built in the walk that builds its skip index, a
// bitmap of its documents and its frequency in every document (one byte,
// 255 meaning 255 or more), while the segment's maps take at most
// Options.DocMapBytes. A conjunction of such terms finds its documents by
// ANDing bitmaps and scores each from the frequency bytes, without
// decoding a posting (evalMaps): on the 100k-page web most two-word
// queries are of frequent words whose lists share thousands of documents,
// the block bounds prune none of them (every block holds a document
// scoring near the top), and decoding both lists was half of a search's
// CPU time. A map costs 9/8 byte per document of the segment.
const mapDensity = 32

// skipCache holds a segment's skip indexes and document maps; safe for
// concurrent use.
type skipCache struct {
	mu        sync.Mutex
	m         map[string]skipIndex
	maps      map[string]*docMap
	mapBytes  int // bytes of the maps built or being built (≤ mapBudget)
	mapBudget int // Options.DocMapBytes (negative: no maps)
}

// docMap is a term's documents in one segment: bits has bit d%64 of word
// d/64 set when document d holds the term, tf[d] is its frequency there
// (255: 255 or more, decode the posting for the exact one).
type docMap struct {
	bits []uint64
	tf   []uint8 // main-text frequency
	sh   []uint8 // short-field frequency (255: 255 or more)
}

// skips returns the skip index of ti in s, building it (and the document
// map, when ti qualifies) on first use; nil for short lists (and for a
// damaged one, which the query's own walk reports).
func (s *segment) skips(ti termInfo) skipIndex {
	if ti.df < skipMinDF {
		return nil
	}
	s.skipc.mu.Lock()
	sk, ok := s.skipc.m[ti.term]
	withMap := false
	if !ok && ti.df*mapDensity >= s.ndocs && s.skipc.mapBytes+docMapBytes(s.ndocs) <= s.skipc.mapBudget {
		withMap = true
		s.skipc.mapBytes += docMapBytes(s.ndocs)
	}
	s.skipc.mu.Unlock()
	if ok {
		return sk
	}
	sk, dm := buildSkips(s, ti, withMap)
	s.skipc.mu.Lock()
	defer s.skipc.mu.Unlock()
	if s.skipc.m == nil {
		s.skipc.m, s.skipc.maps = map[string]skipIndex{}, map[string]*docMap{}
	}
	if first, dup := s.skipc.m[ti.term]; dup {
		dm, sk = nil, first // another search built it meanwhile
	}
	if withMap && dm == nil {
		s.skipc.mapBytes -= docMapBytes(s.ndocs) // not kept: give the budget back
	}
	s.skipc.m[ti.term] = sk
	if dm != nil {
		s.skipc.maps[ti.term] = dm
	}
	return sk
}

// docMap returns ti's document map in s, nil when it has none. It builds
// the skip index first if needed.
func (s *segment) docMap(ti termInfo) *docMap {
	if s.skips(ti) == nil {
		return nil
	}
	s.skipc.mu.Lock()
	defer s.skipc.mu.Unlock()
	return s.skipc.maps[ti.term]
}

// docMapBytes is the size of a document map over n documents.
func docMapBytes(n int) int { return (n+63)/64*8 + 2*n }

// buildSkips walks ti's postings once, filling its document map too with
// withMap.
func buildSkips(s *segment, ti termInfo, withMap bool) (skipIndex, *docMap) {
	sk := make(skipIndex, 0, (ti.df+skipBlock-1)/skipBlock)
	var dm *docMap
	if withMap {
		dm = &docMap{bits: make([]uint64, (s.ndocs+63)/64), tf: make([]uint8, s.ndocs), sh: make([]uint8, s.ndocs)}
	}
	it := newPostIter(s, ti)
	for i := 0; ; i++ {
		off, prev := it.r.off, it.doc
		p, ok := it.next()
		if !ok {
			break
		}
		if i%skipBlock == 0 {
			sk = append(sk, skipEntry{off: off, prevDoc: int32(prev), minDL: math.MaxInt32})
		}
		e := &sk[len(sk)-1]
		e.lastDoc = int32(p.doc)
		e.maxTF = max(e.maxTF, int32(min(p.freq, math.MaxInt32)))
		e.maxShort = max(e.maxShort, int32(min(p.short, math.MaxInt32)))
		e.minDL = min(e.minDL, int32(min(s.docLen(p.doc), math.MaxInt32)))
		if dm != nil {
			dm.bits[p.doc/64] |= 1 << (p.doc % 64)
			dm.tf[p.doc] = uint8(min(p.freq, 255))
			dm.sh[p.doc] = uint8(min(p.short, 255))
		}
	}
	if it.err != nil {
		return nil, nil
	}
	return sk, dm
}

// errStopWarm ends a warm-up early.
var errStopWarm = errors.New("warm-up stopped")

// warmSkips builds the skip indexes of every long postings list of s,
// until stop is closed.
func (s *segment) warmSkips(stop <-chan struct{}) {
	s.terms(func(ti termInfo) error {
		select {
		case <-stop:
			return errStopWarm
		default:
		}
		s.skips(ti)
		return nil
	})
}

// bm25Score is BM25F of one posting (see FieldWeights): the short-field
// frequency plus the length-normalised main-text frequency, saturated.
// With short 0 it is BM25. Every scorer uses it, so pruned and exhaustive
// evaluation compute bit-identical scores. It grows with short and tf and
// shrinks with dl, which the block bounds rely on.
func bm25Score(idf float64, short, tf, dl int, p bm25Params) float64 {
	x := float64(tf) / (1 - bm25B + bm25B*float64(dl)/max(p.avgdl, 1))
	if short > 0 {
		x += float64(short) / shortScale
	}
	return idf * x * (p.k1 + 1) / (x + p.k1)
}

// bm25Params are what BM25F needs beyond a posting: k1 (the index's, see
// FieldWeights.K1) and the average main-text length.
type bm25Params struct {
	k1, avgdl float64
}

// boundSlack widens every bound against rounding.
const boundSlack = 1 + 1e-9

// bound bounds the BM25 contribution of any posting of the block. The
// idf is negative when a term's document frequency (counted over all
// segments, overridden copies included) exceeds the live documents; every
// contribution is then ≤ 0.
func (e skipEntry) bound(idf float64, p bm25Params) float64 {
	if idf <= 0 {
		return 0
	}
	return bm25Score(idf, int(e.maxShort), int(e.maxTF), int(e.minDL), p) * boundSlack
}

// cursor walks one term's postings, jumping with its skip index.
type cursor struct {
	it  postIter
	df  int
	sk  skipIndex
	p   posting
	ok  bool
	idf float64
}

// newCursor opens a cursor on ti's postings in e's segment, with its skip
// index unless e is exhaustive.
func (e *evalCtx) newCursor(ti termInfo, idf float64) *cursor {
	c := &cursor{it: newPostIter(e.seg, ti), df: ti.df, idf: idf}
	if !e.exh {
		c.sk = e.seg.skips(ti)
	}
	c.p, c.ok = c.it.next()
	return c
}

// seek moves to the first posting with a document ≥ d.
func (c *cursor) seek(d int) {
	if !c.ok || c.p.doc >= d {
		return
	}
	if c.sk != nil {
		// The block of the next posting, then the first block that can
		// hold d.
		b := (c.df - c.it.n) / skipBlock
		nb := b
		for nb < len(c.sk) && int(c.sk[nb].lastDoc) < d {
			nb++
		}
		if nb == len(c.sk) {
			c.ok = false
			return
		}
		if nb > b {
			c.jump(nb)
		}
	}
	for c.ok && c.p.doc < d {
		c.p, c.ok = c.it.next()
	}
}

// jump positions the cursor on the first posting of block b.
func (c *cursor) jump(b int) {
	e := c.sk[b]
	c.it.r.off, c.it.doc, c.it.n = e.off, int(e.prevDoc), c.df-b*skipBlock
	c.p, c.ok = c.it.next()
}

// docRanks is a segment's PageRank scores by document number for one
// rank file, so that ranking a candidate is an array read instead of
// decoding its URL and hashing it into the rank map (which cost a third of
// a search's CPU); safe for concurrent use.
type docRanks struct {
	mu  sync.Mutex
	set *rankSet  // the rank file pr belongs to
	pr  []float64 // pr[doc]; 0 for a page without a score
	lr  []float64 // lr[doc] = ln(1 + pr[doc]·n): the rank term before its weight
}

// docRanks returns s's document scores in rs and their logarithms (see
// docRanks.lr), computing them on the first call for rs (one pass over the
// segment's URLs).
func (s *segment) docRanks(rs *rankSet) (pr, lr []float64) {
	s.ranks.mu.Lock()
	defer s.ranks.mu.Unlock()
	if s.ranks.set != rs {
		pr, lr := make([]float64, s.ndocs), make([]float64, s.ndocs)
		for i := range pr {
			if u, ok := s.docURLBytes(i); ok {
				pr[i] = rs.scores[string(u)]
			}
			lr[i] = math.Log1p(pr[i] * rs.n)
		}
		s.ranks.set, s.ranks.pr, s.ranks.lr = rs, pr, lr
	}
	return s.ranks.pr, s.ranks.lr
}

// topk collects the best hits over segments in (segment, document) order.
type topk struct {
	h       hitHeap
	keep    int
	total   int
	weight  float64
	ranks   *rankSet
	maxRank float64   // bound of the PageRank term of any document
	pr, lr  []float64 // the current segment's scores and their logarithms (segment)
}

// segment prepares k for the candidates of s.
func (k *topk) segment(s *segment) {
	if k.ranks != nil && k.weight != 0 {
		k.pr, k.lr = s.docRanks(k.ranks)
	}
}

func newTopk(keep int, ranks *rankSet, weight float64) *topk {
	k := &topk{h: make(hitHeap, 0, keep+1), keep: keep, ranks: ranks, weight: weight}
	if ranks != nil && weight != 0 {
		k.maxRank = weight * math.Log1p(ranks.max*ranks.n) * boundSlack
	}
	return k
}

// threshold is the score a candidate must exceed, -Inf until k hits.
func (k *topk) threshold() float64 {
	if len(k.h) < k.keep {
		return math.Inf(-1)
	}
	return k.h[0].score
}

// rankTerm is the PageRank term offer adds to document doc's BM25 score
// (0 without ranks).
func (k *topk) rankTerm(doc int) float64 {
	if k.pr == nil {
		return 0
	}
	return k.weight * k.lr[doc] // = weight · ln(1 + pr·n), as explain shows it
}

// offer considers document doc of segment si with BM25 score bm; its
// PageRank is looked up only when it could matter.
func (k *topk) offer(si int, doc int32, bm float64) {
	if bm+k.maxRank <= k.threshold() {
		return
	}
	c := scored{seg: si, doc: doc, bm25: bm, score: bm}
	if k.pr != nil {
		c.pr = k.pr[doc]
		c.score += k.rankTerm(int(doc))
	}
	if len(k.h) < k.keep {
		heap.Push(&k.h, c)
	} else if worse(k.h[0], c) {
		k.h[0] = c
		heap.Fix(&k.h, 0)
	}
}

// conjunction returns the terms of a query that only needs all of them
// (in the order eval sums their scores), or false.
func conjunction(n qnode) ([]string, bool) {
	switch n := n.(type) {
	case qterms:
		return n.terms, true
	case *qand:
		if len(n.neg) > 0 || len(n.sites) > 0 || len(n.pos) == 0 {
			return nil, false
		}
		var out []string
		for _, k := range n.pos {
			t, ok := k.(qterms)
			if !ok {
				return nil, false
			}
			out = append(out, t.terms...)
		}
		return out, true
	}
	return nil, false
}

// evalConjunction adds the documents of segment si holding all terms to
// k (and counts them in k.total), pruning as described above. A term
// missing from the segment adds nothing.
func (e *evalCtx) evalConjunction(k *topk, si int, terms []string) {
	curs := make([]*cursor, len(terms))
	lead := 0
	for i, t := range terms {
		ti := e.lookup(t)
		if ti == nil || e.err != nil {
			return
		}
		curs[i] = e.newCursor(*ti, e.idf(t))
		if ti.df < curs[lead].df {
			lead = i
		}
	}
	nodel := e.ndel == 0
	if len(terms) == 1 {
		e.evalOne(k, si, curs[0], nodel)
		return
	}
	if maps := e.docMaps(curs, terms); maps != nil {
		e.evalMaps(k, si, curs, maps)
		return
	}
	// The rarest term leads; the others seek to its documents, jumping
	// over the blocks that end before it. Every document of the
	// intersection is counted; offer skips the PageRank look-up of those
	// that cannot enter the top k.
	lc := curs[lead]
	for lc.ok {
		d := lc.p.doc
		all := true
		for i, c := range curs {
			if i == lead {
				continue
			}
			c.seek(d)
			if !c.ok {
				e.noteCursors(curs)
				return
			}
			if c.p.doc != d {
				all = false
				// Let the lead catch up with this term.
				lc.seek(c.p.doc)
				break
			}
		}
		if !all {
			continue
		}
		if !e.del[d] {
			k.total++
			s := 0.0
			dl := e.seg.docLen(d)
			for i, c := range curs {
				if i == 0 {
					s = bm25Score(c.idf, c.p.short, c.p.freq, dl, e.params())
				} else {
					s += bm25Score(c.idf, c.p.short, c.p.freq, dl, e.params())
				}
			}
			k.offer(si, int32(d), s)
		}
		lc.p, lc.ok = lc.it.next()
	}
	e.noteCursors(curs)
}

// docMaps returns the document maps of all terms in e's segment, or nil
// unless every term has one.
func (e *evalCtx) docMaps(curs []*cursor, terms []string) []*docMap {
	out := make([]*docMap, len(terms))
	for i, t := range terms {
		if curs[i].sk == nil {
			return nil
		}
		if out[i] = e.seg.docMap(*e.lookup(t)); out[i] == nil {
			return nil
		}
	}
	return out
}

// evalMaps is evalConjunction when every term has a document map: the
// documents holding all terms are the AND of the bitmaps, and each is
// scored from the frequency bytes (a cursor decodes the posting only for
// a frequency of 255 or more); scores are summed in the exhaustive order,
// so the hits are the same.
func (e *evalCtx) evalMaps(k *topk, si int, curs []*cursor, maps []*docMap) {
	for w := range maps[0].bits {
		x := maps[0].bits[w]
		for _, m := range maps[1:] {
			x &= m.bits[w]
		}
		for ; x != 0; x &= x - 1 {
			d := w*64 + mathbits.TrailingZeros64(x)
			if e.del[d] {
				continue
			}
			k.total++
			dl := e.seg.docLen(d)
			s := 0.0
			for i, c := range curs {
				tf, sh := int(maps[i].tf[d]), int(maps[i].sh[d])
				if tf == 255 || sh == 255 {
					if c.seek(d); !c.ok || c.p.doc != d {
						if e.noteCursors(curs); e.err == nil {
							e.err = fmt.Errorf("postings in segment %s disagree with a document map: %w", e.seg.name, ErrCorrupt)
						}
						return
					}
					tf, sh = c.p.freq, c.p.short
				}
				if i == 0 {
					s = bm25Score(c.idf, sh, tf, dl, e.params())
				} else {
					s += bm25Score(c.idf, sh, tf, dl, e.params())
				}
			}
			k.offer(si, int32(d), s)
		}
	}
	e.noteCursors(curs)
}

// evalOne is evalConjunction for one term: whole blocks whose bound cannot
// beat the threshold are skipped (counted by size when nothing is deleted).
func (e *evalCtx) evalOne(k *topk, si int, c *cursor, nodel bool) {
	if c.sk == nil {
		for ; c.ok; c.p, c.ok = c.it.next() {
			if !e.del[c.p.doc] {
				k.total++
				k.offer(si, int32(c.p.doc), bm25Score(c.idf, c.p.short, c.p.freq, e.seg.docLen(c.p.doc), e.params()))
			}
		}
		e.noteCursors([]*cursor{c})
		return
	}
	for b := 0; b < len(c.sk); b++ {
		n := min(skipBlock, c.df-b*skipBlock)
		score := c.sk[b].bound(c.idf, e.params())+k.maxRank > k.threshold()
		if !score && nodel {
			k.total += n
			continue
		}
		c.jump(b)
		for i := 0; i < n && c.ok; i++ {
			if !e.del[c.p.doc] {
				k.total++
				if score {
					k.offer(si, int32(c.p.doc), bm25Score(c.idf, c.p.short, c.p.freq, e.seg.docLen(c.p.doc), e.params()))
				}
			}
			if i+1 < n {
				c.p, c.ok = c.it.next()
			}
		}
		if c.it.err != nil {
			break
		}
	}
	e.noteCursors([]*cursor{c})
}

func (e *evalCtx) noteCursors(cs []*cursor) {
	for _, c := range cs {
		if c != nil {
			e.noteIter(&c.it)
		}
	}
}
