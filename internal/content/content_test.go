package content

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/denoise"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// docPage renders page i of a small documentation-like site: a <nav> of
// sections, a sidebar <div> of sections (template, not in a chrome
// element), a share widget whose links carry the page's URL, an editorial
// paragraph dense with links, a footer of links, and on page 0 a table of
// contents whose items have the same texts as the sidebar's.
func docPage(i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>Page %d</title></head><body>", i)
	b.WriteString(`<nav><ul><li><a href="/">Home</a></li><li><a href="/guide/">Guide</a></li><li><a href="/api/">API reference</a></li></ul></nav>`)
	b.WriteString(`<div class="sidebar"><ul><li><a href="/install.html">Installing</a></li><li><a href="/guide/">Guide</a></li><li><a href="/faq.html">Questions</a></li></ul></div>`)
	fmt.Fprintf(&b, `<h1>Topic number %d</h1>`, i)
	fmt.Fprintf(&b, `<div class="share">Share: <a href="https://social.example/share?u=/p%d">Tweet</a> <a href="/export/p%d.pdf">PDF</a></div>`, i, i)
	fmt.Fprintf(&b, `<p>The <a href="/p%d/a">parser</a> reads <a href="/p%d/b">tokens</a> from <a href="/p%d/c">streams</a> of text %d.</p>`, i, i, i, i)
	fmt.Fprintf(&b, `<p>Page %d explains at length how things work, with plenty of words that are its own and nobody else's, number %d.</p>`, i, i)
	if i == 0 {
		b.WriteString(`<h2>Contents</h2><ul class="toc"><li><a href="/install.html">Installing</a></li><li><a href="/guide/">Guide</a></li><li><a href="/faq.html">Questions</a></li><li><a href="/p1.html">Page one</a></li></ul>`)
	}
	fmt.Fprintf(&b, `<div class="pager"><a href="/p%d.html" rel="prev">Older</a> <a href="/p%d.html" rel="next">Newer</a></div>`, i+10, i+20)
	b.WriteString(`<footer><p><a href="/about.html">About</a> · <a href="/privacy.html">Privacy</a> · <a href="/terms.html">Terms</a></p></footer>`)
	b.WriteString(`</body></html>`)
	return b.String()
}

func kindsByURL(p *Page) map[string]Kind {
	out := map[string]Kind{}
	for _, l := range p.Links {
		k := l.Kind
		if old, ok := out[l.URL.Path]; ok && old != k {
			// a URL in content and noise blocks: content wins, as in the DOM pass
			k = min(old, k)
		}
		out[l.URL.Path] = k
	}
	return out
}

// TestClassifyDocs is the rule on a documentation-like site once its
// model has seen its pages: navigation, sidebar, footer and share links are
// noise; the editorial paragraph, the table of contents (whose items repeat
// the sidebar's texts) and the links of unique text are content. It fails
// when template detection misses a repeated block, or when a unique
// link-dense block (the TOC, the paragraph) is taken for noise.
func TestClassifyDocs(t *testing.T) {
	opt := Options{}
	site := NewSite(opt)
	var pages []*Page
	for i := range 6 {
		p, err := Extract(mustURL(t, fmt.Sprintf("http://docs.example/p%d.html", i)), []byte(docPage(i)), opt)
		if err != nil {
			t.Fatal(err)
		}
		if !site.Observe(p) {
			t.Fatalf("page %d not counted", i)
		}
		pages = append(pages, p)
	}
	if site.Observe(pages[2]) {
		t.Error("the same page counted twice")
	}
	p := pages[0]
	p.Classify(site, opt)
	if p.Young {
		t.Error("young after 6 pages")
	}
	got := kindsByURL(p)
	want := map[string]Kind{
		"/": Noise, "/api/": Noise, "/about.html": Noise, "/privacy.html": Noise, "/terms.html": Noise,
		"/share": Noise, "/export/p0.pdf": Noise,
		"/p0/a": Content, "/p0/b": Content, "/p0/c": Content,
		// In the sidebar (noise) and the TOC (content): kept.
		"/install.html": Content, "/guide/": Content, "/faq.html": Content,
		"/p1.html": Content,
		// The pager repeats (template, link-dense) but its rel=next/prev
		// links are how a list is read: kept.
		"/p10.html": Template, "/p20.html": Template,
	}
	for u, k := range want {
		if got[u] != k {
			t.Errorf("%s is %v, want %v", u, got[u], k)
		}
	}
	if strings.Contains(p.MainText, "Home") || strings.Contains(p.MainText, "Tweet") || strings.Contains(p.MainText, "Privacy") {
		t.Errorf("main text has template text: %q", p.MainText)
	}
	if !strings.Contains(p.MainText, "explains at length") || !strings.Contains(p.MainText, "Page one") {
		t.Errorf("main text lacks content: %q", p.MainText)
	}
	if !strings.Contains(p.TemplateText, "Home") {
		t.Errorf("template text %q", p.TemplateText)
	}
	if !slices.Equal(p.Headings, []string{"Topic number 0", "Contents"}) {
		t.Errorf("headings %q", p.Headings)
	}
	if p.Title != "Page 0" {
		t.Errorf("title %q", p.Title)
	}
}

// TestClassifyYoung: a site's first page (no model yet) keeps every link
// but those of link-dense blocks in <nav>/<footer> and those matching the
// noise samples. It fails when a young site's content is dropped or its
// chrome kept.
func TestClassifyYoung(t *testing.T) {
	f, err := denoise.NewFilter(denoise.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Samples: f}
	body := docPage(0) + `<p><a href="/x?utm_source=a&utm_medium=b">one</a> <a href="/y?utm_source=c">two</a></p>`
	p, err := Extract(mustURL(t, "http://docs.example/"), []byte(body), opt)
	if err != nil {
		t.Fatal(err)
	}
	p.Classify(nil, opt)
	if !p.Young {
		t.Error("not young")
	}
	got := kindsByURL(p)
	for u, k := range map[string]Kind{
		"/": Noise, "/api/": Noise, "/about.html": Noise, // nav, footer
		"/share": Content, "/guide/": Content, "/p0/a": Content, "/p1.html": Content,
		"/x": Noise, "/y": Noise, // the samples
	} {
		if got[u] != k {
			t.Errorf("%s is %v, want %v", u, got[u], k)
		}
	}
}

// TestNoiseLinks checks the split the layered DOM pass takes.
func TestNoiseLinks(t *testing.T) {
	opt := Options{}
	site := NewSite(opt)
	var last *Page
	for i := range 4 {
		p, _ := Extract(mustURL(t, fmt.Sprintf("http://docs.example/p%d.html", i)), []byte(docPage(i)), opt)
		site.Observe(p)
		last = p
	}
	last.Classify(site, opt)
	noise, kept := last.NoiseLinks()
	if len(noise)+len(kept) != len(last.Links) || len(noise) == 0 || len(kept) == 0 {
		t.Fatalf("noise %d kept %d of %d", len(noise), len(kept), len(last.Links))
	}
	for _, l := range kept {
		if l.URL.Path == "/about.html" {
			t.Error("footer link kept")
		}
	}
}

// TestSiteBounded: a site model keeps at most MaxHashes counts however many
// pages it sees, and still knows the template block seen on every page.
// It fails when memory grows with the pages or eviction drops frequent
// blocks.
func TestSiteBounded(t *testing.T) {
	opt := Options{MaxHashes: 100}
	site := NewSite(opt)
	var p *Page
	for i := range 2000 {
		var err error
		p, err = Extract(mustURL(t, "http://s.example/"), []byte(docPage(i)+fmt.Sprintf("<p>unique %d</p><p>more %d</p>", i, i*7)), opt)
		if err != nil {
			t.Fatal(err)
		}
		site.Observe(p)
		if site.Len() > 100 {
			t.Fatalf("%d counts after %d pages", site.Len(), i+1)
		}
	}
	p.Classify(site, opt)
	if kindsByURL(p)["/about.html"] != Noise {
		t.Error("the footer is no longer template")
	}
	if site.Pages() != 2000 {
		t.Errorf("pages %d", site.Pages())
	}
}

// TestModelSites: a model keeps at most MaxSites sites, dropping the least
// recently used.
func TestModelSites(t *testing.T) {
	m := NewModel(Options{MaxSites: 3})
	for _, k := range []string{"a", "b", "c", "a", "d"} {
		m.Site(k)
	}
	if got := m.Sites(); !slices.Equal(got, []string{"d", "a", "c"}) {
		t.Errorf("sites %q", got)
	}
	p, err := m.Analyze(mustURL(t, "http://e.example/x"), []byte(docPage(1)))
	if err != nil || !p.Young || m.Site("e.example").Pages() != 1 {
		t.Errorf("analyze: %v young=%v pages=%d", err, p.Young, m.Site("e.example").Pages())
	}
}

// TestSiteEncoding: WriteTo and ReadSite round-trip; damaged bytes are an
// error wrapping ErrBadSite, never a panic.
func TestSiteEncoding(t *testing.T) {
	opt := Options{}
	site := NewSite(opt)
	for i := range 5 {
		p, _ := Extract(mustURL(t, "http://s.example/"), []byte(docPage(i)), opt)
		site.Observe(p)
	}
	var buf bytes.Buffer
	if _, err := site.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSite(buf.Bytes(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if back.Pages() != 5 || back.Len() != site.Len() {
		t.Errorf("read back %d pages %d counts, want 5 and %d", back.Pages(), back.Len(), site.Len())
	}
	var again bytes.Buffer
	back.WriteTo(&again)
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("not the same bytes")
	}
	for n := range buf.Len() {
		if _, err := ReadSite(buf.Bytes()[:n], opt); err == nil && n < buf.Len() {
			t.Fatalf("truncated at %d read without error", n)
		}
	}
}

// TestBadPages: empty pages, 10,000 blocks, DOM depth 10,000, in bounded
// time.
func TestBadPages(t *testing.T) {
	for name, body := range map[string]string{
		"empty":     "",
		"no body":   "<html><head><title>t</title></head></html>",
		"wide":      strings.Repeat(`<div><a href="/a">a</a> b</div>`, 10_000),
		"deep":      strings.Repeat(`<div><a href="/a">a</a>`, 10_000),
		"deep list": strings.Repeat(`<ul><li>`, 5_000) + "x",
	} {
		start := time.Now()
		site := NewSite(Options{})
		for range 3 {
			p, err := Extract(mustURL(t, "http://s.example/"), []byte(body), Options{})
			if err != nil {
				t.Fatal(err)
			}
			site.Observe(p)
			p.Classify(site, Options{})
			_, _ = p.NoiseLinks()
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: %v", name, d)
		}
	}
	if _, err := Extract(nil, nil, Options{}); err == nil {
		t.Error("nil base accepted")
	}
}

// FuzzExtract: any input extracts and classifies without panic, with links
// each in a block, parents before children, each subtree inside its
// parent's, and navigation rows (the input seen on four pages that differ
// by a paragraph, so the site is not young) template with 2–8 links.
func FuzzExtract(f *testing.F) {
	f.Add([]byte(bookPage(3, 10)))
	f.Add([]byte(docPage(0)))
	f.Add([]byte(strings.Repeat("<div>", 500) + `<a href="/x">x</a>`))
	f.Add([]byte(`<nav><p><a href=/a>a</a><p><a href=/b>b`))
	f.Add([]byte(""))
	f.Add([]byte(`<div><a href=/1 rel=next>n</a> <a href=/2 rel=prev>p</a></div>`))
	base := mustURL(f, "http://f.example/d/")
	f.Fuzz(func(t *testing.T, body []byte) {
		site := NewSite(Options{MaxHashes: 16})
		for k := range 4 {
			page := append(slices.Clip(body), fmt.Sprintf("<p>%d</p>", k)...)
			p, err := Extract(base, page, Options{})
			if err != nil {
				t.Fatal(err)
			}
			site.Observe(p)
			p.Classify(site, Options{})
			for i, b := range p.Blocks {
				if b.Parent >= i {
					t.Fatalf("block %d parent %d", i, b.Parent)
				}
				if b.end <= i || b.end > len(p.Blocks) || b.Parent >= 0 && b.end > p.Blocks[b.Parent].end {
					t.Fatalf("block %d subtree ends at %d (parent %d)", i, b.end, b.Parent)
				}
				if b.Nav && (!b.Template || b.Links < 2 || b.Links > 8) {
					t.Fatalf("navigation row %d: %+v", i, b)
				}
			}
			for _, l := range p.Links {
				if l.Block < 0 || l.Block >= len(p.Blocks) {
					t.Fatalf("link %+v", l)
				}
				if bk := p.Blocks[l.Block].Kind; l.Kind != bk && !(bk == Noise && l.Kind == Template) {
					t.Fatalf("link %+v of a %v block", l, bk)
				}
			}
			if site.Len() > 16 {
				t.Fatalf("%d counts", site.Len())
			}
		}
	})
}

// TestModelEncoding: a model's sites round-trip through WriteTo and
// ReadModel; damaged bytes are an error, never a panic.
func TestModelEncoding(t *testing.T) {
	m := NewModel(Options{})
	for i := range 4 {
		for _, h := range []string{"a.example", "b.example"} {
			if _, err := m.Analyze(mustURL(t, "http://"+h+"/"), []byte(docPage(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	var buf bytes.Buffer
	m.WriteTo(&buf)
	back, err := ReadModel(buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Site("a.example").Pages() != 4 || back.Site("b.example").Len() != m.Site("b.example").Len() {
		t.Error("sites differ after reading back")
	}
	for n := range buf.Len() {
		if _, err := ReadModel(buf.Bytes()[:n], Options{}); err == nil {
			t.Fatalf("truncated at %d read without error", n)
		}
	}
}

// bookPage renders page i of a DocBook/Sphinx-like manual of n pages in
// chapters of five: a breadcrumb (a fixed list, then one that ends in the
// chapter and the page), a
// header table (the page's title, Prev, Up, the chapter's title, Home,
// Next) and a footer table (Prev, Up, Next, then the neighbours' titles
// and Home) — rows whose texts differ on every page; each chapter's first
// page has a small table of contents (its four sections: a list whose
// structure is the same on every chapter page, whose items are not), and
// page 0 is the book's table of contents.
func bookPage(i, n int) string {
	title := func(k int) string { return fmt.Sprintf("%d.%d. Section about topic%d things", k/5+1, k%5, k) }
	ch := i / 5 * 5
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>%s</title></head><body>", title(i))
	fmt.Fprintf(&b, `<div class="related"><ul><li><a href="/genindex.html">index</a></li><li><a href="/modindex.html">modules</a></li></ul><ul><li><a href="/index.html">Manual</a> »</li><li><a href="/p%d.html">Chapter %d</a> »</li><li><a href="/p%d.html">Section %d</a></li></ul></div>`, ch, ch/5+1, i, i)
	fmt.Fprintf(&b, `<div class="navheader"><table><tr><th colspan="3">%s</th></tr><tr><td><a href="/p%d.html">Prev</a></td><td><a href="/p%d.html">Up</a></td><th>Chapter %d. Things of kind %d</th><td><a href="/index.html">Home</a></td><td><a href="/p%d.html" rel="next">Next</a></td></tr></table></div>`,
		title(i), (i+n-1)%n, ch, ch/5+1, ch/5+1, (i+1)%n)
	fmt.Fprintf(&b, `<h2>%s</h2>`, title(i))
	if i == 0 {
		b.WriteString(`<div class="toc"><p>Table of Contents</p><dl>`)
		for k := 1; k < n; k++ {
			fmt.Fprintf(&b, `<dt><a href="/p%d.html">%s</a></dt>`, k, title(k))
		}
		b.WriteString(`</dl></div>`)
	} else if i%5 == 0 {
		b.WriteString(`<div class="toc"><p>Table of Contents</p><dl>`)
		for k := i + 1; k < i+5 && k < n; k++ {
			fmt.Fprintf(&b, `<dt><a href="/p%d.html">%s</a></dt>`, k, title(k))
		}
		b.WriteString(`</dl></div>`)
	}
	fmt.Fprintf(&b, `<p>Words of page %d that explain topic%d at some length, and nobody else's words.</p>`, i, i)
	fmt.Fprintf(&b, `<div class="navfooter"><table><tr><td><a href="/p%d.html">Prev</a></td><td><a href="/p%d.html">Up</a></td><td><a href="/p%d.html">Next</a></td></tr><tr><td>%s</td><td><a href="/index.html">Home</a></td><td>%s</td></tr></table></div>`,
		(i+n-1)%n, ch, (i+1)%n, title((i+n-1)%n), title((i+1)%n))
	b.WriteString(`</body></html>`)
	return b.String()
}

// TestNavRows is the structural rule on a manual whose navigation rows
// (breadcrumbs, Prev/Up/Home/Next tables) carry per-page texts, so that no
// row repeats exactly: once the site's pages are seen, the rows are
// template (their text out of the main text, their links Template: kept,
// as a pager's), while the tables of contents — the book's, and the
// chapters' small ones whose structure repeats on every chapter page —
// stay content. It fails when the rule misses the rows (with the rule off,
// checked below, it does) or when it takes a table of contents for a row.
func TestNavRows(t *testing.T) {
	const n = 30
	for _, on := range []bool{true, false} {
		opt := Options{}
		if !on {
			opt.MaxNavLinks = -1
		}
		site := NewSite(opt)
		var pages []*Page
		for i := range n {
			p, err := Extract(mustURL(t, fmt.Sprintf("http://book.example/p%d.html", i)), []byte(bookPage(i, n)), opt)
			if err != nil {
				t.Fatal(err)
			}
			site.Observe(p)
			pages = append(pages, p)
		}
		navText := []string{"Prev", "Next", "Home", "Chapter 3. Things", "Chapter 3 ", "index", "Manual"}
		for _, i := range []int{0, 10, 12, n - 1} {
			p := pages[i]
			p.Classify(site, opt)
			leaked := ""
			for _, s := range navText {
				if strings.Contains(p.MainText+" ", s) {
					leaked = s
				}
			}
			if neighbour := fmt.Sprintf("topic%d things", (i+1)%n); i%5 != 0 && strings.Contains(p.MainText, neighbour) {
				leaked = neighbour
			}
			if crumb := fmt.Sprintf("Section %d", i); strings.Contains(p.MainText, crumb) {
				leaked = crumb
			}
			if !on {
				if leaked == "" {
					t.Errorf("rule off, page %d: no navigation text in the main text: the check proves nothing: %q", i, p.MainText)
				}
				continue
			}
			if leaked != "" {
				t.Errorf("page %d: main text has navigation text %q: %q", i, leaked, p.MainText)
			}
			if want := fmt.Sprintf("page %d that explain", i); !strings.Contains(p.MainText, want) {
				t.Errorf("page %d: main text lacks %q: %q", i, want, p.MainText)
			}
			toc := 0
			for _, l := range p.Links {
				switch {
				case l.Rel == "next":
					if l.Kind == Noise {
						t.Errorf("page %d: rel=next link %s is noise: the layered crawl would not follow it", i, l.URL)
					}
				case strings.Contains(l.Text, "Section about"):
					toc++
					if l.Kind != Content {
						t.Errorf("page %d: table of contents link %s (%q) is %v", i, l.URL, l.Text, l.Kind)
					}
				case l.Text == "Prev" || l.Text == "Up" || l.Text == "Home":
					if l.Kind != Template {
						t.Errorf("page %d: navigation link %q is %v, want template (followed, not main text)", i, l.Text, l.Kind)
					}
				case l.Text == "index" || l.Text == "modules":
					// The breadcrumb is a row; its first list repeats
					// exactly on every page: noise, as anywhere.
					if l.Kind != Noise {
						t.Errorf("page %d: breadcrumb link %q is %v, want noise", i, l.Text, l.Kind)
					}
				case l.Text == "Manual":
					if l.Kind != Template {
						t.Errorf("page %d: breadcrumb link %q is %v, want template", i, l.Text, l.Kind)
					}
				}
			}
			if want := map[int]int{0: n - 1, 10: 4}[i]; toc != want {
				t.Errorf("page %d: %d table of contents links, want %d", i, toc, want)
			}
		}
	}
}
