package parse

import (
	"bytes"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/net/html"
)

// pending is a link found by the walker, not yet resolved (the document's
// base may come later).
type pending struct {
	raw, clean, rel string // clean is cleanHref(raw)
	text            string
	// An <a>'s text is kept in walker.anchors[textStart:textEnd] until
	// the walk ends (one string for all of them, not one per link).
	textStart, textEnd int32
	block              int32 // index of the owning block (Blocks mode)
	kind               linkKind
	inAnchors          bool
	refresh            bool
}

// linkKind is where a link was found: an index in linkKinds.
type linkKind uint8

// linkKinds are the tag and attribute of each linkKind (constant strings:
// a pending link holds one byte for both).
var linkKinds = []struct{ tag, attr string }{
	{"a", "href"}, {"area", "href"}, {"link", "href"}, {"img", "src"}, {"iframe", "src"}, {"frame", "src"},
	{"script", "src"}, {"embed", "src"}, {"meta", "content"},
}

// kindOf returns the linkKind of tag and attr, which must be in linkKinds.
func kindOf(tag, attr string) linkKind {
	for i, k := range linkKinds {
		if k.tag == tag && k.attr == attr {
			return linkKind(i)
		}
	}
	panic("parse: no link kind for " + tag + "/" + attr)
}

func (p *pending) tag() string  { return linkKinds[p.kind].tag }
func (p *pending) attr() string { return linkKinds[p.kind].attr }

// frame is one tokenizer being read: the document, or the raw contents of
// a <noscript> re-read for links.
type frame struct {
	z   *html.Tokenizer
	raw string // the raw-text element whose contents come next, if any
}

// walker reads a document once, flat (no recursion), and collects what
// Parse and Blocks need.
type walker struct {
	opt       Options
	blockMode bool
	frames    []frame

	inHead    bool
	seenBody  bool
	template  int // depth of open <template> elements
	haveTitle bool
	inTitle   bool
	title     textBuf
	text      textBuf
	textLeft  int
	titleLeft int

	links     []pending
	skipped   int
	truncated bool

	attrBuf    []html.Attribute // readAttrs' scratch
	strs       strArena         // the values of attrBuf
	haveBase   bool
	baseHref   string
	robots     MetaRobots
	haveLang   bool
	lang       string
	refreshed  bool
	anchor     int  // index in links of the open <a>, or -1
	inAnchor   bool // an <a href> is open (recorded or not)
	anchorText textBuf
	anchorLeft int
	anchors    []byte // the texts of the <a> links, one after the other

	// Blocks mode.
	blocks []*blockState
	stack  []int          // open blocks, innermost last; stack[0] is the document
	open   map[string]int // open blocks per tag
}

// walkerPool keeps Parse's walkers between pages with their buffers (links,
// text, anchor texts, attributes): the links of a documentation page (a
// few hundred) make a buffer of about 40 KB, a large object to allocate
// and clear for every page.
var walkerPool = sync.Pool{New: func() any { return new(walker) }}

// A walker whose buffers grew beyond these is not pooled: one huge page
// does not keep its buffers alive.
const (
	maxPooledLinks = 4096
	maxPooledText  = 256 << 10
)

// newWalker returns a walker for body; in Parse mode (not blockMode) it
// comes from walkerPool, and Parse gives it back (release).
func newWalker(body []byte, opt Options, blockMode bool) *walker {
	w := new(walker)
	if !blockMode {
		w = walkerPool.Get().(*walker)
	}
	links, text, anchors, anchorText, attrs := w.links[:0], w.text.b[:0], w.anchors[:0], w.anchorText.b[:0], w.attrBuf[:0]
	*w = walker{opt: opt, blockMode: blockMode, anchor: -1, anchors: anchors, attrBuf: attrs}
	w.textLeft, w.titleLeft = opt.MaxTextBytes, opt.MaxTextBytes
	w.text, w.title = newTextBuf(&w.textLeft), newTextBuf(&w.titleLeft)
	w.anchorText = newTextBuf(&w.anchorLeft)
	w.anchorText.b = anchorText
	if !blockMode {
		// Visible text is usually a fraction of the markup.
		if n := min(len(body)/2, opt.MaxTextBytes); cap(text) >= n {
			w.text.b = text
		} else {
			w.text.b = make([]byte, 0, n)
		}
	}
	// Sized from the number of tags (a link is about four of them, as in
	// <li><a>…</a></li>; counting one byte is cheap), so that the slice is
	// rarely copied as it grows: a documentation page has hundreds of links.
	if n := min(bytes.Count(body, []byte{'<'})/4, opt.MaxLinks); cap(links) >= n {
		w.links = links
	} else {
		w.links = make([]pending, 0, n)
	}
	w.frames = []frame{{z: html.NewTokenizer(bytes.NewReader(body))}}
	if blockMode {
		w.blocks = []*blockState{{tag: "", text: newTextBuf(&w.textLeft)}}
		w.stack = []int{0}
		w.open = map[string]int{}
	}
	return w
}

// release gives a Parse-mode walker back to walkerPool once the Page is
// built: nothing of the Page points into its buffers (Title, Text and the
// anchor texts are copies; attribute values live in strArena blocks, which
// are not reused). The walker must not be used after.
func (w *walker) release() {
	if w.blockMode || cap(w.links) > maxPooledLinks || cap(w.text.b) > maxPooledText ||
		cap(w.anchors) > maxPooledText {
		return
	}
	clear(w.links) // the page's strings, for the garbage collector
	clear(w.attrBuf[:cap(w.attrBuf)])
	*w = walker{links: w.links[:0], text: textBuf{b: w.text.b[:0]}, anchors: w.anchors[:0],
		anchorText: textBuf{b: w.anchorText.b[:0]}, attrBuf: w.attrBuf[:0]}
	walkerPool.Put(w)
}

// run reads every token.
func (w *walker) run() {
	defer w.anchorTexts()
	for len(w.frames) > 0 {
		f := &w.frames[len(w.frames)-1]
		tt := f.z.Next()
		switch tt {
		case html.ErrorToken:
			// io.EOF or a read error: either way this input is done.
			w.frames = w.frames[:len(w.frames)-1]
			if len(w.frames) == 0 {
				w.endAnchor()
			}
			continue
		case html.TextToken:
			w.onText(f)
		case html.StartTagToken, html.SelfClosingTagToken:
			w.onStart(f, tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			w.onEnd(f)
		}
		if !w.blockMode && w.done() {
			return
		}
	}
}

// done reports whether nothing more can be collected (Parse mode): text
// and links are both full.
func (w *walker) done() bool {
	return w.text.truncated && len(w.links) >= w.opt.MaxLinks
}

// nested reports whether the current frame is a re-read <noscript>.
func (w *walker) nested() bool { return len(w.frames) > 1 }

func (w *walker) onText(f *frame) {
	data := f.z.Text()
	switch {
	case f.raw == "title":
		if w.inTitle {
			w.title.write(data)
		}
		if !w.blockMode && !w.nested() {
			w.text.brk()
			w.text.write(data)
			w.text.brk()
		}
		return
	case f.raw == "noscript" && !w.nested():
		// Scripting is off for a crawler: <noscript> markup is what it
		// sees. Re-read it for links (not text), one level deep.
		w.frames = append(w.frames, frame{z: html.NewTokenizer(bytes.NewReader(bytes.Clone(data)))})
		return
	case lookupTag(f.raw).flags&tRawSkip != 0:
		return
	}
	if w.template > 0 {
		return
	}
	if w.inHead && f.raw == "" {
		if len(bytes.TrimLeft(data, asciiSpace)) == 0 {
			return
		}
		w.inHead = false // text ends the head, as in the HTML parser
	}
	if w.nested() {
		// noscript text: only anchor text.
		if w.inAnchor {
			w.anchorText.write(data)
		}
		return
	}
	if w.blockMode {
		b := w.blocks[w.stack[len(w.stack)-1]]
		n := b.text.write(data)
		b.textLen += n
		if w.inAnchor {
			b.linkText += n
		}
	} else {
		w.text.write(data)
	}
	if w.inAnchor {
		w.anchorText.write(data)
	}
}

func (w *walker) onStart(f *frame, selfClosing bool) {
	ti := tagOf(f.z.Raw())
	tag := ti.name
	if ti.flags&tRaw != 0 {
		// The tokenizer switches to raw text even for <script/>.
		f.raw = tag
	}
	if w.nested() && ti.flags&tNested == 0 {
		return
	}
	if w.inHead && ti.flags&tHead == 0 {
		w.inHead = false
	}
	var attrs []html.Attribute
	if ti.flags&tAttrs != 0 {
		attrs = w.readAttrs(f.z)
	}
	switch tag {
	case "html":
		if !w.haveLang {
			w.haveLang = true
			w.lang = strings.TrimSpace(attr(attrs, "lang"))
			if w.lang == "" {
				w.lang = strings.TrimSpace(attr(attrs, "xml:lang"))
			}
		}
	case "head":
		if !w.seenBody {
			w.inHead = true
		}
	case "body":
		w.inHead, w.seenBody = false, true
	case "title":
		w.inTitle = !w.haveTitle
		w.haveTitle = true
	case "template":
		if !selfClosing {
			w.template++
		}
	case "base":
		if v, ok := lookupAttr(attrs, "href"); ok && !w.haveBase {
			w.haveBase, w.baseHref = true, v
		}
	case "meta":
		w.onMeta(attrs)
	case "a", "area":
		if tag == "a" {
			w.endAnchor()
		}
		if v, ok := lookupAttr(attrs, "href"); ok {
			idx := w.addLink(v, tag, "href", normRel(attr(attrs, "rel")))
			if tag == "a" {
				w.inAnchor, w.anchor = true, idx
				w.anchorLeft = w.opt.MaxAnchorText
				w.anchorText.reset()
			} else if idx >= 0 {
				w.links[idx].text = collapse(attr(attrs, "alt"), w.opt.MaxAnchorText)
			}
		}
	case "link":
		if v, ok := lookupAttr(attrs, "href"); ok {
			w.addLink(v, tag, "href", normRel(attr(attrs, "rel")))
		}
	case "img", "iframe", "frame", "script", "embed":
		if v, ok := lookupAttr(attrs, "src"); ok {
			w.addLink(v, tag, "src", "")
		}
		if tag == "img" && w.inAnchor {
			if alt := attr(attrs, "alt"); alt != "" {
				w.anchorText.brk()
				w.anchorText.write([]byte(alt))
				w.anchorText.brk()
			}
		}
	}
	if w.blockMode && !w.nested() {
		w.blockStart(ti, selfClosing)
	}
	if ti.flags&tBreak != 0 {
		w.breakText()
	}
}

func (w *walker) onEnd(f *frame) {
	ti := tagOf(f.z.Raw())
	tag := ti.name
	if tag == f.raw {
		f.raw = ""
	}
	if w.nested() {
		if tag == "a" {
			w.endAnchor()
		}
		return
	}
	switch tag {
	case "head":
		w.inHead = false
	case "title":
		w.inTitle = false
	case "template":
		if w.template > 0 {
			w.template--
		}
	case "a":
		w.endAnchor()
	}
	if w.blockMode {
		w.blockEnd(ti)
	}
	if ti.flags&tBreak != 0 {
		w.breakText()
	}
}

// breakText separates words at a block-level tag.
func (w *walker) breakText() {
	if w.blockMode {
		w.blocks[w.stack[len(w.stack)-1]].text.brk()
	} else {
		w.text.brk()
	}
	if w.inAnchor {
		w.anchorText.brk()
	}
}

// endAnchor closes the open <a>, storing its text.
func (w *walker) endAnchor() {
	if w.anchor >= 0 {
		l := &w.links[w.anchor]
		l.textStart = int32(len(w.anchors))
		w.anchors = append(w.anchors, w.anchorText.b...)
		l.textEnd, l.inAnchors = int32(len(w.anchors)), true
	}
	w.inAnchor, w.anchor = false, -1
}

// anchorTexts sets the text of every <a> link from w.anchors, made a
// string once, when the walk is over.
func (w *walker) anchorTexts() {
	all := string(w.anchors)
	for i := range w.links {
		if l := &w.links[i]; l.inAnchors {
			l.text = all[l.textStart:l.textEnd]
		}
	}
}

func (w *walker) onMeta(attrs []html.Attribute) {
	content, hasContent := lookupAttr(attrs, "content")
	if !hasContent {
		return
	}
	if strings.EqualFold(strings.TrimSpace(attr(attrs, "http-equiv")), "refresh") && !w.refreshed {
		if target, ok := parseRefresh(content); ok {
			w.refreshed = true
			if target != "" {
				if idx := w.addLink(target, "meta", "content", ""); idx >= 0 {
					w.links[idx].refresh = true
				}
			}
		}
	}
	if strings.EqualFold(strings.TrimSpace(attr(attrs, "name")), "robots") {
		for _, d := range strings.FieldsFunc(strings.ToLower(content), func(r rune) bool {
			return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
		}) {
			switch d {
			case "noindex":
				w.robots.NoIndex = true
			case "nofollow":
				w.robots.NoFollow = true
			case "none":
				w.robots.NoIndex, w.robots.NoFollow = true, true
			}
		}
	}
}

// addLink records a reference, or counts it as skipped. It returns the
// link's index, or -1 when it was skipped or over the limit.
func (w *walker) addLink(raw, tag, attrName, rel string) int {
	clean := cleanHref(raw)
	if clean == "" || skipScheme(clean) {
		w.skipped++
		return -1
	}
	if len(w.links) >= w.opt.MaxLinks {
		w.truncated = true
		return -1
	}
	p := pending{raw: raw, clean: clean, kind: kindOf(tag, attrName), rel: rel}
	if w.blockMode {
		p.block = int32(w.stack[len(w.stack)-1])
	}
	w.links = append(w.links, p)
	return len(w.links) - 1
}

// readAttrs reads the tag's attributes the walker looks at (wantedAttr),
// into the walker's scratch slice: valid until the next readAttrs. Other
// attributes (class, id, style…) are skipped without a copy. Most tags are
// read from their raw bytes (rawAttrs); the Tokenizer's TagAttr, which
// copies every attribute twice, reads only those that need its decoding.
func (w *walker) readAttrs(z *html.Tokenizer) []html.Attribute {
	if attrs, ok := rawAttrs(z.Raw(), w.attrBuf[:0], &w.strs); ok {
		w.attrBuf = attrs
		return attrs
	}
	attrs := w.attrBuf[:0]
	for {
		k, v, more := z.TagAttr()
		if k == nil {
			break
		}
		if key := wantedAttr(k); key != "" {
			attrs = append(attrs, html.Attribute{Key: key, Val: w.strs.str(v)})
		}
		if !more {
			break
		}
	}
	w.attrBuf = attrs
	return attrs
}

// rawAttrs appends to attrs the wanted attributes (wantedAttr) of the start
// tag whose raw bytes are raw ("<name ...>", as Tokenizer.Raw gives it after
// a StartTagToken or SelfClosingTagToken), the first of each name, with the
// keys and values TagAttr would give: it reads the tag as x/net/html's
// Tokenizer does (readTag, readTagAttrKey, readTagAttrVal), but without the
// Tokenizer's four allocations per attribute; only kept values are copied.
// It gives up (ok false) when the tag holds a byte TagAttr decodes — '&'
// (a character reference), '\r' (newlines are converted) or NUL (replaced
// by U+FFFD) — or when raw does not end where the Tokenizer's tag ends;
// the caller then uses TagAttr. FuzzRawAttrs compares the two. The values
// are made strings by strs (nil: one allocation each).
func rawAttrs(raw []byte, attrs []html.Attribute, strs *strArena) (_ []html.Attribute, ok bool) {
	for _, c := range raw {
		if c == '&' || c == '\r' || c == 0 {
			return attrs, false
		}
	}
	n := len(raw)
	isSpace := func(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\f' }
	skipSpace := func(i int) int {
		for i < n && isSpace(raw[i]) {
			i++
		}
		return i
	}
	// "<" and the name's first letter; the name ends at a space (read) or
	// at '/' or '>' (not read).
	i := 2
	for ; i < n; i++ {
		if c := raw[i]; isSpace(c) {
			i++
			break
		} else if c == '/' || c == '>' {
			break
		}
	}
	for i = skipSpace(i); ; i = skipSpace(i) {
		if i >= n {
			return attrs, false // the Tokenizer would have read on
		}
		if raw[i] == '>' {
			if i+1 != n {
				return attrs, false
			}
			return attrs, true
		}
		// The key: a '=' as its first byte belongs to it; a '/' there
		// makes it empty.
		k0 := i
		if raw[i] == '=' {
			i++
		}
		for ; i < n; i++ {
			if c := raw[i]; isSpace(c) || c == '/' || c == '>' || c == '=' {
				break
			}
		}
		k1 := i
		// The value.
		v0, v1 := i, i
		if j := skipSpace(i); j < n {
			switch raw[j] {
			case '/':
				i = j + 1
			case '=':
				j = skipSpace(j + 1)
				if j >= n {
					return attrs, false
				}
				switch q := raw[j]; q {
				case '>':
					i = j
				case '\'', '"':
					v0 = j + 1
					e := bytes.IndexByte(raw[v0:], q)
					if e < 0 {
						return attrs, false
					}
					v1, i = v0+e, v0+e+1
				default:
					v0 = j
					for i = j + 1; i < n; i++ {
						if c := raw[i]; isSpace(c) || c == '>' {
							break
						}
					}
					v1 = i
					if i < n && raw[i] != '>' {
						i++ // the space ending the value is read
					}
				}
			default:
				i = j
			}
		} else {
			i = j
		}
		if k1 > k0 {
			attrs = appendWanted(attrs, raw[k0:k1], raw[v0:v1], strs)
		}
	}
}

// appendWanted appends key=val to attrs when key (in any case) is a wanted
// attribute not in attrs yet (the Tokenizer keeps the first of a name).
func appendWanted(attrs []html.Attribute, key, val []byte, strs *strArena) []html.Attribute {
	const longest = len("http-equiv") // the longest wanted name
	if len(key) > longest {
		return attrs
	}
	var buf [longest]byte
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	name := wantedAttr(buf[:len(key)])
	if name == "" {
		return attrs
	}
	if _, dup := lookupAttr(attrs, name); dup {
		return attrs
	}
	return append(attrs, html.Attribute{Key: name, Val: strs.str(val)})
}

// arenaBlock is the size of a strArena block.
const arenaBlock = 4096

// strArena makes strings of short byte slices in shared blocks: one
// allocation for a page's hundreds of hrefs instead of one each. A block is
// never written again where a string points into it, so the strings are
// immutable as Go requires; a string keeps its whole block alive (the
// walker's strings live as long as its Page). The zero value is ready; a
// nil *strArena allocates each string on its own.
type strArena struct{ block []byte }

// str returns b as a string.
func (a *strArena) str(b []byte) string {
	if a == nil || len(b) == 0 || len(b) > arenaBlock/8 {
		return string(b)
	}
	if len(b) > cap(a.block)-len(a.block) {
		a.block = make([]byte, 0, arenaBlock)
	}
	start := len(a.block)
	a.block = append(a.block, b...)
	return unsafe.String(&a.block[start], len(b))
}

// wantedAttr returns the name of an attribute the walker reads (as a
// constant: no allocation), or "" for one it ignores. Every name passed to
// lookupAttr or attr must be here.
func wantedAttr(k []byte) string {
	switch string(k) {
	case "href":
		return "href"
	case "src":
		return "src"
	case "rel":
		return "rel"
	case "alt":
		return "alt"
	case "content":
		return "content"
	case "http-equiv":
		return "http-equiv"
	case "name":
		return "name"
	case "lang":
		return "lang"
	case "xml:lang":
		return "xml:lang"
	}
	return ""
}

// lookupAttr returns the first attribute named key (names are lower-case).
func lookupAttr(attrs []html.Attribute, key string) (string, bool) {
	for _, a := range attrs {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attr(attrs []html.Attribute, key string) string {
	v, _ := lookupAttr(attrs, key)
	return v
}

// normRel lower-cases a rel list and collapses its whitespace.
func normRel(rel string) string {
	return strings.Join(strings.Fields(strings.ToLower(rel)), " ")
}

// collapse returns s with whitespace collapsed, capped at max bytes.
func collapse(s string, max int) string {
	left := max
	t := newTextBuf(&left)
	t.write([]byte(s))
	return t.String()
}
