package store

import (
	"errors"
	"log/slog"
	"os"
	"time"
)

// DefaultDataFileSize is the PageData file size cap used when
// Options.DataFileSize is zero: 64 MiB.
const DefaultDataFileSize = 64 << 20

// Errors returned by the store; test for them with errors.Is.
var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("store is closed")
	// ErrCorrupt means a file holds something other than a torn tail that
	// recovery could cut; the error text names the file, line and offset.
	ErrCorrupt = errors.New("store file is corrupt")
	// ErrNotFound is returned by PageFiles.Read for a page number that was
	// never appended.
	ErrNotFound = errors.New("page not found")
	// ErrBadURL is returned by PageFiles.Append for an empty URL or a URL
	// holding a line break, which the line-oriented index cannot carry.
	ErrBadURL = errors.New("url cannot be stored in the page index")
	// ErrReadOnly is returned by Append and Sync of a store opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("store is open read-only")
	// ErrMismatch is returned by PageFiles.ReadRecord when the page a
	// record points at was stored under another URL (page numbers reused
	// after a loss, or a lost page's placeholder), or when its body fails
	// the record's checksum (Record.BodyCRC: the bytes were damaged on
	// disk): that body is never the record's content.
	ErrMismatch = errors.New("page does not match its record")
	// ErrLocked is wrapped by LockDir when another process holds the data
	// directory; the error text names that process.
	ErrLocked = errors.New("data directory is locked")
)

// File and directory permissions of everything the store creates: crawl
// data is private to the user who crawled it.
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// FsckAdvice is what an error about damaged crawl data in dataDir tells
// the user to do: run spider fsck on it.
func FsckAdvice(dataDir string) string {
	return "run spider fsck --data " + dataDir + " to see what is damaged and spider fsck --data " + dataDir + " --repair to repair it"
}

// Options configures OpenPageFiles and OpenRecords. The zero value is ready to
// use; OpenRecords uses only Logger.
type Options struct {
	// DataFileSize is the size cap of one PageData file in bytes. A page is
	// written to a new data file when it would push the current one past the
	// cap; a page larger than the cap gets a data file of its own. Zero means
	// DefaultDataFileSize (64 MiB); negative values are an error.
	DataFileSize int64

	// Location is the time zone of the crawl-time text in PageIndex. Nil
	// means UTC. Reading parses the text in the same location, so keep it
	// unchanged across runs on one directory. In a zone with daylight-saving
	// time the repeated hour of each autumn reads back as its first
	// occurrence; UTC has no such hour.
	Location *time.Location

	// TruncateCorrupt makes OpenPageFiles treat a malformed PageIndex line
	// that is followed by more lines like a torn tail: that line and every
	// page after it are cut (and logged). False, the default, refuses to open
	// such an index with ErrCorrupt so that nothing is destroyed silently.
	TruncateCorrupt bool

	// ReadOnly opens the files for reading only, as every command that
	// does not crawl must (export, stats, index, graph, serve): nothing is
	// created, repaired or truncated, so it is safe beside a running crawl.
	// A torn tail (a crawl appending right now, or one killed) is not cut
	// but left unread: the store ends at the last complete page or record
	// present at open. A missing directory or file is an error naming the
	// path (wrapping fs.ErrNotExist). Append and Sync return ErrReadOnly.
	ReadOnly bool

	// Logger receives recovery reports (what was cut on open) and corrupt
	// lines skipped while iterating records. Nil discards them.
	Logger *slog.Logger
}

// Log attribute keys used by the store.
const (
	logKeyFile   = "file"
	logKeyOffset = "offset"
	logKeyBytes  = "bytes"
	logKeyLines  = "lines"
	logKeyLine   = "line"
	logKeyPages  = "pages"
	logKeyErr    = "err"
)

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o Options) location() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}
