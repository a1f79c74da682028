package warc

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	gowarc "github.com/nlnwa/gowarc/v3"
	whatwg "github.com/nlnwa/whatwg-url/url"
)

// DefaultFileSize is the WARC file size cap used when Options.FileSize is
// zero: 1 GiB, the customary size.
const DefaultFileSize = 1 << 30

// DefaultDedup is a good Options.Dedup for a crawl: the payload digests of
// the last 32,768 responses stored in full, with their record ids, URLs and
// dates: about 11 MiB with URLs of 70 bytes (measured: 21.8 MiB for 65,536).
const DefaultDedup = 1 << 15

// The revisit profiles of WARC 1.1 §6.7 (Revisit.Profile).
const (
	// ProfileServerNotModified: the server answered a conditional request
	// 304 Not Modified; the record holds that answer's header.
	ProfileServerNotModified = gowarc.ProfileServerNotModifiedV1_1
	// ProfileIdenticalPayloadDigest: the payload is identical (same
	// WARC-Payload-Digest) to one stored earlier; the record holds the
	// response header, not the payload.
	ProfileIdenticalPayloadDigest = gowarc.ProfileIdenticalPayloadDigestV1_1
)

// ErrClosed is returned by Writer methods called after Close.
var ErrClosed = errors.New("warc writer is closed")

// ErrBadExchange is wrapped by WriteExchange when the exchange itself
// cannot be written (its URL is not absolute or holds white space, its IP
// is not an address, its response header is not HTTP, its revisit has no
// profile): nothing was written, and the writer stays usable.
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

	// Dedup is how many payload digests the writer remembers to store exact
	// duplicates as revisit records (ProfileIdenticalPayloadDigest): a 2xx
	// response, not truncated, whose non-empty payload has the digest of
	// one this Writer stored in full is written as a revisit naming that
	// record (WARC-Refers-To, -Target-URI, -Date). The most recently stored
	// digests are kept (two generations of Dedup/2); a Writer starts with
	// none, so the first copy after a restart is stored in full again.
	// Zero stores every payload in full.
	Dedup int

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
	// Accept-Encoding, If-None-Match, …). Host comes from here or else
	// from URL.
	RequestHeader http.Header
	Status        int // response status code
	// RawResponseHeader is the status line and header fields as received,
	// up to and including the empty line. Nil means: synthesise them from
	// Proto, Status and ResponseHeader.
	RawResponseHeader []byte
	ResponseHeader    http.Header
	// Body is the payload as transferred: with its Content-Encoding (gzip,
	// br, … bytes, as the header says), free of the chunked transfer coding
	// only (the header's Transfer-Encoding is then dropped and a
	// Content-Length of the stored bytes set, see the package
	// documentation).
	Body []byte
	// Truncated reports that Body is shorter than the response because a
	// size or time limit cut it; the record gets "WARC-Truncated: length".
	Truncated bool
	IP        string        // server IP address (WARC-IP-Address); empty if unknown
	Fetched   time.Time     // when the response arrived (WARC-Date); zero means now
	Duration  time.Duration // fetch time, written as fetchTimeMs in the metadata record
	OutLinks  []string      // absolute links found in Body, one "outlink:" line each
	// Revisit, if not nil, makes the response a revisit record (WARC 1.1
	// §6.7) holding the response header only.
	Revisit *Revisit
}

// Revisit describes the earlier capture a revisit record refers to.
type Revisit struct {
	// Profile is ProfileServerNotModified or ProfileIdenticalPayloadDigest.
	Profile string
	// RefersToURI is the earlier capture's URL (WARC-Refers-To-Target-URI);
	// empty means Exchange.URL.
	RefersToURI string
	// RefersToDate is the earlier capture's WARC-Date
	// (WARC-Refers-To-Date); zero leaves the field out.
	RefersToDate time.Time
	// RefersTo is the earlier record's WARC-Record-ID; empty leaves
	// WARC-Refers-To out (a capture of an earlier run).
	RefersTo string
	// PayloadDigest is the earlier payload's WARC-Payload-Digest, required
	// by ProfileIdenticalPayloadDigest.
	PayloadDigest string
}

// Writer writes exchanges into rolling PREFIX-NNNNN.warc.gz files. All
// methods are safe for concurrent use.
//
// Records are assembled and serialised by gowarc (nlnwa/gowarc's record
// builder and marshaler; the digests are computed here, see
// recordOptions). The files are kept by hand, not
// by gowarc's WarcFileWriter, for what it does not do: the three records of
// an exchange reach the file in one write (a kill leaves all or none, and a
// failed write is cut off again), compression runs in the callers'
// goroutines outside the lock, files are named PREFIX-NNNNN.warc.gz from
// their first byte (no ".open" name for fsck and export to miss), numbering
// continues after a restart, and Sync makes them durable at the crawl's
// checkpoints instead of after every record.
type Writer struct {
	dir, prefix string
	capBytes    int64
	level       int
	software    string
	info        []Field
	log         *slog.Logger
	gzPool      sync.Pool
	dedup       *digestMemo // nil: Options.Dedup 0

	mu       sync.Mutex
	closed   bool
	broken   error
	f        *os.File
	name     string
	infoID   string // WARC-Record-ID of the current file's warcinfo record
	nextInfo string // that of the next file's
	seq      int    // number of the next file
	size     int64  // bytes in the current file
	infoEnd  int64  // size of the current file's warcinfo record
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
	if opt.Dedup < 0 {
		return nil, fmt.Errorf("cannot create warc writer: dedup size %d is negative; use 0 to store every payload", opt.Dedup)
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
	w := &Writer{dir: dir, prefix: prefix, capBytes: opt.FileSize, level: opt.Level, software: opt.Software,
		info: opt.Info, log: opt.Logger, nextInfo: newRecordID()}
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
	if opt.Dedup > 0 {
		w.dedup = newDigestMemo(opt.Dedup)
	}
	return w, nil
}

// FileName returns the name of file n of prefix: "prefix-00042.warc.gz".
func FileName(prefix string, n int) string {
	return fmt.Sprintf("%s-%05d.warc.gz", prefix, n)
}

// WriteExchange archives ex as a request, a response (or a revisit) and a
// metadata record, in the current file or, past the size cap, in a new
// one; every record names the file's warcinfo record (WARC-Warcinfo-ID).
// The three gzip members reach the operating system in one write before it
// returns (power loss needs Sync). It returns ctx's error without writing
// if ctx is done, and an error wrapping ErrBadExchange when ex.URL is not
// an absolute URL without spaces, ex.IP is not an IP address,
// RawResponseHeader does not start with an HTTP status line or ex.Revisit
// is incomplete. On a write error the partial write is undone; if even
// that fails, this and every later call fail. WriteExchange does not keep
// ex.
func (w *Writer) WriteExchange(ctx context.Context, ex Exchange) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot write exchange of %s: %w", ex.URL, err)
	}
	enc, err := w.prepare(&ex)
	if err != nil {
		return fmt.Errorf("cannot write exchange of %s: %w", ex.URL, err)
	}
	// Compress outside the lock against the current file's warcinfo id;
	// a file started meanwhile (rare: once per file) re-encodes inside.
	w.mu.Lock()
	info := w.infoID
	if w.f == nil {
		info = w.nextInfo
	}
	w.mu.Unlock()
	batch, err := w.encode(enc, info)
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
	if info != w.infoID {
		if batch, err = w.encode(enc, w.infoID); err != nil {
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
	if enc.digest != "" && w.dedup != nil && enc.revisit == nil {
		w.dedup.add(enc.digest, original{id: enc.respID, uri: enc.url, date: enc.date})
	}
	return nil
}

// prepared is an exchange checked and laid out, ready to encode.
type prepared struct {
	url, ip, date         string
	respID, reqID, metaID string
	req, head, body, meta []byte
	truncated             bool
	digest                string // the payload's, when it may be remembered for dedup
	revisit               *Revisit
}

// prepare checks ex and lays out the blocks of its records; an exact
// duplicate of a payload stored earlier becomes a revisit.
func (w *Writer) prepare(ex *Exchange) (*prepared, error) {
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
	if _, err := whatwg.Parse(ex.URL); err != nil {
		return nil, fmt.Errorf("url is not a WHATWG URL, as WARC-Target-URI must be: %w: %w", err, ErrBadExchange)
	}
	p := &prepared{url: ex.URL, truncated: ex.Truncated, revisit: ex.Revisit,
		respID: newRecordID(), reqID: newRecordID(), metaID: newRecordID()}
	if ex.IP != "" {
		addr, err := netip.ParseAddr(ex.IP)
		if err != nil {
			ap, aperr := netip.ParseAddrPort(ex.IP)
			if aperr != nil {
				return nil, fmt.Errorf("ip %q is not an IP address: %w", ex.IP, ErrBadExchange)
			}
			addr = ap.Addr()
		}
		p.ip = addr.Unmap().WithZone("").String()
	}
	date := ex.Fetched
	if date.IsZero() {
		date = time.Now()
	}
	p.date = warcDate(date)
	if p.head, err = responseHead(ex); err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrBadExchange)
	}
	p.req = requestBlock(u, ex)
	p.meta = metadataBlock(ex, p.ip)
	if rv := ex.Revisit; rv != nil {
		switch {
		case rv.Profile != ProfileServerNotModified && rv.Profile != ProfileIdenticalPayloadDigest:
			return nil, fmt.Errorf("revisit profile %q is not one of WARC 1.1's: %w", rv.Profile, ErrBadExchange)
		case rv.Profile == ProfileIdenticalPayloadDigest && rv.PayloadDigest == "":
			return nil, fmt.Errorf("revisit of an identical payload names no payload digest: %w", ErrBadExchange)
		case strings.ContainsAny(rv.RefersToURI, " \t\r\n"):
			return nil, fmt.Errorf("revisit target url holds white space: %w", ErrBadExchange)
		case rv.RefersTo != "" && !recordID.MatchString(rv.RefersTo):
			return nil, fmt.Errorf("revisit refers to %q, not a <urn:uuid:…> record id: %w", rv.RefersTo, ErrBadExchange)
		}
		if rv.RefersToURI != "" {
			if _, err := whatwg.Parse(rv.RefersToURI); err != nil {
				return nil, fmt.Errorf("revisit target url is not a WHATWG URL: %w: %w", err, ErrBadExchange)
			}
		}
		return p, nil
	}
	p.body = ex.Body
	if w.dedup != nil && ex.Status/100 == 2 && len(ex.Body) > 0 && !ex.Truncated {
		p.digest = digest(ex.Body)
		if o, ok := w.dedup.get(p.digest); ok {
			p.revisit = &Revisit{Profile: ProfileIdenticalPayloadDigest, RefersTo: o.id, RefersToURI: o.uri,
				PayloadDigest: p.digest}
			p.revisit.RefersToDate, _ = time.Parse(time.RFC3339, o.date)
			p.body = nil
		}
	}
	return p, nil
}

// warcDate formats a WARC-Date: UTC, to the second.
func warcDate(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// encode builds the three records of p with gowarc, each its own gzip
// member, every one naming the warcinfo record info.
func (w *Writer) encode(p *prepared, info string) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(p.body)/2 + 4096)
	common := func(typ gowarc.RecordType, id string) []Field {
		f := []Field{{gowarc.WarcRecordID, id}, {gowarc.WarcDate, p.date}, {gowarc.WarcTargetURI, p.url}}
		if p.ip != "" {
			f = append(f, Field{gowarc.WarcIPAddress, p.ip})
		}
		return append(f, Field{gowarc.WarcWarcinfoID, info})
	}

	fields := append(common(gowarc.Request, p.reqID),
		Field{gowarc.WarcConcurrentTo, p.respID},
		Field{gowarc.ContentType, "application/http;msgtype=request"})
	if err := w.writeMember(&out, gowarc.Request, fields, p.req); err != nil {
		return nil, err
	}

	typ := gowarc.Response
	fields = append(common(gowarc.Response, p.respID),
		Field{gowarc.ContentType, "application/http;msgtype=response"})
	if rv := p.revisit; rv != nil {
		typ = gowarc.Revisit
		uri := rv.RefersToURI
		if uri == "" {
			uri = p.url
		}
		fields = append(fields, Field{gowarc.WarcProfile, rv.Profile}, Field{gowarc.WarcRefersToTargetURI, uri})
		if !rv.RefersToDate.IsZero() {
			fields = append(fields, Field{gowarc.WarcRefersToDate, warcDate(rv.RefersToDate)})
		}
		if rv.RefersTo != "" {
			fields = append(fields, Field{gowarc.WarcRefersTo, rv.RefersTo})
		}
		if rv.Profile == ProfileIdenticalPayloadDigest {
			// The payload is left out, as Heritrix and gowarc mark it.
			fields = append(fields, Field{gowarc.WarcPayloadDigest, rv.PayloadDigest}, Field{gowarc.WarcTruncated, "length"})
		}
	} else {
		fields = append(fields, Field{gowarc.WarcPayloadDigest, digest(p.body)})
		if p.truncated {
			fields = append(fields, Field{gowarc.WarcTruncated, "length"})
		}
	}
	if err := w.writeMember(&out, typ, fields, p.head, p.body); err != nil {
		return nil, err
	}

	fields = append(common(gowarc.Metadata, p.metaID),
		Field{gowarc.WarcConcurrentTo, p.respID},
		Field{gowarc.ContentType, "application/warc-fields"})
	if err := w.writeMember(&out, gowarc.Metadata, fields, p.meta); err != nil {
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

// recordID matches the record ids newRecordID makes (and any uuid URN).
var recordID = regexp.MustCompile(`^<urn:uuid:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}>$`)

// newRecordID returns a WARC-Record-ID: a random (version 4) UUID URN.
func newRecordID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("<urn:uuid:%x-%x-%x-%x-%x>", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// digest returns "sha1:" and the base-32 SHA-1 of b: the customary form
// of WARC-Payload-Digest, the one CDX indexes and deduplicating crawlers
// compare.
func digest(parts ...[]byte) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write(p)
	}
	var s [sha1.Size]byte
	return "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(s[:0]))
}

// recordOptions make gowarc's record builder assemble a record from the
// fields and block the writer gives it, adding Content-Length. The writer
// gives the digests itself and gowarc does not validate the fields as it
// builds: its check of a WARC-Record-ID or URI field runs a WHATWG URL
// parse that allocates once per character, and made writing WARC cost
// half as much again as the crawl's other work per page. The fields are
// made here from checked parts (ids from crypto/rand, the target URL
// parsed by net/url and by the WHATWG parser gowarc's validation uses,
// once per exchange, IPs by net/netip), and the tests read every kind of
// record back with gowarc's strict validation. The block is not parsed
// either (SkipParseBlock): the writer made it. Blocks stay in memory up to
// the largest body a crawl keeps (fetch.MaxBodyLimit) and a header.
var recordOptions = []gowarc.WarcRecordOption{
	gowarc.WithSkipParseBlock(),
	gowarc.WithSyntaxErrorPolicy(gowarc.ErrFail),
	gowarc.WithSpecViolationPolicy(gowarc.ErrIgnore),
	gowarc.WithUnknownRecordTypePolicy(gowarc.ErrFail),
	gowarc.WithBufferMaxMemBytes(1<<30 + 1<<21),
}

var marshaler = gowarc.NewMarshaler()

// builderMu serialises gowarc.NewRecordBuilder: gowarc v3.1.0 sets
// google/uuid's global pool switch (uuid.EnableRandPool) every time it
// makes a record's options, a data race between concurrent builders (the
// race detector reports it in TestWarcinfoIDs). Building and compressing
// stay concurrent.
var builderMu sync.Mutex

// writeMember builds one record with gowarc from fields and the block made
// of parts (gowarc adds Content-Length and WARC-Block-Digest) and appends
// it to out as its own gzip member.
func (w *Writer) writeMember(out *bytes.Buffer, typ gowarc.RecordType, fields []Field, parts ...[]byte) error {
	builderMu.Lock() // see builderMu
	b := gowarc.NewRecordBuilder(typ, recordOptions...)
	builderMu.Unlock()
	for _, f := range fields {
		b.AddWarcHeader(f.Name, f.Value)
	}
	b.AddWarcHeader(gowarc.WarcBlockDigest, digest(parts...))
	for _, p := range parts {
		if _, err := b.Write(p); err != nil {
			b.Close()
			return fmt.Errorf("cannot build %s record: %w", typ, err)
		}
	}
	rec, _, err := b.Build()
	if err != nil {
		return fmt.Errorf("cannot build %s record: %w: %w", typ, err, ErrBadExchange)
	}
	defer rec.Close()

	z, _ := w.gzPool.Get().(*gzip.Writer)
	if z == nil {
		if z, err = gzip.NewWriterLevel(out, w.level); err != nil {
			return fmt.Errorf("cannot start gzip member: %w", err)
		}
	} else {
		z.Reset(out)
	}
	defer w.gzPool.Put(z)
	if _, _, err := marshaler.Marshal(copier{z}, rec, 0); err != nil {
		return fmt.Errorf("cannot write %s record: %w", typ, err)
	}
	if err := z.Close(); err != nil {
		return fmt.Errorf("cannot compress record: %w", err)
	}
	return nil
}

// copier gives the gzip writer a ReadFrom with a pooled buffer: the
// marshaler copies each block with io.Copy, which otherwise allocates 32 KiB
// per record.
type copier struct{ w io.Writer }

func (c copier) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c copier) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	return io.CopyBuffer(struct{ io.Writer }{c.w}, r, *buf)
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

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
	id := w.nextInfo
	fields := []Field{
		{gowarc.WarcRecordID, id},
		{gowarc.WarcDate, warcDate(time.Now())},
		{gowarc.WarcFilename, name},
		{gowarc.ContentType, "application/warc-fields"},
	}
	if err := w.writeMember(&out, gowarc.Warcinfo, fields, block.Bytes()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if _, err := f.Write(out.Bytes()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("cannot write warcinfo to %s: %w", name, err)
	}
	w.f, w.name, w.size, w.infoEnd, w.dirDirty = f, name, int64(out.Len()), int64(out.Len()), true
	w.infoID, w.nextInfo = id, newRecordID()
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

// original is a response stored in full: what a revisit of an identical
// payload refers to.
type original struct {
	id, uri, date string
}

// digestMemo remembers the originals of the most recent payload digests:
// two generations of at most n/2 entries each; a lookup finds either, and
// the older generation is dropped when the newer one fills.
type digestMemo struct {
	mu        sync.Mutex
	half      int
	cur, prev map[string]original
}

func newDigestMemo(n int) *digestMemo {
	half := max(n/2, 1)
	return &digestMemo{half: half, cur: make(map[string]original)}
}

func (m *digestMemo) get(d string) (original, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.cur[d]; ok {
		return o, true
	}
	o, ok := m.prev[d]
	if ok { // still in use: keep it another generation
		m.addLocked(d, o)
	}
	return o, ok
}

func (m *digestMemo) add(d string, o original) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(d, o)
}

func (m *digestMemo) addLocked(d string, o original) {
	if _, ok := m.cur[d]; ok {
		return
	}
	if len(m.cur) >= m.half {
		m.prev, m.cur = m.cur, make(map[string]original, m.half)
	}
	m.cur[d] = o
}
