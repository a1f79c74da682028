// Package content says what a page is: its blocks (DOM subtrees, from
// parse.ParseBlocks), which of them are the site's template (navigation,
// footers, sidebars repeated on many pages of the same site), which are
// link-dense noise, and which are the page's own content — tables of
// contents, hub pages and editorial link lists included.
//
// # The rule
//
// A block's subtree hash covers its tag, its own text (or, with no text,
// its links' anchor texts) and the subtree hashes of the blocks nested in
// it, in order; link targets are left out, so a share widget whose links
// carry the page's URL still repeats. A Site counts, for each subtree hash,
// the distinct pages of the site it was seen on. A block is template when
// its parent block is template, or when its subtree was seen on at least
// Options.MinPages pages of the site and it is substantial (at least two
// links or Options.MinTemplateRunes characters in its subtree): a lone
// "Introduction" item of a unique table of contents is not template
// because the same item also appears in the sidebar, but the sidebar's list
// is. A navigation row (below) is template too.
//
// A block is link-dense when it holds <a> or <area> links and more than
// Options.LinkDensity of its own text is anchor text (or it has no text). Its links are noise
// when it is link-dense and template, or link-dense and most of its links
// match the noise samples (Options.Samples, denoise's URL samples) —
// except links with rel="next" or rel="prev" (a pager's "Older posts" is
// the same on every page, and the only way to the rest of a list), which
// are Template. Every other link is content: a Wikipedia-like paragraph full of links, a table
// of contents and a hub page's list are unique to their page, so they are
// content whatever their link density.
//
// # Navigation rows
//
// Documentation generators (DocBook, Sphinx, javadoc, rustdoc, mkdocs)
// put rows of navigation on every page whose texts change from page to
// page — "Prev Up <chapter> Home Next" above a page, the neighbours'
// titles below it, a breadcrumb ending in the page's section — so the
// rows never repeat exactly. A block is such a navigation row, and
// template (Block.Nav), when
//
//   - its subtree holds 2 to Options.MaxNavLinks links (8) in at most 64
//     blocks, with at most MaxNavText characters of text besides anchors
//     (titles, not a paragraph);
//   - each link sits in a cell of its own (a block whose text besides its
//     anchors is at most two characters per link: "next |", "Python »"),
//     not in a sentence;
//   - more than half of its links are fixed, the first one included (a
//     row starts with its fixed part: a breadcrumb's root, "Prev"; an
//     index entry "operator [1]" or a heading with its "¶" permalink does
//     not): a link is fixed when its label — the row's Shape (tags, each
//     block's link count and whether it has text, nested shapes; no text,
//     no target), the link's position in the row and its anchor text —
//     was seen on at least Options.MinPages pages of the site, or when it
//     declares rel=prev, next or up.
//
// A table of contents is not a row even where its structure repeats (a
// chapter page's list of its four sections has the shape of every other
// chapter's): its anchor texts change with the page, so its labels are
// not fixed; a list longer than MaxNavLinks is never a row. A row and
// the blocks nested in it are Template, not Noise: their text is not the
// page's main text, but their links (Prev, Up, Next: the site's reading
// order, as a pager's) are followed by the layered crawl and their anchor
// texts kept — except a block of the row that repeats exactly by itself
// (and what it holds), which is noise when link-dense, as anywhere.
//
// # Young sites
//
// A site's first pages have no model: nothing has been seen on
// Options.MinPages pages yet. Until the Site has seen MinPages distinct
// pages, link-dense blocks inside <nav>, <header>, <footer> or <aside>
// (the HTML elements for navigation and page chrome) are taken as template
// as well (Page.Young is set); every other block is content unless the
// noise samples match it.
//
// # Cost
//
// Extract makes one pass over the page (parse.ParseBlocks: the crawler's
// tokenizer, no DOM) and one pass over its blocks; Classify is one pass
// over the blocks with a map lookup each (and one per link of each
// navigation-row candidate). A Site keeps at most
// Options.MaxHashes counts and a Model at most Options.MaxSites sites
// (least recently used dropped first), so memory is bounded whatever the
// crawl's size.
package content

import (
	"encoding/binary"
	"fmt"
	"net/url"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/spider-crawler/spider/internal/denoise"
	"github.com/spider-crawler/spider/internal/parse"
)

// Kind is what a block (and a link, by the block it sits in) is.
type Kind uint8

// The kinds of blocks.
const (
	// Content is the page's own text and links.
	Content Kind = iota
	// Template is text repeated on many pages of the site that is not
	// link-dense (a footer's notice, a sidebar's blurb): its links are kept,
	// its text is not the page's main text.
	Template
	// Noise is a link-dense block that is template or matches the noise
	// samples: navigation bars, footers of links, share widgets, tag clouds.
	Noise
)

func (k Kind) String() string {
	switch k {
	case Template:
		return "template"
	case Noise:
		return "noise"
	}
	return "content"
}

// Options tune the model. The zero value is usable: every field documents
// its default.
type Options struct {
	// LinkDensity is the anchor-text share of a block's own text above which
	// the block is link-dense (SPEC §2's ratio). Default
	// parse.DefaultNoiseThreshold (1/4).
	LinkDensity float64
	// MinPages is the number of distinct pages of a site a block's subtree
	// must be seen on to be template. Default 3.
	MinPages int
	// MinTemplateRunes is the text (in non-space characters) a block's
	// subtree with fewer than two links needs to be template. Default 20.
	MinTemplateRunes int
	// MaxHashes caps the subtree counts a Site keeps. Default 1,024 (about
	// 40 KiB per site with its page fingerprints): a template block is seen
	// on every page, so it reaches MinPages long before the page-unique
	// blocks that fill the table are dropped.
	MaxHashes int
	// MaxSites caps the sites a Model keeps. Default 1,024.
	MaxSites int
	// Samples holds the noise samples a link-dense block's links are
	// matched with (a block at least half of whose links score at least
	// SampleScore is noise). Nil matches nothing.
	Samples *denoise.Filter
	// SampleScore is the similarity to a sample at which a link matches.
	// Default 0.9.
	SampleScore float64
	// MaxNavLinks is the most links a navigation row judged by its
	// structure may hold (see "Navigation rows" in the package
	// documentation). Default 8; negative turns the structural rule off.
	MaxNavLinks int
	// Parse bounds the parser's work per page (parse.Options). With
	// Parse.Unresolved, links are left as written (Link.URL nil, Link.Raw
	// cleaned): cheaper for a caller that resolves links itself; the noise
	// samples then see each link resolved against the page's base when
	// they are consulted.
	Parse parse.Options
}

func (o Options) withDefaults() Options {
	if !(o.LinkDensity > 0 && o.LinkDensity <= 1) {
		o.LinkDensity = parse.DefaultNoiseThreshold
	}
	if o.MinPages <= 0 {
		o.MinPages = 3
	}
	if o.MinTemplateRunes <= 0 {
		o.MinTemplateRunes = 20
	}
	if o.MaxHashes <= 0 {
		o.MaxHashes = 1024
	}
	if o.MaxSites <= 0 {
		o.MaxSites = 1024
	}
	if !(o.SampleScore > 0 && o.SampleScore <= 1) {
		o.SampleScore = 0.9
	}
	if o.MaxNavLinks == 0 {
		o.MaxNavLinks = 8
	}
	return o
}

// Block is one block of a page with what the model made of it.
type Block struct {
	parse.Block
	// Hash is the subtree hash (see the package documentation).
	Hash uint64
	// Shape is the subtree's structure hash: tags, each block's number of
	// links and whether it has text, nested shapes in order — no text and
	// no link target (see "Navigation rows" in the package documentation).
	Shape uint64
	// Links and Runes count the links and the non-space characters of the
	// subtree; LinkRunes counts those of Runes inside <a href>.
	Links, Runes, LinkRunes int
	// LinkDense reports whether the block holds <a> or <area> links and its
	// own text is mostly anchor text (or it has no text).
	LinkDense bool
	// Template reports whether the block is part of the site's template.
	Template bool
	// Nav reports whether the block was judged a navigation row by its
	// structure (it is then Template too, and so are the blocks nested in
	// it, by their parent, not Nav; none of them is Noise unless it
	// repeats exactly by itself).
	Nav bool
	// Kind is set by Classify.
	Kind Kind

	end int // the subtree is Blocks[i:end]
}

// Link is a link of the page with the kind of the block it sits in.
type Link struct {
	parse.Link
	Kind Kind
	// Block is the index in Page.Blocks of the block the link sits in.
	Block int
}

// Page is what a page is: its fields and blocks. Extract fills the blocks
// and the parser's fields; Classify fills the kinds and the texts.
type Page struct {
	// Title is the text of the first <title>.
	Title string
	// Headings are the texts of the page's h1–h6 blocks in document order,
	// template headings left out (after Classify).
	Headings []string
	// MainText is the text of the content blocks, joined by spaces in
	// block order (after Classify).
	MainText string
	// TemplateText is the text of the template and noise blocks (after
	// Classify).
	TemplateText string
	// Blocks are the page's blocks in document order.
	Blocks []Block
	// Links are the page's links in document order (parse.Page.Links) with
	// the kind of their block (after Classify).
	Links []Link
	// Parsed is the parser's view of the page (Text is the blocks' text).
	Parsed *parse.Page
	// Fingerprint is a hash of the page's block hashes: pages with the same
	// blocks have the same fingerprint.
	Fingerprint uint64
	// Young is set by Classify when the site had seen fewer than MinPages
	// pages (see the package documentation).
	Young bool
}

// Extract parses body, an HTML page fetched from base (absolute), into
// blocks with their subtree hashes; kinds are not set (Classify sets
// them). It returns an error only for a base that is nil or not absolute.
// Work and memory are linear in the page's size, bounded by opt.Parse.
func Extract(base *url.URL, body []byte, opt Options) (*Page, error) {
	opt = opt.withDefaults()
	pp, blocks, err := parse.ParseBlocks(base, body, opt.Parse)
	if err != nil {
		return nil, fmt.Errorf("cannot extract the page's content: %w", err)
	}
	p := &Page{Title: pp.Title, Parsed: pp, Blocks: make([]Block, len(blocks))}
	var h xxhash.Digest
	for i, b := range blocks {
		blk := Block{Block: b, Links: len(b.Links), Runes: b.TextLen, LinkRunes: b.LinkText}
		anchors := 0
		for _, l := range b.Links {
			if l.Tag == "a" || l.Tag == "area" {
				anchors++
			}
		}
		blk.LinkDense = anchors > 0 && (b.TextLen == 0 || b.LinkTextRatio() > opt.LinkDensity)
		h.Reset()
		h.WriteString(b.Tag)
		h.Write([]byte{0})
		if b.Text != "" {
			h.WriteString(b.Text)
		} else {
			for _, l := range b.Links {
				h.WriteString(l.Text)
				h.Write([]byte{0})
			}
		}
		blk.Hash = h.Sum64()
		h.Reset()
		h.WriteString("\x01shape\x00")
		h.WriteString(b.Tag)
		hasText := byte(0)
		if b.TextLen > b.LinkText {
			hasText = 1 // text besides the anchors'
		}
		h.Write([]byte{0, byte(min(len(b.Links), 255)), hasText})
		blk.Shape = h.Sum64()
		p.Blocks[i] = blk
	}
	// Subtree hashes and counts, children folded into parents from the
	// last block back: a child always comes after its parent.
	for i := range p.Blocks {
		p.Blocks[i].end = i + 1
	}
	for i := len(p.Blocks) - 1; i >= 0; i-- {
		b := &p.Blocks[i]
		if b.Parent >= 0 {
			par := &p.Blocks[b.Parent]
			par.end = max(par.end, b.end)
			par.Hash = mix(par.Hash, b.Hash)
			par.Shape = mix(par.Shape, b.Shape)
			par.Links += b.Links
			par.Runes += b.Runes
			par.LinkRunes += b.LinkRunes
		}
	}
	var fp uint64 = 0x9e3779b97f4a7c15
	for _, b := range p.Blocks {
		fp = mix(fp, b.Hash)
	}
	p.Fingerprint = fp
	// Links in document order (the parser's), each with its block.
	p.Links = make([]Link, len(pp.Links))
	for bi, b := range blocks {
		for k, l := range b.Links {
			p.Links[b.LinkIndex[k]] = Link{Link: l, Block: bi}
		}
	}
	return p, nil
}

// mix folds b into a (order-sensitive).
func mix(a, b uint64) uint64 {
	a ^= b + 0x9e3779b97f4a7c15 + a<<6 + a>>2
	a *= 0xbf58476d1ce4e5b9
	return a ^ a>>31
}

// chrome reports the HTML elements of page chrome (navigation, header,
// footer, aside).
func chrome(tag string) bool {
	return tag == "nav" || tag == "header" || tag == "footer" || tag == "aside"
}

// Classify sets each block's Template and Kind, each link's Kind, and the
// page's MainText, TemplateText, Headings and Young from what site has
// seen; it does not record p (Site.Observe does). A nil site is a site
// that has seen nothing. opt must be the options p was extracted with.
func (p *Page) Classify(site *Site, opt Options) {
	opt = opt.withDefaults()
	young := site == nil || site.Pages() < opt.MinPages
	p.Young = young
	inChrome := make([]bool, len(p.Blocks))
	inNav := make([]bool, len(p.Blocks))
	var main, tmpl strings.Builder
	p.Headings = p.Headings[:0]
	navOn := site != nil && !young && opt.MaxNavLinks > 0
	for i := range p.Blocks {
		b := &p.Blocks[i]
		parentTemplate := b.Parent >= 0 && p.Blocks[b.Parent].Template
		inChrome[i] = chrome(b.Tag) || b.Parent >= 0 && inChrome[b.Parent]
		substantial := b.Links >= 2 || b.Runes >= opt.MinTemplateRunes
		own := substantial && site != nil && site.Count(b.Hash) >= opt.MinPages
		b.Template = parentTemplate || own
		b.Nav = false
		if !b.Template && navOn && p.navRow(i, site, opt) {
			b.Template, b.Nav = true, true
		}
		if young && inChrome[i] && b.LinkDense {
			b.Template = true
		}
		// In a row, but not a block repeated as it is (a breadcrumb's fixed
		// list): that one stays noise when link-dense, as everywhere.
		inNav[i] = (b.Nav || b.Parent >= 0 && inNav[b.Parent]) && !own
		switch {
		case inNav[i]:
			b.Kind = Template // a row's links are the site's reading order, as a pager's
		case b.LinkDense && (b.Template || opt.Samples != nil && matchSamples(opt.Samples, p.base(), b.Block.Links, opt.SampleScore)):
			b.Kind = Noise
		case b.Template:
			b.Kind = Template
		default:
			b.Kind = Content
		}
		if b.Text != "" {
			dst := &main
			if b.Kind != Content {
				dst = &tmpl
			}
			if dst.Len() > 0 {
				dst.WriteByte(' ')
			}
			dst.WriteString(b.Text)
			if b.Kind == Content && len(b.Tag) == 2 && b.Tag[0] == 'h' && b.Tag[1] >= '1' && b.Tag[1] <= '6' {
				p.Headings = append(p.Headings, b.Text)
			}
		}
	}
	p.MainText, p.TemplateText = main.String(), tmpl.String()
	for i := range p.Links {
		l := &p.Links[i]
		l.Kind = p.Blocks[l.Block].Kind
		if l.Kind == Noise && (hasToken(l.Rel, "next") || hasToken(l.Rel, "prev")) {
			l.Kind = Template // a pager's links are how a site's lists are read
		}
	}
}

// MaxNavText is the most non-anchor text (non-space characters) a
// navigation row judged by its structure may hold: a row's titles ("Prev:
// SECURITY LABEL"), not a paragraph.
const MaxNavText = 200

// navRow reports whether block i is a navigation row by its structure
// (see "Navigation rows" in the package documentation).
func (p *Page) navRow(i int, site *Site, opt Options) bool {
	b := &p.Blocks[i]
	if !p.navCandidate(i, opt) || b.Runes-b.LinkRunes > MaxNavText {
		return false
	}
	fixed, k, first := 0, 0, false
	p.navLabels(i, func(h uint64, l *parse.Link) {
		if navRel(l.Rel) || site.Count(h) >= opt.MinPages {
			fixed++
			first = first || k == 0
		}
		k++
	})
	if !first || 2*fixed <= b.Links {
		return false // an index entry ("operator [1]"), a heading and its "¶"
	}
	// The links sit in cells of their own ("Prev", "next |", "Python »"),
	// not in a sentence whose words change around fixed anchors.
	for j := i; j < b.end; j++ {
		c := &p.Blocks[j].Block
		if n := len(c.Links); n > 0 && c.TextLen-c.LinkText > 2*n {
			return false
		}
	}
	return true
}

// navCandidate reports whether block i may be a navigation row: 2 to
// opt.MaxNavLinks links in a subtree of at most maxNavBlocks blocks.
func (p *Page) navCandidate(i int, opt Options) bool {
	b := &p.Blocks[i]
	return b.Links >= 2 && b.Links <= opt.MaxNavLinks && b.end-i <= maxNavBlocks
}

// maxNavBlocks bounds the blocks of a navigation row's subtree (and so
// the work of navLabels).
const maxNavBlocks = 64

// navLabels calls f with the label hash of each link of block i's subtree
// (blocks in order, each block's own links in order): the block's Shape,
// the link's position and its anchor text — what a navigation row keeps
// from page to page ("Prev", "Up", "Home", "Next" in the same cells) while
// its other texts and its targets change.
func (p *Page) navLabels(i int, f func(h uint64, l *parse.Link)) {
	var h xxhash.Digest
	k := 0
	for j := i; j < p.Blocks[i].end; j++ {
		for li := range p.Blocks[j].Block.Links {
			l := &p.Blocks[j].Block.Links[li]
			h.Reset()
			var buf [17]byte
			buf[0] = 2
			binary.LittleEndian.PutUint64(buf[1:], p.Blocks[i].Shape)
			binary.LittleEndian.PutUint64(buf[9:], uint64(k))
			h.Write(buf[:])
			h.WriteString(l.Text)
			f(h.Sum64(), l)
			k++
		}
	}
}

// navRel reports whether a rel attribute declares a link to a neighbour
// page (prev, next, up, previous).
func navRel(rel string) bool {
	return hasToken(rel, "prev") || hasToken(rel, "next") || hasToken(rel, "up") || hasToken(rel, "previous")
}

// hasToken reports whether the space-separated list s holds tok.
func hasToken(s, tok string) bool {
	for _, f := range strings.Fields(s) {
		if f == tok {
			return true
		}
	}
	return false
}

// matchSamples reports whether at least half of links (and at least one)
// score at least min against the filter's noise samples. Unresolved links
// are resolved against base.
func matchSamples(f *denoise.Filter, base *url.URL, links []parse.Link, min float64) bool {
	n := 0
	for _, l := range links {
		u := l.URL
		if u == nil && base != nil {
			u, _ = base.Parse(l.Raw)
		}
		if u == nil {
			continue
		}
		if s, _ := f.Score(denoise.Skeleton(u)); s >= min {
			n++
		}
	}
	return n > 0 && 2*n >= len(links)
}

// base is the URL the page's links resolve against.
func (p *Page) base() *url.URL {
	if p.Parsed == nil {
		return nil
	}
	return p.Parsed.Base
}

// NoiseLinks returns the links of noise blocks and the others, each in
// document order (after Classify): the layered crawl's DOM pass.
func (p *Page) NoiseLinks() (noise, kept []parse.Link) {
	for _, l := range p.Links {
		if l.Kind == Noise {
			noise = append(noise, l.Link)
		} else {
			kept = append(kept, l.Link)
		}
	}
	return noise, kept
}
