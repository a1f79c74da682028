package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// PageReader reads page bodies from a crawl's page files without ever
// writing: it opens them with Options.ReadOnly, so nothing is created,
// cut or repaired and a running crawl can keep appending. It holds the
// pages complete when it was opened; a page being appended (a torn tail)
// is not there. It is what the readers of a crawl (the index build, its
// distributed mappers, benchmarks) read bodies through. Safe for
// concurrent use.
type PageReader struct {
	pf *PageFiles // nil: the directory holds no page files
}

// OpenPageReader opens the page files in dir (a crawl's DATA/pages,
// DataDir.Pages) read-only. A directory without page files (no PageIndex,
// or no directory: a crawl that stored no page yet) gives an empty reader
// whose reads fail with ErrNotFound; any other failure to open is an error
// saying so.
func OpenPageReader(dir string) (*PageReader, error) {
	pf, err := OpenPageFiles(dir, Options{ReadOnly: true})
	if errors.Is(err, fs.ErrNotExist) {
		return &PageReader{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the page files: %w", err)
	}
	return &PageReader{pf: pf}, nil
}

// Count returns how many pages the reader holds (0 for an empty reader).
func (r *PageReader) Count() int64 {
	if r.pf == nil {
		return 0
	}
	return r.pf.Count()
}

// Read returns page no's body, not checked against any record (prefer
// ReadRecord). A page number the reader does not hold gives an error
// wrapping ErrNotFound. The body is a fresh slice the caller owns.
func (r *PageReader) Read(no int64) ([]byte, error) {
	if r.pf == nil {
		return nil, fmt.Errorf("page %d is not in the page files (there are none): %w", no, ErrNotFound)
	}
	pg, err := r.pf.Read(no)
	if err != nil {
		return nil, err
	}
	return pg.Body, nil
}

// ReadRecord returns the body of rec's page, checked as
// PageFiles.ReadRecord checks it: a page stored for another URL, or whose
// body fails rec.BodyCRC, gives an error wrapping ErrMismatch; a record
// without a page, or a page the reader does not hold, ErrNotFound. Only
// URL, FinalURL, PageNo and BodyCRC of rec are read. The body is a fresh
// slice the caller owns.
func (r *PageReader) ReadRecord(rec Record) ([]byte, error) {
	if r.pf == nil {
		return nil, fmt.Errorf("page %d of %s is not in the page files (there are none): %w", rec.PageNo, rec.URL, ErrNotFound)
	}
	pg, err := r.pf.ReadRecord(rec)
	if err != nil {
		return nil, err
	}
	return pg.Body, nil
}

// Close closes the page files. Reads after Close fail with ErrClosed (an
// empty reader's keep failing with ErrNotFound).
func (r *PageReader) Close() error {
	if r.pf == nil {
		return nil
	}
	return r.pf.Close()
}

// ErrRecordsShrank is wrapped (by a *ShrankError) when records.jsonl is
// shorter than a RecordsTail had seen it: the file was replaced (a crawl
// started over in the directory) or cut (spider fsck --repair), so the
// offsets read before mean nothing in it.
var ErrRecordsShrank = errors.New("records.jsonl is shorter than it was read")

// ShrankError is the error RecordsTail.Read returns when records.jsonl
// shrank under it; it wraps ErrRecordsShrank.
type ShrankError struct {
	Path string // the records file
	Size int64  // its size now
	Seen int64  // the size the tail had seen (or started at)
}

func (e *ShrankError) Error() string {
	return fmt.Sprintf("%s has %d bytes where %d were seen: %v", e.Path, e.Size, e.Seen, ErrRecordsShrank)
}

// Unwrap returns ErrRecordsShrank.
func (e *ShrankError) Unwrap() error { return ErrRecordsShrank }

// RecordsTail reads a data directory's records.jsonl as a crawl appends to
// it: each Read hands out the complete lines after the last one handed
// out, never opening the file for writing. A partial last line (a record
// being appended, or a torn tail a crash left and the next writer will
// cut) is not handed out; it is read, whole, by a later Read once its
// newline is there. Lines are handed out as they are in the file: the
// caller decodes what it needs of the record (a reader that wants only a
// few fields decodes only those). A RecordsTail is not safe for
// concurrent use; the zero value is not usable (NewRecordsTail).
type RecordsTail struct {
	path string
	off  int64 // the end of the last complete line handed out
	seen int64 // the file's size at the last Read; at least the start offset
}

// NewRecordsTail returns a tail of dir's records.jsonl (DataDir.Records)
// whose first Read starts at byte offset from, which must be the end of a
// line (0, or an offset a Read handed out). It opens nothing yet.
func NewRecordsTail(dir string, from int64) *RecordsTail {
	return &RecordsTail{path: DataDir(dir).Records(), off: from, seen: from}
}

// Path returns the records file the tail reads.
func (t *RecordsTail) Path() string { return t.path }

// Offset returns the end of the last complete line handed out (the start
// offset before any): where the next Read starts.
func (t *RecordsTail) Offset() int64 { return t.off }

// Reset makes the next Read start at offset 0 of a file of any size, as a
// new tail would: for a reader that starts over after ErrRecordsShrank or
// a missing file.
func (t *RecordsTail) Reset() { t.off, t.seen = 0, 0 }

// Read opens the file read-only and calls fn with each complete line from
// Offset on, without its newline, and the offset just after the line,
// until fn returns false, the file (or the limit) ends or a partial line
// is left; Offset then is the end of the last line handed to fn. The line
// is valid only until fn returns. Read stops at the size the file had when
// it was opened (lines appended meanwhile are for the next Read), or
// earlier at limit when limit ≥ 0: no byte at or beyond that offset is
// read, and a line crossing it is left, as a partial one.
//
// Errors: a file that cannot be opened gives the os package's error as it
// is (a *fs.PathError naming the file; errors.Is(err, fs.ErrNotExist) for
// a directory without records); a file shorter than the tail had seen it,
// or than the start offset, gives a *ShrankError (wrapping
// ErrRecordsShrank) and reads nothing; a failed read gives the error of the
// read. The caller says what it was reading for.
func (t *RecordsTail) Read(limit int64, fn func(line []byte, end int64) bool) error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	if size < t.seen {
		return &ShrankError{Path: t.path, Size: size, Seen: t.seen}
	}
	t.seen = size
	if limit >= 0 && limit < size {
		size = limit
	}
	// max: a limit below Offset reads nothing (io.NewSectionReader would
	// take a negative length for "to the end").
	br := bufio.NewReaderSize(io.NewSectionReader(f, t.off, max(size-t.off, 0)), 1<<20)
	var long []byte
	for {
		line, err := readLine(br, &long)
		if err == io.EOF {
			return nil // a partial line (or nothing) is left for a later Read
		}
		if err != nil {
			return err
		}
		t.off += int64(len(line))
		if !fn(line[:len(line)-1], t.off) {
			return nil
		}
	}
}

// readLine returns the next line of br with its newline, as
// bufio.Reader.ReadSlice does, but whole however long it is: a line longer
// than br's buffer is gathered in *long, which is reused from call to call.
// The line is valid until the next call; the error is ReadSlice's last
// (io.EOF with a partial last line, or nothing).
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	*long = append((*long)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		*long = append(*long, line...)
	}
	return *long, err
}
