package index

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/spider-crawler/spider/internal/index/analysis"
	"golang.org/x/sync/errgroup"

	"github.com/spider-crawler/spider/internal/content"
	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/store"
)

// Record is the part of a crawl record (store.Record) the index reads.
type Record struct {
	URL         string    `json:"url"`
	FinalURL    string    `json:"final_url,omitempty"`
	Status      int       `json:"status"`
	FetchedAt   time.Time `json:"fetched_at"`
	ContentType string    `json:"content_type,omitempty"`
	Charset     string    `json:"charset,omitempty"`
	Title       string    `json:"title,omitempty"`
	PageNo      int64     `json:"page_no"`
	BodyCRC     string    `json:"body_crc32c,omitempty"` // store.BodyChecksum of the page body
	Depth       int       `json:"depth"`                 // link depth the page was fetched at
	Fingerprint string    `json:"fingerprint,omitempty"` // hex text fingerprint (duplicate clusters, dupes.go)
	SimHash     string    `json:"simhash,omitempty"`     // hex SimHash of the text (near-duplicate clusters)
	Canonical   string    `json:"canonical,omitempty"`   // the page's canonical URL, if another
	Outcome     string    `json:"outcome,omitempty"`     // outcome class ("200", "timeout", "sitemap"…)
}

// A crawl that revisits pages leaves several records of a URL in
// records.jsonl, oldest first. The index holds each URL's latest version:
// a record that Supersedes the ones before it replaces them (a changed
// page's new text, or a deletion when the page is gone: 404, 410, a
// redirect, a page no longer HTML); a 304 "not modified" keeps the
// version held and moves its fetch time forward; an attempt that got no
// usable answer (a network failure, robots.txt, a 5xx or 429, which a
// crawl retries) keeps the version held as it is; a sitemap's record is
// no page at all. Every reader of records that wants "the page as the
// index has it" goes through follow.

// Supersedes reports whether r replaces what the index holds for r.URL:
// an answer that says what the URL now is (2xx, 3xx, 4xx but 429), not a
// 304, not a failure to get an answer, not a sitemap.
func (r Record) Supersedes() bool {
	switch r.Outcome {
	case "sitemap", "no-sitemap", "sitemap-failed":
		return false // crawl.OutcomeSitemap…: a sitemap, no page
	}
	return r.Status >= 200 && r.Status < 500 && r.Status != 304 && r.Status != 429
}

// follow applies rec, the next record of a URL, to the version the index
// holds for it (cur; held: one is) and returns the version held after it.
func follow(cur Record, held bool, rec Record) (Record, bool) {
	switch {
	case rec.Supersedes():
		return rec, true
	case held && rec.Status == 304 && rec.FetchedAt.After(cur.FetchedAt):
		cur.FetchedAt = rec.FetchedAt // not modified: the same version, fetched later
	}
	return cur, held
}

// latestRecords keeps each URL's latest version (follow) over a run of
// records, in order of the URL's first superseding record.
type latestRecords struct {
	at   map[string]int
	recs []Record
}

func (l *latestRecords) add(rec Record) {
	if l.at == nil {
		l.at = map[string]int{}
	}
	k, held := l.at[rec.URL]
	var cur Record
	if held {
		cur = l.recs[k]
	}
	next, ok := follow(cur, held, rec)
	switch {
	case !ok:
	case held:
		l.recs[k] = next
	default:
		l.at[rec.URL] = len(l.recs)
		l.recs = append(l.recs, next)
	}
}

// Indexable reports whether the record's page is indexed: status 200, an
// HTML media type and a stored body.
func (r Record) Indexable() bool {
	if r.Status != 200 || r.PageNo < 0 {
		return false
	}
	mt, _, err := mime.ParseMediaType(r.ContentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// ErrRecordsShrank is wrapped when records.jsonl is shorter than the
// index's checkpoint: the crawl directory was replaced.
var ErrRecordsShrank = errors.New("records.jsonl is shorter than the index checkpoint")

// ScanRecords calls fn for each complete line of dataDir/records.jsonl from
// byte offset from, with the offset just after the line, until fn returns
// false or the file ends, and returns the offset reached. It reads the file
// without opening it for writing (store.RecordsTail), so it is safe while a
// crawl appends: a partial last line is left for the next scan. Lines that
// are not JSON records are skipped.
func ScanRecords(dataDir string, from, to int64, fn func(rec Record, end int64) bool) (int64, error) {
	tail := store.NewRecordsTail(dataDir, from)
	err := tail.Read(to, func(line []byte, end int64) bool {
		var rec Record
		if json.Unmarshal(line, &rec) != nil || rec.URL == "" {
			return true
		}
		return fn(rec, end)
	})
	var shrank *store.ShrankError
	switch {
	case err == nil:
		return tail.Offset(), nil
	case errors.Is(err, fs.ErrNotExist):
		return from, fmt.Errorf("cannot read %s: no crawl records there; pass the --data directory of a crawl: %w", tail.Path(), err)
	case errors.As(err, &shrank):
		return from, fmt.Errorf("cannot index %s: it has %d bytes but %d were indexed: if the crawl was started over, rebuild the index with spider index --rebuild; if the file was damaged, %s first: %w",
			tail.Path(), shrank.Size, from, store.FsckAdvice(dataDir), ErrRecordsShrank)
	default:
		return tail.Offset(), fmt.Errorf("cannot read crawl records: %w", err)
	}
}

// pageReader reads page bodies from a crawl's page files read-only
// (store.PageReader): nothing is created or repaired, so the index can
// read while a crawl runs; a page being appended (an incomplete tail) is
// simply not there yet. readRecord checks every body against the record's
// URL (store.PageFiles.ReadRecord), so a page number that was issued again
// after a loss never gives another URL's body.
type pageReader struct {
	pr *store.PageReader
}

// openPageReader opens dir's page files read-only; a directory without a
// page index gives an empty reader.
func openPageReader(dir string) (*pageReader, error) {
	pr, err := store.OpenPageReader(dir)
	if err != nil {
		return nil, err
	}
	return &pageReader{pr: pr}, nil
}

// pageLoc is where locatePages found a page.
type pageLoc struct {
	file      int
	off, size int64
}

// locatePages parses PageIndex lines ("no size urlSize timeSize url time")
// and packs the pages into data files of the given lengths the way package
// store does: a page starts the next data file only when the current one is
// used up exactly. It stops at the first incomplete line or missing data.
func locatePages(idx []byte, lens []int64) ([]pageLoc, error) {
	var locs []pageLoc
	f, dOff := 0, int64(0)
	for len(idx) > 0 {
		nl := bytes.IndexByte(idx, '\n')
		if nl < 0 {
			break
		}
		line := idx[:nl]
		idx = idx[nl+1:]
		fields := bytes.SplitN(line, []byte{' '}, 3)
		if len(fields) < 3 {
			return nil, fmt.Errorf("line %d is malformed: %w", len(locs)+1, ErrCorrupt)
		}
		no, err1 := parseDecimal(fields[0])
		size, err2 := parseDecimal(fields[1])
		if err1 != nil || err2 != nil || no != int64(len(locs)) {
			return nil, fmt.Errorf("line %d is malformed: %w", len(locs)+1, ErrCorrupt)
		}
		if len(lens) == 0 {
			break
		}
		for dOff+size > lens[f] && dOff == lens[f] && f+1 < len(lens) {
			f, dOff = f+1, 0
		}
		if dOff+size > lens[f] {
			break
		}
		locs = append(locs, pageLoc{file: f, off: dOff, size: size})
		dOff += size
	}
	return locs, nil
}

func parseDecimal(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, errors.New("bad number")
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("bad number")
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// readRecord returns the body of rec's page, checked against rec's URL: a
// page stored for another URL gives an error wrapping store.ErrMismatch.
// Safe for concurrent use.
func (p *pageReader) readRecord(rec Record) ([]byte, error) {
	return p.pr.ReadRecord(store.Record{URL: rec.URL, FinalURL: rec.FinalURL, PageNo: rec.PageNo, BodyCRC: rec.BodyCRC})
}

func (p *pageReader) close() { p.pr.Close() }

// makeDoc parses a stored page and analyses it with the field weights w:
// with sites (the content model of the pages analysed together), its main
// text; without, its whole visible text.
// ok is false when the page asks not to be indexed (meta robots noindex).
// Its links' anchor texts are returned for the anchor fields of the pages
// they point to.
func makeDoc(a *analysis.Analyzer, rec Record, body []byte, w FieldWeights, sites *content.Model) (Doc, []anchor, bool) {
	var p Page
	var ok bool
	if sites != nil {
		p, ok = extractContent(rec, body, sites.Site(siteKey(rec)), w.Anchor > 0, w.Links > 0)
	} else {
		p, ok = extractFields(rec, body, w.Anchor > 0, w.Headings > 0, w.Links > 0)
	}
	if !ok {
		return Doc{}, nil, false
	}
	return NewDocFields(a, Fields{URL: rec.URL, Title: p.Title, Headings: p.headings, Text: p.Text, LinkLabels: p.labels}, w), p.anchors, true
}

// extract parses a stored page into its title and text (and, with
// anchors, its links' anchor texts). Bodies of HTML pages are stored
// converted to UTF-8 by the fetcher; a body that is not valid UTF-8 (the
// conversion failed) is decoded from the record's charset if known. ok is
// false for meta robots noindex.
func extract(rec Record, body []byte, anchors bool) (Page, bool) {
	return extractFields(rec, body, anchors, false, false)
}

// extractFields is extract, with the page's headings (the text of its
// h1–h6 blocks, from parse.ParseBlocks) when headings is set and its
// links' labels (Page.labels) when labels is set.
func extractFields(rec Record, body []byte, anchors, headings, labels bool) (Page, bool) {
	if !utf8.Valid(body) && rec.Charset != "" {
		if enc, _ := charset.Lookup(rec.Charset); enc != nil {
			if dec, err := enc.NewDecoder().Bytes(body); err == nil {
				body = dec
			}
		}
	}
	baseText := rec.FinalURL
	if baseText == "" {
		baseText = rec.URL
	}
	base, err := url.Parse(baseText)
	if err != nil || !base.IsAbs() {
		base = &url.URL{Scheme: "http", Host: "invalid"}
	}
	maxLinks := 1
	if anchors || labels {
		maxLinks = maxAnchorLinks
	}
	var page *parse.Page
	var blocks []parse.Block
	if headings {
		page, blocks, _ = parse.ParseBlocks(base, body, parse.Options{MaxLinks: maxLinks})
	} else {
		page, _ = parse.Parse(base, body, parse.Options{MaxLinks: maxLinks})
	}
	if page == nil || page.MetaRobots.NoIndex {
		return Page{}, false
	}
	title := page.Title
	if title == "" {
		title = strings.TrimSpace(rec.Title)
	}
	out := Page{URL: rec.URL, Title: title, Text: page.Text}
	for _, b := range blocks {
		if len(b.Tag) == 2 && b.Tag[0] == 'h' && b.Tag[1] >= '1' && b.Tag[1] <= '6' && b.Text != "" && len(out.headings) < maxHeadings {
			out.headings = append(out.headings, b.Text)
		}
	}
	if anchors {
		out.anchors = pageAnchors(baseText, page.Links, nil)
	}
	if labels {
		out.labels = linkLabels(page.Links, nil)
	}
	return out, true
}

// linkLabels are the labels of a page's <a> and <area> links whose text
// is part of the indexed text (keep nil: all of them), for
// FieldWeights.Links. An <area>'s alt text is not in the page's text, so
// it is left out.
func linkLabels(links []parse.Link, keep func(i int) bool) []string {
	var out []string
	for i, l := range links {
		if l.Tag != "a" || l.Text == "" || keep != nil && !keep(i) {
			continue
		}
		out = append(out, l.Text)
	}
	return out
}

// pageBase returns the URL a stored page is read against, as text and
// parsed (an invalid one is replaced by http://invalid).
func pageBase(rec Record) (string, *url.URL) {
	baseText := rec.FinalURL
	if baseText == "" {
		baseText = rec.URL
	}
	base, err := url.Parse(baseText)
	if err != nil || !base.IsAbs() {
		base = &url.URL{Scheme: "http", Host: "invalid"}
	}
	return baseText, base
}

// utf8Body returns a stored body as UTF-8 (see extract).
func utf8Body(rec Record, body []byte) []byte {
	if !utf8.Valid(body) && rec.Charset != "" {
		if enc, _ := charset.Lookup(rec.Charset); enc != nil {
			if dec, err := enc.NewDecoder().Bytes(body); err == nil {
				return dec
			}
		}
	}
	return body
}

// contentOptions are the content model's options in the index build: up
// to 16,384 sites and 65,536 block hashes a site learned at once. A site
// holds only the hashes of the pages analysed together, so the memory
// follows the batch (about 24 bytes a distinct block); the caps are wide
// so that a large site's counts are not cut, which would make its
// classification depend on the order its pages were read in.
var contentOptions = content.Options{MaxSites: 1 << 14, MaxHashes: 1 << 16, Parse: parse.Options{MaxLinks: maxAnchorLinks}}

// nodeSites learns the content model from every indexable page of the
// data directory (the last record of each URL): a distributed mapper
// classifies each task's pages with the counts of all its node's pages, as
// the embedded build does with those of its batch (a crawl gives each site
// to one node).
func nodeSites(ctx context.Context, dataDir string, pages *pageReader, workers int) (*content.Model, error) {
	var latest latestRecords
	if _, err := ScanRecords(dataDir, 0, -1, func(rec Record, end int64) bool {
		latest.add(rec)
		return true
	}); err != nil {
		return nil, err
	}
	items := make([]rangeItem, len(latest.recs))
	for k, rec := range latest.recs {
		items[k] = rangeItem{url: rec.URL, rec: rec}
	}
	return observeSites(ctx, items, pages, workers)
}

// observeSites learns the content model from the indexable pages of
// items (pass one of two: every page is then classified with its site's
// counts), with workers goroutines.
func observeSites(ctx context.Context, items []rangeItem, pages *pageReader, workers int) (*content.Model, error) {
	m := content.NewModel(contentOptions)
	jobs := make(chan int)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(jobs)
		for k, it := range items {
			if !it.rec.Indexable() {
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
				rec := items[k].rec
				body, err := pages.readRecord(rec)
				if err != nil {
					continue // analyzeRange reports it
				}
				_, base := pageBase(rec)
				p, err := content.Extract(base, utf8Body(rec, body), contentOptions)
				if err != nil || p.Parsed.MetaRobots.NoIndex {
					continue
				}
				m.Site(siteKey(rec)).Observe(p)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return m, ctx.Err()
}

// extractContent reads a stored page with the content model: its title,
// the headings and text of its content blocks (the main text: template
// text, navigation and other link-dense template blocks left out) and,
// with anchors, the anchor texts of its links outside noise blocks. site
// is the page's site model (nil: a site seen nowhere else). ok is false
// for meta robots noindex. With labels, the labels of the links inside
// the main text (Page.labels).
func extractContent(rec Record, body []byte, site *content.Site, anchors, labels bool) (Page, bool) {
	body = utf8Body(rec, body)
	baseText, base := pageBase(rec)
	p, err := content.Extract(base, body, contentOptions)
	if err != nil || p.Parsed.MetaRobots.NoIndex {
		return Page{}, false
	}
	p.Classify(site, contentOptions)
	title := p.Title
	if title == "" {
		title = strings.TrimSpace(rec.Title)
	}
	out := Page{URL: rec.URL, Title: title, Text: p.MainText}
	out.headings = p.Headings[:min(len(p.Headings), maxHeadings)]
	if anchors {
		out.anchors = pageAnchors(baseText, p.Parsed.Links, func(i int) bool { return p.Links[i].Kind == content.Noise })
	}
	if labels {
		out.labels = linkLabels(p.Parsed.Links, func(i int) bool { return p.Links[i].Kind == content.Content })
	}
	return out, true
}

// siteKey names a page's site in the content model: its host and port.
func siteKey(rec Record) string {
	_, base := pageBase(rec)
	return base.Host
}

// maxHeadings bounds the headings a page's headings field takes.
const maxHeadings = 256

// Page is a page's extracted text, as ReadPages gives it.
type Page struct {
	URL, Title, Text string
	anchors          []anchor // with extract's anchors: the links' anchor texts
	headings         []string // with extractFields' headings: the h1–h6 texts
	labels           []string // with labels: the labels of the links in Text
}

// ReadPages calls fn with the title and text of every page the index would
// hold for dataDir (the latest version of each URL, indexable, not noindex),
// in records order. It exists for benchmarks that feed the same text to
// other engines.
func ReadPages(ctx context.Context, dataDir string, fn func(Page) error) error {
	pages, err := openPageReader(store.DataDir(dataDir).Pages())
	if err != nil {
		return err
	}
	defer pages.close()
	var latest latestRecords
	if _, err := ScanRecords(dataDir, 0, -1, func(rec Record, _ int64) bool {
		latest.add(rec)
		return true
	}); err != nil {
		return err
	}
	for _, rec := range latest.recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !rec.Indexable() {
			continue
		}
		body, err := pages.readRecord(rec)
		if err != nil {
			continue
		}
		p, ok := extract(rec, body, false)
		if !ok {
			continue
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}
