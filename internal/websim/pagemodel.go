package websim

import (
	"strconv"
)

// The blocks of Config.PageModel pages. The template blocks (sidebar and
// the held-out noise kinds) repeat on every page of a host; blockTOC and
// blockDense are content that is link-dense and unique to its page.
const (
	// blockSidebar lists the host's sections on every page (template, noise).
	blockSidebar block = blockFrames + 1 + iota
	// blockShare: "Share: Twitter Facebook Email", links carrying the page's
	// path (template, noise; held out of denoise.BuiltinSamples).
	blockShare
	// blockLang: a language switcher to /de/…, /fr/…, /ja/… of the page
	// (template, noise; held out).
	blockLang
	// blockExport: print and export links of the page (template, noise; held
	// out).
	blockExport
	// blockTags: a tag cloud, the same on every page of a host (template,
	// noise; held out).
	blockTags
	// blockAds: a "sponsored" box, one of three variants per host (template,
	// noise; held out).
	blockAds
	// blockTOC: a table of contents (the index's sections and first
	// articles, a section's articles): link-dense content.
	blockTOC
	// blockDense: an editorial paragraph with a link every word or two, like
	// a Wikipedia lead: link-dense content.
	blockDense
)

// blockNames are the names Truth.LinkBlocks gives the blocks.
var blockNames = map[block]string{
	blockHead: "head", blockNav: "nav", blockContent: "content", blockMedia: "media", blockFarm: "farm",
	blockFooter: "footer", blockFrames: "frames", blockSidebar: "sidebar", blockShare: "share",
	blockLang: "language", blockExport: "export", blockTags: "tags", blockAds: "ads", blockTOC: "toc",
	blockDense: "editorial",
}

// heldOut reports the noise blocks whose kind is not among the crawler's
// built-in noise samples.
func (b block) heldOut() bool { return b >= blockSidebar && b <= blockAds }

// pageTemplate adds the template blocks of a PageModel page (after its
// navigation bar): the sidebar and the held-out noise kinds. Their texts
// depend on the host only (the ads box on the page's variant), so they
// repeat on every page of the host; links that carry the page's path
// differ from page to page.
func (b *builder) pageTemplate() {
	d, sh := b.d, b.w.shape
	d.model = true
	d.theme = uint8(b.hi % 2)
	zh := d.zh
	for n := 1; n <= min(sh.sections, 6); n++ {
		b.add(tagA, blockSidebar, relNone, b.hi, "/s/"+strconv.Itoa(n)+"/", formRoot, pick(zh, "Section ", "栏目")+strconv.Itoa(n))
	}
	path := string(b.path)
	for _, s := range []string{"twitter", "facebook", "email"} {
		b.addSuffix(tagA, blockShare, relNone, b.hi, "/share/"+s, "?u="+path, formRoot, s)
	}
	for _, l := range [...][2]string{{"de", "Deutsch"}, {"fr", "Français"}, {"ja", "日本語"}} {
		b.add(tagA, blockLang, relNone, b.hi, "/"+l[0]+path, formRoot, l[1])
	}
	b.add(tagA, blockExport, relNone, b.hi, "/export/print"+path, formRoot, pick(zh, "Print", "打印"))
	b.add(tagA, blockExport, relNone, b.hi, "/export/pdf"+path, formRoot, "PDF")
	hr := newRNG(hash2(uint64(b.w.cfg.Seed)^0x7a6c0d, uint64(b.hi)))
	t := b.h.topic
	for range 8 {
		w := pickList(zh, vocabEN[t], vocabZH[t], &hr)
		b.add(tagA, blockTags, relNone, b.hi, "/tag/"+w+"/", formRoot, w)
	}
	v := int(b.key % 3)
	ar := newRNG(hash3(uint64(b.w.cfg.Seed)^0xad5, uint64(b.hi), uint64(v)))
	for k := range 3 {
		w1, w2 := pickList(zh, vocabEN[t], vocabZH[t], &ar), pickList(zh, vocabEN[t], vocabZH[t], &ar)
		b.addSuffix(tagA, blockAds, relNone, b.hi, "/ads/click", "?id="+strconv.Itoa(v*3+k), formRoot, w1+" "+w2+pick(zh, " deals", "优惠"))
	}
}

// denseParagraph adds an editorial paragraph of n links to pages of the
// host, a word or two between them.
func (b *builder) denseParagraph(n int) {
	for range n {
		b.add(tagA, blockDense, relNone, b.hi, b.pagePath(b.w.pageZipf.sample(&b.r)), b.randForm(), b.anchor())
	}
}

// renderTop writes a PageModel page's header: navigation, sidebar and the
// held-out template blocks, in the host's theme (0: <nav>, <aside>; 1:
// <div>s only, so that a crawler cannot lean on element names).
func (w *Web) renderTop(dst []byte, d *doc) []byte {
	sem := d.theme == 0
	dst = w.renderList(dst, d, blockNav, pick(!sem, "<nav>", "<div class=\"menu\">"), pick(!sem, "</nav>\n", "</div>\n"))
	dst = w.renderList(dst, d, blockSidebar, pick(!sem, "<aside><h3>Sections</h3>", "<div class=\"sidebar\"><h3>Sections</h3>"), pick(!sem, "</aside>\n", "</div>\n"))
	dst = w.renderBlock(dst, d, blockShare, pick(d.zh, "<div class=\"share\">Share: ", "<div class=\"share\">分享："), " ", "</div>\n")
	dst = w.renderBlock(dst, d, blockLang, "<div class=\"lang\">", " | ", "</div>\n")
	return w.renderBlock(dst, d, blockExport, "<div class=\"tools\">", " · ", "</div>\n")
}

// renderContentModel writes a PageModel page's link-dense content: the
// editorial paragraph and the table of contents.
func (w *Web) renderContentModel(dst []byte, d *doc) []byte {
	r := newRNG(hash2(uint64(len(d.links)), uint64(d.title.off)^uint64(d.title.n)<<32))
	words := []string{"see", "and", "also", "with", "or", "then", "via", "from"}
	n := 0
	for i := range d.links {
		l := &d.links[i]
		if l.block != blockDense {
			continue
		}
		if n == 0 {
			dst = append(dst, "<p class=\"lead\">"...)
		} else {
			dst = append(dst, ' ')
			dst = append(dst, words[r.intn(len(words))]...)
			dst = append(dst, ' ')
		}
		dst = appendAnchor(dst, d, l)
		n++
	}
	if n > 0 {
		dst = append(dst, ".</p>\n"...)
	}
	return w.renderList(dst, d, blockTOC, pick(d.zh, "<h2>Contents</h2>\n<ul class=\"toc\">", "<h2>目录</h2>\n<ul class=\"toc\">"), "</ul>\n")
}

// renderBottom writes a PageModel page's tag cloud, ads box and footer.
func (w *Web) renderBottom(dst []byte, d *doc) []byte {
	sem := d.theme == 0
	dst = w.renderBlock(dst, d, blockTags, pick(d.zh, "<div class=\"tags\">Tags: ", "<div class=\"tags\">标签："), " ", "</div>\n")
	dst = w.renderBlock(dst, d, blockAds, pick(!sem, "<aside class=\"ads\">Sponsored: ", "<div class=\"ads\">Sponsored: "), " · ", pick(!sem, "</aside>\n", "</div>\n"))
	return w.renderBlock(dst, d, blockFooter, pick(!sem, "<footer><p>© 2026", "<div class=\"footer\"><p>© 2026"), " · ", pick(!sem, "</p></footer>\n", "</p></div>\n"))
}

// renderList writes the <a> links of blk as <li> items between open and
// close (a list's <ul> is part of open for the TOC; other lists get one).
func (w *Web) renderList(dst []byte, d *doc, blk block, open, close string) []byte {
	n := 0
	for i := range d.links {
		l := &d.links[i]
		if l.block != blk || l.tag != tagA {
			continue
		}
		if n == 0 {
			dst = append(dst, open...)
			if blk != blockTOC {
				dst = append(dst, "<ul>"...)
			}
		}
		dst = append(dst, "<li>"...)
		dst = appendAnchor(dst, d, l)
		dst = append(dst, "</li>"...)
		n++
	}
	if n > 0 {
		if blk != blockTOC {
			dst = append(dst, "</ul>"...)
		}
		dst = append(dst, close...)
	}
	return dst
}
