package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// WriterOptions configure OpenWriter. The zero value works.
type WriterOptions struct {
	// MaxSegments is how many segments the index may have before the
	// background merger merges some. Default 8; 1 merges after every commit.
	MaxSegments int
	// Logger receives commits and merges at Info level. Nil discards.
	Logger *slog.Logger
	// Fields are the field weights of the documents committed, recorded
	// in the manifest. Zero: DefaultFieldWeights.
	Fields FieldWeights
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.MaxSegments <= 0 {
		o.MaxSegments = 8
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Fields == (FieldWeights{}) {
		o.Fields = DefaultFieldWeights
	}
	return o
}

// fieldsOf returns the field weights the index's segments were built
// with, and whether it has any segment.
func (w *Writer) fieldsOf() (FieldWeights, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.man.Segments) == 0 || w.man.Fields == nil {
		return FieldWeights{}, len(w.man.Segments) > 0
	}
	return *w.man.Fields, true
}

// Writer adds segments to an index directory and merges them. It holds the
// directory's lock: one Writer per index at a time (across processes).
// Methods are safe for concurrent use.
type Writer struct {
	dir    string
	opt    WriterOptions
	log    *slog.Logger
	unlock func() error

	mu  sync.Mutex // guards man and the manifest file
	man manifest

	mergeMu   sync.Mutex // one merge at a time
	kick      chan struct{}
	stop      context.CancelFunc
	done      chan struct{}
	mergeErr  error
	closeOnce sync.Once
}

// OpenWriter opens (creating) the index directory dir for writing. It fails
// if another Writer holds the directory.
func OpenWriter(dir string, opt WriterOptions) (*Writer, error) {
	opt = opt.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the index directory: %w", err)
	}
	unlock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("cannot open the index for writing: %w", err)
	}
	m, _, err := readManifest(dir)
	if err != nil {
		unlock()
		return nil, err
	}
	w := &Writer{dir: dir, opt: opt, log: opt.Logger, unlock: unlock, man: m}
	w.removeStrays()
	return w, nil
}

// removeStrays deletes segment and temporary files no manifest names: the
// leftovers of a writer that died mid-commit or mid-merge.
func (w *Writer) removeStrays() {
	live := map[string]bool{}
	for _, s := range w.man.Segments {
		live[s.Name] = true
	}
	ents, _ := os.ReadDir(w.dir)
	for _, e := range ents {
		n := e.Name()
		if (strings.HasSuffix(n, segmentSuffix) && !live[n]) || strings.Contains(n, ".tmp") {
			if os.Remove(filepath.Join(w.dir, n)) == nil {
				w.log.Info("index: removed leftover file", "file", n)
			}
		}
	}
}

// Checkpoint returns how many bytes of records.jsonl the index holds.
func (w *Writer) Checkpoint() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.man.RecordsOffset
}

// Segments returns the number of live segments.
func (w *Writer) Segments() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.man.Segments)
}

// Commit writes docs and the deletions of deleted URLs as a new segment and
// publishes it with the records checkpoint (negative: unchanged) in one
// manifest update. The documents of a URL replace its older documents. An
// empty batch with no deletions only moves the checkpoint.
func (w *Writer) Commit(docs []Doc, deleted []string, checkpoint int64, source string) error {
	sd := &segmentData{docs: docs}
	for _, u := range deleted {
		sd.delete(u)
	}
	var meta *segmentMeta
	if len(docs) > 0 || len(sd.tombs) > 0 {
		w.mu.Lock()
		name := fmt.Sprintf("%08d%s", w.man.NextSegment, segmentSuffix)
		w.man.NextSegment++
		w.mu.Unlock()
		var nd, nt int
		size, err := createFile(w.dir, name, func(f io.Writer) error {
			var err error
			nd, nt, err = sd.write(f)
			return err
		})
		if err != nil {
			return fmt.Errorf("cannot commit to the index: %w", err)
		}
		meta = &segmentMeta{Name: name, Docs: nd, Terms: nt, Tombs: len(sd.tombs), Bytes: size}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.man
	m.Segments = slices.Clone(m.Segments)
	if meta != nil {
		m.Segments = append(m.Segments, *meta)
	}
	if checkpoint >= 0 {
		m.RecordsOffset = checkpoint
	}
	if source != "" {
		m.Source = source
	}
	if meta != nil {
		f := w.opt.Fields
		m.Fields = &f
	}
	m.Generation++
	if err := writeManifest(w.dir, m); err != nil {
		if meta != nil {
			os.Remove(filepath.Join(w.dir, meta.Name))
		}
		return fmt.Errorf("cannot commit to the index: %w", err)
	}
	w.man = m
	if meta != nil {
		w.log.Info("index: committed segment", "segment", meta.Name, "docs", meta.Docs, "terms", meta.Terms,
			"deletions", meta.Tombs, "bytes", meta.Bytes, "segments", len(m.Segments))
	}
	if w.kick != nil {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Reset empties the index (for a full rebuild): a manifest with no
// segments and a zero checkpoint.
func (w *Writer) Reset(source string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := manifest{Version: manifestVersion, Generation: w.man.Generation + 1, NextSegment: w.man.NextSegment, Source: source}
	if err := writeManifest(w.dir, m); err != nil {
		return err
	}
	old := w.man.Segments
	w.man = m
	for _, s := range old {
		os.Remove(filepath.Join(w.dir, s.Name))
	}
	return nil
}

// StartMerger starts the background merger: after each Commit it merges
// segments while there are more than MaxSegments. Close stops it.
func (w *Writer) StartMerger(ctx context.Context) {
	ctx, w.stop = context.WithCancel(ctx)
	w.kick = make(chan struct{}, 1)
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.kick:
			}
			for {
				merged, err := w.Merge(ctx, false)
				if err != nil {
					if ctx.Err() == nil {
						w.log.Error("index: background merge failed", "err", err)
						w.mu.Lock()
						w.mergeErr = err
						w.mu.Unlock()
					}
					break
				}
				if !merged {
					break
				}
			}
		}
	}()
}

// WaitMerges blocks until the background merger has nothing left to merge
// (or ctx ends) and returns its last error.
func (w *Writer) WaitMerges(ctx context.Context) error {
	for {
		w.mu.Lock()
		n, err := len(w.man.Segments), w.mergeErr
		w.mu.Unlock()
		if err != nil || n <= w.opt.MaxSegments {
			// A merge may still be writing; take the merge lock to wait.
			w.mergeMu.Lock()
			w.mergeMu.Unlock() //nolint:staticcheck // empty critical section: wait for a running merge
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops the merger, waits for it and releases the directory lock.
func (w *Writer) Close() error {
	var err error
	w.closeOnce.Do(func() {
		if w.stop != nil {
			w.stop()
			<-w.done
		}
		err = w.unlock()
	})
	return err
}

// Merge merges one run of adjacent segments chosen by the policy (the
// window of MaxSegments/2+1 segments with the fewest bytes, when there are
// more than MaxSegments), or all segments when all is true. It reports
// whether it merged. Documents replaced or deleted by newer segments are
// dropped from the merged segment.
func (w *Writer) Merge(ctx context.Context, all bool) (bool, error) {
	w.mergeMu.Lock()
	defer w.mergeMu.Unlock()
	w.mu.Lock()
	segs := slices.Clone(w.man.Segments)
	var name string
	lo, hi := -1, -1
	switch {
	case all && len(segs) > 1:
		lo, hi = 0, len(segs)
	case !all && len(segs) > w.opt.MaxSegments:
		k := w.opt.MaxSegments/2 + 1
		best := int64(-1)
		for i := 0; i+k <= len(segs); i++ {
			var sum int64
			for _, s := range segs[i : i+k] {
				sum += s.Bytes
			}
			if best < 0 || sum < best {
				best, lo, hi = sum, i, i+k
			}
		}
	}
	if lo < 0 {
		w.mu.Unlock()
		return false, nil
	}
	name = fmt.Sprintf("%08d%s", w.man.NextSegment, segmentSuffix)
	w.man.NextSegment++
	w.mu.Unlock()

	start := time.Now()
	open := make([]*segment, len(segs))
	defer func() {
		for _, s := range open {
			if s != nil {
				s.close()
			}
		}
	}()
	for i, m := range segs {
		s, err := openSegment(w.dir, m.Name)
		if err != nil {
			return false, fmt.Errorf("cannot merge: %w", err)
		}
		open[i] = s
	}
	deleted := computeDeleted(open)
	var meta segmentMeta
	size, err := createFile(w.dir, name, func(f io.Writer) error {
		var err error
		meta, err = mergeSegments(ctx, f, open[lo:hi], deleted[lo:hi])
		return err
	})
	if err != nil {
		return false, fmt.Errorf("cannot merge segments: %w", err)
	}
	meta.Name, meta.Bytes = name, size

	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.man
	// Only Commit changed the list meanwhile, and it only appends.
	if len(m.Segments) < hi || m.Segments[lo].Name != segs[lo].Name || m.Segments[hi-1].Name != segs[hi-1].Name {
		os.Remove(filepath.Join(w.dir, name))
		return false, errors.New("cannot merge: the segment list changed under the merge")
	}
	m.Segments = slices.Concat(m.Segments[:lo], []segmentMeta{meta}, m.Segments[hi:])
	m.Generation++
	if err := writeManifest(w.dir, m); err != nil {
		os.Remove(filepath.Join(w.dir, name))
		return false, fmt.Errorf("cannot merge: %w", err)
	}
	w.man = m
	for _, s := range segs[lo:hi] {
		// Open readers keep their mapping after the name is gone.
		if err := os.Remove(filepath.Join(w.dir, s.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.log.Warn("index: cannot remove merged segment", "segment", s.Name, "err", err)
		}
	}
	w.log.Info("index: merged segments", "from", hi-lo, "into", name, "docs", meta.Docs,
		"bytes", size, "segments", len(m.Segments), "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// computeDeleted marks, per segment (oldest first), the documents whose URL
// a newer segment holds or deletes.
func computeDeleted(segs []*segment) [][]bool {
	out := make([][]bool, len(segs))
	seen := make(map[uint64]struct{})
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		del := make([]bool, s.ndocs)
		if len(seen) > 0 {
			for d := range s.ndocs {
				if _, ok := seen[s.hash(d)]; ok {
					del[d] = true
				}
			}
		}
		out[i] = del
		if i > 0 {
			for d := range s.ndocs {
				seen[s.hash(d)] = struct{}{}
			}
			for t := range s.tombs() {
				seen[s.tomb(t)] = struct{}{}
			}
		}
	}
	return out
}

// mergeSegments writes the live documents of segs (in order) and all their
// deletions as one segment.
func mergeSegments(ctx context.Context, w io.Writer, segs []*segment, deleted [][]bool) (segmentMeta, error) {
	idmap := make([][]int32, len(segs))
	next := int32(0)
	for i, s := range segs {
		idmap[i] = make([]int32, s.ndocs)
		for d := range s.ndocs {
			if deleted[i][d] {
				idmap[i][d] = -1
				continue
			}
			idmap[i][d] = next
			next++
		}
	}
	sw := &segWriter{w: w}
	hdr := make([]byte, headerSize)
	copy(hdr, segMagic)
	binary.LittleEndian.PutUint32(hdr[8:], segVersion)
	sw.write(hdr)

	var (
		tmp   []byte
		offs  = make([]uint64, 0, next)
		lens  = make([]uint32, 0, next)
		total int64
	)
	sw.begin(secDocs)
	for i, s := range segs {
		for d := range s.ndocs {
			if idmap[i][d] < 0 {
				continue
			}
			doc, err := s.doc(d)
			if err != nil {
				return segmentMeta{}, err
			}
			offs = append(offs, sw.off-sw.secs[secDocs][0])
			lens = append(lens, uint32(s.docLen(d)))
			total += int64(s.docLen(d))
			tmp = appendBytes(tmp[:0], []byte(doc.URL))
			tmp = appendBytes(tmp, []byte(doc.Title))
			tmp = appendBytes(tmp, doc.Text)
			tmp = appendBytes(tmp, doc.Marks)
			tmp = appendFetched(tmp, doc.Fetched)
			sw.write(tmp)
		}
	}
	sw.end()
	sw.begin(secDocTab)
	for k := range offs {
		tmp = binary.LittleEndian.AppendUint64(tmp[:0], offs[k])
		sw.write(binary.LittleEndian.AppendUint32(tmp, lens[k]))
	}
	sw.end()
	sw.begin(secHashes)
	for i, s := range segs {
		for d := range s.ndocs {
			if idmap[i][d] >= 0 {
				sw.write(binary.LittleEndian.AppendUint64(tmp[:0], s.hash(d)))
			}
		}
	}
	sw.end()
	var tombs []uint64
	for _, s := range segs {
		for t := range s.tombs() {
			tombs = append(tombs, s.tomb(t))
		}
	}
	slices.Sort(tombs)
	tombs = slices.Compact(tombs)
	sw.begin(secTombs)
	for _, h := range tombs {
		sw.write(binary.LittleEndian.AppendUint64(tmp[:0], h))
	}
	sw.end()

	// k-way merge of the sorted dictionaries.
	type cursor struct {
		terms []termInfo
		k     int
	}
	curs := make([]cursor, len(segs))
	for i, s := range segs {
		if err := s.terms(func(ti termInfo) error {
			curs[i].terms = append(curs[i].terms, ti)
			return nil
		}); err != nil {
			return segmentMeta{}, err
		}
	}
	type dictOut struct {
		term    string
		df      int
		off, ln uint64
	}
	var dict []dictOut
	sw.begin(secPostings)
	var po uint64
	for {
		if err := ctx.Err(); err != nil {
			return segmentMeta{}, err
		}
		min := ""
		found := false
		for _, c := range curs {
			if c.k < len(c.terms) && (!found || c.terms[c.k].term < min) {
				min, found = c.terms[c.k].term, true
			}
		}
		if !found {
			break
		}
		tmp = tmp[:0]
		df, last := 0, int32(-1)
		for i := range curs {
			c := &curs[i]
			if c.k >= len(c.terms) || c.terms[c.k].term != min {
				continue
			}
			it := newPostIter(segs[i], c.terms[c.k])
			c.k++
			for p, ok := it.next(); ok; p, ok = it.next() {
				id := idmap[i][p.doc]
				if id < 0 {
					continue
				}
				if last < 0 {
					tmp = binary.AppendUvarint(tmp, uint64(id))
				} else {
					tmp = binary.AppendUvarint(tmp, uint64(id-last))
				}
				last = id
				df++
				tmp = binary.AppendUvarint(tmp, uint64(p.short))
				tmp = binary.AppendUvarint(tmp, uint64(p.freq))
				tmp = binary.AppendUvarint(tmp, uint64(p.npos))
				tmp = append(tmp, p.pos...)
			}
			if it.err != nil {
				return segmentMeta{}, it.err
			}
		}
		if df == 0 {
			continue
		}
		dict = append(dict, dictOut{term: min, df: df, off: po, ln: uint64(len(tmp))})
		sw.write(tmp)
		po += uint64(len(tmp))
	}
	sw.end()
	sw.begin(secDict)
	var blocks []uint64
	var do uint64
	for i, d := range dict {
		if i%dictBlock == 0 {
			blocks = append(blocks, do)
		}
		tmp = appendBytes(tmp[:0], []byte(d.term))
		tmp = binary.AppendUvarint(tmp, uint64(d.df))
		tmp = binary.AppendUvarint(tmp, d.off)
		tmp = binary.AppendUvarint(tmp, d.ln)
		sw.write(tmp)
		do += uint64(len(tmp))
	}
	sw.end()
	sw.begin(secDictIdx)
	for _, o := range blocks {
		sw.write(binary.LittleEndian.AppendUint64(tmp[:0], o))
	}
	sw.end()
	sw.footer(int(next), len(dict), total)
	if sw.err != nil {
		return segmentMeta{}, sw.err
	}
	return segmentMeta{Docs: int(next), Terms: len(dict), Tombs: len(tombs)}, nil
}
