package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File names of the page store (SPEC §3).
const (
	// IndexFileName is the name of the page index file.
	IndexFileName = "PageIndex"
	// DataFilePrefix starts every data file name; six or more decimal digits
	// follow (PageData000000, PageData000001, …).
	DataFilePrefix = "PageData"
)

// DataFileName returns the name of data file n: "PageData" and n in at least
// six digits.
func DataFileName(n int) string {
	return fmt.Sprintf("%s%06d", DataFilePrefix, n)
}

// Page is one stored page.
type Page struct {
	No      int64     // page number: 0 for the first page appended, then 1, 2, …
	URL     string    // URL text as appended
	Crawled time.Time // crawl time, to the second, in Options.Location
	Body    []byte    // page bytes; a fresh slice the caller owns
}

// pageLoc locates one page: the offset of its PageIndex line and the offset of
// its bytes in its data file. The data file number comes from
// PageFiles.fileFirst.
type pageLoc struct {
	idx  int64
	data int64
}

// PageFiles is the page store of SPEC §3: bodies in PageDataNNNNNN files and
// one PageIndex line per page (see the package documentation for the format
// and the recovery rules). All methods are safe for concurrent use.
type PageFiles struct {
	dir      string
	capBytes int64
	loc      *time.Location
	log      *slog.Logger

	readOnly bool

	mu        sync.RWMutex
	closed    bool
	broken    error    // set when a failed Append could not be undone
	index     *os.File // PageIndex, read-write (read-only with Options.ReadOnly)
	indexSize int64
	data      *os.File // current data file, read-write (read-only, or nil if absent, with Options.ReadOnly)
	dataNo    int      // number of the current data file
	dataSize  int64
	dirDirty  bool      // a file was created since the last directory fsync
	pages     []pageLoc // indexed by page number
	fileFirst []int64   // fileFirst[k]: first page number of data file k
	line      []byte    // reused index line buffer
}

// OpenPageFiles opens the page store in dir, creating dir and the files if
// needed, and repairs a torn tail left by a crash (see the package
// documentation); what was cut is logged at Warn level. It returns an error
// wrapping ErrCorrupt when PageIndex holds a malformed line before its last
// line (unless opt.TruncateCorrupt), when data files are missing from the
// sequence, or when PageIndex is missing while data files hold bytes.
//
// With opt.ReadOnly nothing is created or repaired: dir and PageIndex must
// exist (else the error names the path and wraps fs.ErrNotExist), and the
// store holds the complete pages present at open; a torn tail, such as the
// page a running crawl is appending, is left as it is and not read.
//
// Only one process may open a page store for writing, and a crawl's data
// directory is locked with LockDir before its stores are opened for writing.
func OpenPageFiles(dir string, opt Options) (*PageFiles, error) {
	if opt.DataFileSize < 0 {
		return nil, fmt.Errorf("cannot open page files: data file size %d is negative; use 0 for the default", opt.DataFileSize)
	}
	p := &PageFiles{
		dir:      dir,
		capBytes: opt.DataFileSize,
		loc:      opt.location(),
		log:      opt.logger(),
		readOnly: opt.ReadOnly,
	}
	if p.capBytes == 0 {
		p.capBytes = DefaultDataFileSize
	}
	if opt.ReadOnly {
		if _, err := os.Stat(filepath.Join(dir, IndexFileName)); err != nil {
			return nil, fmt.Errorf("cannot open page files in %s (is it a crawl's data directory? a crawl stores its pages in DATA/pages): %w", dir, err)
		}
	} else if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("cannot open page files: cannot create directory: %w", err)
	}
	if err := p.recover(opt.TruncateCorrupt); err != nil {
		if p.index != nil {
			p.index.Close()
		}
		if p.data != nil {
			p.data.Close()
		}
		return nil, err
	}
	return p, nil
}

// dataFileSizes returns the size of every data file among a page
// directory's entries, by its number
// (names that only look like data files are ignored).
func dataFileSizes(entries []os.DirEntry) (map[int]int64, error) {
	sizes := map[int]int64{}
	for _, e := range entries {
		name := e.Name()
		digits, ok := strings.CutPrefix(name, DataFilePrefix)
		if !ok || len(digits) < 6 || strings.Trim(digits, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(digits)
		if err != nil || DataFileName(n) != name {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("cannot stat %s: %w", name, err)
		}
		sizes[n] = info.Size()
	}
	return sizes, nil
}

// listDataFiles returns the lengths of data files 0…n-1 in dir.
func listDataFiles(dir string) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot list page directory: %w", err)
	}
	sizes, err := dataFileSizes(entries)
	if err != nil {
		return nil, err
	}
	lens := make([]int64, len(sizes))
	for i := range lens {
		size, ok := sizes[i]
		if !ok {
			return nil, fmt.Errorf("cannot open page files: %s is missing but %d data files exist; %s: %w", DataFileName(i), len(sizes), fsckHint(dir), ErrCorrupt)
		}
		lens[i] = size
	}
	return lens, nil
}

// recover scans PageIndex, rebuilds the page locations, cuts a torn tail and
// leaves the index and the current data file open for appending.
func (p *PageFiles) recover(truncateCorrupt bool) error {
	lens, err := listDataFiles(p.dir)
	if err != nil {
		return err
	}
	var dataBytes int64
	for _, n := range lens {
		dataBytes += n
	}
	indexPath := filepath.Join(p.dir, IndexFileName)
	_, err = os.Stat(indexPath)
	if errors.Is(err, fs.ErrNotExist) {
		p.dirDirty = true // created below
	}
	if errors.Is(err, fs.ErrNotExist) && dataBytes > 0 {
		return fmt.Errorf("cannot open page files: %s is missing while data files hold %d bytes; restore it, or %s: %w", filepath.Join(p.dir, IndexFileName), dataBytes, fsckHint(p.dir), ErrCorrupt)
	}
	if p.readOnly {
		p.index, err = os.Open(indexPath)
	} else {
		p.index, err = os.OpenFile(indexPath, os.O_RDWR|os.O_CREATE, FileMode)
	}
	if err != nil {
		return fmt.Errorf("cannot open page index: %w", err)
	}
	if len(lens) == 0 {
		lens = []int64{0}
		p.dirDirty = true // data file 0 is created by cutData
	}

	var (
		br       = bufio.NewReaderSize(p.index, 256<<10)
		off      int64 // offset of the current index line
		f        int   // data file of the next page
		dOff     int64 // offset of the next page in data file f
		cut      = int64(-1)
		cutWhy   string
		long     []byte
		fileHead = []int64{0}
	)
	for {
		line, err := readLine(br, &long)
		if err == io.EOF {
			if len(line) > 0 {
				cut, cutWhy = off, "partial last index line"
			}
			break
		}
		if err != nil {
			return fmt.Errorf("cannot read page index: %w", err)
		}
		no := int64(len(p.pages))
		e, perr := parseIndexLine(line, p.loc)
		if perr == nil && e.no != no {
			perr = fmt.Errorf("%w: page number %d where %d was expected", errIndexLine, e.no, no)
		}
		if perr != nil {
			if _, err := br.Peek(1); err == io.EOF {
				cut, cutWhy = off, "malformed last index line: "+perr.Error()
				break
			}
			if !truncateCorrupt {
				return fmt.Errorf("cannot open page files: %s line %d (offset %d): %w; %s: %w",
					filepath.Join(p.dir, IndexFileName), no+1, off, perr, fsckHint(p.dir), ErrCorrupt)
			}
			cut, cutWhy = off, "malformed index line (TruncateCorrupt): "+perr.Error()
			break
		}
		// A page continues in the next data file only when the current one
		// is used up exactly (see the package documentation).
		for dOff+e.size > lens[f] && dOff == lens[f] && f+1 < len(lens) {
			f, dOff = f+1, 0
			fileHead = append(fileHead, no)
		}
		if dOff+e.size > lens[f] {
			cut, cutWhy = off, fmt.Sprintf("data of page %d is missing from %s", no, DataFileName(f))
			break
		}
		p.pages = append(p.pages, pageLoc{idx: off, data: dOff})
		dOff += e.size
		off += int64(len(line))
	}
	p.fileFirst = fileHead
	p.indexSize = off
	if p.readOnly {
		// Leave the tail alone: it may be a page being appended.
		return p.openDataReadOnly(f, dOff)
	}
	if cut >= 0 {
		if err := p.cutIndex(cut, cutWhy); err != nil {
			return err
		}
	}
	return p.cutData(lens, f, dOff)
}

// openDataReadOnly opens data file f for reading, if it exists, as the
// current data file of a read-only store.
func (p *PageFiles) openDataReadOnly(f int, end int64) error {
	p.dataNo, p.dataSize = f, end
	d, err := os.Open(filepath.Join(p.dir, DataFileName(f)))
	if errors.Is(err, fs.ErrNotExist) && end == 0 {
		return nil // no page has bytes: nothing to read
	}
	if err != nil {
		return fmt.Errorf("cannot open data file: %w", err)
	}
	p.data = d
	return nil
}

// cutIndex truncates PageIndex at off and logs what was cut.
func (p *PageFiles) cutIndex(off int64, why string) error {
	info, err := p.index.Stat()
	if err != nil {
		return fmt.Errorf("cannot stat page index: %w", err)
	}
	lines, err := countLines(io.NewSectionReader(p.index, off, info.Size()-off))
	if err != nil {
		return fmt.Errorf("cannot read page index tail: %w", err)
	}
	if err := p.index.Truncate(off); err != nil {
		return fmt.Errorf("cannot cut torn tail of page index: %w", err)
	}
	if err := p.index.Sync(); err != nil {
		return fmt.Errorf("cannot sync page index: %w", err)
	}
	p.log.Warn("page index: cut torn tail", "reason", why,
		logKeyFile, IndexFileName, logKeyOffset, off, logKeyBytes, info.Size()-off, logKeyLines, lines)
	return nil
}

// countLines counts index lines, a final partial line included.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// cutData truncates data file f at end, removes the data files after it and
// opens file f for appending.
func (p *PageFiles) cutData(lens []int64, f int, end int64) error {
	path := filepath.Join(p.dir, DataFileName(f))
	var err error
	p.data, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return fmt.Errorf("cannot open data file: %w", err)
	}
	p.dataNo, p.dataSize = f, end
	if lens[f] > end {
		if err := p.data.Truncate(end); err != nil {
			return fmt.Errorf("cannot cut torn tail of %s: %w", DataFileName(f), err)
		}
		if err := p.data.Sync(); err != nil {
			return fmt.Errorf("cannot sync %s: %w", DataFileName(f), err)
		}
		p.log.Warn("page data: cut bytes without an index line",
			logKeyFile, DataFileName(f), logKeyOffset, end, logKeyBytes, lens[f]-end)
	}
	for k := f + 1; k < len(lens); k++ {
		if err := os.Remove(filepath.Join(p.dir, DataFileName(k))); err != nil {
			return fmt.Errorf("cannot remove unindexed data file: %w", err)
		}
		level := slog.LevelWarn
		if lens[k] == 0 { // a crash right after starting the file: nothing lost
			level = slog.LevelInfo
		}
		p.log.Log(context.Background(), level, "page data: removed data file without indexed pages",
			logKeyFile, DataFileName(k), logKeyBytes, lens[k])
		p.dirDirty = true
	}
	return nil
}

// syncDir fsyncs a directory so that created and removed names are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open directory for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	return nil
}

// Append stores a page and returns its page number. The body goes to the
// current data file first, then the index line; both are handed to the
// operating system with write system calls before Append returns, so a
// process kill right after loses nothing (power loss needs Sync). The URL must
// be non-empty and free of line breaks (ErrBadURL); crawled is stored to the
// second in Options.Location. On a write error Append undoes its partial
// writes; if even that fails, this and every later Append fail until the
// store is reopened (which repairs the tail). Append does not keep body.
func (p *PageFiles) Append(url string, crawled time.Time, body []byte) (int64, error) {
	if url == "" || strings.ContainsAny(url, "\r\n") {
		return 0, fmt.Errorf("cannot append page %q: %w", url, ErrBadURL)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, fmt.Errorf("cannot append page: %w", ErrClosed)
	}
	if p.readOnly {
		return 0, fmt.Errorf("cannot append page: %w", ErrReadOnly)
	}
	if p.broken != nil {
		return 0, fmt.Errorf("cannot append page: an earlier failure left the files in an unknown state; reopen the store to repair them: %w", p.broken)
	}
	size := int64(len(body))
	// An empty page never starts a file: OpenPageFiles places it in the file
	// it follows, since it takes no bytes.
	if size > 0 && p.dataSize > 0 && p.dataSize+size > p.capBytes {
		if err := p.roll(); err != nil {
			return 0, err
		}
	}
	no := int64(len(p.pages))
	if _, err := p.data.WriteAt(body, p.dataSize); err != nil {
		p.undo(p.data, p.dataSize)
		return 0, fmt.Errorf("cannot append page %d to %s: %w", no, DataFileName(p.dataNo), err)
	}
	p.line = appendIndexLine(p.line[:0], no, size, url, crawled.In(p.loc))
	if _, err := p.index.WriteAt(p.line, p.indexSize); err != nil {
		p.undo(p.index, p.indexSize)
		p.undo(p.data, p.dataSize)
		return 0, fmt.Errorf("cannot append page %d to %s: %w", no, IndexFileName, err)
	}
	p.pages = append(p.pages, pageLoc{idx: p.indexSize, data: p.dataSize})
	p.indexSize += int64(len(p.line))
	p.dataSize += size
	return no, nil
}

// undo truncates f back to size after a failed write; if that fails too, the
// store is marked broken.
func (p *PageFiles) undo(f *os.File, size int64) {
	if err := f.Truncate(size); err != nil && p.broken == nil {
		p.broken = err
	}
}

// roll fsyncs and closes the current data file and starts the next one.
// The caller holds p.mu.
func (p *PageFiles) roll() error {
	if err := p.data.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s before starting the next data file: %w", DataFileName(p.dataNo), err)
	}
	next := p.dataNo + 1
	f, err := os.OpenFile(filepath.Join(p.dir, DataFileName(next)), os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return fmt.Errorf("cannot start data file %s: %w", DataFileName(next), err)
	}
	if err := p.data.Close(); err != nil {
		f.Close()
		return fmt.Errorf("cannot close %s: %w", DataFileName(p.dataNo), err)
	}
	p.data, p.dataNo, p.dataSize = f, next, 0
	p.fileFirst = append(p.fileFirst, int64(len(p.pages)))
	p.dirDirty = true
	return nil
}

// fileOf returns the data file number holding page no, given the first page
// number of every data file.
func fileOf(fileFirst []int64, no int64) int {
	return sort.Search(len(fileFirst), func(k int) bool { return fileFirst[k] > no }) - 1
}

// Count returns the number of pages stored: the next page number.
func (p *PageFiles) Count() int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return int64(len(p.pages))
}

// Read returns page no. It returns an error wrapping ErrNotFound for a page
// number outside 0…Count()-1 and ErrClosed after Close. Read may run
// concurrently with Append and other reads; Append waits while Read copies
// the page.
func (p *PageFiles) Read(no int64) (Page, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Page{}, fmt.Errorf("cannot read page %d: %w", no, ErrClosed)
	}
	if no < 0 || no >= int64(len(p.pages)) {
		return Page{}, fmt.Errorf("cannot read page %d: the store holds %d pages: %w", no, len(p.pages), ErrNotFound)
	}
	l := p.pages[no]
	end := p.indexSize
	if no+1 < int64(len(p.pages)) {
		end = p.pages[no+1].idx
	}
	line := make([]byte, end-l.idx)
	if _, err := p.index.ReadAt(line, l.idx); err != nil {
		return Page{}, fmt.Errorf("cannot read index line of page %d: %w", no, err)
	}
	e, err := parseIndexLine(line, p.loc)
	if err != nil {
		return Page{}, fmt.Errorf("cannot read page %d: %w: %w", no, err, ErrCorrupt)
	}
	body := make([]byte, e.size)
	fileNo := fileOf(p.fileFirst, no)
	if e.size == 0 {
		err = nil
	} else if fileNo == p.dataNo {
		_, err = p.data.ReadAt(body, l.data)
	} else {
		err = readFileAt(filepath.Join(p.dir, DataFileName(fileNo)), body, l.data)
	}
	if err != nil {
		return Page{}, fmt.Errorf("cannot read body of page %d from %s: %w", no, DataFileName(fileNo), err)
	}
	return Page{No: no, URL: e.url, Crawled: e.crawled, Body: body}, nil
}

// readFileAt fills b from the file at path starting at off.
func readFileAt(path string, b []byte, off int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.ReadAt(b, off)
	return err
}

// Iterate calls fn for every page in page-number order, from page 0 to the
// last page stored when Iterate started, and stops at the first error fn
// returns, which Iterate returns unchanged. Iterate uses its own file handles
// and holds no lock while fn runs, so fn may call Append and Read; pages
// appended meanwhile are not visited. Each Page.Body is a fresh slice.
func (p *PageFiles) Iterate(fn func(Page) error) error {
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return fmt.Errorf("cannot iterate pages: %w", ErrClosed)
	}
	pages := p.pages[:len(p.pages):len(p.pages)]
	fileFirst := append([]int64(nil), p.fileFirst...)
	indexSize := p.indexSize
	p.mu.RUnlock()

	idx, err := os.Open(filepath.Join(p.dir, IndexFileName))
	if err != nil {
		return fmt.Errorf("cannot iterate pages: %w", err)
	}
	defer idx.Close()
	br := bufio.NewReaderSize(io.NewSectionReader(idx, 0, indexSize), 256<<10)
	var (
		data   *os.File
		dataNo = -1
	)
	defer func() {
		if data != nil {
			data.Close()
		}
	}()
	for no := range int64(len(pages)) {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("cannot iterate pages: index line of page %d: %w", no, err)
		}
		e, err := parseIndexLine(line, p.loc)
		if err != nil {
			return fmt.Errorf("cannot iterate pages: page %d: %w: %w", no, err, ErrCorrupt)
		}
		if k := fileOf(fileFirst, no); k != dataNo && e.size > 0 {
			if data != nil {
				data.Close()
			}
			data, err = os.Open(filepath.Join(p.dir, DataFileName(k)))
			if err != nil {
				data = nil
				return fmt.Errorf("cannot iterate pages: %w", err)
			}
			dataNo = k
		}
		body := make([]byte, e.size)
		if e.size == 0 {
			// nothing to read (a lost page's placeholder takes no bytes)
		} else if _, err := data.ReadAt(body, pages[no].data); err != nil {
			return fmt.Errorf("cannot iterate pages: body of page %d from %s: %w", no, DataFileName(dataNo), err)
		}
		if err := fn(Page{No: no, URL: e.url, Crawled: e.crawled, Body: body}); err != nil {
			return err
		}
	}
	return nil
}

// Sync flushes the current data file, then PageIndex, then the directory (if
// data files were created since the last Sync) to stable storage, so the
// pages appended so far survive power loss. Append waits while Sync runs.
func (p *PageFiles) Sync() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("cannot sync page files: %w", ErrClosed)
	}
	if p.readOnly {
		return fmt.Errorf("cannot sync page files: %w", ErrReadOnly)
	}
	return p.syncLocked()
}

func (p *PageFiles) syncLocked() error {
	if err := p.data.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", DataFileName(p.dataNo), err)
	}
	if err := p.index.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", IndexFileName, err)
	}
	if p.dirDirty {
		if err := syncDir(p.dir); err != nil {
			return err
		}
		p.dirDirty = false
	}
	return nil
}

// Close syncs (as Sync) and closes the files. Later calls to Close return nil;
// every other method returns ErrClosed.
func (p *PageFiles) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if p.readOnly {
		var err error
		if p.data != nil {
			err = p.data.Close()
		}
		return errors.Join(err, p.index.Close())
	}
	err := p.syncLocked()
	if cerr := p.data.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("cannot close %s: %w", DataFileName(p.dataNo), cerr)
	}
	if cerr := p.index.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("cannot close %s: %w", IndexFileName, cerr)
	}
	return err
}

// LostURL is the URL of the placeholder pages SkipTo appends. It is not a
// URL any record can hold, so ReadRecord never returns a placeholder.
const LostURL = "spider:lost"

// SkipTo makes next the number of the next page appended, when the store
// holds fewer pages: it appends empty placeholder pages under LostURL
// (logged at Warn level) and returns how many. The crawl calls it after a
// loss (a truncated PageData or PageIndex) with the highest page number its
// state ever completed plus one, so page numbers are never issued twice:
// an old record can then never point at another URL's body. When the store
// already holds next pages or more, SkipTo does nothing.
func (p *PageFiles) SkipTo(next int64) (int64, error) {
	n := next - p.Count()
	if n <= 0 {
		return 0, nil
	}
	p.log.Warn("page files: pages are missing; their numbers are skipped, never reused",
		logKeyFile, IndexFileName, logKeyPages, n, "next", next)
	for range n {
		if _, err := p.Append(LostURL, time.Unix(0, 0), nil); err != nil {
			return 0, fmt.Errorf("cannot skip lost page numbers: %w", err)
		}
	}
	return n, nil
}

// ReadRecord returns the page record rec points at (rec.PageNo), checked
// against the record: the page must have been stored under the record's
// final URL (or its URL when it has none). A page stored under another URL,
// or a lost page's placeholder, gives an error wrapping ErrMismatch, never
// that page: its body is not rec's content. A record without a page
// (PageNo < 0) gives ErrNotFound.
func (p *PageFiles) ReadRecord(rec Record) (Page, error) {
	if rec.PageNo < 0 {
		return Page{}, fmt.Errorf("cannot read the page of %s: the record has no page: %w", rec.URL, ErrNotFound)
	}
	pg, err := p.Read(rec.PageNo)
	if err != nil {
		return Page{}, err
	}
	if want := rec.PageURL(); pg.URL != want {
		return Page{}, fmt.Errorf("cannot read page %d for %s: it was stored for %s (%s or %s is damaged, or the page was lost and its number issued again): %w",
			rec.PageNo, want, pg.URL, filepath.Join(filepath.Dir(p.dir), RecordsFileName), p.dir, ErrMismatch)
	}
	if rec.BodyCRC != "" {
		if got := BodyChecksum(pg.Body); got != rec.BodyCRC {
			return Page{}, fmt.Errorf("cannot read page %d of %s: its body's checksum is %s where the record says %s (damaged on disk; %s): %w",
				rec.PageNo, rec.URL, got, rec.BodyCRC, fsckHint(p.dir), ErrMismatch)
		}
	}
	return pg, nil
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// BodyChecksum is the checksum a record keeps of its stored page body
// (Record.BodyCRC): CRC-32C, as 8 lower-case hex digits. The page-file
// format has no checksum of its own, so ReadRecord and spider fsck find a
// body damaged on disk through the record.
func BodyChecksum(body []byte) string {
	return fmt.Sprintf("%08x", crc32.Checksum(body, crc32c))
}

// fsckHint tells what to do about damage found in the page store in
// pagesDir (a crawl's DATA/pages): spider fsck checks the data directory and
// its --repair cuts the damage, queueing the lost pages' URLs again.
func fsckHint(pagesDir string) string {
	return fmt.Sprintf("run spider fsck --data %s (--repair cuts the damage and queues the lost pages' URLs again)", filepath.Dir(pagesDir))
}
