package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// RecordsFileName is the name of the crawl records file in its directory.
const RecordsFileName = "records.jsonl"

// maxLoggedCorrupt is how many corrupt record lines one Iterate logs one by
// one; the rest are summed up in one final log entry.
const maxLoggedCorrupt = 10

// Record is the outcome of one fetch attempt, stored as one JSON line.
type Record struct {
	URL         string    `json:"url"`                    // URL as scheduled
	FinalURL    string    `json:"final_url,omitempty"`    // URL after redirects, when different
	Status      int       `json:"status"`                 // HTTP status; 0 when no response arrived
	Outcome     string    `json:"outcome"`                // outcome class (crawl.Outcome… or the status code)
	Depth       int       `json:"depth"`                  // link depth from the seeds
	FetchedAt   time.Time `json:"fetched_at"`             // when the attempt finished
	ContentType string    `json:"content_type,omitempty"` // media type of the response
	Charset     string    `json:"charset,omitempty"`      // character set the body was decoded from
	Title       string    `json:"title,omitempty"`        // HTML title
	OutLinks    []string  `json:"out_links,omitempty"`    // absolute links found in the page
	Size        int       `json:"size"`                   // body bytes received
	PageNo      int64     `json:"page_no"`                // page number in PageFiles; -1 if no body stored
	DuplicateOf string    `json:"duplicate_of,omitempty"` // the earlier page this one copies, as the crawl decided when it recorded it: same fingerprint, or with Near a SimHash within --near-dup-distance; "" for an original
	Near        bool      `json:"near,omitempty"`         // DuplicateOf was found by SimHash (a near-duplicate; the fingerprint differs)
	Fingerprint string    `json:"fingerprint,omitempty"`  // hex content fingerprint of the page text, if any
	SimHash     string    `json:"simhash,omitempty"`      // hex near-duplicate SimHash of the page text (dedup.PageSimHash), if any
	Canonical   string    `json:"canonical,omitempty"`    // the page's canonical URL (<link rel="canonical"> or Link header), when it names another URL of the same host in scope
	BodyCRC     string    `json:"body_crc32c,omitempty"`  // BodyChecksum of the stored body, when PageNo >= 0 (records before issue 19 lack it)
	Attempts    int       `json:"attempts,omitempty"`     // fetch attempts made (retries + 1)
	IP          string    `json:"ip,omitempty"`           // server IP address
	DurationMS  int64     `json:"duration_ms"`            // fetch time in milliseconds
	Error       string    `json:"error,omitempty"`        // failure text, when the attempt failed
}

// Records is the append-only crawl records file records.jsonl: one JSON
// Record per line. All methods are safe for concurrent use.
type Records struct {
	path     string
	log      *slog.Logger
	readOnly bool

	mu       sync.Mutex
	closed   bool
	broken   error // set when a failed Append could not be undone
	f        *os.File
	size     int64
	dirDirty bool // the file was created since the last directory fsync
}

// OpenRecords opens (creating if needed) dir/records.jsonl. A partial last
// line left by a crash is cut and logged at Warn level; complete lines are
// never touched, even corrupt ones (Iterate skips those).
//
// With opt.ReadOnly the file must exist (else the error names the path and
// wraps fs.ErrNotExist: a directory without records.jsonl holds no crawl),
// nothing is created or cut, and Iterate reads the complete lines present
// at open; a partial last line (a record being appended) is not read.
func OpenRecords(dir string, opt Options) (*Records, error) {
	r := &Records{path: filepath.Join(dir, RecordsFileName), log: opt.logger(), readOnly: opt.ReadOnly}
	if opt.ReadOnly {
		return r, r.openReadOnly()
	}
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("cannot open records: cannot create directory: %w", err)
	}
	if _, err := os.Stat(r.path); errors.Is(err, fs.ErrNotExist) {
		r.dirDirty = true // created below; Sync makes the name durable
	}
	f, err := os.OpenFile(r.path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("cannot open records: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot open records: %w", err)
	}
	end, err := lastLineEnd(f, info.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot open records: cannot scan for a torn tail: %w", err)
	}
	if end < info.Size() {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot open records: cannot cut the partial last line: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot open records: %w", err)
		}
		r.log.Warn("records: cut partial last line",
			logKeyFile, RecordsFileName, logKeyOffset, end, logKeyBytes, info.Size()-end)
	}
	r.f, r.size = f, end
	return r, nil
}

// openReadOnly opens the file for reading up to its last complete line.
func (r *Records) openReadOnly() error {
	f, err := os.Open(r.path)
	if err != nil {
		return fmt.Errorf("cannot open the crawl records %s (is it a crawl's data directory?): %w", r.path, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("cannot open records: %w", err)
	}
	end, err := lastLineEnd(f, info.Size())
	if err != nil {
		f.Close()
		return fmt.Errorf("cannot open records: cannot scan for the last complete line of %s: %w", r.path, err)
	}
	r.f, r.size = f, end
	return nil
}

// Size returns the bytes of complete records in the file: its size, less a
// partial last line left at open with Options.ReadOnly.
func (r *Records) Size() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.size
}

// lastLineEnd returns the offset just after the last newline in the first
// size bytes of f, or 0 if there is none.
func lastLineEnd(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		start := end - n
		if _, err := f.ReadAt(buf[:n], start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// Append writes rec as one JSON line with a single write system call, so the
// line is with the operating system when Append returns (power loss needs
// Sync). On a write error Append undoes its partial write; if even that
// fails, this and every later Append fail until the file is reopened.
func (r *Records) Append(rec Record) error {
	_, err := r.AppendEnd(rec)
	return err
}

// AppendEnd is Append that also returns the file's size just after rec's
// line: the least size records.jsonl must keep for rec to be in it. The
// crawl hands it to its state (crawlstate.Outcome.RecordsEnd), so that a later
// open can tell a truncated records.jsonl from a complete one.
func (r *Records) AppendEnd(rec Record) (int64, error) {
	bp := lineBufs.Get().(*[]byte)
	line, err := encodeRecordLine((*bp)[:0], &rec) // ends with '\n'
	defer func() {
		if cap(line) <= maxPooledLine {
			*bp = line[:0]
			lineBufs.Put(bp)
		}
	}()
	if err != nil {
		return 0, fmt.Errorf("cannot encode record of %s: %w", rec.URL, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, fmt.Errorf("cannot append record: %w", ErrClosed)
	}
	if r.readOnly {
		return 0, fmt.Errorf("cannot append record: %w", ErrReadOnly)
	}
	if r.broken != nil {
		return 0, fmt.Errorf("cannot append record: an earlier failure left %s in an unknown state; reopen it to repair: %w", RecordsFileName, r.broken)
	}
	if _, err := r.f.WriteAt(line, r.size); err != nil {
		if terr := r.f.Truncate(r.size); terr != nil {
			r.broken = terr
		}
		return 0, fmt.Errorf("cannot append record of %s: %w", rec.URL, err)
	}
	r.size += int64(len(line))
	return r.size, nil
}

// Iterate calls fn with every record in file order, up to the end of the file
// as it was when Iterate started, and stops at the first error fn returns,
// which Iterate returns unchanged. A line that is not a valid JSON record is
// skipped, counted in skipped and logged at Warn level (the first ten one by
// one); it never stops the iteration. Iterate uses its own file handle and
// holds no lock while fn runs, so fn may call Append.
func (r *Records) Iterate(fn func(Record) error) (skipped int, err error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0, fmt.Errorf("cannot iterate records: %w", ErrClosed)
	}
	size := r.size
	r.mu.Unlock()

	f, err := os.Open(r.path)
	if err != nil {
		return 0, fmt.Errorf("cannot iterate records: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
	var (
		long []byte
		off  int64
		no   int
	)
	defer func() {
		if skipped > maxLoggedCorrupt {
			r.log.Warn("records: skipped corrupt lines", logKeyFile, RecordsFileName, logKeyLines, skipped)
		}
	}()
	for {
		line, rerr := readLine(br, &long)
		if rerr != nil && rerr != io.EOF {
			return skipped, fmt.Errorf("cannot iterate records: %w", rerr)
		}
		if len(line) == 0 {
			return skipped, nil
		}
		no++
		rec, jerr := decodeRecordLine(line)
		if jerr != nil {
			skipped++
			if skipped <= maxLoggedCorrupt {
				r.log.Warn("records: skipped corrupt line", logKeyFile, RecordsFileName,
					logKeyLine, no, logKeyOffset, off, logKeyErr, jerr)
			}
		} else if ferr := fn(rec); ferr != nil {
			return skipped, ferr
		}
		off += int64(len(line))
		if rerr == io.EOF {
			return skipped, nil
		}
	}
}

// Sync flushes records.jsonl to stable storage. Append waits while it runs.
func (r *Records) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("cannot sync records: %w", ErrClosed)
	}
	if r.readOnly {
		return fmt.Errorf("cannot sync records: %w", ErrReadOnly)
	}
	return r.syncLocked()
}

func (r *Records) syncLocked() error {
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", RecordsFileName, err)
	}
	if r.dirDirty {
		if err := syncDir(filepath.Dir(r.path)); err != nil {
			return err
		}
		r.dirDirty = false
	}
	return nil
}

// Close syncs and closes the file. Later calls to Close return nil; every
// other method returns ErrClosed.
func (r *Records) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.readOnly {
		return r.f.Close()
	}
	err := r.syncLocked()
	if cerr := r.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("cannot close %s: %w", RecordsFileName, cerr)
	}
	return err
}

// PageURL is the URL the record's page is stored under in the page files:
// the final URL, or the URL when the record has none.
func (r Record) PageURL() string {
	if r.FinalURL != "" {
		return r.FinalURL
	}
	return r.URL
}
