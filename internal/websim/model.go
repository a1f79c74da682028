package websim

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// linkTag is the element (or meta refresh) a link is written in.
type linkTag uint8

const (
	tagA linkTag = iota
	tagArea
	tagLink
	tagIframe
	tagFrame
	tagImg
	tagScript
	tagRefresh
)

// block is the part of the page a link is written in. Links in blockNav, blockFarm and
// blockFooter are the noise links of the ground truth.
type block uint8

const (
	blockHead block = iota
	blockNav
	blockContent
	blockMedia
	blockFarm
	blockFooter
	blockFrames
)

func (b block) noise() bool {
	return b == blockNav || b == blockFarm || b == blockFooter || b.heldOut()
}

// linkRel is the rel attribute of a link.
type linkRel uint8

const (
	relNone linkRel = iota
	relNofollow
	relStylesheet
	relNext
	relPrev
	relAlternate
)

var relNames = [...]string{"", "nofollow", "stylesheet", "next", "prev", "alternate"}

// span locates a string in a doc's arena.
type span struct{ off, n int32 }

// link is one URL reference of a page, href as written in the HTML (unescaped).
type link struct {
	tag   linkTag
	block block
	rel   linkRel
	para  int16 // content paragraph (blockContent)
	pos   int16 // word of the paragraph the link is written before
	href  span
	text  span
}

// para is one generated paragraph; its words are produced from key when rendered.
type para struct {
	key       uint64
	words     int16
	linkRunes int16 // characters of link text in the paragraph
	zh        bool
	nt        uint8
	topics    [2]Topic
}

// docKind selects how a doc is rendered.
type docKind uint8

const (
	docNormal docKind = iota
	docFrameset
	docPrint     // the article's text without links
	docMalformed // unclosed tags, deep nesting, invalid UTF-8
	docLarge     // padded to Config.LargeSize
	docCharset   // encoded in a legacy charset
	docError     // a small error page (404, 410, 500, 503)
)

// doc is a generated HTML page: everything the renderer writes and the ground truth reads.
type doc struct {
	kind    docKind
	zh      bool
	nt      int
	topics  [2]Topic
	title   span
	base    span // <base href>, n == 0 for none
	links   []link
	paras   []para
	arena   []byte
	charset int   // docCharset
	meta    bool  // docCharset: declared only in <meta charset>
	status  int   // docError
	model   bool  // Config.PageModel: rendered with templates, TOCs (pagemodel.go)
	theme   uint8 // PageModel: 0 semantic elements (<nav>, <aside>, <footer>), 1 <div>s
	// dateLine is a line written before the text and canonical the href of
	// a <link rel="canonical"> (Config.NearDups: copies of an article);
	// n == 0 for none.
	dateLine, canonical span

	// Scratch buffers of the builder, kept with the (pooled) doc.
	tmp, path, dir []byte
}

func (d *doc) reset() {
	*d = doc{links: d.links[:0], paras: d.paras[:0], arena: d.arena[:0], tmp: d.tmp[:0], path: d.path[:0], dir: d.dir[:0]}
}

func (d *doc) str(s span) string { return string(d.arena[s.off : s.off+s.n]) }

func (d *doc) bytes(s span) []byte { return d.arena[s.off : s.off+s.n] }

func (d *doc) add(s string) span {
	off := len(d.arena)
	d.arena = append(d.arena, s...)
	return span{int32(off), int32(len(s))}
}

// builder generates one doc.
type builder struct {
	w    *Web
	hi   int
	h    *host
	d    *doc
	r    rng
	key  uint64
	dir  []byte // directory links are made relative to (the base's, else the page's)
	tmp  []byte
	path []byte
}

// Link forms for targets on the same host.
const (
	formAbs    = iota // http://host:port/path
	formScheme        // //host:port/path
	formRoot          // /path
	formRel           // ./path, ../path or path
	numForms
)

// linkFeatures are the behaviours that add links to the pages of troubled hosts, with
// the number of link variants each has.
var linkFeatures = [...]struct {
	f        Feature
	variants int
}{
	{FeatureRedirects, 4}, {FeatureRedirectLoops, 1}, {FeatureLongRedirects, 1},
	{FeatureNotFound, 1}, {FeatureGone, 1}, {FeatureServerErrors, 1}, {FeatureUnavailable, 1},
	{FeatureHang, 1}, {FeatureReset, 1}, {FeatureWrongType, 2}, {FeatureCharsets, 6},
	{FeatureMalformed, 1}, {FeatureLarge, 1}, {FeatureGzipBomb, 1}, {FeatureTraps, 1},
}

func (w *Web) pageKey(hi int, rt route) uint64 {
	k := hash3(uint64(w.cfg.Seed)^keyPage<<56, uint64(hi), uint64(rt.kind))
	return hash3(k, uint64(rt.a), hash2(uint64(rt.b), uint64(rt.c)))
}

func (w *Web) sectionTopic(hi, n int) Topic {
	return Topic(hash3(uint64(w.cfg.Seed)^keySection<<56, uint64(hi), uint64(n)) % uint64(numTopics))
}

// build fills d with the page of route rt on host hi. It reports false for routes that
// are not documents.
func (w *Web) build(hi int, rt route, d *doc) bool {
	d.reset()
	b := builder{w: w, hi: hi, h: &w.hosts[hi], d: d, key: w.pageKey(hi, rt), tmp: d.tmp, path: d.path, dir: d.dir}
	defer func() { d.tmp, d.path, d.dir = b.tmp, b.path, b.dir }()
	b.r = newRNG(b.key)
	d.zh = b.h.zh
	d.topics[0], d.nt = b.h.topic, 1
	b.path = appendPath(b.path[:0], rt)
	b.dir = dirOf(b.dir[:0], b.path)
	sh := w.shape
	switch rt.kind {
	case rIndex:
		b.index()
	case rSection:
		b.section(rt.a)
	case rArticle:
		b.article(rt.a, rt.b, sh.pageID(rt))
	case rNews:
		b.news(rt.a, rt.b)
	case rPrint:
		b.path = appendPath(b.path[:0], route{kind: rArticle, a: rt.a, b: rt.b})
		b.dir = dirOf(b.dir[:0], b.path)
		b.key = w.pageKey(hi, route{kind: rArticle, a: rt.a, b: rt.b})
		b.r = newRNG(b.key)
		b.article(rt.a, rt.b, sh.pageID(route{kind: rArticle, a: rt.a, b: rt.b}))
		d.kind = docPrint
	case rMirror, rDated:
		b.dupPage(rt)
	case rAbout:
		b.small("About", "关于我们")
		b.content(formRoot, "/", b.word(), relNone)
		b.content(formRel, "/contact.html", b.word(), relNone)
		b.layout(1)
	case rContact:
		b.small("Contact", "联系我们")
		b.content(formRoot, "/", b.word(), relNone)
		b.layout(1)
	case rFrames:
		b.title("Frames", "框架")
		d.kind = docFrameset
		first := "/about.html"
		if sh.sections > 0 {
			first = "/s/1/"
		}
		b.add(tagFrame, blockFrames, relNone, b.hi, first, formRoot, "")
		b.add(tagFrame, blockFrames, relNone, b.hi, "/about.html", formRel, "")
	case rOld:
		b.small("Moved", "已迁移")
		b.add(tagRefresh, blockHead, relNone, b.hi, "/s/"+strconv.Itoa(rt.a)+"/", formRoot, "")
		b.layout(1)
	case rUser, rHidden, rBusy:
		b.small("Profile", "个人主页")
		b.content(formRoot, "/", b.word(), relNone)
		b.layout(1)
	case rTrap:
		b.small("Archive", "档案")
		b.content(formRel, string(b.path)+strconv.Itoa(rt.a+1)+"/", b.word(), relNone)
		b.content(formRoot, "/", b.word(), relNone)
		b.layout(1)
	case rCalendar:
		b.small("Calendar", "日历")
		y, m := rt.a, rt.b+1
		if m > 12 {
			y, m = y+1, 1
		}
		if y <= 9999 {
			b.content(formRel, calendarPath(y, m), b.word(), relNone)
		}
		y, m = rt.a, rt.b-1
		if m < 1 {
			y, m = y-1, 12
		}
		if y >= 1900 {
			b.content(formRoot, calendarPath(y, m), b.word(), relNone)
		}
		b.layout(1)
	case rCharset:
		// Only ASCII besides the paragraphs, which the renderer writes in the charset's
		// language.
		d.kind, d.charset, d.meta = docCharset, rt.a, rt.b == 1
		d.zh = true
		d.title = d.add("Charset " + charsetNames[rt.a])
		b.content(formRoot, "/", "home", relNone)
		b.content(formRel, "/about.html", "about", relNone)
		b.layout(2)
	case rMalformed:
		d.kind = docMalformed
		b.title("Malformed", "残缺")
		first := "/"
		if sh.sections > 0 {
			first = "/s/1/"
		}
		b.content(formRoot, first, b.word(), relNone)
		b.content(formAbs, "/about.html", b.word(), relNone)
		b.layout(2)
	case rLarge:
		d.kind = docLarge
		b.small("Large", "大页面")
		b.content(formRoot, "/", b.word(), relNone)
		b.content(formRel, "/contact.html", b.word(), relNone)
		b.layout(1)
	case rPlain:
		b.small("Plain", "纯文本")
		b.content(formRoot, "/hidden/"+strconv.Itoa(rt.a)+".html", b.word(), relNone)
		b.content(formRoot, "/", b.word(), relNone)
		b.layout(1)
	default:
		return false
	}
	return true
}

// buildError fills d with the small page of an error status; its only link points to a
// page a crawler never reaches by following links it should follow.
func (w *Web) buildError(hi int, status int, d *doc) {
	d.reset()
	b := builder{w: w, hi: hi, h: &w.hosts[hi], d: d, key: w.pageKey(hi, route{kind: rNone, a: status})}
	b.r = newRNG(b.key)
	d.kind, d.status, d.zh = docError, status, false
	d.topics[0], d.nt = b.h.topic, 1
	b.title(strconv.Itoa(status)+" "+statusText(status), strconv.Itoa(status))
	b.dir = append(b.dir[:0], '/')
	b.content(formRoot, "/hidden/"+strconv.Itoa(status)+".html", "home", relNone)
	b.layout(1)
}

func statusText(code int) string {
	switch code {
	case 404:
		return "Not Found"
	case 410:
		return "Gone"
	case 500:
		return "Internal Server Error"
	case 503:
		return "Service Unavailable"
	}
	return "Error"
}

func calendarPath(y, m int) string {
	s := "/calendar/" + strconv.Itoa(y) + "/"
	if m < 10 {
		s += "0"
	}
	return s + strconv.Itoa(m) + "/"
}

// dirOf appends the directory of path p (up to and including its last "/").
func dirOf(dst, p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return append(dst, p[:i+1]...)
		}
	}
	return append(dst, '/')
}

// appendRel appends a relative reference from directory dir (ending in "/") to the
// absolute path target (no query); bare omits a leading "./".
func appendRel(dst, dir []byte, target string, bare bool) []byte {
	// Split target into its directory segments and final name.
	last := len(target) - 1
	for last >= 0 && target[last] != '/' {
		last--
	}
	tdir, name := target[:last+1], target[last+1:]
	// Count common leading segments of dir and tdir.
	common, i := 0, 1
	for i < len(dir) && i < len(tdir) {
		j := i
		for j < len(dir) && j < len(tdir) && dir[j] == tdir[j] && dir[j] != '/' {
			j++
		}
		if j < len(dir) && j < len(tdir) && dir[j] == '/' && tdir[j] == '/' {
			common++
			i = j + 1
			continue
		}
		break
	}
	ups := 0
	for k := i; k < len(dir); k++ {
		if dir[k] == '/' {
			ups++
		}
	}
	if ups == 0 {
		if !bare || (i >= len(tdir) && name == "") {
			dst = append(dst, "./"...)
		}
	}
	for range ups {
		dst = append(dst, "../"...)
	}
	if i < len(tdir) {
		dst = append(dst, tdir[i:]...)
	}
	return append(dst, name...)
}

// href appends to the arena the reference to path (and query, fragment) on host ti in
// the given form; cross-host targets are always absolute or scheme-relative.
func (b *builder) href(ti int, path string, form int, suffix string) span {
	d := b.d
	off := len(d.arena)
	if ti != b.hi && (form == formRoot || form == formRel) {
		form = formAbs
	}
	t := &b.w.hosts[ti]
	switch form {
	case formAbs:
		d.arena = append(d.arena, t.origin...)
		d.arena = append(d.arena, path...)
	case formScheme:
		d.arena = append(d.arena, t.origin[len("http:"):]...)
		d.arena = append(d.arena, path...)
	case formRoot:
		d.arena = append(d.arena, path...)
	case formRel:
		d.arena = appendRel(d.arena, b.dir, path, b.r.chance(0.5))
	}
	d.arena = append(d.arena, suffix...)
	return span{int32(off), int32(len(d.arena) - off)}
}

// add appends a link; text is its anchor text (or alt text).
func (b *builder) add(tag linkTag, blk block, rel linkRel, ti int, path string, form int, text string) {
	b.addSuffix(tag, blk, rel, ti, path, "", form, text)
}

func (b *builder) addSuffix(tag linkTag, blk block, rel linkRel, ti int, path, suffix string, form int, text string) {
	l := link{tag: tag, block: blk, rel: rel, para: -1}
	l.href = b.href(ti, path, form, suffix)
	l.text = b.d.add(text)
	b.d.links = append(b.d.links, l)
}

// addRaw appends a link whose href is written as given.
func (b *builder) addRaw(tag linkTag, blk block, rel linkRel, href, text string) {
	b.d.links = append(b.d.links, link{tag: tag, block: blk, rel: rel, para: -1, href: b.d.add(href), text: b.d.add(text)})
}

// content adds a content link to path on this host.
func (b *builder) content(form int, path, text string, rel linkRel) {
	b.add(tagA, blockContent, rel, b.hi, path, form, text)
}

// randForm picks a link form.
func (b *builder) randForm() int { return b.r.intn(numForms) }

// word returns a topic word of the page (as anchor text).
func (b *builder) word() string {
	t := b.d.topics[b.r.intn(b.d.nt)]
	if b.d.zh {
		return vocabZH[t][b.r.intn(len(vocabZH[t]))]
	}
	return vocabEN[t][b.r.intn(len(vocabEN[t]))]
}

// anchor returns one or two topic words (one in Chinese) as anchor text.
func (b *builder) anchor() string {
	if b.d.zh || b.r.chance(0.5) {
		return b.word()
	}
	return b.word() + " " + b.word()
}

// title sets the page title: a label and topic words.
func (b *builder) title(en, zh string) {
	var s string
	if b.d.zh {
		s = zh + "：" + b.word() + b.word() + b.word()
	} else {
		s = en + ": " + b.word() + " " + b.word() + " " + b.word()
	}
	b.d.title = b.d.add(s)
}

// small sets up a short page: title, stylesheet and script, navigation bar and footer.
func (b *builder) small(en, zh string) {
	b.title(en, zh)
	b.head()
	b.nav()
	b.footer()
}

// head adds the stylesheet and script every page references.
func (b *builder) head() {
	b.add(tagLink, blockHead, relStylesheet, b.hi, "/static/site.css", formRoot, "")
	b.add(tagScript, blockHead, relNone, b.hi, "/static/app.js", b.randForm(), "")
}

// nav adds the navigation bar: home, the first sections, about.
func (b *builder) nav() {
	zh := b.d.zh
	b.add(tagA, blockNav, relNone, b.hi, "/", formRoot, pick(zh, "Home", "首页"))
	for n := 1; n <= min(b.w.shape.sections, 8); n++ {
		b.add(tagA, blockNav, relNone, b.hi, "/s/"+strconv.Itoa(n)+"/", formRoot, pick(zh, "Section ", "栏目")+strconv.Itoa(n))
	}
	b.add(tagA, blockNav, relNone, b.hi, "/about.html", formRoot, pick(zh, "About", "关于我们"))
	if b.w.cfg.PageModel {
		b.pageTemplate()
	}
}

// footer adds the footer links (about, contact, mailto, javascript).
func (b *builder) footer() {
	zh := b.d.zh
	b.add(tagA, blockFooter, relNone, b.hi, "/about.html", b.randForm(), pick(zh, "About", "关于我们"))
	b.add(tagA, blockFooter, relNone, b.hi, "/contact.html", formRoot, pick(zh, "Contact", "联系我们"))
	b.addRaw(tagA, blockFooter, relNone, "mailto:webmaster@"+b.h.name, pick(zh, "Mail", "发送邮件"))
	b.addRaw(tagA, blockFooter, relNone, "javascript:void(0)", pick(zh, "Top", "返回顶部"))
}

// farm adds a link-farm block of links to popular pages of other hosts.
func (b *builder) farm() {
	for range 12 {
		ti := b.w.pickHost(&b.r, b.hi)
		b.add(tagA, blockFarm, relNone, ti, b.pagePath(b.w.pageZipf.sample(&b.r)), formAbs, b.anchor())
	}
}

func pick(zh bool, en, chinese string) string {
	if zh {
		return chinese
	}
	return en
}

// pagePath returns the path of page id of the host hierarchy.
func (b *builder) pagePath(id int) string {
	b.tmp = appendPath(b.tmp[:0], b.w.shape.pageRoute(id))
	return string(b.tmp)
}

// layout creates the content paragraphs (at least minParas, at most two links each) and
// places the content links in them.
func (b *builder) layout(minParas int) {
	d := b.d
	nlinks := 0
	for _, l := range d.links {
		if l.block == blockContent {
			nlinks++
		}
	}
	n := max(minParas, (nlinks+1)/2)
	first := len(d.paras)
	mixed := !d.zh && b.r.chance(0.1)
	for i := range n {
		p := para{key: hash2(b.key, uint64(1000+i)), zh: d.zh, nt: uint8(d.nt), topics: d.topics}
		if mixed && i%2 == 1 {
			p.zh = true
		}
		p.words = int16(b.r.between(30, 70))
		d.paras = append(d.paras, p)
	}
	// Assign links to paragraphs, then make every paragraph with links long enough that
	// its link-text ratio stays below 1/4 whatever its words: each word has at least one
	// character, so 3L+1 words around L characters of link text are enough.
	k := 0
	for i := range d.links {
		l := &d.links[i]
		if l.block != blockContent {
			continue
		}
		pi := first + k*n/max(nlinks, 1)
		k++
		l.para = int16(pi)
		p := &d.paras[pi]
		p.linkRunes += int16(utf8.RuneCount(d.bytes(l.text)))
		p.words = max(p.words, 3*p.linkRunes+1)
	}
	for i := range d.links {
		l := &d.links[i]
		if l.block == blockContent {
			l.pos = int16(b.r.between(2, int(d.paras[l.para].words)-3))
		}
	}
}

// index builds the host's home page.
func (b *builder) index() {
	sh, zh := b.w.shape, b.d.zh
	b.title("Home", "首页")
	b.head()
	if sh.sections > 0 {
		b.add(tagLink, blockHead, relNext, b.hi, "/s/1/", formRel, "")
	}
	b.nav()
	b.addRaw(tagA, blockContent, relNone, "?q=1", pick(zh, "search", "搜索"))
	b.addRaw(tagA, blockContent, relNone, "#top", pick(zh, "top", "顶部"))
	for n := 1; n <= sh.sections; n++ {
		if b.w.cfg.PageModel { // a table of contents: each section and its first articles
			b.add(tagA, blockTOC, relNone, b.hi, "/s/"+strconv.Itoa(n)+"/", b.randForm(), pick(zh, "Section ", "栏目")+strconv.Itoa(n))
			for m := 1; m <= 3 && sh.validArticle(n, m); m++ {
				b.add(tagA, blockTOC, relNone, b.hi, "/s/"+strconv.Itoa(n)+"/a/"+strconv.Itoa(m)+".html", b.randForm(), b.anchor())
			}
			continue
		}
		b.content(b.randForm(), "/s/"+strconv.Itoa(n)+"/", pick(zh, "Section ", "栏目")+strconv.Itoa(n), relNone)
	}
	b.content(b.randForm(), "/frames.html", b.anchor(), relNone)
	if sh.sections > 0 {
		b.content(b.randForm(), "/old/1.html", b.anchor(), relNone)
	}
	for range 2 {
		b.add(tagA, blockContent, relNone, b.w.pickHost(&b.r, b.hi), "/", formAbs+b.r.intn(2), b.anchor())
	}
	b.content(b.randForm(), "/user/0/", b.anchor(), relNofollow)
	if b.h.troubled {
		for _, lf := range linkFeatures {
			if b.w.cfg.features.Has(lf.f) {
				for k := range lf.variants {
					b.content(b.randForm(), troublePath(b.w.shape, lf.f, k), b.anchor(), relNone)
				}
			}
		}
		if b.w.cfg.features.Has(FeatureNoise) {
			b.content(formRoot, "/calendar/2026/11/", b.anchor(), relNone)
			first := "/"
			if sh.sections > 0 {
				first = "/s/1/"
			}
			b.noiseLink(first, 0)
			b.noiseLink("/about.html", 1)
			b.noiseLink("/contact.html", 2)
			b.addSuffix(tagImg, blockMedia, relNone, b.hi, "/beacon", "?p=0", formRoot, "")
		}
	}
	b.add(tagImg, blockMedia, relNone, b.hi, "/img/0.png", b.randForm(), "logo")
	b.addRaw(tagImg, blockMedia, relNone, "data:image/gif;base64,R0lGODlhAQABAAAAACw=", "")
	if b.h.troubled && b.w.cfg.features.Has(FeatureNoise) {
		b.farm()
	}
	b.footer()
	b.layout(2)
}

// noiseLink adds a content link to path carrying a session id or tracking parameters;
// variant selects ;jsessionid=, ?sid= or ?utm_….
func (b *builder) noiseLink(path string, variant int) {
	id := strconv.FormatUint(hash2(b.key, uint64(len(b.d.links)))>>1, 16)
	var suffix string
	switch variant % 3 {
	case 0:
		suffix = ";jsessionid=" + id
	case 1:
		suffix = "?sid=" + id
	default:
		suffix = "?utm_source=newsletter&utm_medium=email&utm_campaign=c" + strconv.Itoa(b.r.intn(100))
	}
	b.addSuffix(tagA, blockContent, relNone, b.hi, path, suffix, formRoot+b.r.intn(2), b.anchor())
}

// troublePath returns the path of variant k of a link-adding behaviour.
func troublePath(sh shape, f Feature, k int) string {
	ks := strconv.Itoa(k)
	switch f {
	case FeatureRedirects:
		return "/x/r/" + strconv.Itoa(redirectCodes[k%4]) + "/" + strconv.Itoa(1+(k/4)%3) + "/" + strconv.Itoa((k*7+1)%sh.pages)
	case FeatureLongRedirects:
		return "/x/r/" + strconv.Itoa(redirectCodes[k%4]) + "/" + strconv.Itoa(11+k%3) + "/" + strconv.Itoa((k*5+2)%sh.pages)
	case FeatureRedirectLoops:
		return "/x/loop/" + ks + "/a"
	case FeatureNotFound:
		return "/missing/" + ks + ".html"
	case FeatureGone:
		return "/x/gone/" + ks
	case FeatureServerErrors:
		return "/x/error/" + ks
	case FeatureUnavailable:
		return "/x/busy/" + ks
	case FeatureHang:
		return "/x/hang/" + ks
	case FeatureReset:
		return "/x/reset/" + ks
	case FeatureWrongType:
		if k%2 == 0 {
			return "/x/plain/" + ks
		}
		return "/x/bin/" + ks
	case FeatureCharsets:
		return "/x/cs/" + charsetSlugs[k%3] + "/" + whereSlugs[(k/3)%2] + "/" + ks
	case FeatureMalformed:
		return "/x/malformed/" + ks
	case FeatureLarge:
		return "/x/large/" + ks
	case FeatureGzipBomb:
		return "/x/bomb/" + ks
	case FeatureTraps:
		return "/trap/1/"
	}
	return "/"
}

// section builds section n's page: links to all its articles.
func (b *builder) section(n int) {
	sh, zh := b.w.shape, b.d.zh
	b.d.topics[0] = b.w.sectionTopic(b.hi, n)
	b.title("Section "+strconv.Itoa(n), "栏目"+strconv.Itoa(n))
	b.head()
	if n < sh.sections {
		b.add(tagLink, blockHead, relNext, b.hi, "/s/"+strconv.Itoa(n+1)+"/", formRel, "")
	}
	if n > 1 {
		b.add(tagLink, blockHead, relPrev, b.hi, "/s/"+strconv.Itoa(n-1)+"/", formRoot, "")
	}
	b.nav()
	for k := b.w.published(time.Now()); k >= 1; k-- {
		b.content(formRoot, newsPath(n, k), b.anchor(), relNone)
	}
	for m := 1; sh.validArticle(n, m); m++ {
		if b.w.cfg.PageModel { // the section's table of contents
			b.add(tagA, blockTOC, relNone, b.hi, "/s/"+strconv.Itoa(n)+"/a/"+strconv.Itoa(m)+".html", b.randForm(), b.anchor())
			continue
		}
		b.content(b.randForm(), "/s/"+strconv.Itoa(n)+"/a/"+strconv.Itoa(m)+".html", b.anchor(), relNone)
	}
	b.content(b.randForm(), "/old/"+strconv.Itoa(n)+".html", b.anchor(), relNone)
	ti := b.w.pickHost(&b.r, b.hi)
	b.add(tagA, blockContent, relNone, ti, b.pagePath(b.w.pageZipf.sample(&b.r)), formAbs, b.anchor())
	b.add(tagImg, blockMedia, relNone, b.hi, "/img/"+strconv.Itoa(n)+".gif", formRoot, "map")
	b.add(tagArea, blockMedia, relNone, b.hi, "/s/"+strconv.Itoa(n%sh.sections+1)+"/", b.randForm(), pick(zh, "next", "下一栏目"))
	if sh.validArticle(n, 1) {
		b.add(tagIframe, blockMedia, relNone, b.hi, "/s/"+strconv.Itoa(n)+"/a/1.html", formRel, "")
	}
	b.footer()
	b.layout(2)
}

// article builds article m of section n (page id).
func (b *builder) article(n, m, id int) {
	d, w := b.d, b.w
	d.topics[0] = w.sectionTopic(b.hi, n)
	if !b.r.chance(0.7) {
		d.topics[0] = Topic(b.r.intn(int(numTopics)))
	}
	if b.r.chance(0.35) {
		d.topics[1] = Topic((int(d.topics[0]) + 1 + b.r.intn(int(numTopics)-1)) % int(numTopics))
		d.nt = 2
	}
	if b.r.chance(0.2) {
		sec := "/s/" + strconv.Itoa(n) + "/"
		d.base = b.href(b.hi, sec, formAbs, "")
		b.dir = append(b.dir[:0], sec...)
	}
	b.title("Article", "文章")
	b.head()
	if b.r.chance(0.3) {
		b.add(tagLink, blockHead, relAlternate, b.hi, b.pagePath(w.pageZipf.sample(&b.r)), b.randForm(), "")
	}
	b.nav()
	b.content(b.randForm(), "/s/"+strconv.Itoa(n)+"/", pick(d.zh, "Section ", "栏目")+strconv.Itoa(n), relNone)
	for range b.r.between(2, 6) {
		frag := ""
		if b.r.chance(0.15) {
			frag = "#sec"
		}
		b.addSuffix(tagA, blockContent, relNone, b.hi, b.pagePath(w.pageZipf.sample(&b.r)), frag, b.randForm(), b.anchor())
	}
	for range b.r.intn(3) {
		ti := w.pickHost(&b.r, b.hi)
		b.add(tagA, blockContent, relNone, ti, b.pagePath(w.pageZipf.sample(&b.r)), formAbs+b.r.intn(2), b.anchor())
	}
	if w.cfg.PageModel {
		b.denseParagraph(b.r.between(4, 7))
	}
	b.addRaw(tagA, blockContent, relNone, "#comments", pick(d.zh, "comments", "评论"))
	b.content(b.randForm(), "/doc/"+strconv.Itoa(id)+".pdf", "PDF", relNone)
	if b.r.chance(0.3) {
		b.content(b.randForm(), "/user/"+strconv.Itoa(id)+"/", b.anchor(), relNofollow)
	}
	features := w.cfg.features
	if b.h.troubled {
		if b.r.chance(0.35) {
			var on [len(linkFeatures)]Feature
			k := 0
			for _, lf := range linkFeatures {
				if features.Has(lf.f) {
					on[k] = lf.f
					k++
				}
			}
			if k > 0 {
				b.content(b.randForm(), troublePath(w.shape, on[b.r.intn(k)], id), b.anchor(), relNone)
			}
		}
		if features.Has(FeatureDuplicates) && b.r.chance(0.5) {
			b.content(b.randForm(), "/print/s/"+strconv.Itoa(n)+"/a/"+strconv.Itoa(m)+".html", b.anchor(), relNone)
		}
		if features.Has(FeatureNoise) {
			if b.r.chance(0.4) {
				b.noiseLink(b.pagePath(w.pageZipf.sample(&b.r)), b.r.intn(3))
			}
			b.addSuffix(tagImg, blockMedia, relNone, b.hi, "/beacon", "?p="+strconv.Itoa(id), formRoot, "")
		}
	}
	if w.cfg.NearDups {
		b.dupLinks(n, m)
	}
	ext := ".jpg"
	if id%2 == 1 {
		ext = ".gif"
	}
	b.add(tagImg, blockMedia, relNone, b.hi, "/img/"+strconv.Itoa(id)+ext, b.randForm(), b.word())
	if b.r.chance(0.2) {
		b.add(tagIframe, blockMedia, relNone, b.hi, b.pagePath(w.pageZipf.sample(&b.r)), b.randForm(), "")
	}
	if b.h.troubled && features.Has(FeatureNoise) && b.r.chance(0.3) {
		b.farm()
	}
	b.extraLinks()
	b.footer()
	b.layout(3)
}

// extraLinks adds Config.ExtraLinks links to uniformly chosen pages of
// uniformly chosen hosts (see Config.ExtraLinks). It draws nothing from the
// page's random stream when the knob is 0, so default pages stay
// byte-identical.
func (b *builder) extraLinks() {
	n := b.w.cfg.ExtraLinks
	for range n {
		ti := b.r.intn(len(b.w.hosts))
		b.add(tagA, blockFarm, relNone, ti, b.pagePath(b.r.intn(b.w.shape.pages)), formAbs, b.anchor())
	}
}
