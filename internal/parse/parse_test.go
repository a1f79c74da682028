package parse

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const goldenBase = "https://example.com/dir/page.html"

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustParse(t testing.TB, base, body string, opt Options) *Page {
	t.Helper()
	p, err := Parse(mustURL(t, base), []byte(body), opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Golden views: URLs as strings, so the JSON is readable.
type goldenLink struct {
	Raw      string
	URL      string
	Tag      string
	Attr     string
	Text     string `json:",omitempty"`
	Rel      string `json:",omitempty"`
	NoFollow bool   `json:",omitempty"`
}

type goldenBlock struct {
	Tag      string
	Text     string
	TextLen  int
	LinkText int
	Ratio    float64
	Links    []string `json:",omitempty"`
}

type golden struct {
	Title      string
	Lang       string
	Base       string
	Refresh    string `json:",omitempty"`
	MetaRobots MetaRobots
	Skipped    int
	Truncated  bool
	Text       string
	Links      []goldenLink
	Blocks     []goldenBlock
	Noise      []string
}

func linkStrings(ls []Link) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.URL.String())
	}
	return out
}

func toGolden(p *Page, blocks []Block) golden {
	g := golden{Title: p.Title, Lang: p.Lang, Base: p.Base.String(), MetaRobots: p.MetaRobots,
		Skipped: p.Skipped, Truncated: p.Truncated, Text: p.Text, Links: []goldenLink{}}
	if p.Refresh != nil {
		g.Refresh = p.Refresh.String()
	}
	for _, l := range p.Links {
		g.Links = append(g.Links, goldenLink{Raw: l.Raw, URL: l.URL.String(), Tag: l.Tag, Attr: l.Attr,
			Text: l.Text, Rel: l.Rel, NoFollow: l.NoFollow})
	}
	for _, b := range blocks {
		g.Blocks = append(g.Blocks, goldenBlock{Tag: b.Tag, Text: b.Text, TextLen: b.TextLen, LinkText: b.LinkText,
			Ratio: math.Round(b.LinkTextRatio()*1000) / 1000, Links: linkStrings(b.Links)})
	}
	noise, _ := NoiseLinks(blocks, DefaultNoiseThreshold)
	g.Noise = linkStrings(noise)
	return g
}

func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/golden/*.html")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	base := mustURL(t, goldenBase)
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(base, body, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(toGolden(p, Blocks(base, body)), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			wantFile := strings.TrimSuffix(in, ".html") + ".json"
			if *update {
				if err := os.WriteFile(wantFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", in, got)
			}
		})
	}
}

func TestParseRejectsRelativeBase(t *testing.T) {
	for _, base := range []*url.URL{nil, {Path: "/relative"}} {
		if _, err := Parse(base, []byte("<a href=x>"), Options{}); err == nil || !strings.HasPrefix(err.Error(), "cannot parse page") {
			t.Errorf("base %v: error %v", base, err)
		}
	}
}

func TestRelativeForms(t *testing.T) {
	const base = "http://h.example/a/b/c.html?x=1#top"
	tests := []struct {
		href string
		want string // "" = skipped
	}{
		{"../d.html", "http://h.example/a/d.html"},
		{"../../../../d.html", "http://h.example/d.html"},
		{"./e/./f/../g", "http://h.example/a/b/e/g"},
		{"d.html", "http://h.example/a/b/d.html"},
		{"/root", "http://h.example/root"},
		{"//other.example/p?q", "http://other.example/p?q"},
		{"?q=2", "http://h.example/a/b/c.html?q=2"},
		{"#frag", "http://h.example/a/b/c.html?x=1#frag"},
		{"https://abs.example/Path", "https://abs.example/Path"},
		{"HTTP://Abs.Example/", "http://Abs.Example/"},
		{"  \n /spaced \t", "http://h.example/spaced"},
		{"/bro\nken/li\tne", "http://h.example/broken/line"},
		{`\back\slash`, "http://h.example/back/slash"},
		{`\\evil.example\x`, "http://evil.example/x"},
		{"a b.html", "http://h.example/a/b/a%20b.html"},
		{"ftp://files.example/x", "ftp://files.example/x"},
		{"", ""},
		{"   ", ""},
		{"javascript:alert(1)", ""},
		{"JavaScript:alert(1)", ""},
		{"java\nscript:alert(1)", ""},
		{" mailto:someone@example.com", ""},
		{"tel:+1-555", ""},
		{"data:text/html,<p>x", ""},
		{"http://[::1", ""},
		{"http://bad host/", ""},
	}
	for _, tt := range tests {
		body := `<a href="` + strings.ReplaceAll(tt.href, `"`, "&quot;") + `">x</a>`
		p := mustParse(t, base, body, Options{})
		switch {
		case tt.want == "":
			if len(p.Links) != 0 || p.Skipped != 1 {
				t.Errorf("href %q: links %v, skipped %d; want skipped", tt.href, linkStrings(p.Links), p.Skipped)
			}
		case len(p.Links) != 1 || p.Links[0].URL.String() != tt.want:
			t.Errorf("href %q: links %v, want %s", tt.href, linkStrings(p.Links), tt.want)
		case p.Links[0].Raw != tt.href:
			t.Errorf("href %q: Raw %q", tt.href, p.Links[0].Raw)
		}
	}
}

func TestBaseHref(t *testing.T) {
	const doc = "http://doc.example/dir/page.html"
	tests := []struct {
		name, body, wantBase string
		wantLinks            []string
	}{
		{"applies to links before it", `<a href="x">x</a><base href="http://b.example/root/"><a href="y">y</a>`,
			"http://b.example/root/", []string{"http://b.example/root/x", "http://b.example/root/y"}},
		{"first wins", `<base href="/one/"><base href="/two/"><a href="x">x</a>`,
			"http://doc.example/one/", []string{"http://doc.example/one/x"}},
		{"base without href is not the base", `<base target="_blank"><base href="/two/"><a href="x">x</a>`,
			"http://doc.example/two/", []string{"http://doc.example/two/x"}},
		{"relative base", `<base href="../other/"><a href="x">x</a>`,
			"http://doc.example/other/", []string{"http://doc.example/other/x"}},
		{"javascript base ignored", `<base href="javascript:x"><a href="x">x</a>`,
			doc, []string{"http://doc.example/dir/x"}},
		{"unparseable base ignored", `<base href="http://[::1"><a href="x">x</a>`,
			doc, []string{"http://doc.example/dir/x"}},
	}
	for _, tt := range tests {
		p := mustParse(t, doc, tt.body, Options{})
		if p.Base.String() != tt.wantBase || fmt.Sprint(linkStrings(p.Links)) != fmt.Sprint(tt.wantLinks) {
			t.Errorf("%s: base %s links %v; want %s %v", tt.name, p.Base, linkStrings(p.Links), tt.wantBase, tt.wantLinks)
		}
	}
}

func TestParseRefresh(t *testing.T) {
	tests := []struct {
		content, want string
		ok            bool
	}{
		{"0; url=http://a.example/", "http://a.example/", true},
		{"0;URL=/next", "/next", true},
		{"0;url='/quoted' trailing", "/quoted", true},
		{`3, url = "/spaced"`, "/spaced", true},
		{"0; /no-url-prefix", "/no-url-prefix", true},
		{"0 /space-separated", "/space-separated", true},
		{"0; 'quoted-no-prefix'", "quoted-no-prefix", true},
		{"0; url", "url", true},         // "url" without "=" is the URL itself
		{"0; urlx=/y", "urlx=/y", true}, // so is anything else starting with u
		{"1.5; url=/frac", "/frac", true},
		{".5;url=/dot", "/dot", true},
		{"  10  ", "", true},
		{"0;", "", true},
		{"0; url=", "", true},
		{"0; URL=\"/unterminated", "/unterminated", true},
		{"", "", false},
		{"url=/x", "", false},
		{"0x; url=/x", "", false},
		{"-1; url=/x", "", false},
	}
	for _, tt := range tests {
		got, ok := parseRefresh(tt.content)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRefresh(%q) = %q, %v; want %q, %v", tt.content, got, ok, tt.want, tt.ok)
		}
	}
}

func TestMetaRefreshInPage(t *testing.T) {
	tests := []struct{ body, want string }{
		{`<meta http-equiv="refresh" content="0; url=/a">`, "http://h.example/a"},
		{`<META HTTP-EQUIV=Refresh CONTENT=0;URL=/b>`, "http://h.example/b"},
		{`<meta content="2;url='c'" http-equiv=" REFRESH ">`, "http://h.example/dir/c"},
		{`<meta http-equiv="refresh" content="5">`, ""},
		{`<meta http-equiv="refresh" content="0;url=javascript:x()">`, ""},
		{`<meta http-equiv="refresh" content="garbage"><meta http-equiv="refresh" content="0;url=/second">`, "http://h.example/second"},
		{`<meta http-equiv="refresh" content="0;url=/first"><meta http-equiv="refresh" content="0;url=/second">`, "http://h.example/first"},
		{`<noscript><meta http-equiv="refresh" content="0;url=/nojs"></noscript>`, "http://h.example/nojs"},
		{`<meta name="refresh" content="0;url=/not-http-equiv">`, ""},
	}
	for _, tt := range tests {
		p := mustParse(t, "http://h.example/dir/page", tt.body, Options{})
		got := ""
		if p.Refresh != nil {
			got = p.Refresh.String()
			if len(p.Links) != 1 || p.Links[0].Tag != "meta" || p.Links[0].URL.String() != got {
				t.Errorf("%s: refresh not among the links: %v", tt.body, linkStrings(p.Links))
			}
		}
		if got != tt.want {
			t.Errorf("%s: Refresh %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestNofollow(t *testing.T) {
	tests := []struct {
		name, body   string
		wantRobots   MetaRobots
		wantNoFollow []bool
	}{
		{"rel", `<a href=/a rel="nofollow">a</a><a href=/b rel="NoOpener NOFOLLOW">b</a><a href=/c rel="nofollowed">c</a><a href=/d>d</a>`,
			MetaRobots{}, []bool{true, true, false, false}},
		{"meta robots", `<meta name="robots" content="nofollow"><a href=/a>a</a><link rel=icon href=/i>`,
			MetaRobots{NoFollow: true}, []bool{true, true}},
		{"meta after links", `<a href=/a>a</a><meta name=ROBOTS content="noindex,nofollow">`,
			MetaRobots{NoIndex: true, NoFollow: true}, []bool{true}},
		{"none", `<meta name="robots" content="NONE"><a href=/a>a</a>`,
			MetaRobots{NoIndex: true, NoFollow: true}, []bool{true}},
		{"noindex only", `<meta name="robots" content="noindex, follow"><a href=/a>a</a>`,
			MetaRobots{NoIndex: true}, []bool{false}},
		{"other bots ignored", `<meta name="googlebot" content="nofollow"><a href=/a>a</a>`,
			MetaRobots{}, []bool{false}},
	}
	for _, tt := range tests {
		p := mustParse(t, "http://h.example/", tt.body, Options{})
		var got []bool
		for _, l := range p.Links {
			got = append(got, l.NoFollow)
		}
		if p.MetaRobots != tt.wantRobots || fmt.Sprint(got) != fmt.Sprint(tt.wantNoFollow) {
			t.Errorf("%s: robots %+v nofollow %v; want %+v %v", tt.name, p.MetaRobots, got, tt.wantRobots, tt.wantNoFollow)
		}
	}
}

func TestText(t *testing.T) {
	tests := []struct{ name, body, title, text string }{
		{"inline joins, blocks separate", `<p>one<b>two</b></p><p>three</p>four<br>five<div>six</div>`, "", "onetwo three four five six"},
		{"whitespace collapsed", "<p>  a \n\t b  </p>\u00a0\u3000<p>c</p>", "", "a b c"},
		{"skipped contents", `<head><title>T</title><style>s{}</style><script>x()</script><meta name=a></head>` +
			`<body>v<script>y()</script><noscript>ns</noscript><template>tp<p>tq</p></template><textarea>ta</textarea>` +
			`<iframe>if</iframe><!-- comment -->w</body>`, "T", "T v ta w"},
		{"head text without body tag", `<html><head><title>T</title></head>body text`, "T", "T body text"},
		{"text implicitly ends the head", `<head><title>T</title> stray <p>after`, "T", "T stray after"},
		{"element ends the head", `<head><title>T</title><div>in body</div>`, "T", "T in body"},
		{"entities", `<p>a &amp; b &lt;c&gt; &#x4E2D;&#25991; &copy;</p>`, "", "a & b <c> 中文 ©"},
		{"chinese", `<title>中文标题</title><p>中文网页的文本内容。</p><p>第二段</p>`, "中文标题", "中文标题 中文网页的文本内容。 第二段"},
		{"first title only", `<title>first</title><title>second</title>`, "first", "first second"},
		{"title whitespace", "<title>\n  a   b \n</title>", "a b", "a b"},
		{"nested templates", `<template>a<template>b</template>c</template>d`, "", "d"},
		{"unclosed script swallows the rest", `<p>x</p><script>var a = "<p>y</p>";`, "", "x"},
		{"invalid bytes", "<p>a\xffb\xc3</p>", "", "a\uFFFDb\uFFFD"},
	}
	for _, tt := range tests {
		p := mustParse(t, "http://h.example/", tt.body, Options{})
		if p.Title != tt.title || p.Text != tt.text {
			t.Errorf("%s: title %q text %q; want %q %q", tt.name, p.Title, p.Text, tt.title, tt.text)
		}
	}
}

func TestLinkKinds(t *testing.T) {
	body := `<html lang=" fr "><a href="/a" rel="Next  Prev">  anchor <img src="/i.png" alt="pic">  text </a>` +
		`<area href="/area" alt=" map  area "><link rel="stylesheet" href="/s.css"><iframe src="/if"></iframe>` +
		`<frame src="/fr"><img src="/img"><script src="/s.js"></script><embed src="/e">` +
		`<noscript><a href="/ns">no script</a><img src="/ns.png"></noscript><a href=/after>after</a>`
	p := mustParse(t, "http://h.example/", body, Options{})
	var got []string
	for _, l := range p.Links {
		got = append(got, fmt.Sprintf("%s/%s %s %q %q", l.Tag, l.Attr, l.URL.Path, l.Text, l.Rel))
	}
	want := []string{
		`a/href /a "anchor pic text" "next prev"`,
		`img/src /i.png "" ""`,
		`area/href /area "map area" ""`,
		`link/href /s.css "" "stylesheet"`,
		`iframe/src /if "" ""`,
		`frame/src /fr "" ""`,
		`img/src /img "" ""`,
		`script/src /s.js "" ""`,
		`embed/src /e "" ""`,
		`a/href /ns "no script" ""`,
		`img/src /ns.png "" ""`,
		`a/href /after "after" ""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p.Lang != "fr" {
		t.Errorf("Lang %q", p.Lang)
	}
	if p := mustParse(t, "http://h.example/", `<html xml:lang="de">`, Options{}); p.Lang != "de" {
		t.Errorf("xml:lang: Lang %q", p.Lang)
	}
}

func TestAnchorText(t *testing.T) {
	long := strings.Repeat("word ", 200)
	tests := []struct{ body, want string }{
		{`<a href=/x>  one   <b>two</b>three </a>`, "one twothree"},
		{`<a href=/x>open <a href=/y>second</a>`, "open"}, // a new <a> closes the previous
		{`<a href=/x>unclosed at end`, "unclosed at end"},
		{`<a href=/x><div>block</div>text</a>`, "block text"},
		{`<a href=/x>` + long + `</a>`, strings.TrimSpace(long)[:256]},
	}
	for _, tt := range tests {
		p := mustParse(t, "http://h.example/", tt.body, Options{})
		if len(p.Links) == 0 || p.Links[0].Text != tt.want {
			t.Errorf("%.40s: anchor text %q, want %q", tt.body, p.Links[0].Text, tt.want)
		}
	}
}

func TestLimits(t *testing.T) {
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "<p>paragraph %d <a href=/l%d>link</a></p>", i, i)
	}
	p := mustParse(t, "http://h.example/", b.String(), Options{MaxLinks: 10})
	if len(p.Links) != 10 || !p.Truncated || p.Links[9].URL.Path != "/l9" {
		t.Fatalf("MaxLinks: %d links, truncated %v", len(p.Links), p.Truncated)
	}
	p = mustParse(t, "http://h.example/", b.String(), Options{MaxTextBytes: 100})
	if len(p.Text) > 100 || len(p.Text) < 90 || !p.Truncated || len(p.Links) != 50 {
		t.Fatalf("MaxTextBytes: %d bytes of text, truncated %v, %d links", len(p.Text), p.Truncated, len(p.Links))
	}
	zh := strings.Repeat("中", 100)
	p = mustParse(t, "http://h.example/", zh, Options{MaxTextBytes: 10})
	if p.Text != "中中中" || !p.Truncated {
		t.Fatalf("text cap cuts runes: %q", p.Text)
	}
	p = mustParse(t, "http://h.example/", b.String(), Options{})
	if p.Truncated || len(p.Links) != 50 {
		t.Fatalf("defaults: truncated %v, %d links", p.Truncated, len(p.Links))
	}
}

func TestDeepNesting(t *testing.T) {
	const depth = 100_000
	cases := map[string]string{
		"div":    strings.Repeat("<div>", depth) + "deep text <a href=/deep>deep</a>",
		"mixed":  strings.Repeat("<div><p><span><a href=/x>x", depth/4),
		"closed": strings.Repeat("<li><ul>", depth/2) + "x" + strings.Repeat("</ul></li>", depth/2),
		"table":  strings.Repeat("<table><tr><td>", depth/3) + strings.Repeat("</td></tr></table>", depth/3),
		"stray":  strings.Repeat("<div>", depth/2) + strings.Repeat("</td>", depth/2),
	}
	for name, body := range cases {
		start := time.Now()
		p, err := Parse(mustURL(t, "http://h.example/"), []byte(body), Options{})
		if err != nil {
			t.Fatal(err)
		}
		blocks := Blocks(mustURL(t, "http://h.example/"), []byte(body))
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(body))
		}
		if name == "div" {
			if p.Text != "deep text deep" || len(p.Links) != 1 {
				t.Errorf("div: text %q links %d", p.Text, len(p.Links))
			}
			if len(blocks) != 1 || blocks[0].Tag != "div" || blocks[0].Text != "deep text deep" {
				t.Errorf("div: blocks %+v", blocks)
			}
		}
	}
}

func TestBlocks(t *testing.T) {
	body := `<div id=nav><a href="/1">Home</a> <a href="/2">News</a></div>` +
		`<div id=content><p>Twenty characters of text here <a href="/3">ref</a></p>Loose</div>` +
		`<p>one<p>two<ul><li>i1<li>i2</ul><table><tr><td>c1<td>c2</table>` +
		`<script>var x = "script text";</script><style>.a{}</style>`
	blocks := Blocks(mustURL(t, "http://h.example/"), []byte(body))
	var got []string
	for _, b := range blocks {
		got = append(got, fmt.Sprintf("%s:%q:%d/%d:%d", b.Tag, b.Text, b.LinkText, b.TextLen, len(b.Links)))
	}
	want := []string{
		`div:"Home News":8/8:2`,
		`div:"Loose":0/5:0`,
		`p:"Twenty characters of text here ref":3/29:1`,
		`p:"one":0/3:0`,
		`p:"two":0/3:0`,
		`li:"i1":0/2:0`,
		`li:"i2":0/2:0`,
		`td:"c1":0/2:0`,
		`td:"c2":0/2:0`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("blocks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := blocks[0].LinkTextRatio(); r != 1 {
		t.Errorf("nav ratio %v", r)
	}
	noise, kept := NoiseLinks(blocks, 0.25)
	if fmt.Sprint(linkStrings(noise)) != "[http://h.example/1 http://h.example/2]" ||
		fmt.Sprint(linkStrings(kept)) != "[http://h.example/3]" {
		t.Errorf("noise %v kept %v", linkStrings(noise), linkStrings(kept))
	}
}

func TestNoiseLinksThreshold(t *testing.T) {
	mk := func(linkText, textLen int, path string) Block {
		return Block{TextLen: textLen, LinkText: linkText, Links: []Link{{URL: &url.URL{Path: path}}}}
	}
	blocks := []Block{mk(1, 4, "/quarter"), mk(2, 4, "/half"), mk(0, 0, "/empty"), mk(4, 4, "/all")}
	tests := []struct {
		threshold float64
		noise     string
	}{
		{0.25, "[/half /all]"}, // exactly 1/4 is not "above"
		{0.5, "[/all]"},
		{0.2, "[/quarter /half /all]"},
		{0, "[/half /all]"}, // default
		{-1, "[/half /all]"},
		{math.NaN(), "[/half /all]"},
		{2, "[/half /all]"},
		{1, "[]"},
	}
	for _, tt := range tests {
		noise, kept := NoiseLinks(blocks, tt.threshold)
		if fmt.Sprint(linkStrings(noise)) != tt.noise && !(tt.noise == "[]" && len(noise) == 0) {
			t.Errorf("threshold %v: noise %v, want %s", tt.threshold, linkStrings(noise), tt.noise)
		}
		if len(noise)+len(kept) != len(blocks) {
			t.Errorf("threshold %v: %d noise + %d kept != %d", tt.threshold, len(noise), len(kept), len(blocks))
		}
	}
	if (Block{}).LinkTextRatio() != 0 {
		t.Error("empty block ratio not 0")
	}
}

func TestBlocksRelativeWithoutBase(t *testing.T) {
	blocks := Blocks(nil, []byte(`<p>x <a href="../a">a</a></p>`))
	if len(blocks) != 1 || len(blocks[0].Links) != 1 || blocks[0].Links[0].URL.String() != "../a" {
		t.Fatalf("blocks %+v", blocks)
	}
}

// benchPage builds a realistic page of about size bytes.
func benchPage(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Benchmark page</title>` +
		`<link rel="stylesheet" href="/css/a.css"><script src="/js/a.js"></script>` +
		`<style>body{font:14px sans-serif}.nav a{color:#333}</style></head><body>` +
		`<div class="nav"><ul>`)
	for i := range 20 {
		fmt.Fprintf(&b, `<li><a href="/section/%d/">Section %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></div><div class="content">`)
	for i := 0; b.Len() < size-200; i++ {
		fmt.Fprintf(&b, `<p class="para">Paragraph %d of ordinary prose, with <b>some</b> inline markup and `+
			`a <a href="../articles/%d.html?ref=bench&amp;n=%d">related article</a> plus text &amp; entities; `+
			`中文内容也在这里。<img src="/img/%d.png" alt="figure %d"></p>`+"\n", i, i, i, i, i)
	}
	b.WriteString(`</div><footer><a href="/about">About</a> <a href="/contact">Contact</a></footer></body></html>`)
	return b.Bytes()
}

func BenchmarkParse(b *testing.B) {
	page := benchPage(100 << 10)
	base := mustURL(b, "https://bench.example/dir/index.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(base, page, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBlocks(b *testing.B) {
	page := benchPage(100 << 10)
	base := mustURL(b, "https://bench.example/dir/index.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		Blocks(base, page)
	}
}

var fuzzSeeds = []string{
	"",
	"<a href=x>y</a>",
	`<base href="http://b/"><a href="../x">x</a>`,
	`<meta http-equiv=refresh content="0;url='/r'">`,
	`<meta name=robots content=none>`,
	"<noscript><a href=/n>n</a><noscript><a href=/m>m</a></noscript>",
	"<template><a href=/t>t<template>x</template></template>",
	"<div><p>unclosed<li>item<td>cell</table>",
	"<script>unterminated <a href=/x>",
	"<title>unterminated title",
	"<a href='java\nscript:x'>j</a><a href='\\\\evil/x'>e</a>",
	"\xff\xfe<p>\xc3(</p>\x00<a href=\"/\x00\">n</a>",
	"<p>中文 &amp; &#x4E2D; &bogus;</p>",
	"<plaintext><a href=/p>p</a>",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	base := mustURL(f, "http://fuzz.example/a/b?c#d")
	f.Fuzz(func(t *testing.T, body []byte) {
		opt := Options{MaxLinks: 50, MaxTextBytes: 4096}
		p, err := Parse(base, body, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Links) > opt.MaxLinks || len(p.Text) > opt.MaxTextBytes {
			t.Fatalf("limits exceeded: %d links, %d text bytes", len(p.Links), len(p.Text))
		}
		for _, s := range []string{p.Title, p.Text} {
			if !utf8.ValidString(s) || s != strings.TrimSpace(s) || strings.Contains(s, "  ") {
				t.Fatalf("text not clean UTF-8 with collapsed spaces: %q", s)
			}
		}
		for _, l := range p.Links {
			if l.URL == nil || !l.URL.IsAbs() {
				t.Fatalf("link %q resolved to non-absolute %v", l.Raw, l.URL)
			}
			if l.Text != "" && !utf8.ValidString(l.Text) {
				t.Fatalf("anchor text not UTF-8: %q", l.Text)
			}
		}
		if p.Refresh != nil && !p.Refresh.IsAbs() {
			t.Fatalf("refresh %v not absolute", p.Refresh)
		}
	})
}

func FuzzBlocks(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	base := mustURL(f, "http://fuzz.example/a/b?c#d")
	f.Fuzz(func(t *testing.T, body []byte) {
		blocks := Blocks(base, body)
		p, err := Parse(base, body, Options{})
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, b := range blocks {
			if b.LinkText < 0 || b.LinkText > b.TextLen {
				t.Fatalf("block %q: link text %d of %d", b.Tag, b.LinkText, b.TextLen)
			}
			if r := b.LinkTextRatio(); r < 0 || r > 1 {
				t.Fatalf("ratio %v", r)
			}
			if !utf8.ValidString(b.Text) || b.Text != strings.TrimSpace(b.Text) {
				t.Fatalf("block text %q", b.Text)
			}
			if b.TextLen == 0 && len(b.Links) == 0 {
				t.Fatal("empty block returned")
			}
			total += len(b.Links)
		}
		// Blocks and Parse see the same links.
		if total != len(p.Links) {
			t.Fatalf("blocks hold %d links, Parse found %d", total, len(p.Links))
		}
		noise, kept := NoiseLinks(blocks, DefaultNoiseThreshold)
		if len(noise)+len(kept) != total {
			t.Fatalf("NoiseLinks lost links: %d + %d != %d", len(noise), len(kept), total)
		}
	})
}

// tocPage is a documentation page like bench/static.sh's web: a table of
// contents of its host (nested lists of about 420 links with a class
// attribute), then a few paragraphs; about 32 KB.
func tocPage() []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head>\n<meta charset=\"utf-8\">\n<title>Contact: a page</title>\n" +
		"<link rel=\"stylesheet\" href=\"/static/site.css\">\n<script src=\"http://127.0.0.13:8081/static/app.js\"></script>\n" +
		"</head>\n<body><nav class=\"toc\"><h2>Contents</h2>\n<ul>\n")
	for s := range 20 {
		fmt.Fprintf(&b, "<li><a class=\"toc-link\" href=\"/s/%d/\">s/%d</a></li>\n<ul>\n", s, s)
		for i := range 21 {
			fmt.Fprintf(&b, "<li><a class=\"toc-link\" href=\"/s/%d/a/%d.html\">s/%d/a/%d.html</a></li>\n", s, i, s, i)
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</ul></nav>\n<main><h1>Contact</h1>\n")
	for i := range 12 {
		fmt.Fprintf(&b, "<p>Paragraph %d of ordinary prose about infection, prescription and wellness, with a "+
			"<a href=\"../old/%d.html\">link</a> and <em>emphasis</em> &amp; an entity.</p>\n", i, i)
	}
	b.WriteString("</main></body></html>\n")
	return []byte(b.String())
}

// BenchmarkParseTOC parses tocPage as the crawler does (links left
// unresolved).
func BenchmarkParseTOC(b *testing.B) {
	page := tocPage()
	base := mustURL(b, "http://127.0.0.13:8081/contact.html")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(base, page, Options{Unresolved: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTOCPageLinks: on a page of hundreds of links, every <a>'s text is its
// own (the texts share one string, walker.anchors: fails if an offset is
// off), with its tag, attribute and cleaned reference.
func TestTOCPageLinks(t *testing.T) {
	page, err := Parse(mustURL(t, "http://127.0.0.13:8081/contact.html"), tocPage(), Options{Unresolved: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 + 20*22 + 12; len(page.Links) != want {
		t.Fatalf("%d links; want %d", len(page.Links), want)
	}
	for _, l := range page.Links[2:] {
		want := strings.TrimPrefix(l.Raw, "/")
		if strings.HasPrefix(l.Raw, "..") {
			want = "link"
		} else if strings.HasSuffix(want, "/") {
			want = strings.TrimSuffix(want, "/")
		}
		if l.Tag != "a" || l.Attr != "href" || l.Text != want {
			t.Fatalf("link %+v: want tag a, attr href, text %q", l, want)
		}
	}
	if l := page.Links[1]; l.Tag != "script" || l.Attr != "src" || l.Text != "" {
		t.Fatalf("second link %+v; want the script's src", l)
	}
}
