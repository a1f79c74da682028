package index

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spider-crawler/spider/internal/index/analysis"
)

// StoredTextBytes is how much of a page's text a segment keeps (as DEFLATE)
// for snippets; every word of the page is indexed regardless.
const StoredTextBytes = 32 << 10

// titleGap separates the title's positions from the body's, so that a
// phrase never spans the two.
const titleGap = 16

// Doc is one analysed page: what a mapper sends to the single writer of
// SPEC §1 and what the embedded build adds to a segment.
type Doc struct {
	URL   string
	Title string
	Text  []byte // the stored text (at most StoredTextBytes) as a DEFLATE stream of stored blocks
	// Marks lets a snippet start lexing the stored text near its window
	// instead of at the start (see snippetMarks).
	Marks []byte
	// Len is the length BM25F normalises the main-text frequencies by:
	// the main text's word positions (and the title's when the title is
	// not a field of its own, FieldWeights.Title 0).
	Len   int
	Terms []TermPositions
	// Fetched is when the page was last fetched (its record's time, or a
	// later 304's); zero when unknown. Stored to the second.
	Fetched time.Time
}

// TermPositions is one term of a Doc: its positions in the title and main
// text, ascending (none when the term is only in headings or anchor
// text), and its BM25F frequencies: Short, the occurrences in the short
// fields (title, headings, anchor text) times their weights in units of
// 1/shortScale (anchor text normalised by its length), and Body, the
// occurrences in the main text times its weight (not both 0).
type TermPositions struct {
	Term  string
	Pos   []uint32
	Short uint32
	Body  uint32
}

// FieldWeights weigh a page's fields in BM25F (Robertson, Zaragoza and
// Taylor, CIKM 2004; Zaragoza et al., TREC 2004): a term's pseudo-frequency
// in a page is
//
//	x = Title·tf_title + Headings·tf_headings
//	    + Anchor·tf_anchor / (1 − b + b·alen/avg_alen)
//	    + Body·tf_body / (1 − b + b·len/avglen)
//
// and its score idf·x·(k1+1)/(x+k1), b = 0.75. Title and headings are not
// normalised by length: they are short by nature, and a long reference
// page whose title is the query must not lose its title to its length.
// The anchor field is normalised by its own length against the average of
// the pages built with it (a home page named by hundreds of different
// texts gains little from each), the main text by its length against the
// index's average. With all short weights 0 and Title 0
// this is plain BM25 over title and text as one text.
//
// The weights are whole numbers fixed when the index is built (the
// manifest records them; Build rebuilds an index built with other
// weights). Body must be ≥ 1; Title 0 makes the title part of the main
// text (the ranking before BM25F); Headings and Anchor 0 leave the field
// out. Heading words are also part of the main text, so a heading word
// counts in both. The anchor field of a page is
// the anchor texts of the links pointing to it from the other
// pages analysed with it (see anchorSet), at most MaxAnchorTexts of them.
type FieldWeights struct {
	Title    int `json:"title"`
	Headings int `json:"headings"`
	Body     int `json:"body"`
	Anchor   int `json:"anchor"`
	// Template 0 (the default) indexes the main text: the content blocks
	// of package content (a site's repeated navigation, footers and
	// sidebars left out, found by counting each block on the site's pages
	// analysed together), which is also the text snippets come from.
	// Template 1 indexes the page's whole visible text, template included
	// (the index before the content model).
	Template int `json:"template,omitempty"`
	// K1 is BM25F's saturation: how fast more evidence stops adding to a
	// word's score (x·(K1+1)/(x+K1) above). It is on the scale of the
	// weights, so it belongs with them; 0 means classic BM25's 1.2.
	K1 float64 `json:"k1,omitempty"`
	// Links discounts the main-text words that are the labels of the
	// page's own links (Fields.LinkLabels): each such occurrence counts
	// Body − Links instead of Body in the main-text frequency (0 to Body;
	// 0 counts link labels as any other word; DefaultFieldWeights has 2). A link's
	// label describes the page it points to — it is that page's anchor
	// text — more than the page it stands on, so a page that is mostly a
	// list of links answers a content query less well than an article with
	// the same words in its prose. Positions (phrases, snippets) and the
	// main text's length are unchanged; a word that only occurs as a link
	// label (with Links = Body) keeps the smallest frequency, 1.
	Links int `json:"links,omitempty"`
}

// DefaultFieldWeights are the weights chosen by the judged evaluation in
// bench/relevance (bench/RESULTS.md, "Ranking: BM25F and PageRank"; link
// labels 2 since "PageRank without site-wide links").
var DefaultFieldWeights = FieldWeights{Title: 16, Headings: 8, Body: 2, Anchor: 8, K1: 12, Links: 2}

// BM25Fields is the ranking before BM25F: title and text as one text,
// no anchor text. The evaluation's "BM25 alone" baseline.
var BM25Fields = FieldWeights{Title: 0, Body: 1, Template: 1}

// MaxFieldWeight bounds each field weight.
const MaxFieldWeight = 100

// Validate says what is wrong with w, or nil.
func (w FieldWeights) Validate() error {
	if !(w.K1 >= 0 && w.K1 <= 1000) {
		return fmt.Errorf("cannot use k1 %g: use 0 (classic BM25's 1.2) to 1000", w.K1)
	}
	if w.Template != 0 && w.Template != 1 {
		return fmt.Errorf("cannot use template weight %d: use 0 (index the main text only) or 1 (the whole visible text)", w.Template)
	}
	if w.Title < 0 || w.Body < 1 || w.Headings < 0 || w.Anchor < 0 ||
		max(w.Title, w.Body, w.Headings, w.Anchor) > MaxFieldWeight {
		return fmt.Errorf("cannot use field weights title %d, headings %d, body %d, anchor %d: body must be 1 to %d, title, headings and anchor 0 to %d (title 0: part of the main text)",
			w.Title, w.Headings, w.Body, w.Anchor, MaxFieldWeight, MaxFieldWeight)
	}
	if w.Links < 0 || w.Links > w.Body {
		return fmt.Errorf("cannot use link-label discount %d with body weight %d: use 0 (link labels count as other words) to the body weight (they count least)", w.Links, w.Body)
	}
	return nil
}

// String is the weights as title=T,headings=H,body=B,anchor=A (then
// ,template=1 when set).
func (w FieldWeights) String() string {
	s := fmt.Sprintf("title=%d,headings=%d,body=%d,anchor=%d", w.Title, w.Headings, w.Body, w.Anchor)
	if w.Template != 0 {
		s += fmt.Sprintf(",template=%d", w.Template)
	}
	if w.K1 != 0 {
		s += ",k1=" + strconv.FormatFloat(w.K1, 'g', -1, 64)
	}
	if w.Links != 0 {
		s += fmt.Sprintf(",links=%d", w.Links)
	}
	return s
}

// ParseFieldWeights reads weights written as String writes them
// ("title=16,headings=4,body=1,anchor=8,k1=12"); fields not named keep their
// DefaultFieldWeights value, except links when body is named: the
// link-label discount is counted in units of the main-text weight, so
// with another body weight it is 0 unless named too (the ranking before
// fields, "title=0,headings=0,body=1,anchor=0,k1=0,template=1", is
// BM25Fields). The result is validated.
func ParseFieldWeights(s string) (FieldWeights, error) {
	w := DefaultFieldWeights
	bodyNamed, linksNamed := false, false
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if strings.TrimSpace(name) == "k1" {
			k, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if !ok || err != nil {
				return w, fmt.Errorf("cannot read %q: write k1=N, e.g. k1=12", part)
			}
			w.K1 = k
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if !ok || err != nil {
			return w, fmt.Errorf("cannot read field weight %q: write NAME=N, e.g. title=8,headings=4,body=1,anchor=4", part)
		}
		switch strings.TrimSpace(name) {
		case "title":
			w.Title = n
		case "headings":
			w.Headings = n
		case "body":
			w.Body = n
			bodyNamed = true
		case "anchor":
			w.Anchor = n
		case "template":
			w.Template = n
		case "links":
			w.Links = n
			linksNamed = true
		default:
			return w, fmt.Errorf("cannot read field weight %q: the fields are title, headings, body, anchor, template and links (and k1)", part)
		}
	}
	if bodyNamed && !linksNamed {
		w.Links = 0
	}
	return w, w.Validate()
}

// Fields are a page's texts as the index sees them.
type Fields struct {
	URL, Title string
	// Headings are the texts of the page's h1–h6 (they are also in Text).
	Headings []string
	// Text is the main text: indexed, stored for snippets.
	Text string
	// Anchors are anchor texts of links pointing to the page, each counted
	// once (a batch build counts a text once per power of two of the pages
	// linking with it: see anchorSet).
	Anchors []string
	// LinkLabels are the labels (anchor texts) of the page's own links
	// inside Text, each as often as it occurs there; FieldWeights.Links
	// discounts their words in the main-text frequencies.
	LinkLabels []string
}

// flaters reuses DEFLATE compressors (each holds ~1 MB of state). The
// stored text is written as DEFLATE "stored" blocks (NoCompression): every
// search result inflates its page's text up to the snippet, and on the
// Python documentation (22 KB of text a page) Huffman decoding was half of
// a query's CPU time, while stored blocks inflate at copy speed. On the
// 100k-page benchmark corpus the levels measured: BestSpeed 3,485 pages/s
// and 137 MB, HuffmanOnly 4,430 pages/s and 179 MB, NoCompression 5,237
// pages/s and 257 MB (Bleve: 693 MB). The stream is ordinary DEFLATE, so
// segments written with any level read the same.
var flaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.NoCompression)
	return w
}}

// NewDoc analyses a page's title and text into a Doc with the default
// field weights and no headings or anchor text. Terms come out sorted.
func NewDoc(a *analysis.Analyzer, url, title, text string) Doc {
	return NewDocFields(a, Fields{URL: url, Title: title, Text: text}, DefaultFieldWeights)
}

// NewDocFields analyses a page's fields into a Doc weighted by w (which
// must be valid). Title and main text get positions (phrases, snippets);
// headings and anchor text add to the terms' short-field frequencies only.
// Terms come out sorted.
func NewDocFields(a *analysis.Analyzer, f Fields, w FieldWeights) Doc {
	type acc struct {
		pos         []uint32
		short, body uint32
	}
	byTerm := make(map[string]*acc, 256)
	get := func(t string) *acc {
		x := byTerm[t]
		if x == nil {
			x = &acc{}
			byTerm[t] = x
		}
		return x
	}
	pos := 0
	add := func(base int) func(analysis.Token) {
		return func(t analysis.Token) {
			p := base + t.Pos
			x := get(t.Term)
			x.pos = append(x.pos, uint32(p))
			pos = max(pos, p+1)
		}
	}
	a.Analyze(f.Title, add(0))
	titleLen := pos
	base := pos
	if base > 0 {
		base += titleGap
	}
	pos = base
	stored := storedPrefix(f.Text)
	marks := newMarker(base, stored)
	body := add(base)
	a.Analyze(f.Text, func(t analysis.Token) {
		body(t)
		marks.token(t)
	})
	d := Doc{URL: f.URL, Title: f.Title, Len: pos - base, Terms: make([]TermPositions, 0, len(byTerm))}
	if w.Title == 0 {
		d.Len += titleLen // the title is part of the main text
	}
	for _, x := range byTerm {
		// Title and sub-word expansion can repeat a position; keep each once.
		slices.Sort(x.pos)
		x.pos = slices.Compact(x.pos)
		for _, p := range x.pos {
			if int(p) < titleLen && w.Title > 0 {
				x.short += uint32(shortScale * w.Title)
			} else {
				x.body += uint32(w.Body)
			}
		}
	}
	if w.Links > 0 && len(f.LinkLabels) > 0 {
		// Each word of a label is one occurrence in the main text (the
		// label is part of it): count it Body − Links, never more
		// occurrences than the main text has.
		labels := make(map[string]uint32)
		for _, l := range f.LinkLabels {
			a.Analyze(l, func(t analysis.Token) { labels[t.Term]++ })
		}
		for t, n := range labels {
			if x := byTerm[t]; x != nil {
				n = min(n, x.body/uint32(w.Body))
				x.body -= n * uint32(w.Links)
			}
		}
	}
	if w.Headings > 0 {
		for _, s := range f.Headings {
			a.Analyze(s, func(t analysis.Token) { get(t.Term).short += uint32(shortScale * w.Headings) })
		}
	}
	for t, x := range byTerm {
		if x.short+x.body == 0 {
			x.body = 1
		}
		d.Terms = append(d.Terms, TermPositions{Term: t, Pos: x.pos, Short: x.short, Body: x.body})
	}
	slices.SortFunc(d.Terms, func(x, y TermPositions) int { return strings.Compare(x.Term, y.Term) })
	at := make([]anchorText, len(f.Anchors))
	for i, t := range f.Anchors {
		at[i] = anchorText{t, 1}
	}
	addAnchorFields([]*Doc{&d}, []anchorField{analyzeAnchors(a, at)}, w.Anchor)
	d.Marks = marks.b
	var buf bytes.Buffer
	fw := flaters.Get().(*flate.Writer)
	fw.Reset(&buf)
	io.WriteString(fw, stored)
	fw.Close()
	flaters.Put(fw)
	d.Text = buf.Bytes()
	return d
}

// storedPrefix is the part of a page's text a segment stores: at most
// StoredTextBytes, not cutting a rune.
func storedPrefix(text string) string {
	stored := text
	if len(stored) > StoredTextBytes {
		stored = stored[:StoredTextBytes]
		for len(stored) > 0 && stored[len(stored)-1]&0xC0 == 0x80 { // do not cut a rune
			stored = stored[:len(stored)-1]
		}
		if len(stored) > 0 && stored[len(stored)-1] >= 0xC0 {
			stored = stored[:len(stored)-1]
		}
	}
	return stored
}

// segmentData is what one segment file holds before it is written.
type segmentData struct {
	docs  []Doc
	tombs []uint64
}

// add adds a document; a later Doc with the same URL replaces an earlier
// one.
func (b *segmentData) add(d Doc) { b.docs = append(b.docs, d) }

// delete records that url has no document (any more).
func (b *segmentData) delete(url string) { b.tombs = append(b.tombs, urlHash(url)) }

// write writes the segment: documents sorted by URL (the last one added of
// a URL kept), tombstones sorted and unique. The same documents and
// deletions always give the same bytes.
func (b *segmentData) write(w io.Writer) (docs, terms int, err error) {
	// Keep the last Doc of each URL: stable sort by URL, then keep the last
	// of each run.
	slices.SortStableFunc(b.docs, compareDocs)
	docsOut := b.docs[:0]
	for i, d := range b.docs {
		if i+1 < len(b.docs) && b.docs[i+1].URL == d.URL {
			continue
		}
		docsOut = append(docsOut, d)
	}
	ds := docsOut
	slices.Sort(b.tombs)
	b.tombs = slices.Compact(b.tombs)

	// Invert: term → postings, built with documents in id order.
	type acc struct {
		buf  []byte
		df   int
		last int
	}
	inv := make(map[string]*acc, 1024)
	for id, d := range ds {
		for _, tp := range d.Terms {
			a := inv[tp.Term]
			if a == nil {
				a = &acc{last: 0}
				inv[tp.Term] = a
				a.buf = binary.AppendUvarint(a.buf, uint64(id))
			} else {
				a.buf = binary.AppendUvarint(a.buf, uint64(id-a.last))
			}
			a.last = id
			a.df++
			sh, bo := tp.Short, tp.Body
			if sh+bo == 0 {
				bo = 1
			}
			a.buf = binary.AppendUvarint(a.buf, uint64(sh))
			a.buf = binary.AppendUvarint(a.buf, uint64(bo))
			a.buf = binary.AppendUvarint(a.buf, uint64(len(tp.Pos)))
			prev := uint32(0)
			for _, p := range tp.Pos {
				a.buf = binary.AppendUvarint(a.buf, uint64(p-prev))
				prev = p
			}
		}
	}
	termList := make([]string, 0, len(inv))
	for t := range inv {
		termList = append(termList, t)
	}
	slices.Sort(termList)

	sw := &segWriter{w: w}
	hdr := make([]byte, headerSize)
	copy(hdr, segMagic)
	binary.LittleEndian.PutUint32(hdr[8:], segVersion)
	sw.write(hdr)

	var total int64
	docOffs := make([]uint64, len(ds))
	sw.begin(secDocs)
	var tmp []byte
	for i, d := range ds {
		docOffs[i] = sw.off - sw.secs[secDocs][0]
		tmp = tmp[:0]
		tmp = appendBytes(tmp, []byte(d.URL))
		tmp = appendBytes(tmp, []byte(d.Title))
		tmp = appendBytes(tmp, d.Text)
		tmp = appendBytes(tmp, d.Marks)
		tmp = appendFetched(tmp, d.Fetched)
		sw.write(tmp)
		total += int64(d.Len)
	}
	sw.end()
	sw.begin(secDocTab)
	for i, d := range ds {
		tmp = binary.LittleEndian.AppendUint64(tmp[:0], docOffs[i])
		tmp = binary.LittleEndian.AppendUint32(tmp, uint32(d.Len))
		sw.write(tmp)
	}
	sw.end()
	sw.begin(secHashes)
	for _, d := range ds {
		sw.write(binary.LittleEndian.AppendUint64(tmp[:0], urlHash(d.URL)))
	}
	sw.end()
	sw.begin(secTombs)
	for _, h := range b.tombs {
		sw.write(binary.LittleEndian.AppendUint64(tmp[:0], h))
	}
	sw.end()
	postOffs := make([]uint64, len(termList))
	sw.begin(secPostings)
	var po uint64
	for i, t := range termList {
		postOffs[i] = po
		sw.write(inv[t].buf)
		po += uint64(len(inv[t].buf))
	}
	sw.end()
	sw.begin(secDict)
	blockOffs := make([]uint64, 0, len(termList)/dictBlock+1)
	var do uint64
	for i, t := range termList {
		if i%dictBlock == 0 {
			blockOffs = append(blockOffs, do)
		}
		a := inv[t]
		tmp = appendBytes(tmp[:0], []byte(t))
		tmp = binary.AppendUvarint(tmp, uint64(a.df))
		tmp = binary.AppendUvarint(tmp, postOffs[i])
		tmp = binary.AppendUvarint(tmp, uint64(len(a.buf)))
		sw.write(tmp)
		do += uint64(len(tmp))
	}
	sw.end()
	sw.begin(secDictIdx)
	for _, o := range blockOffs {
		sw.write(binary.LittleEndian.AppendUint64(tmp[:0], o))
	}
	sw.end()
	sw.footer(len(ds), len(termList), total)
	if sw.err != nil {
		return 0, 0, fmt.Errorf("cannot write segment: %w", sw.err)
	}
	return len(ds), len(termList), nil
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func newBufWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 1<<20) }

// compareDocs orders documents by URL.
func compareDocs(x, y Doc) int { return cmp.Compare(x.URL, y.URL) }
