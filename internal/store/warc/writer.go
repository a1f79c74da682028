package warc

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultFileSize is the WARC file size cap used when Options.FileSize is
// zero: 1 GiB, the customary size.
const DefaultFileSize = 1 << 30

// ErrClosed is returned by Writer methods called after Close.
var ErrClosed = errors.New("warc writer is closed")

// ErrBadExchange is wrapped by WriteExchange when the exchange itself
// cannot be written (its URL is not absolute or holds white space, its IP
// is not an address): nothing was written, and the writer stays usable.
var ErrBadExchange = errors.New("exchange cannot be written as WARC")

// Options configures NewWriter. The zero value is ready to use.
type Options struct {
	// FileSize is the size cap of one .warc.gz file in bytes. A new file is
	// started when the next exchange would push the current one past the
	// cap; a file always takes at least one exchange, so an exchange larger
	// than the cap gets a file of its own. Zero means DefaultFileSize;
	// negative values are an error.
	FileSize int64

	// Level is the gzip compression level (gzip.BestSpeed … gzip.BestCompression).
	// Zero means gzip.DefaultCompression.
	Level int

	// Software is the "software" field of the warcinfo records. Empty means
	// "spider".
	Software string

	// Info holds further warcinfo fields written after software, format and
	// conformsTo, e.g. {"operator", "…"}, {"robots", "classic"},
	// {"http-header-user-agent", "…"}. Names and values must be one line.
	Info []Field

	// Logger receives file rotations at Debug level. Nil discards them.
	Logger *slog.Logger
}

// Exchange is one HTTP fetch to archive.
type Exchange struct {
	URL    string // absolute request URL (WARC-Target-URI)
	Method string // request method; empty means GET
	// Proto is the protocol of the request and status lines, as in
	// http.Response.Proto; empty means "HTTP/1.1".
	Proto string
	// RequestHeader holds the request fields as sent (User-Agent,
	// Accept-Encoding, …). Host comes from here or else from URL.
	RequestHeader http.Header
	Status        int // response status code
	// RawResponseHeader is the status line and header fields exactly as
	// received, up to and including the empty line. Nil means: synthesise
	// them from Proto, Status and ResponseHeader.
	RawResponseHeader []byte
	ResponseHeader    http.Header
	// Body is the payload as the crawler stored it: always free of the
	// chunked transfer coding, content-decoded when Decoded is set.
	Body []byte
	// Decoded reports that Body was content-decoded (gzip, br, …), as
	// http.Response.Uncompressed does; the stored header is then rewritten
	// to match (see the package documentation).
	Decoded bool
	// Truncated reports that Body is shorter than the response because a
	// size or time limit cut it; the record gets "WARC-Truncated: length".
	Truncated bool
	IP        string        // server IP address (WARC-IP-Address); empty if unknown
	Fetched   time.Time     // when the response arrived (WARC-Date); zero means now
	Duration  time.Duration // fetch time, written as fetchTimeMs in the metadata record
	OutLinks  []string      // absolute links found in Body, one "outlink:" line each
}

// Writer writes exchanges into rolling PREFIX-NNNNN.warc.gz files. All
// methods are safe for concurrent use.
type Writer struct {
	dir, prefix string
	capBytes    int64
	level       int
	software    string
	info        []Field
	log         *slog.Logger
	gzPool      sync.Pool

	mu       sync.Mutex
	closed   bool
	broken   error
	f        *os.File
	name     string
	seq      int   // number of the next file
	size     int64 // bytes in the current file
	infoEnd  int64 // size of the current file's warcinfo record
	dirDirty bool
}

// NewWriter returns a Writer of files named prefix-00000.warc.gz, … in dir,
// creating dir if needed. Numbering continues after the highest file of that
// prefix already in dir, so earlier files are never appended to or
// overwritten. The first file is created by the first WriteExchange. The
// prefix must be non-empty and hold no path separator.
func NewWriter(dir, prefix string, opt Options) (*Writer, error) {
	if prefix == "" || strings.ContainsAny(prefix, `/\`) || strings.ContainsRune(prefix, os.PathSeparator) {
		return nil, fmt.Errorf("cannot create warc writer: prefix %q must be a non-empty file name part", prefix)
	}
	if opt.FileSize < 0 {
		return nil, fmt.Errorf("cannot create warc writer: file size %d is negative; use 0 for the default", opt.FileSize)
	}
	if opt.Level < gzip.HuffmanOnly || opt.Level > gzip.BestCompression {
		return nil, fmt.Errorf("cannot create warc writer: gzip level %d is out of range", opt.Level)
	}
	for _, f := range opt.Info {
		if f.Name == "" || strings.ContainsAny(f.Name, ":\r\n") || strings.ContainsAny(f.Value, "\r\n") {
			return nil, fmt.Errorf("cannot create warc writer: warcinfo field %q: %q must be a one-line name and value", f.Name, f.Value)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create warc writer: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot create warc writer: %w", err)
	}
	w := &Writer{dir: dir, prefix: prefix, capBytes: opt.FileSize, level: opt.Level, software: opt.Software, info: opt.Info, log: opt.Logger}
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if !ok {
			continue
		}
		digits, ok = strings.CutSuffix(digits, ".warc.gz")
		if n, err := strconv.Atoi(digits); ok && err == nil && n >= w.seq && len(digits) >= 5 {
			w.seq = n + 1
		}
	}
	if w.capBytes == 0 {
		w.capBytes = DefaultFileSize
	}
	if w.level == 0 {
		w.level = gzip.DefaultCompression
	}
	if w.software == "" {
		w.software = "spider"
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	return w, nil
}

// FileName returns the name of file n of prefix: "prefix-00042.warc.gz".
func FileName(prefix string, n int) string {
	return fmt.Sprintf("%s-%05d.warc.gz", prefix, n)
}

// WriteExchange archives ex as a request, a response and a metadata record,
// in the current file or, past the size cap, in a new one. The three gzip
// members reach the operating system in one write before it returns (power
// loss needs Sync). It returns ctx's error without writing if ctx is done,
// and an error when ex.URL is not an absolute URL without spaces, ex.IP is
// not an IP address, or RawResponseHeader does not start with an HTTP status
// line. On a write error the partial write is undone; if even that fails,
// this and every later call fail. WriteExchange does not keep ex.
func (w *Writer) WriteExchange(ctx context.Context, ex Exchange) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot write exchange of %s: %w", ex.URL, err)
	}
	batch, err := w.encodeExchange(&ex)
	if err != nil {
		return fmt.Errorf("cannot write exchange of %s: %w", ex.URL, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("cannot write exchange of %s: %w", ex.URL, ErrClosed)
	}
	if w.broken != nil {
		return fmt.Errorf("cannot write exchange of %s: an earlier failure left %s in an unknown state: %w", ex.URL, w.name, w.broken)
	}
	if w.f == nil || (w.size > w.infoEnd && w.size+int64(len(batch)) > w.capBytes) {
		if err := w.rotate(); err != nil {
			return fmt.Errorf("cannot write exchange of %s: %w", ex.URL, err)
		}
	}
	if _, err := w.f.WriteAt(batch, w.size); err != nil {
		if terr := w.f.Truncate(w.size); terr != nil {
			w.broken = terr
		}
		return fmt.Errorf("cannot write exchange of %s to %s: %w", ex.URL, w.name, err)
	}
	w.size += int64(len(batch))
	return nil
}

// encodeExchange builds the three gzip members of ex.
func (w *Writer) encodeExchange(ex *Exchange) ([]byte, error) {
	if strings.ContainsAny(ex.URL, " \t\r\n") {
		return nil, fmt.Errorf("url holds white space: %w", ErrBadExchange)
	}
	u, err := url.Parse(ex.URL)
	if err != nil {
		return nil, fmt.Errorf("cannot parse url: %w: %w", err, ErrBadExchange)
	}
	if !u.IsAbs() || u.Host == "" {
		return nil, fmt.Errorf("url is not absolute: %w", ErrBadExchange)
	}
	var ip string
	if ex.IP != "" {
		addr, err := netip.ParseAddr(ex.IP)
		if err != nil {
			ap, aperr := netip.ParseAddrPort(ex.IP)
			if aperr != nil {
				return nil, fmt.Errorf("ip %q is not an IP address: %w", ex.IP, ErrBadExchange)
			}
			addr = ap.Addr()
		}
		ip = addr.Unmap().WithZone("").String()
	}
	date := ex.Fetched
	if date.IsZero() {
		date = time.Now()
	}
	warcDate := date.UTC().Format("2006-01-02T15:04:05Z")
	head, err := responseHead(ex)
	if err != nil {
		return nil, err
	}
	respID, reqID, metaID := newRecordID(), newRecordID(), newRecordID()

	var out bytes.Buffer
	out.Grow(len(ex.Body)/2 + 4096)
	common := func(typ, id string) []Field {
		f := []Field{{"WARC-Type", typ}, {"WARC-Record-ID", id}, {"WARC-Date", warcDate}, {"WARC-Target-URI", ex.URL}}
		if ip != "" {
			f = append(f, Field{"WARC-IP-Address", ip})
		}
		return f
	}

	req := requestBlock(u, ex)
	fields := append(common("request", reqID),
		Field{"WARC-Concurrent-To", respID},
		Field{"Content-Type", "application/http;msgtype=request"})
	if err := w.writeMember(&out, fields, req); err != nil {
		return nil, err
	}

	fields = append(common("response", respID),
		Field{"Content-Type", "application/http;msgtype=response"},
		Field{"WARC-Payload-Digest", digest(ex.Body)})
	if ex.Truncated {
		fields = append(fields, Field{"WARC-Truncated", "length"})
	}
	if err := w.writeMember(&out, fields, head, ex.Body); err != nil {
		return nil, err
	}

	fields = append(common("metadata", metaID),
		Field{"WARC-Concurrent-To", respID},
		Field{"Content-Type", "application/warc-fields"})
	if err := w.writeMember(&out, fields, metadataBlock(ex, ip)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// metadataBlock lists the fetch time, the IP and the outlinks as WARC fields.
func metadataBlock(ex *Exchange, ip string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "fetchTimeMs: %d\r\n", ex.Duration.Milliseconds())
	if ip != "" {
		fmt.Fprintf(&b, "ip: %s\r\n", ip)
	}
	for _, l := range ex.OutLinks {
		fmt.Fprintf(&b, "outlink: %s\r\n", fieldValue.Replace(l))
	}
	return b.Bytes()
}

// fieldValue percent-encodes the bytes a one-line field value cannot hold.
var fieldValue = strings.NewReplacer("\r", "%0D", "\n", "%0A")

// newRecordID returns a WARC-Record-ID: a random (version 4) UUID URN.
func newRecordID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// digest returns "sha1:" and the base-32 SHA-1 of the concatenated parts.
func digest(parts ...[]byte) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write(p)
	}
	return digestOf(h)
}

func digestOf(h hash.Hash) string {
	return "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(nil))
}

// writeMember appends one record as its own gzip member to out: the version
// line, fields, WARC-Block-Digest and Content-Length of the block made of
// parts, the block and the CRLF CRLF trailer.
func (w *Writer) writeMember(out *bytes.Buffer, fields []Field, parts ...[]byte) error {
	var n int
	for _, p := range parts {
		n += len(p)
	}
	var hb bytes.Buffer
	hb.WriteString("WARC/1.1\r\n")
	for _, f := range fields {
		hb.WriteString(f.Name)
		hb.WriteString(": ")
		hb.WriteString(f.Value)
		hb.WriteString("\r\n")
	}
	fmt.Fprintf(&hb, "WARC-Block-Digest: %s\r\nContent-Length: %d\r\n\r\n", digest(parts...), n)

	z, _ := w.gzPool.Get().(*gzip.Writer)
	if z == nil {
		var err error
		if z, err = gzip.NewWriterLevel(out, w.level); err != nil {
			return fmt.Errorf("cannot start gzip member: %w", err)
		}
	} else {
		z.Reset(out)
	}
	defer w.gzPool.Put(z)
	if _, err := z.Write(hb.Bytes()); err != nil {
		return fmt.Errorf("cannot compress record: %w", err)
	}
	for _, p := range parts {
		if _, err := z.Write(p); err != nil {
			return fmt.Errorf("cannot compress record: %w", err)
		}
	}
	if _, err := io.WriteString(z, "\r\n\r\n"); err != nil {
		return fmt.Errorf("cannot compress record: %w", err)
	}
	if err := z.Close(); err != nil {
		return fmt.Errorf("cannot compress record: %w", err)
	}
	return nil
}

// rotate closes the current file (after fsync) and starts the next one with
// its warcinfo record. The caller holds w.mu.
func (w *Writer) rotate() error {
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("cannot sync %s: %w", w.name, err)
		}
		if err := w.f.Close(); err != nil {
			return fmt.Errorf("cannot close %s: %w", w.name, err)
		}
		w.f = nil
	}
	name := FileName(w.prefix, w.seq)
	f, err := os.OpenFile(filepath.Join(w.dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cannot start warc file: %w", err)
	}
	w.seq++
	var block bytes.Buffer
	fmt.Fprintf(&block, "software: %s\r\n", fieldValue.Replace(w.software))
	block.WriteString("format: WARC File Format 1.1\r\n")
	block.WriteString("conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n")
	for _, fl := range w.info {
		fmt.Fprintf(&block, "%s: %s\r\n", fl.Name, fl.Value)
	}
	var out bytes.Buffer
	fields := []Field{
		{"WARC-Type", "warcinfo"},
		{"WARC-Record-ID", newRecordID()},
		{"WARC-Date", time.Now().UTC().Format("2006-01-02T15:04:05Z")},
		{"WARC-Filename", name},
		{"Content-Type", "application/warc-fields"},
	}
	if err := w.writeMember(&out, fields, block.Bytes()); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(out.Bytes()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("cannot write warcinfo to %s: %w", name, err)
	}
	w.f, w.name, w.size, w.infoEnd, w.dirDirty = f, name, int64(out.Len()), int64(out.Len()), true
	w.log.Debug("warc: started file", "file", name)
	return nil
}

// Sync flushes the current file, and the directory if a file was created
// since the last Sync, to stable storage. WriteExchange waits while it runs.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("cannot sync warc: %w", ErrClosed)
	}
	return w.syncLocked()
}

func (w *Writer) syncLocked() error {
	if w.f == nil {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("cannot sync %s: %w", w.name, err)
	}
	if w.dirDirty {
		d, err := os.Open(w.dir)
		if err != nil {
			return fmt.Errorf("cannot sync warc directory: %w", err)
		}
		defer d.Close()
		if err := d.Sync(); err != nil {
			return fmt.Errorf("cannot sync warc directory: %w", err)
		}
		w.dirDirty = false
	}
	return nil
}

// Close syncs and closes the current file. Later calls to Close return nil;
// the other methods return ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.syncLocked()
	if w.f != nil {
		if cerr := w.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot close %s: %w", w.name, cerr)
		}
	}
	return err
}
