package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/content"
	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/store"
)

// DirName is the index directory inside a crawl data directory
// (store.DataDir.Index).
const DirName = store.IndexDirName

// BuildOptions configure Build. The zero value works.
type BuildOptions struct {
	// Workers analyse pages in parallel. Default GOMAXPROCS.
	Workers int
	// BatchRecords is how many record lines go into one segment. Default
	// 100,000.
	BatchRecords int
	// Rebuild discards the index and its checkpoint first.
	Rebuild bool
	// ForceMerge merges all segments into one at the end.
	ForceMerge bool
	// MaxSegments is passed to the Writer (WriterOptions.MaxSegments).
	MaxSegments int
	// Progress, if set, is called after each batch and about once a second.
	Progress func(BuildStats)
	// Logger receives commits and merges. Nil discards.
	Logger *slog.Logger
	// Fields are the BM25F field weights. Zero: DefaultFieldWeights. An
	// index built with other weights is rebuilt.
	Fields FieldWeights
	// NearDupDistance is the SimHash distance of the near-duplicate
	// clusters (dupes.go); 0: DefaultNearDupDistance; negative: exact
	// duplicates and canonical URLs only.
	NearDupDistance int
}

// Damaged live segments (missing, wrong size, or failing a section's
// CRC-32C) make Build start over: the index's checkpoint covers every
// segment, and the records are the source of truth, so the index is reset
// and every record indexed again. BuildStats.Damaged names them.

// BuildStats counts what a Build did.
type BuildStats struct {
	FromOffset, ToOffset int64           // records.jsonl bytes indexed by this run
	Records              int             // record lines read
	Docs                 int             // pages analysed and added
	Folded               int             // pages folded into another's duplicate cluster (dupes.go), over the whole crawl
	Deleted              int             // URLs whose last record has no indexable page
	Skipped              int             // pages not indexed: noindex or unreadable body
	Bytes                int64           // page body bytes analysed
	Segments             int             // live segments at the end
	Damaged              []SegmentDamage // live segments found damaged; the index was rebuilt
	AnalyzerLoad         time.Duration   // time spent loading the Chinese dictionaries by this Build (0: no Han text met, or loaded earlier in the process)
	Took                 time.Duration
}

// Build indexes the records of dataDir/records.jsonl that the index in
// dataDir/index does not hold yet (all of them with Rebuild), batch by
// batch, each batch a new segment committed with its checkpoint, so a
// crash or Ctrl-C loses at most the batch in progress. Pages of a running
// crawl can be indexed: only complete records and pages are read, and
// nothing of the crawl is written. The latest version of a URL wins
// (Record.Supersedes): a changed page replaces its older version, a page
// gone (404, 410) leaves the index, a 304 or a failed attempt keeps it.
func Build(ctx context.Context, dataDir string, opt BuildOptions) (BuildStats, error) {
	start := time.Now()
	var st BuildStats
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.BatchRecords <= 0 {
		opt.BatchRecords = 100_000
	}
	a, err := analysis.Shared()
	if err != nil {
		return st, err
	}
	loadedBefore := a.Loaded()
	// The Chinese dictionaries load when the first Han text is analysed
	// (seconds and ~200 MB): an English-only crawl never loads them.
	if opt.Fields == (FieldWeights{}) {
		opt.Fields = DefaultFieldWeights
	}
	if err := opt.Fields.Validate(); err != nil {
		return st, err
	}
	w, err := OpenWriter(store.DataDir(dataDir).Index(), WriterOptions{MaxSegments: opt.MaxSegments, Logger: opt.Logger, Fields: opt.Fields})
	if err != nil {
		return st, err
	}
	defer w.Close()
	if f, built := w.fieldsOf(); built && f != opt.Fields && !opt.Rebuild {
		w.log.Warn("index: built with other field weights; rebuilding the index", "built", f.String(), "now", opt.Fields.String())
		opt.Rebuild = true
	}
	if !opt.Rebuild {
		w.mu.Lock()
		segs := append([]segmentMeta(nil), w.man.Segments...)
		w.mu.Unlock()
		if st.Damaged = verifySegments(w.dir, segs); len(st.Damaged) > 0 {
			for _, d := range st.Damaged {
				if errors.Is(d.Err, ErrOldFormat) {
					w.log.Warn("index: segment of an older format; rebuilding the index from the records", "segment", d.Name)
					continue
				}
				w.log.Warn("index: damaged segment; rebuilding the index from the records", "segment", d.Name, "err", d.Err)
			}
			opt.Rebuild = true
		}
	}
	if opt.Rebuild {
		if err := w.Reset("embedded"); err != nil {
			return st, err
		}
	}
	w.StartMerger(ctx)
	st.FromOffset = w.Checkpoint()
	st.ToOffset = st.FromOffset

	var (
		docs     atomic.Int64
		skipped  atomic.Int64
		bytesIn  atomic.Int64
		progress = func() {
			if opt.Progress != nil {
				s := st
				s.Docs, s.Skipped, s.Bytes = int(docs.Load()), int(skipped.Load()), bytesIn.Load()
				s.Segments, s.Took = w.Segments(), time.Since(start)
				opt.Progress(s)
			}
		}
	)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		pages, err := openPageReader(store.DataDir(dataDir).Pages())
		if err != nil {
			return st, err
		}
		r, err := analyzeRange(ctx, a, dataDir, pages, st.ToOffset, -1, opt.BatchRecords, opt.Workers, opt.Fields, false, nil, func(d *Doc, n int) {
			if d != nil {
				docs.Add(1)
				bytesIn.Add(int64(n))
			} else {
				skipped.Add(1)
			}
			select {
			case <-tick.C:
				progress()
			default:
			}
		}, w.log)
		pages.close()
		if err != nil {
			return st, err
		}
		if r.records == 0 {
			break
		}
		st.Records += r.records
		st.Deleted += r.deleted
		var out []Doc
		var deleted []string
		for _, it := range r.items {
			if it.doc != nil {
				out = append(out, *it.doc)
			} else {
				deleted = append(deleted, it.url)
			}
		}
		if err := w.Commit(out, deleted, r.end, "embedded"); err != nil {
			return st, err
		}
		st.ToOffset = r.end
		progress()
	}
	if err := w.WaitMerges(ctx); err != nil {
		return st, err
	}
	k := opt.NearDupDistance
	if k == 0 {
		k = DefaultNearDupDistance
	}
	if st.Folded, err = writeClusters(ctx, dataDir, w.dir, max(k, 0)); err != nil {
		return st, err
	}
	if opt.ForceMerge {
		if _, err := w.Merge(ctx, true); err != nil {
			return st, fmt.Errorf("cannot merge the index into one segment: %w", err)
		}
	}
	st.Docs, st.Skipped, st.Bytes = int(docs.Load()), int(skipped.Load()), bytesIn.Load()
	st.Segments, st.Took = w.Segments(), time.Since(start)
	if !loadedBefore {
		st.AnalyzerLoad = a.LoadTime()
	}
	if err := a.DictErr(); err != nil {
		w.log.Warn("index: Chinese pages were indexed without word segmentation", "err", err)
	}
	return st, nil
}

// rangeItem is the outcome for one URL of a range of records: its last
// record there and the page's Doc, or nil when the URL has no indexable
// page (a deletion).
type rangeItem struct {
	url    string
	doc    *Doc
	rec    Record
	offset int64 // offset of the record's line in records.jsonl
	// anchors are the page's links' anchor texts, kept for the caller
	// when analyzeRange was asked to (the distributed build's mappers).
	anchors []anchor
}

// rangeResult is what analyzeRange found.
type rangeResult struct {
	items   []rangeItem // in order of first appearance
	records int         // record lines read
	deleted int         // URLs whose last record is not indexable
	end     int64       // offset after the last line read
}

// analyzeRange reads the record lines of dataDir/records.jsonl in [from,
// to) (to < 0: to the end), at most maxRecords of them, keeps the latest
// version of each URL (follow: a 304 or a failed attempt does not replace
// the page) and analyses the indexable pages with workers
// goroutines. done is called after each page (from the workers) with the
// Doc (nil if skipped) and the body size. The embedded build and the
// distributed mappers share it, so both make the same documents.
func analyzeRange(ctx context.Context, a *analysis.Analyzer, dataDir string, pages *pageReader, from, to int64,
	maxRecords, workers int, fields FieldWeights, keepAnchors bool, sites *content.Model, done func(d *Doc, bodyBytes int), log *slog.Logger) (rangeResult, error) {
	var r rangeResult
	at := map[string]int{}
	touched := map[string]rangeItem{} // the last 304 of a URL whose version is older than the range
	end, err := ScanRecords(dataDir, from, to, func(rec Record, end int64) bool {
		// The URL's latest version in the range (follow); a URL whose
		// records here supersede nothing (a failed attempt) keeps what
		// older segments hold: no item, neither a page nor a deletion.
		k, held := at[rec.URL]
		var cur Record
		if held {
			cur = r.items[k].rec
		}
		if next, ok := follow(cur, held, rec); ok && (!held || next != cur) {
			it := rangeItem{url: rec.URL, rec: next, offset: end}
			if held {
				r.items[k] = it
			} else {
				at[rec.URL] = len(r.items)
				r.items = append(r.items, it)
				delete(touched, rec.URL)
			}
		} else if !held && rec.Status == 304 {
			touched[rec.URL] = rangeItem{url: rec.URL, rec: rec, offset: end}
		}
		r.records++
		return maxRecords <= 0 || r.records < maxRecords
	})
	if err != nil {
		return r, err
	}
	r.end = end
	if len(touched) > 0 && from > 0 {
		// A 304 to a page indexed by an earlier run: the segments cannot
		// change a stored field in place, so the page's version (the
		// latest before the range) is analysed again from its stored copy
		// with the 304's fetch time, and replaces the older document.
		var older latestRecords
		if _, err := ScanRecords(dataDir, 0, from, func(rec Record, _ int64) bool {
			if _, ok := touched[rec.URL]; ok {
				older.add(rec)
			}
			return ctx.Err() == nil
		}); err != nil {
			return r, err
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		for _, rec := range older.recs {
			t := touched[rec.URL]
			if !rec.Indexable() {
				continue // gone before the range: nothing to touch
			}
			if t.rec.FetchedAt.After(rec.FetchedAt) {
				rec.FetchedAt = t.rec.FetchedAt
			}
			at[rec.URL] = len(r.items)
			r.items = append(r.items, rangeItem{url: rec.URL, rec: rec, offset: t.offset})
		}
	}
	if fields.Template == 0 && sites == nil {
		// Pass one: the site models of the range's pages.
		if sites, err = observeSites(ctx, r.items, pages, workers); err != nil {
			return r, err
		}
	}
	if fields.Template != 0 {
		sites = nil
	}
	var anchors *anchorSet
	if fields.Anchor > 0 && !keepAnchors {
		targets := make([]string, 0, len(r.items))
		for _, it := range r.items {
			if it.rec.Indexable() {
				targets = append(targets, it.url, it.rec.FinalURL)
			}
		}
		anchors = newAnchorSet(targets)
	}
	jobs := make(chan int)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		for k, it := range r.items {
			if !it.rec.Indexable() {
				r.deleted++
				continue
			}
			select {
			case jobs <- k:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for range max(workers, 1) {
		g.Go(func() error {
			for k := range jobs {
				it := &r.items[k]
				body, err := pages.readRecord(it.rec)
				if err != nil {
					log.Warn("index: cannot read page", "url", it.url, "err", err)
					done(nil, 0)
					continue
				}
				d, as, ok := makeDoc(a, it.rec, body, fields, sites)
				if anchors != nil {
					anchors.add(it.url, as)
				} else if keepAnchors && ok {
					it.anchors = as
				}
				if ok {
					d.Fetched = it.rec.FetchedAt
					it.doc = &d
					done(&d, len(body))
				} else {
					done(nil, len(body))
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return r, err
	}
	if anchors != nil {
		// Every page of the range is read: add each page's anchor field.
		var docs []*Doc
		var af []anchorField
		for k := range r.items {
			it := &r.items[k]
			if it.doc != nil {
				docs = append(docs, it.doc)
				af = append(af, analyzeAnchors(a, anchors.texts(it.url, it.rec.FinalURL)))
			}
		}
		addAnchorFields(docs, af, fields.Anchor)
	}
	return r, ctx.Err()
}
