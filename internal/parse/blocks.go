package parse

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"unsafe"
)

// DefaultNoiseThreshold is the link-text ratio above which a block's links
// are noise (SPEC §2 S302: "above 1/4").
const DefaultNoiseThreshold = 0.25

// Block is one block of a page for the noise filter (SPEC §2 S301): the
// text and links of the innermost block element that holds them.
type Block struct {
	// Tag is the block element ("td", "p", "div", "li", "ul", "ol",
	// "table", "th", "nav", "header", "footer", "section", "article",
	// "aside", "h1" … "h6"), or "" for content outside every block element.
	Tag string
	// Text is the block's own visible text (not that of blocks nested in
	// it), whitespace collapsed; all blocks together are capped at
	// Options.MaxTextBytes.
	Text string
	// TextLen counts the non-space runes of the block's text (all of it,
	// even beyond the cap).
	TextLen int
	// LinkText counts the non-space runes of that text inside <a href>
	// elements.
	LinkText int
	// Links are the links whose tag opens inside this block, resolved as
	// Parse resolves them.
	Links []Link
	// Parent is the index in the returned slice of the nearest enclosing
	// block that was returned, or -1 for none (blocks without text or
	// links are omitted, so a block's parent may be its grandparent).
	Parent int
	// Depth is the number of block elements open around this one (0 for
	// content outside every block element). Nesting is not capped: a page
	// of 10,000 nested divs has a block of depth 10,000.
	Depth int
	// LinkIndex gives, with ParseBlocks, the index in Page.Links of each
	// of Links (nil from Blocks).
	LinkIndex []int
}

// LinkTextRatio is LinkText/TextLen, in [0, 1]; 0 for a block without
// text.
func (b Block) LinkTextRatio() float64 {
	if b.TextLen == 0 {
		return 0
	}
	return float64(b.LinkText) / float64(b.TextLen)
}

type blockState struct {
	slab     []blockState // the document's block: where blockStart allocates
	textSlab []byte       // the document's block: where blocks' texts start
	parent   int          // index in walker.blocks of the enclosing block, -1 for the document
	depth    int
	tag      string
	text     textBuf
	textLen  int
	linkText int
}

// Blocks splits a UTF-8 HTML page into blocks (SPEC §2 S301): style,
// script, noscript, template, comments and the head are dropped; the body
// is split at block elements, each piece of text and each link going to
// the innermost open block. Blocks come in document order of their start;
// blocks with neither text nor links are omitted. Links are resolved
// against base (the page URL; <base href> applies) as in Parse; with a
// nil base and no absolute <base href> they keep the reference as written.
// Defaults of Options apply.
func Blocks(base *url.URL, body []byte) []Block {
	w := newWalker(body, Options{}.withDefaults(), true)
	w.run()
	if base != nil && !base.IsAbs() {
		base = nil
	}
	blocks, _, _ := w.blockList(w.resolveBase(base), false, false)
	return blocks
}

// ParseBlocks is Parse and Blocks in one pass over the page: the Page as
// Parse gives it, except that Page.Text is the blocks' texts joined by
// spaces in block order (the same words; a block's text comes before that
// of the blocks nested in it after its own) and Options.MaxTextBytes caps
// the blocks' text together; and the blocks, whose Links are the Page's
// Links (unresolved too with Options.Unresolved). Unlike Blocks, it keeps
// the blocks without text or links that contain kept blocks (a <nav>
// around a <ul> of <li> links), so that the blocks form the page's tree of
// block elements with its empty leaves pruned. It reads the whole page
// (Parse may stop early once its limits are reached). It returns an error
// only when base is nil or not absolute.
func ParseBlocks(base *url.URL, body []byte, opt Options) (*Page, []Block, error) {
	if base == nil || !base.IsAbs() {
		return nil, nil, fmt.Errorf("cannot parse page: base URL %v is not absolute; pass the URL the page was fetched from", base)
	}
	w := newWalker(body, opt.withDefaults(), true)
	w.run()
	p := &Page{
		Title:      w.title.String(),
		Lang:       w.lang,
		MetaRobots: w.robots,
		Skipped:    w.skipped,
		Truncated:  w.truncated || w.textLeft <= 0,
	}
	p.Base = w.resolveBase(base)
	blocks, order, skipped := w.blockList(p.Base, opt.Unresolved, true)
	p.Skipped += skipped
	var text strings.Builder
	for _, b := range blocks {
		if b.Text != "" {
			if text.Len() > 0 {
				text.WriteByte(' ')
			}
			text.WriteString(b.Text)
		}
	}
	p.Text = text.String()
	p.Links = make([]Link, 0, len(order))
	index := make([]int, len(order)) // the blocks' LinkIndex, one array
	off := 0
	for i := range blocks {
		n := len(blocks[i].Links)
		blocks[i].LinkIndex = index[off : off+n : off+n]
		off += n
	}
	for _, o := range order {
		l := blocks[o.block].Links[o.index]
		if w.links[o.link].refresh && p.Refresh == nil && l.URL != nil {
			p.Refresh = l.URL
		}
		blocks[o.block].LinkIndex[o.index] = len(p.Links)
		p.Links = append(p.Links, l)
	}
	return p, blocks, nil
}

// linkAt locates a link of the walker in the blocks: Blocks[block].Links[index]
// is walker.links[link].
type linkAt struct{ link, block, index int }

// blockList turns the walker's blocks into Blocks, links resolved against
// base (a nil base leaves them as written) or, with unresolved, cleaned
// only. Blocks with neither text nor links are omitted, unless containers
// is set and a block nested in them is kept. It also returns where each
// kept link went, in document order, and the number of links that did not
// resolve.
func (w *walker) blockList(b *url.URL, unresolved, containers bool) ([]Block, []linkAt, int) {
	out := make([]Block, len(w.blocks))
	// The blocks' texts are substrings of one string, their links slices
	// of one array: two allocations, not two per block.
	total := 0
	for _, bs := range w.blocks {
		total += len(bs.text.b)
	}
	var all string
	if total > 0 {
		buf := make([]byte, 0, total)
		for _, bs := range w.blocks {
			buf = append(buf, bs.text.b...)
		}
		all = unsafe.String(&buf[0], len(buf)) // buf is never written again
	}
	off := 0
	for i, bs := range w.blocks {
		parent := bs.parent
		if i == 0 {
			parent = -1 // the document
		}
		n := len(bs.text.b)
		out[i] = Block{Tag: bs.tag, Text: all[off : off+n], TextLen: bs.textLen, LinkText: bs.linkText, Parent: parent, Depth: bs.depth}
		off += n
	}
	if len(w.links) > 0 {
		count := make([]int, len(out))
		for i := range w.links {
			count[w.links[i].block]++
		}
		links := make([]Link, len(w.links))
		off := 0
		for i, n := range count {
			if n > 0 {
				out[i].Links = links[off : off : off+n]
				off += n
			}
		}
	}
	skipped := 0
	var order []linkAt
	for i := range w.links {
		p := &w.links[i]
		var l Link
		ok := true
		if unresolved {
			l = Link{Raw: p.clean, Tag: p.tag(), Attr: p.attr(), Text: p.text, Rel: p.rel,
				NoFollow: w.robots.NoFollow || hasToken(p.rel, "nofollow")}
		} else {
			l, ok = w.resolve(b, p)
		}
		if ok {
			order = append(order, linkAt{link: i, block: int(p.block), index: len(out[p.block].Links)})
			out[p.block].Links = append(out[p.block].Links, l)
		} else {
			skipped++
		}
	}
	// newIdx maps a block's index in out to its index in kept, or to that
	// of its nearest kept ancestor (parents come before their children, so
	// one pass in order resolves every chain).
	keep := make([]bool, len(out))
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].TextLen > 0 || len(out[i].Links) > 0 {
			keep[i] = true
		}
		if containers && keep[i] && out[i].Parent >= 0 {
			keep[out[i].Parent] = true
		}
	}
	newIdx := make([]int, len(out))
	kept := out[:0]
	for i := range out {
		blk := out[i]
		if blk.Parent >= 0 {
			blk.Parent = newIdx[blk.Parent]
		}
		if keep[i] {
			newIdx[i] = len(kept)
			kept = append(kept, blk)
		} else {
			newIdx[i] = blk.Parent
		}
	}
	for i := range order {
		order[i].block = newIdx[order[i].block] // a block with links is kept
	}
	return kept, order, skipped
}

// NoiseLinks splits the links of blocks into noise (those of blocks whose
// LinkTextRatio is above threshold: navigation bars, link farms, footers)
// and kept, each in block order (SPEC §2 S302). A threshold that is not in
// (0, 1] means DefaultNoiseThreshold.
func NoiseLinks(blocks []Block, threshold float64) (noise, kept []Link) {
	if !(threshold > 0 && threshold <= 1) || math.IsNaN(threshold) {
		threshold = DefaultNoiseThreshold
	}
	for _, b := range blocks {
		if b.LinkTextRatio() > threshold {
			noise = append(noise, b.Links...)
		} else {
			kept = append(kept, b.Links...)
		}
	}
	return noise, kept
}

// blockStart opens a block for a block tag, first applying the implied
// end tags HTML would (a new <p> or block ends an open <p>, <li> ends an
// <li>, <td>/<th> end a cell), looking only at the innermost block so the
// work per tag is constant.
func (w *walker) blockStart(ti tagInfo, selfClosing bool) {
	if ti.flags&tBlock == 0 || w.template > 0 {
		return
	}
	tag := ti.name
	top := w.blocks[w.stack[len(w.stack)-1]].tag
	switch {
	case ti.flags&tClosesP != 0 && top == "p",
		tag == "li" && top == "li",
		(tag == "td" || tag == "th") && (top == "td" || top == "th"):
		w.popBlock()
	}
	if selfClosing {
		// <div/> is an open tag in HTML; a block that never closes would
		// swallow the rest of the page, so treat it as empty.
		w.blocks[w.stack[len(w.stack)-1]].text.brk()
		return
	}
	w.blocks[w.stack[len(w.stack)-1]].text.brk()
	parent := w.stack[len(w.stack)-1]
	// Blocks are allocated 64 at a time from a slab kept by the document's
	// block: pointers into a full slab stay valid when the next one starts.
	root := w.blocks[0]
	if len(root.slab) == cap(root.slab) {
		root.slab = make([]blockState, 0, min(max(len(w.blocks), 8), 256))
	}
	text := newTextBuf(&w.textLeft)
	// Each block's text starts in 64 bytes of a shared slab (its own
	// capacity: growing past it copies, never writes into a neighbour), so
	// the short texts of most blocks cost no allocation of their own.
	const firstText = 64
	if cap(root.textSlab)-len(root.textSlab) < firstText {
		root.textSlab = make([]byte, 0, 64*firstText)
	}
	n := len(root.textSlab)
	text.b = root.textSlab[n : n : n+firstText]
	root.textSlab = root.textSlab[:n+firstText]
	root.slab = append(root.slab, blockState{parent: parent, depth: w.blocks[parent].depth + 1, tag: tag, text: text})
	w.blocks = append(w.blocks, &root.slab[len(root.slab)-1])
	w.stack = append(w.stack, len(w.blocks)-1)
	w.open[tag]++
}

// blockEnd closes the innermost open block of tag, and every block opened
// inside it; an end tag with no open block is ignored.
func (w *walker) blockEnd(ti tagInfo) {
	tag := ti.name
	if ti.flags&tBlock == 0 || w.open[tag] == 0 || w.template > 0 {
		return
	}
	for len(w.stack) > 1 {
		t := w.popBlock()
		if t == tag {
			break
		}
	}
}

// popBlock closes the innermost block and returns its tag.
func (w *walker) popBlock() string {
	b := w.blocks[w.stack[len(w.stack)-1]]
	w.stack = w.stack[:len(w.stack)-1]
	w.open[b.tag]--
	// Text after a nested block is a new word of the outer block.
	w.blocks[w.stack[len(w.stack)-1]].text.brk()
	return b.tag
}
