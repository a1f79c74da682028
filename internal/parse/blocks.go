package parse

import (
	"math"
	"net/url"
)

// DefaultNoiseThreshold is the link-text ratio above which a block's links
// are noise (SPEC §2 S302: "above 1/4").
const DefaultNoiseThreshold = 0.25

// Block is one block of a page for the noise filter (SPEC §2 S301): the
// text and links of the innermost block element that holds them.
type Block struct {
	// Tag is the block element ("td", "p", "div", "li", "ul", "ol",
	// "table", "th", "nav", "header", "footer", "section", "article",
	// "aside"), or "" for content outside every block element.
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
	b := w.resolveBase(base)
	out := make([]Block, len(w.blocks))
	for i, bs := range w.blocks {
		out[i] = Block{Tag: bs.tag, Text: bs.text.String(), TextLen: bs.textLen, LinkText: bs.linkText}
	}
	for i := range w.links {
		p := &w.links[i]
		if l, ok := w.resolve(b, p); ok {
			out[p.block].Links = append(out[p.block].Links, l)
		}
	}
	kept := out[:0]
	for _, blk := range out {
		if blk.TextLen > 0 || len(blk.Links) > 0 {
			kept = append(kept, blk)
		}
	}
	return kept
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
	w.blocks = append(w.blocks, &blockState{tag: tag, text: newTextBuf(&w.textLeft)})
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
