// Package sitemap reads sitemaps (the sitemaps.org protocol 0.9) as a stream: an XML
// <urlset> or <sitemapindex>, or a plain-text file of one URL per line, gzip-compressed
// or not (told by the gzip magic bytes, never by the name or Content-Type).
//
// Parse hands each entry to a callback and keeps none: the memory it holds is bounded by
// one entry and the XML decoder's buffer, whatever the file's size. The protocol's
// limits are enforced as caps, not as errors: after Options.MaxURLs entries (default
// 50,000) or Options.MaxBytes of uncompressed input (default 50 MiB, 52,428,800 bytes)
// it stops reading and reports Result.Truncated — the entries before the cap are kept.
// The byte cap is counted after decompression, so a small gzip body that expands without
// end stops there too.
//
// The location rule (sitemaps.org, "Sitemap file location"): a sitemap at
// http://example.com/catalog/sitemap.xml may list only URLs of the same scheme, host and
// port under /catalog/; a sitemap index only sitemaps of its own scheme, host and port.
// A sitemap listed in the robots.txt of another host (cross-submission) may list that
// host's URLs too (Options.Hosts: the origins whose robots.txt named it). URLs out of
// place are not handed to the callback: they are counted in Result.OutOfPlace, the first
// few kept in Result.OutOfPlaceSample, and every one passed to Options.OnOutOfPlace.
//
// An entry's <lastmod> is read in every W3C datetime form the protocol allows (year;
// year-month; date; date and time to the minute, second or fraction, with Z or ±hh:mm;
// ParseW3CDate); <changefreq> is one of always … never (lower-cased; anything else is
// dropped); <priority> is 0.0–1.0 (-1 when absent or invalid).
package sitemap

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The protocol's limits (sitemaps.org): per file.
const (
	ProtocolMaxURLs  = 50_000
	ProtocolMaxBytes = 50 * 1024 * 1024
	// MaxURLLength: a loc must be shorter than 2,048 characters.
	MaxURLLength = 2048
)

// Kind is the kind of a sitemap file.
type Kind uint8

// The kinds.
const (
	KindUnknown Kind = iota
	// KindURLSet: an XML <urlset>; entries are pages.
	KindURLSet
	// KindIndex: an XML <sitemapindex>; entries are sitemaps.
	KindIndex
	// KindText: one URL per line; entries are pages.
	KindText
)

func (k Kind) String() string {
	return [...]string{"unknown", "urlset", "sitemapindex", "text"}[min(int(k), 3)]
}

// Entry is one <url> of a urlset, one <sitemap> of an index, or one line of a text
// sitemap.
type Entry struct {
	Loc        string
	LastMod    time.Time // zero when absent or unreadable
	ChangeFreq string    // "always" … "never", "" when absent or invalid
	Priority   float64   // 0.0–1.0; -1 when absent or invalid
	// Index: the entry names a sitemap (a <sitemap> of a sitemap index),
	// not a page.
	Index bool
}

// Options tune Parse. The zero value applies the protocol's limits and no location rule.
type Options struct {
	// MaxURLs caps the entries read. Default ProtocolMaxURLs.
	MaxURLs int
	// MaxBytes caps the uncompressed bytes read. Default ProtocolMaxBytes.
	MaxBytes int64
	// SitemapURL is the sitemap's own URL; when set, the location rule applies.
	SitemapURL string
	// Hosts are the origins (scheme://host[:port]) whose robots.txt listed this
	// sitemap: their URLs are in place wherever the sitemap is.
	Hosts []string
	// OnOutOfPlace, when not nil, receives every entry the location rule drops.
	OnOutOfPlace func(Entry)
}

// Result describes a parsed sitemap.
type Result struct {
	Kind Kind
	// Gzip: the input was gzip-compressed.
	Gzip bool
	// Entries handed to the callback.
	Entries int
	// Truncated: a cap stopped the reading; TruncatedBy is "urls" or "bytes".
	Truncated   bool
	TruncatedBy string
	// Bytes of uncompressed input read.
	Bytes int64
	// Invalid counts entries without a usable absolute http(s) loc.
	Invalid int
	// OutOfPlace counts entries dropped by the location rule; OutOfPlaceSample holds
	// the first MaxSample of their locs.
	OutOfPlace       int
	OutOfPlaceSample []string
}

// MaxSample is the number of out-of-place locs kept in Result.OutOfPlaceSample.
const MaxSample = 16

// Errors returned (wrapped) by Parse.
var (
	// ErrNotSitemap: the input is neither a urlset, a sitemap index nor a text sitemap
	// (an HTML page, another XML document).
	ErrNotSitemap = errors.New("not a sitemap")
	// ErrMalformed: the XML or gzip stream is broken (entries before the fault were
	// handed over).
	ErrMalformed = errors.New("malformed sitemap")
)

// errCap is returned by the capped reader at MaxBytes.
var errCap = errors.New("byte cap reached")

// errStop ends the reading at MaxURLs.
var errStop = errors.New("url cap reached")

type cappedReader struct {
	r    io.Reader
	left int64
	n    int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errCap
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.n += int64(n)
	return n, err
}

// Parse reads one sitemap from r and calls fn for every entry in place, in file order.
// An error from fn ends the parse and is returned as is. ctx is checked between
// entries. Over a cap it returns the entries before it and Result.Truncated, not an
// error.
func Parse(ctx context.Context, r io.Reader, opt Options, fn func(Entry) error) (Result, error) {
	if opt.MaxURLs <= 0 {
		opt.MaxURLs = ProtocolMaxURLs
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = ProtocolMaxBytes
	}
	var res Result
	br := bufio.NewReaderSize(r, 32<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return res, fmt.Errorf("cannot read the sitemap's gzip header: %w: %v", ErrMalformed, err)
		}
		defer gz.Close()
		res.Gzip = true
		src = gz
	}
	cr := &cappedReader{r: src, left: opt.MaxBytes}
	in := bufio.NewReaderSize(cr, 32<<10)
	p := parser{ctx: ctx, opt: opt, fn: fn, res: &res}
	if err := p.location(); err != nil {
		return res, err
	}
	first, err := firstByte(in)
	var perr error
	switch {
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, errCap):
		perr = fmt.Errorf("cannot read the sitemap: %w: %v", ErrMalformed, err)
	case err != nil:
		perr = fmt.Errorf("cannot read the sitemap: %w: it is empty", ErrNotSitemap)
	case first == '<':
		perr = p.xml(in)
	default:
		res.Kind = KindText
		perr = p.text(in)
	}
	res.Bytes = cr.n
	switch {
	case errors.Is(perr, errStop):
		res.Truncated, res.TruncatedBy = true, "urls"
		perr = nil
	case errors.Is(perr, errCap):
		res.Truncated, res.TruncatedBy = true, "bytes"
		perr = nil
	}
	return res, perr
}

// firstByte returns the first byte that is not white space or a byte-order mark.
func firstByte(in *bufio.Reader) (byte, error) {
	for {
		b, err := in.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = in.ReadByte()
			continue
		case 0xef:
			if bom, _ := in.Peek(3); len(bom) == 3 && bom[1] == 0xbb && bom[2] == 0xbf {
				_, _ = in.Discard(3)
				continue
			}
		}
		return b[0], nil
	}
}

type parser struct {
	ctx context.Context
	opt Options
	fn  func(Entry) error
	res *Result

	rule   bool
	origin string // scheme://host:port of the sitemap, lower-case
	dir    string // the sitemap's directory path, ending in "/"
	hosts  map[string]bool
}

// location prepares the location rule.
func (p *parser) location() error {
	if p.opt.SitemapURL == "" {
		return nil
	}
	u, err := url.Parse(p.opt.SitemapURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("cannot apply the location rule to sitemap URL %q: want an absolute http(s) URL", p.opt.SitemapURL)
	}
	p.rule = true
	p.origin = origin(u)
	p.dir = u.EscapedPath()
	if i := strings.LastIndexByte(p.dir, '/'); i >= 0 {
		p.dir = p.dir[:i+1]
	} else {
		p.dir = "/"
	}
	p.hosts = map[string]bool{}
	for _, h := range p.opt.Hosts {
		if hu, err := url.Parse(h); err == nil && hu.Host != "" {
			p.hosts[origin(hu)] = true
		}
	}
	return nil
}

// origin is scheme://host:port, lower-case, with the default port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + host + ":" + port
}

// emit checks an entry and hands it over.
func (p *parser) emit(e Entry) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	e.Loc = strings.TrimSpace(e.Loc)
	u, err := url.Parse(e.Loc)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || len(e.Loc) >= MaxURLLength {
		p.res.Invalid++
		return nil
	}
	if p.rule && !p.inPlace(u) {
		p.res.OutOfPlace++
		if len(p.res.OutOfPlaceSample) < MaxSample {
			p.res.OutOfPlaceSample = append(p.res.OutOfPlaceSample, e.Loc)
		}
		if p.opt.OnOutOfPlace != nil {
			p.opt.OnOutOfPlace(e)
		}
		return nil
	}
	if p.res.Entries >= p.opt.MaxURLs {
		return errStop
	}
	p.res.Entries++
	e.Index = p.res.Kind == KindIndex
	return p.fn(e)
}

func (p *parser) inPlace(u *url.URL) bool {
	o := origin(u)
	if p.hosts[o] {
		return true
	}
	if o != p.origin {
		return false
	}
	if p.res.Kind == KindIndex {
		return true
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return strings.HasPrefix(path, p.dir)
}

// text reads one URL per line.
func (p *parser) text(in *bufio.Reader) error {
	var line []byte
	long := false
	for {
		chunk, isPrefix, err := in.ReadLine()
		if len(chunk) > 0 && !long {
			if len(line)+len(chunk) > MaxURLLength {
				long, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if err == nil && isPrefix {
			continue
		}
		if long {
			p.res.Invalid++
		} else if s := strings.TrimSpace(string(line)); s != "" {
			if e := p.emit(Entry{Loc: s, Priority: -1}); e != nil {
				return e
			}
		}
		line, long = line[:0], false
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, errCap) {
				return err
			}
			return fmt.Errorf("cannot read the text sitemap: %w: %v", ErrMalformed, err)
		}
	}
}

// maxField bounds the text kept of one element (loc, lastmod …).
const maxField = 4096

// xml reads a urlset or sitemapindex.
func (p *parser) xml(in io.Reader) error {
	d := xml.NewDecoder(in)
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return r, nil
		}
		return nil, fmt.Errorf("cannot read a sitemap in %q: the protocol requires UTF-8", label)
	}
	var (
		cur     Entry
		field   string // local name of the element whose text is read
		buf     []byte
		inEntry bool
		depth   int
	)
	for {
		tok, err := d.Token()
		if err != nil {
			switch {
			case errors.Is(err, errCap), errors.Is(err, errStop):
				return err
			case errors.Is(err, io.EOF):
				if p.res.Kind == KindUnknown {
					return fmt.Errorf("cannot read the sitemap: %w: no <urlset> or <sitemapindex>", ErrNotSitemap)
				}
				return nil
			}
			return fmt.Errorf("cannot read the sitemap after %d entries: %w: %v", p.res.Entries, ErrMalformed, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name := strings.ToLower(t.Name.Local)
			switch {
			case depth == 1:
				switch name {
				case "urlset":
					p.res.Kind = KindURLSet
				case "sitemapindex":
					p.res.Kind = KindIndex
				default:
					return fmt.Errorf("cannot read the sitemap: %w: its root element is <%s>, not <urlset> or <sitemapindex>", ErrNotSitemap, t.Name.Local)
				}
			case depth == 2 && (name == "url" && p.res.Kind == KindURLSet || name == "sitemap" && p.res.Kind == KindIndex):
				inEntry, cur = true, Entry{Priority: -1}
			case depth == 3 && inEntry:
				field, buf = name, buf[:0]
			}
		case xml.CharData:
			if field != "" && len(buf)+len(t) <= maxField {
				buf = append(buf, t...)
			}
		case xml.EndElement:
			if depth == 3 && inEntry && field != "" {
				v := strings.TrimSpace(string(buf))
				switch field {
				case "loc":
					cur.Loc = v
				case "lastmod":
					cur.LastMod, _ = ParseW3CDate(v)
				case "changefreq":
					if f := strings.ToLower(v); validFreq[f] {
						cur.ChangeFreq = f
					}
				case "priority":
					if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
						cur.Priority = f
					}
				}
				field = ""
			}
			if depth == 2 && inEntry {
				inEntry = false
				if err := p.emit(cur); err != nil {
					return err
				}
			}
			depth--
		}
	}
}

var validFreq = map[string]bool{"always": true, "hourly": true, "daily": true, "weekly": true, "monthly": true, "yearly": true, "never": true}

// ParseW3CDate reads a W3C datetime (https://www.w3.org/TR/NOTE-datetime), the forms a
// sitemap's lastmod may take: YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DDThh:mmTZD,
// YYYY-MM-DDThh:mm:ssTZD and YYYY-MM-DDThh:mm:ss.sTZD, TZD being Z or ±hh:mm. It also
// accepts a lower-case t or z, ±hhmm, and a date-time without a zone (read as UTC), which
// real sitemaps write. The result is in UTC.
func ParseW3CDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range w3cLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if u := strings.ToUpper(s); u != s {
		return ParseW3CDate(u)
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a W3C datetime: want YYYY, YYYY-MM, YYYY-MM-DD or YYYY-MM-DDThh:mm[:ss[.s]]TZD", s)
}

var w3cLayouts = []string{
	"2006", "2006-01", "2006-01-02",
	"2006-01-02T15:04Z07:00", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04-0700", "2006-01-02T15:04:05-0700", "2006-01-02T15:04:05.999999999-0700",
	"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999",
}
