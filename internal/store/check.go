package store

// Read-only checks and explicit repairs of the page files and the records
// file, for `spider fsck` (internal/fsck). Unlike OpenPageFiles and
// OpenRecords, the checks never change a file; the repairs change exactly
// what their caller asked for.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// PageEntry is one page the page files hold consistently: a well-formed
// PageIndex line in sequence whose bytes are inside its data file.
type PageEntry struct {
	No     int64
	URL    string
	Size   int64
	File   int   // data file number
	Offset int64 // offset of the body in the data file
}

// Problem is one inconsistency found in a file.
type Problem struct {
	File   string // file name within the checked directory
	Offset int64  // byte offset where it starts; -1 when it is the whole file
	What   string
}

func (p Problem) String() string {
	if p.Offset < 0 {
		return p.File + ": " + p.What
	}
	return fmt.Sprintf("%s (offset %d): %s", p.File, p.Offset, p.What)
}

// PageCheck is what CheckPageFiles found.
type PageCheck struct {
	// Pages are the consistent pages: every page before the first problem.
	Pages []PageEntry
	// Problems lists what is wrong; empty means the files are consistent.
	Problems []Problem
	// IndexEnd is the length of the consistent prefix of PageIndex.
	IndexEnd int64
	// DataFiles are the lengths of the data files found, by number (a
	// missing file in the sequence has length -1).
	DataFiles []int64
	// DataEndFile and DataEnd are where the consistent pages' bytes end.
	DataEndFile int
	DataEnd     int64
	// Dropped lists the URLs of index lines after the consistent prefix
	// that could still be parsed (their pages are lost by a repair).
	Dropped []string
}

// CheckPageFiles reads the page store in dir (read-only: it changes, creates
// and locks nothing) and returns its consistent pages and every problem:
// a PageIndex missing while data files hold bytes, a data file missing from
// the sequence, a malformed or out-of-sequence index line, an index line
// whose bytes are not in its data file, a partial last line, bytes after the
// last indexed page. Times are read in loc (nil: UTC). A directory without
// page files is consistent and empty. The error is for I/O failures only.
func CheckPageFiles(dir string, loc *time.Location) (*PageCheck, error) {
	if loc == nil {
		loc = time.UTC
	}
	c := &PageCheck{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot check page files: %w", err)
	}
	sizes, err := dataFileSizes(entries)
	if err != nil {
		return nil, fmt.Errorf("cannot check page files: %w", err)
	}
	maxNo := -1
	for n := range sizes {
		maxNo = max(maxNo, n)
	}
	// lens: the usable data files, up to the first gap.
	var lens []int64
	c.DataFiles = make([]int64, maxNo+1)
	for i := range c.DataFiles {
		size, ok := sizes[i]
		if !ok {
			c.DataFiles[i] = -1
			if lens == nil {
				lens = append([]int64{}, c.DataFiles[:i]...)
			}
			c.Problems = append(c.Problems, Problem{File: DataFileName(i), Offset: -1,
				What: fmt.Sprintf("is missing but %d data files follow it; the pages from here on are lost", maxNo-i)})
			continue
		}
		c.DataFiles[i] = size
	}
	if lens == nil {
		lens = append([]int64{}, c.DataFiles...)
	}
	var dataBytes int64
	for _, n := range c.DataFiles {
		dataBytes += max(n, 0)
	}
	idx, err := os.Open(filepath.Join(dir, IndexFileName))
	if errors.Is(err, fs.ErrNotExist) {
		if dataBytes > 0 {
			c.Problems = append(c.Problems, Problem{File: IndexFileName, Offset: -1,
				What: fmt.Sprintf("is missing while data files hold %d bytes; every page is lost", dataBytes)})
		}
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot check page files: %w", err)
	}
	defer idx.Close()
	if len(lens) == 0 {
		lens = []int64{0}
	}
	var (
		br      = bufio.NewReaderSize(idx, 256<<10)
		off     int64
		f       int
		dOff    int64
		stopped bool
	)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("cannot check page files: %w", err)
		}
		if len(line) == 0 {
			break
		}
		if stopped {
			if e, perr := parseIndexLine(line, loc); perr == nil {
				c.Dropped = append(c.Dropped, e.url)
			}
			if err == io.EOF {
				break
			}
			continue
		}
		no := int64(len(c.Pages))
		if err == io.EOF {
			c.Problems = append(c.Problems, Problem{File: IndexFileName, Offset: off,
				What: fmt.Sprintf("partial last line (%d bytes without a newline)", len(line))})
			break
		}
		e, perr := parseIndexLine(line, loc)
		if perr == nil && e.no != no {
			perr = fmt.Errorf("%w: page number %d where %d was expected", errIndexLine, e.no, no)
		}
		if perr != nil {
			c.Problems = append(c.Problems, Problem{File: IndexFileName, Offset: off,
				What: fmt.Sprintf("line %d: %v; it and every later page are lost", no+1, perr)})
			stopped = true
			continue
		}
		for dOff+e.size > lens[f] && dOff == lens[f] && f+1 < len(lens) {
			f, dOff = f+1, 0
		}
		if dOff+e.size > lens[f] {
			c.Problems = append(c.Problems, Problem{File: DataFileName(f), Offset: dOff,
				What: fmt.Sprintf("page %d (%s) needs %d bytes but the file ends at %d", no, e.url, e.size, lens[f])})
			c.Dropped = append(c.Dropped, e.url)
			stopped = true
			continue
		}
		c.Pages = append(c.Pages, PageEntry{No: no, URL: e.url, Size: e.size, File: f, Offset: dOff})
		dOff += e.size
		off += int64(len(line))
	}
	c.IndexEnd, c.DataEndFile, c.DataEnd = off, f, dOff
	if !stopped && f < len(lens) && lens[f] > dOff {
		c.Problems = append(c.Problems, Problem{File: DataFileName(f), Offset: dOff,
			What: fmt.Sprintf("%d bytes after the last indexed page (a torn tail)", lens[f]-dOff)})
	}
	for k := f + 1; k < len(c.DataFiles); k++ {
		if c.DataFiles[k] > 0 && !stopped {
			c.Problems = append(c.Problems, Problem{File: DataFileName(k), Offset: -1,
				What: fmt.Sprintf("holds %d bytes but no indexed page", c.DataFiles[k])})
		}
	}
	return c, nil
}

// TruncatePageFiles cuts the page store in dir to its first keep pages as
// located by c (from CheckPageFiles on the same, unchanged files): PageIndex
// to the end of page keep-1's line, that page's data file to the end of its
// bytes, and every later data file removed. Everything is fsynced. It is
// meant for `spider fsck --repair` with no crawl running.
func TruncatePageFiles(dir string, c *PageCheck, keep int64) error {
	if keep < 0 || keep > int64(len(c.Pages)) {
		return fmt.Errorf("cannot truncate page files to %d pages: %d are consistent", keep, len(c.Pages))
	}
	indexEnd, file, dataEnd := int64(0), 0, int64(0)
	if keep > 0 {
		last := c.Pages[keep-1]
		file, dataEnd = last.File, last.Offset+last.Size
		if keep < int64(len(c.Pages)) {
			indexEnd = -1 // found below
		} else {
			indexEnd = c.IndexEnd
		}
	}
	indexPath := filepath.Join(dir, IndexFileName)
	if indexEnd < 0 {
		off, err := lineOffset(indexPath, keep)
		if err != nil {
			return err
		}
		indexEnd = off
	}
	if err := truncateSync(indexPath, indexEnd); err != nil && !(errors.Is(err, fs.ErrNotExist) && indexEnd == 0) {
		return err
	}
	if file < len(c.DataFiles) && c.DataFiles[file] >= 0 {
		if err := truncateSync(filepath.Join(dir, DataFileName(file)), dataEnd); err != nil {
			return err
		}
	}
	for k := file + 1; k < len(c.DataFiles); k++ {
		if c.DataFiles[k] < 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, DataFileName(k))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove %s: %w", DataFileName(k), err)
		}
	}
	return syncDir(dir)
}

// lineOffset returns the offset of line n (0-based) of the file at path.
func lineOffset(path string, n int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	var off int64
	for i := int64(0); i < n; i++ {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return 0, fmt.Errorf("cannot find line %d of %s: %w", n, filepath.Base(path), err)
		}
		off += int64(len(line))
	}
	return off, nil
}

// truncateSync truncates the file at path to size and fsyncs it.
func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("cannot truncate: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("cannot truncate %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", filepath.Base(path), err)
	}
	return nil
}

// RecordLine is one line of records.jsonl as ScanRecords read it.
type RecordLine struct {
	Offset int64
	Len    int64
	Rec    Record // zero when Err is set
	Err    error  // why the line is not a valid record
	Torn   bool   // the last line, without its newline
}

// ScanRecords reads dir/records.jsonl read-only and returns every line, the
// corrupt ones and a partial last line marked. A missing file yields no
// lines and an error wrapping fs.ErrNotExist. It holds every record in
// memory; EachRecordLine streams.
func ScanRecords(dir string) ([]RecordLine, error) {
	var out []RecordLine
	err := EachRecordLine(dir, func(_ int, l RecordLine) error {
		out = append(out, l)
		return nil
	})
	return out, err
}

// EachRecordLine calls fn with every line of dir/records.jsonl (read-only)
// and its 0-based number, in file order, the corrupt ones and a partial
// last line marked; it stops at the first error of fn and returns it. A
// missing file is an error wrapping fs.ErrNotExist.
func EachRecordLine(dir string, fn func(i int, l RecordLine) error) error {
	f, err := os.Open(filepath.Join(dir, RecordsFileName))
	if err != nil {
		return fmt.Errorf("cannot scan records: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var (
		off  int64
		long []byte
	)
	for i := 0; ; i++ {
		line, err := readLine(br, &long)
		if err != nil && err != io.EOF {
			return fmt.Errorf("cannot scan records: %w", err)
		}
		if len(line) == 0 {
			return nil
		}
		l := RecordLine{Offset: off, Len: int64(len(line)), Torn: err == io.EOF}
		if l.Torn {
			l.Err = errors.New("partial last line (no newline)")
		} else if rec, derr := readRecordLine(line); derr != nil {
			l.Err = derr
		} else {
			l.Rec = rec
		}
		if ferr := fn(i, l); ferr != nil {
			return ferr
		}
		off += int64(len(line))
		if err == io.EOF {
			return nil
		}
	}
}

// RewriteRecords replaces dir/records.jsonl with its lines (numbered from
// 0 as EachRecordLine numbers them) for which keep returns true, copied
// byte for byte in order: it writes records.jsonl.tmp, fsyncs it, renames
// it over the original and fsyncs the directory, so a crash leaves either
// file whole. It returns the new file's size.
func RewriteRecords(dir string, keep func(i int) bool) (int64, error) {
	path := filepath.Join(dir, RecordsFileName)
	src, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("cannot rewrite records: %w", err)
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return 0, fmt.Errorf("cannot rewrite records: %w", err)
	}
	tmp := path + ".tmp"
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return 0, fmt.Errorf("cannot rewrite records: %w", err)
	}
	fail := func(err error) (int64, error) {
		dst.Close()
		os.Remove(tmp)
		return 0, fmt.Errorf("cannot rewrite records: %w", err)
	}
	br := bufio.NewReaderSize(src, 1<<20)
	bw := bufio.NewWriterSize(dst, 1<<20)
	var size int64
	for i := 0; ; i++ {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			if keep(i) {
				bw.Write(line)
				size += int64(len(line))
			}
			line, err = br.ReadSlice('\n')
		}
		if err != nil && err != io.EOF {
			return fail(err)
		}
		if len(line) > 0 && keep(i) {
			bw.Write(line)
			size += int64(len(line))
		}
		if err == io.EOF {
			break
		}
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := dst.Sync(); err != nil {
		return fail(err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("cannot rewrite records: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("cannot rewrite records: %w", err)
	}
	return size, syncDir(dir)
}
