package index

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/rank"
)

// BM25 parameters (Robertson–Zaragoza defaults, as in Lucene).
const (
	bm25K1 = 1.2 // classic BM25; an index records its own (FieldWeights.K1)
	bm25B  = 0.75
)

// DefaultRankWeight is the weight of the PageRank boost when neither
// Options nor Request set one, chosen by the judged evaluation of
// bench/relevance (bench/RESULTS.md, "Ranking: BM25F and PageRank"; 0.5
// since "PageRank without site-wide links", with ranks computed without
// site-wide links, graph.DefaultSiteWide).
const DefaultRankWeight = 0.5

// MaxProximityWeight bounds Request.ProximityWeight.
const MaxProximityWeight = 100

// ErrNoIndex is wrapped by Open when the directory holds no index yet.
var ErrNoIndex = errors.New("no search index")

// Options configure Open. The zero value works.
type Options struct {
	// RankFile is the PageRank scores file (rank.ReadScores format).
	// Default: rank.PagesFile under the parent of the index directory
	// (DATA/rank/pages.tsv). A missing file means every rank is 0; that is
	// logged once.
	RankFile string
	// RankWeight weighs the PageRank boost added to BM25 (see Hit). 0 or
	// negative means DefaultRankWeight; use Request.RankWeight 0 for pure
	// BM25.
	RankWeight float64
	// ReloadInterval is how often Search checks the manifest (and the
	// rank file) for changes. Default 1s; negative disables the check
	// (call Reload).
	ReloadInterval time.Duration
	// Logger receives reloads and the missing-ranks notice. Nil discards.
	Logger *slog.Logger
	// Exhaustive scores every matching posting instead of pruning (the
	// reference the pruned evaluation is tested against; same results).
	Exhaustive bool
	// NoWarm leaves the skip indexes of long postings lists to be built
	// by the first query needing each, instead of in the background as
	// segments are opened.
	NoWarm bool
	// DocMapBytes bounds, per segment, the memory of the document maps of
	// frequent terms (a bitmap and a frequency byte per document: see
	// topk.go) that let conjunctions of them skip decoding postings.
	// Default DefaultDocMapBytes; negative: no maps.
	DocMapBytes int
}

// DefaultDocMapBytes is Options.DocMapBytes' default: 64 MiB per segment,
// the maps of about 540 frequent terms over 100,000 pages.
const DefaultDocMapBytes = 64 << 20

// Request is one search.
type Request struct {
	Query  string
	Offset int // hits to skip (paging); 0–10,000
	Limit  int // hits to return; 0 means 10, at most 1,000
	// RankWeight weighs the PageRank boost; negative means the index's
	// default (Options.RankWeight), 0 ranks by BM25 alone.
	RankWeight float64
	// ProximityWeight weighs the term-proximity bonus (0 to 0.80 a page:
	// how close two different query terms come in it, see proximity)
	// added to the scores of the best ProximityWindow candidates of a
	// query of two or more terms. 0 (the default): no proximity.
	ProximityWeight float64
	Explain         bool // fill Hit.Explain
}

// Result is the answer to a Request.
type Result struct {
	// Total is the number of documents matching, less the duplicates
	// collapsed into their clusters (Hit.Similar) among the ranked
	// candidates: exact when every match was ranked (fewer than
	// Offset+Limit plus the clusters' members), else an upper bound.
	Total int
	Hits  []Hit         // Offset … Offset+Limit-1 of them, best first
	Took  time.Duration // time spent in Search
	Terms []string      // the query's positive terms, after analysis
}

// Hit is one matching page. Score = BM25 + RankWeight × ln(1 + PageRank × R)
// (+ Proximity), where R is the number of ranked pages (so a page of
// average rank gets RankWeight × ln 2).
type Hit struct {
	URL, Title string
	Snippet    []Fragment
	Score      float64
	BM25       float64
	PageRank   float64
	// Proximity is the weighted term-proximity term of Score (0 when the
	// search used none).
	Proximity float64
	Explain   string
	// Similar is the number of other pages in the hit's duplicate cluster
	// (exact and near duplicates, pages whose canonical URL is this one;
	// dupes.go): they are not shown beside it.
	Similar int
	// Fetched is when the crawl last fetched the page (a 304 "not
	// modified" counts), to the second; zero when the index does not know
	// (built before spider kept it: spider index --rebuild).
	Fetched time.Time
}

// Fragment is a piece of a snippet: plain text, Match marks a query term.
type Fragment struct {
	Text  string
	Match bool
}

// Stats describe an open index.
type Stats struct {
	Docs     int   // live documents
	Terms    int   // dictionary entries summed over segments
	Segments int   // segment files
	Bytes    int64 // size of the segment files
	Ranked   int   // pages with a PageRank score
}

// Index is an open, read-only view of an index directory that follows the
// writer: Search notices a new manifest (new or merged segments) within
// Options.ReloadInterval. It is safe for concurrent use.
type Index struct {
	dir string
	opt Options
	log *slog.Logger
	an  *analysis.Analyzer

	mu        sync.Mutex // guards the fields below and reloads
	cur       *snapshot
	stamp     fileStamp
	rankStamp fileStamp
	ranks     *rankSet
	clusters  clusterCache // the duplicate clusters (dupes.go)
	lastCheck time.Time
	rankNoted bool
	closed    bool

	stop chan struct{}  // closed by Close: ends the warm-ups
	warm sync.WaitGroup // running warm-ups
}

// fileStamp identifies one version of a file.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: info.ModTime(), size: info.Size(), ok: true}
}

// rankSet is a loaded scores file.
type rankSet struct {
	scores map[string]float64
	n      float64
	max    float64 // the largest score (bounds the PageRank term)
}

// snapshot is one manifest's segments, shared by the searches that started
// under it.
type snapshot struct {
	segs    []*refSegment
	deleted [][]bool
	ndel    []int // documents of each segment hidden by deletions
	live    int
	avgdl   float64
	k1      float64 // BM25F's k1 of the index (FieldWeights.K1)
	bodyW   int     // the main text's weight (FieldWeights.Body), for explain
	refs    atomic.Int64
}

// refSegment is a segment shared by snapshots; it is unmapped when the last
// snapshot using it is released.
type refSegment struct {
	*segment
	refs atomic.Int64
}

func (s *snapshot) release() {
	if s.refs.Add(-1) == 0 {
		for _, seg := range s.segs {
			if seg.refs.Add(-1) == 0 {
				seg.close()
			}
		}
	}
}

// Open opens the index in dir (DATA/index). It fails with an error wrapping
// ErrNoIndex when dir has no manifest, and ErrCorrupt when a file is
// damaged.
func Open(dir string, opt Options) (*Index, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.RankWeight <= 0 {
		opt.RankWeight = DefaultRankWeight
	}
	if opt.ReloadInterval == 0 {
		opt.ReloadInterval = time.Second
	}
	if opt.DocMapBytes == 0 {
		opt.DocMapBytes = DefaultDocMapBytes
	}
	if opt.RankFile == "" {
		opt.RankFile = filepath.Join(filepath.Dir(filepath.Clean(dir)), filepath.FromSlash(rank.PagesFile))
	}
	if _, exists, err := readManifest(dir); err != nil {
		return nil, err
	} else if !exists {
		return nil, fmt.Errorf("cannot open the search index: %s holds no %s; build it with spider index --data %s: %w",
			dir, ManifestFile, filepath.Dir(filepath.Clean(dir)), ErrNoIndex)
	}
	a, err := analysis.Shared()
	if err != nil {
		return nil, err
	}
	ix := &Index{dir: dir, opt: opt, log: opt.Logger, an: a, stop: make(chan struct{})}
	if err := ix.Reload(); err != nil {
		return nil, err
	}
	return ix, nil
}

// Reload re-reads the manifest and the rank file if they changed, opening
// new segments and releasing merged ones (searches still running keep
// theirs until they finish).
func (ix *Index) Reload() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.reloadLocked()
}

func (ix *Index) reloadLocked() error {
	if ix.closed {
		return errors.New("cannot reload the search index: it is closed")
	}
	ix.lastCheck = time.Now()
	ix.loadRanks()
	st := stampOf(filepath.Join(ix.dir, ManifestFile))
	if ix.cur != nil && st == ix.stamp {
		return nil
	}
	m, exists, err := readManifest(ix.dir)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("cannot reload the search index: %s disappeared from %s: %w", ManifestFile, ix.dir, ErrNoIndex)
	}
	old := map[string]*refSegment{}
	if ix.cur != nil {
		for _, s := range ix.cur.segs {
			old[s.name] = s
		}
	}
	snap := &snapshot{k1: bm25K1, bodyW: 1}
	if m.Fields != nil && m.Fields.K1 > 0 {
		snap.k1 = m.Fields.K1
	}
	if m.Fields != nil && m.Fields.Body > 0 {
		snap.bodyW = m.Fields.Body
	}
	snap.refs.Store(1)
	fail := func(err error) error {
		for _, s := range snap.segs {
			if s.refs.Add(-1) == 0 {
				s.close()
			}
		}
		return err
	}
	for _, meta := range m.Segments {
		if s := old[meta.Name]; s != nil {
			s.refs.Add(1)
			snap.segs = append(snap.segs, s)
			continue
		}
		seg, err := openSegment(ix.dir, meta.Name)
		if errors.Is(err, fs.ErrNotExist) && ix.cur != nil {
			// A merge replaced the manifest after we read it; keep the old
			// snapshot and retry at the next check.
			return fail(nil)
		}
		if err != nil {
			return fail(err)
		}
		seg.skipc.mapBudget = ix.opt.DocMapBytes
		rs := &refSegment{segment: seg}
		rs.refs.Store(1)
		snap.segs = append(snap.segs, rs)
		if !ix.opt.NoWarm && !ix.opt.Exhaustive {
			// The warm-up holds a reference, so a merge cannot unmap the
			// segment under it.
			rs.refs.Add(1)
			ix.warm.Add(1)
			go func() {
				defer ix.warm.Done()
				rs.warmSkips(ix.stop)
				if rs.refs.Add(-1) == 0 {
					rs.close()
				}
			}()
		}
	}
	plain := make([]*segment, len(snap.segs))
	for i, s := range snap.segs {
		plain[i] = s.segment
	}
	snap.deleted = computeDeleted(plain)
	snap.ndel = make([]int, len(snap.segs))
	var total int64
	for i, s := range snap.segs {
		for d := range s.ndocs {
			if snap.deleted[i][d] {
				snap.ndel[i]++
			} else {
				snap.live++
				total += int64(s.docLen(d))
			}
		}
	}
	if snap.live > 0 {
		snap.avgdl = float64(total) / float64(snap.live)
	}
	prev := ix.cur
	ix.cur, ix.stamp = snap, st
	if prev != nil {
		prev.release()
		ix.log.Info("index: reloaded", "segments", len(snap.segs), "docs", snap.live)
	}
	return nil
}

// loadRanks (re)reads the rank file when it changed.
func (ix *Index) loadRanks() {
	st := stampOf(ix.opt.RankFile)
	if st == ix.rankStamp && (ix.ranks != nil || ix.rankNoted) {
		return
	}
	ix.rankStamp = st
	scores, err := rank.ReadScores(ix.opt.RankFile)
	if err != nil {
		if !ix.rankNoted {
			ix.rankNoted = true
			ix.log.Warn("index: no PageRank scores; ranking by BM25F only (run spider rank --data DIR)", "err", err)
		}
		ix.ranks = nil
		return
	}
	rs := &rankSet{scores: scores, n: float64(len(scores))}
	for _, v := range scores {
		rs.max = max(rs.max, v)
	}
	ix.ranks = rs
	ix.log.Info("index: loaded PageRank scores", "file", ix.opt.RankFile, "pages", len(scores))
}

// acquire returns the current snapshot, checking for a new manifest first
// when the reload interval passed.
func (ix *Index) acquire() (*snapshot, *rankSet, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil, nil, errors.New("cannot search: the index is closed")
	}
	if ix.opt.ReloadInterval > 0 && time.Since(ix.lastCheck) >= ix.opt.ReloadInterval {
		if err := ix.reloadLocked(); err != nil {
			ix.log.Warn("index: cannot reload; searching the previous version", "err", err)
		}
	}
	ix.cur.refs.Add(1)
	return ix.cur, ix.ranks, nil
}

// Stats returns the size of the current snapshot.
func (ix *Index) Stats() Stats {
	snap, ranks, err := ix.acquire()
	if err != nil {
		return Stats{}
	}
	defer snap.release()
	st := Stats{Docs: snap.live, Segments: len(snap.segs)}
	for _, s := range snap.segs {
		st.Terms += s.nterms
		st.Bytes += int64(len(s.data))
	}
	if ranks != nil {
		st.Ranked = len(ranks.scores)
	}
	return st
}

// Close releases the index. Searches running keep their segments until
// they end; later calls fail.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	close(ix.stop)
	ix.cur.release()
	ix.warm.Wait()
	return nil
}

// WaitWarm waits until the skip indexes of the segments opened so far are
// built (benchmarks call it so that the warm-up does not run beside the
// timed queries).
func (ix *Index) WaitWarm() { ix.warm.Wait() }

// match is a document matching (part of) a query in one segment.
type match struct {
	doc   int32
	score float64
}

// evalCtx evaluates a query on one segment.
type evalCtx struct {
	ctx   context.Context
	seg   *segment
	del   []bool
	ndel  int     // deleted documents in seg
	exh   bool    // no skip indexes (Options.Exhaustive)
	n     float64 // live documents in the index
	avgdl float64
	k1    float64
	df    map[string]int // document frequency over all segments
	ti    map[string]*termInfo
	err   error
}

func (e *evalCtx) lookup(term string) *termInfo {
	if t, ok := e.ti[term]; ok {
		return t
	}
	ti, ok, err := e.seg.lookup(term)
	if err != nil && e.err == nil {
		e.err = err
	}
	var p *termInfo
	if ok {
		p = &ti
	}
	e.ti[term] = p
	return p
}

func (e *evalCtx) idf(term string) float64 {
	df := float64(e.df[term])
	return math.Log(1 + (e.n-df+0.5)/(df+0.5))
}

// params are the BM25F parameters of e's index.
func (e *evalCtx) params() bm25Params { return bm25Params{k1: e.k1, avgdl: e.avgdl} }

func (e *evalCtx) bm25(term string, short, tf, dl int) float64 {
	return bm25Score(e.idf(term), short, tf, dl, e.params())
}

// termMatches scores every document holding term.
func (e *evalCtx) termMatches(term string) []match {
	ti := e.lookup(term)
	if ti == nil {
		return nil
	}
	it := newPostIter(e.seg, *ti)
	out := make([]match, 0, ti.df)
	idf := e.idf(term)
	for p, ok := it.next(); ok; p, ok = it.next() {
		out = append(out, match{doc: int32(p.doc), score: bm25Score(idf, p.short, p.freq, e.seg.docLen(p.doc), e.params())})
	}
	if it.err != nil && e.err == nil {
		e.err = it.err
	}
	return out
}

func (e *evalCtx) eval(n qnode) []match {
	if e.err != nil {
		return nil
	}
	switch n := n.(type) {
	case qterms:
		var acc []match
		for i, t := range n.terms {
			m := e.termMatches(t)
			if i == 0 {
				acc = m
			} else {
				acc = intersect(acc, m)
			}
			if len(acc) == 0 {
				return nil
			}
		}
		return acc
	case qphrase:
		return e.phrase(n)
	case *qor:
		var acc []match
		for _, k := range n.kids {
			acc = union(acc, e.eval(k))
		}
		return acc
	case *qand:
		var acc []match
		if len(n.pos) == 0 {
			for d := range e.seg.ndocs {
				if !e.del[d] {
					acc = append(acc, match{doc: int32(d)})
				}
			}
		}
		for i, k := range n.pos {
			m := e.eval(k)
			if i == 0 {
				acc = m
			} else {
				acc = intersect(acc, m)
			}
			if len(acc) == 0 {
				return nil
			}
		}
		if len(n.sites) > 0 {
			acc = slices.DeleteFunc(acc, func(m match) bool {
				u, ok := e.seg.docURL(int(m.doc))
				if !ok {
					return true
				}
				for _, s := range n.sites {
					if siteMatch(u, s) {
						return false
					}
				}
				return true
			})
		}
		for _, k := range n.neg {
			acc = subtract(acc, e.eval(k))
		}
		return acc
	}
	return nil
}

// phrase finds documents holding the terms at their relative positions.
// The terms' cursors jump over the blocks that end before the document
// they must reach.
func (e *evalCtx) phrase(n qphrase) []match {
	curs := make([]*cursor, len(n.terms))
	for i, t := range n.terms {
		ti := e.lookup(t)
		if ti == nil {
			return nil
		}
		curs[i] = e.newCursor(*ti, e.idf(t))
		if !curs[i].ok {
			e.noteCursors(curs[:i+1])
			return nil
		}
	}
	var out []match
	var pos [][]int
	for {
		// Align all cursors on the largest current document.
		maxDoc := curs[0].p.doc
		for _, c := range curs {
			maxDoc = max(maxDoc, c.p.doc)
		}
		aligned := true
		for _, c := range curs {
			c.seek(maxDoc)
			if !c.ok {
				e.noteCursors(curs)
				return out
			}
			if c.p.doc != maxDoc {
				aligned = false
			}
		}
		if !aligned {
			continue
		}
		pos = pos[:0]
		for _, c := range curs {
			pos = append(pos, c.p.positions(nil))
		}
		if phraseAt(pos, n.rel) {
			dl := e.seg.docLen(maxDoc)
			s := 0.0
			for i, t := range n.terms {
				s += e.bm25(t, curs[i].p.short, curs[i].p.freq, dl)
			}
			out = append(out, match{doc: int32(maxDoc), score: s})
		}
		c := curs[0]
		if c.p, c.ok = c.it.next(); !c.ok {
			e.noteCursors(curs)
			return out
		}
	}
}

func (e *evalCtx) noteIter(it *postIter) {
	if it.err != nil && e.err == nil {
		e.err = it.err
	}
}

// phraseAt reports whether some start position s has term i at s+rel[i]
// for every i.
func phraseAt(pos [][]int, rel []int) bool {
	for _, s := range pos[0] {
		ok := true
		for i := 1; i < len(pos) && ok; i++ {
			_, ok = slices.BinarySearch(pos[i], s+rel[i])
		}
		if ok {
			return true
		}
	}
	return false
}

func intersect(a, b []match) []match {
	out := a[:0:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].doc < b[j].doc:
			i++
		case a[i].doc > b[j].doc:
			j++
		default:
			out = append(out, match{doc: a[i].doc, score: a[i].score + b[j].score})
			i++
			j++
		}
	}
	return out
}

func union(a, b []match) []match {
	if len(a) == 0 {
		return b
	}
	out := make([]match, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i].doc < b[j].doc:
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j].doc < a[i].doc:
			out = append(out, b[j])
			j++
		default:
			out = append(out, match{doc: a[i].doc, score: a[i].score + b[j].score})
			i++
			j++
		}
	}
	return out
}

func subtract(a, b []match) []match {
	if len(b) == 0 {
		return a
	}
	out := a[:0]
	j := 0
	for _, m := range a {
		for j < len(b) && b[j].doc < m.doc {
			j++
		}
		if j < len(b) && b[j].doc == m.doc {
			continue
		}
		out = append(out, m)
	}
	return out
}

// scored is a candidate hit.
type scored struct {
	seg   int
	doc   int32
	bm25  float64
	pr    float64
	prox  float64 // the proximity term (rescore)
	score float64
	url   string
}

// hitHeap is a min-heap by score: the worst kept hit is at the top.
type hitHeap []scored

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return worse(h[i], h[j]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// worse orders hits: lower score, then later segment and document (ties
// broken deterministically).
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	if a.seg != b.seg {
		return a.seg > b.seg
	}
	return a.doc > b.doc
}

// Search runs req. Errors about the query wrap ErrQuery; a damaged segment
// gives an error wrapping ErrCorrupt.
func (ix *Index) Search(ctx context.Context, req Request) (*Result, error) {
	start := time.Now()
	if req.Offset < 0 || req.Offset > 10_000 {
		return nil, queryErr("offset %d is out of range; use 0 to 10000", req.Offset)
	}
	if req.Limit < 0 || req.Limit > 1000 {
		return nil, queryErr("limit %d is out of range; use 1 to 1000 (0 means 10)", req.Limit)
	}
	if req.Limit == 0 {
		req.Limit = 10
	}
	if !(req.ProximityWeight >= 0 && req.ProximityWeight <= MaxProximityWeight) {
		return nil, queryErr("proximity weight %g is out of range; use 0 (none) to %d", req.ProximityWeight, MaxProximityWeight)
	}
	weight := req.RankWeight
	if weight < 0 {
		weight = ix.opt.RankWeight
	}
	q, err := parseQuery(ix.an, req.Query)
	if err != nil {
		return nil, err
	}
	snap, ranks, err := ix.acquire()
	if err != nil {
		return nil, err
	}
	defer snap.release()

	// Document frequencies over all segments.
	df := map[string]int{}
	allTerms := collectTerms(q.root, nil)
	for _, s := range snap.segs {
		for _, t := range allTerms {
			if _, done := df[t]; !done {
				df[t] = 0
			}
			ti, ok, err := s.lookup(t)
			if err != nil {
				return nil, err
			}
			if ok {
				df[t] += ti.df
			}
		}
	}
	keep := req.Offset + req.Limit
	clusters, err := ix.clusters.get(ix.dir)
	if err != nil {
		ix.log.Warn("index: searching without collapsing duplicates", "err", err)
	}
	// Collapsing removes at most one candidate per cluster member; with
	// proximity, the window is rescored.
	pw := req.ProximityWeight
	cands := keep + min(clusters.members(), maxCollapseExtra)
	if pw > 0 {
		cands = max(cands, ProximityWindow)
	}
	k := newTopk(cands, ranks, weight)
	conj, isConj := conjunction(q.root)
	for si, s := range snap.segs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := &evalCtx{ctx: ctx, seg: s.segment, del: snap.deleted[si], ndel: snap.ndel[si], n: float64(snap.live),
			avgdl: snap.avgdl, k1: snap.k1, df: df, ti: map[string]*termInfo{}, exh: ix.opt.Exhaustive}
		k.segment(s.segment)
		if isConj && !ix.opt.Exhaustive {
			e.evalConjunction(k, si, conj)
			if e.err != nil {
				return nil, e.err
			}
			continue
		}
		ms := e.eval(q.root)
		if e.err != nil {
			return nil, e.err
		}
		for _, m := range ms {
			if snap.deleted[si][m.doc] {
				continue
			}
			k.total++
			k.offer(si, m.doc, m.score)
		}
	}
	h, total := k.h, k.total
	all := make([]scored, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		all[i] = heap.Pop(&h).(scored)
	}
	if pw > 0 {
		if err := rescore(snap, all, q.terms, pw, !ix.opt.Exhaustive); err != nil {
			return nil, err
		}
	}
	res := &Result{Total: total, Terms: q.terms}
	n := len(all)
	all, similar := clusters.collapse(all, func(c scored) uint64 { return snap.segs[c.seg].hash(int(c.doc)) })
	res.Total -= n - len(all) // exact when every match was a candidate
	if len(all) > keep {
		all, similar = all[:keep], similar[:keep]
	}
	if req.Offset < len(all) {
		all, similar = all[req.Offset:], similar[req.Offset:]
	} else {
		all = nil
	}
	pos, err := hitPositions(snap, all, q.terms, !ix.opt.Exhaustive)
	if err != nil {
		return nil, err
	}
	for i, c := range all {
		seg := snap.segs[c.seg]
		d, err := seg.doc(int(c.doc))
		if err != nil {
			return nil, err
		}
		if ranks != nil && c.pr == 0 {
			c.pr = ranks.scores[d.URL]
		}
		hit := Hit{URL: d.URL, Title: d.Title, Score: c.score, BM25: c.bm25, PageRank: c.pr, Proximity: c.prox, Similar: similar[i], Fetched: d.Fetched}
		// Positions are counted over title and body; the stored text is
		// the body, which starts at the base the marks store (version 1
		// segments: found by analysing the title).
		base, marks, ok, err := parseMarks(d.Marks)
		if err != nil {
			return nil, fmt.Errorf("snippet marks of %s in segment %s: %w: %w", d.URL, seg.name, err, ErrCorrupt)
		}
		if !ok {
			base = bodyBase(ix.an, d.Title)
		}
		m := pos[i][:0]
		for _, tp := range pos[i] {
			if tp.pos >= base {
				m = append(m, termPos{pos: tp.pos - base, term: tp.term})
			}
		}
		hit.Snippet, err = makeSnippet(ix.an, d.Text, marks, normaliseMatches(m), len(q.terms))
		if err != nil {
			return nil, fmt.Errorf("stored text of %s in segment %s is damaged: %w", d.URL, seg.name, ErrCorrupt)
		}
		if req.Explain {
			hit.Explain = explain(seg.segment, int(c.doc), q, df, float64(snap.live), snap.avgdl, snap.k1, snap.bodyW, c, weight, ranks)
		}
		res.Hits = append(res.Hits, hit)
	}
	res.Took = time.Since(start)
	return res, nil
}

// hitPositions returns, for each hit, the positions (title and body, as
// indexed) at which the query's terms occur in its page: one walk of each
// term's postings per segment (jumping with the skip indexes when skips),
// stopping after the segment's last hit.
func hitPositions(snap *snapshot, hits []scored, terms []string, skips bool) ([][]termPos, error) {
	out := make([][]termPos, len(hits))
	order := make([]int, len(hits))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		if hits[x].seg != hits[y].seg {
			return hits[x].seg - hits[y].seg
		}
		return int(hits[x].doc) - int(hits[y].doc)
	})
	var buf []int
	for lo := 0; lo < len(order); {
		si := hits[order[lo]].seg
		hi := lo
		for hi < len(order) && hits[order[hi]].seg == si {
			hi++
		}
		seg := snap.segs[si].segment
		for ti, t := range terms {
			info, ok, err := seg.lookup(t)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			c := &cursor{it: newPostIter(seg, info), df: info.df}
			if skips {
				c.sk = seg.skips(info)
			}
			c.p, c.ok = c.it.next()
			for _, h := range order[lo:hi] {
				doc := int(hits[h].doc)
				if c.seek(doc); !c.ok {
					break
				}
				if c.p.doc == doc {
					buf = c.p.positions(buf[:0])
					for _, x := range buf {
						out[h] = append(out[h], termPos{pos: x, term: ti})
					}
				}
			}
			if c.it.err != nil {
				return nil, c.it.err
			}
		}
		lo = hi
	}
	return out, nil
}

// collectTerms lists every term of the query, negative parts included (for
// document frequencies).
func collectTerms(n qnode, out []string) []string {
	switch n := n.(type) {
	case qterms:
		out = append(out, n.terms...)
	case qphrase:
		out = append(out, n.terms...)
	case *qor:
		for _, k := range n.kids {
			out = collectTerms(k, out)
		}
	case *qand:
		for _, k := range n.pos {
			out = collectTerms(k, out)
		}
		for _, k := range n.neg {
			out = collectTerms(k, out)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// explain describes how a hit's score was made.
func explain(s *segment, doc int, q *parsedQuery, df map[string]int, n, avgdl, k1 float64, bodyW int, c scored, weight float64, ranks *rankSet) string {
	e := &evalCtx{seg: s, n: n, avgdl: avgdl, k1: k1, df: df, ti: map[string]*termInfo{}}
	var b strings.Builder
	dl := s.docLen(doc)
	if c.prox != 0 {
		fmt.Fprintf(&b, "score %.4f = bm25f %.4f + rank %.4f + proximity %.4f; main text length %d (average %.1f)\n", c.score, c.bm25, c.score-c.bm25-c.prox, c.prox, dl, avgdl)
	} else {
		fmt.Fprintf(&b, "score %.4f = bm25f %.4f + rank %.4f; main text length %d (average %.1f)\n", c.score, c.bm25, c.score-c.bm25, dl, avgdl)
	}
	for _, t := range q.terms {
		ti := e.lookup(t)
		tf, short := 0, 0
		if ti != nil {
			it := newPostIter(s, *ti)
			for p, ok := it.next(); ok; p, ok = it.next() {
				if p.doc == doc {
					tf, short = p.freq, p.short
					break
				}
				if p.doc > doc {
					break
				}
			}
		}
		if tf == 0 && short == 0 {
			fmt.Fprintf(&b, "  %q: not in this page\n", t)
			continue
		}
		// tf is the weighted main-text frequency; divided by the weight it
		// is the count, with the page's own link labels counted less
		// (FieldWeights.Links): 5.5 = 6 occurrences, one of them a label.
		fmt.Fprintf(&b, "  %q: tf %s in the main text (× %d) + %.2f from title, headings and anchor text (weighted), df %d, idf %.4f → %.4f\n",
			t, strconv.FormatFloat(float64(tf)/float64(max(bodyW, 1)), 'f', -1, 64), bodyW, float64(short)/shortScale, df[t], e.idf(t), e.bm25(t, short, tf, dl))
	}
	if ranks == nil {
		b.WriteString("  pagerank: no scores file (run spider rank)")
	} else {
		fmt.Fprintf(&b, "  pagerank %.3g × %g pages → %g × ln(1+%.4f) = %.4f", c.pr, ranks.n, weight, c.pr*ranks.n, weight*math.Log1p(c.pr*ranks.n))
	}
	return b.String()
}
