package parse

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"golang.org/x/net/html"
)

// rawAttrSeeds are tags at the edges of the Tokenizer's attribute rules.
var rawAttrSeeds = []string{
	`<a =x href=y>`, `<a = href=y>`, `<a ==x href=y>`, `<a/href=x>`, `<a / href=x>`, `<a href/=x>`, `<a href = "x" >`,
	`<a href=x/>`, `<a href="x"/>`, `<a HREF=x href=y Href=z>`, `<a href='x' rel=nofollow/>`,
	`<a href=>`, `<a href= >`, `<a href=">`, `<a href`, `<a href=x`, `<a href="x`, `<a href='x'rel=y>`,
	`<a rel="x"href=y>`, `<a a=b=c href=d>`, `<img src=a alt="b c">`, "<a\thref=x\nrel=y\f>",
	"<a href=x\r\n>", "<a href=\"x\x00\">", `<a href="a&amp;b">`, `<a title="&" href=x>`,
	`<meta http-equiv=Refresh content="0; url=/x">`, `<meta name=ROBOTS content=NoIndex>`,
	`<html lang=en xml:lang=fr>`, `<html XML:LANG=fr>`, `<a href="x>y">`, `<a href='x"y'>`,
	`<a href=x>y</a href=z>`, `<a class="a b" id=c data-x href="/p?q=1" rel>`, `<a href rel=x>`,
	`<link rel=canonical href=/c>`, `<base href=http://b/>`, `<a href="/"/ >`, `<a/>`, `<a >`,
	`<area href=x alt=y>`, `<frame src=f>`, `<embed src=e>`, `<iframe src=i></iframe>`,
	`<a content-type=x http-equiv-x=y name=z>`, `<a verylongattributename=x href=y>`,
}

// checkRawAttrs tokenizes body as the walker does and compares, for every
// start tag, rawAttrs with the wanted attributes TagAttr gives. It returns
// how many tags rawAttrs read and how many it left to TagAttr.
func checkRawAttrs(t *testing.T, body []byte) (fast, slow int) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(body))
	var arena *strArena
	if len(body)%2 == 1 {
		arena = &strArena{} // both ways
	}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return fast, slow
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		raw := bytes.Clone(z.Raw())
		got, ok := rawAttrs(raw, nil, arena)
		var want []html.Attribute
		for {
			k, v, more := z.TagAttr()
			if k == nil {
				break
			}
			if name := wantedAttr(k); name != "" {
				if _, dup := lookupAttr(want, name); !dup {
					want = append(want, html.Attribute{Key: name, Val: string(v)})
				}
			}
			if !more {
				break
			}
		}
		if !ok {
			if bytes.IndexAny(raw, "&\r\x00") < 0 {
				t.Errorf("rawAttrs gave up on %q, which needs no decoding", raw)
			}
			slow++
			continue
		}
		fast++
		if !slices.Equal(got, want) {
			t.Errorf("tag %q: rawAttrs %q; TagAttr %q", raw, got, want)
		}
	}
}

// FuzzRawAttrs: rawAttrs reads the same wanted attributes as x/net/html's
// TagAttr from every start tag of any input, or leaves the tag to TagAttr
// only when it holds a byte TagAttr decodes.
func FuzzRawAttrs(f *testing.F) {
	for _, s := range append(append([]string{}, fuzzSeeds...), rawAttrSeeds...) {
		f.Add([]byte(s))
	}
	golden, _ := filepath.Glob("testdata/golden/*.html")
	for _, name := range golden {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(tocPage())
	f.Fuzz(func(t *testing.T, body []byte) {
		checkRawAttrs(t, body)
	})
}

// TestRawAttrsCorpus: on the parser's test pages rawAttrs reads every tag
// but those with a character reference, and agrees with TagAttr.
func TestRawAttrsCorpus(t *testing.T) {
	golden, err := filepath.Glob("testdata/golden/*.html")
	if err != nil || len(golden) == 0 {
		t.Fatalf("no golden pages: %v", err)
	}
	var fast, slow int
	for _, name := range golden {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, s := checkRawAttrs(t, b)
		fast, slow = fast+f, slow+s
	}
	f, s := checkRawAttrs(t, tocPage())
	if s != 0 || f < 400 {
		t.Errorf("tocPage: %d tags read from raw bytes, %d by TagAttr; want every tag (over 400) raw", f, s)
	}
	t.Logf("golden pages: %d tags read from raw bytes, %d by TagAttr", fast, slow)
}

// TestStrArena: strings made by a strArena keep their bytes while later
// ones fill the block and the next, and the caller's buffer is reused.
func TestStrArena(t *testing.T) {
	var a strArena
	buf := make([]byte, 0, 64)
	var got, want []string
	for i := range 2000 {
		buf = fmt.Appendf(buf[:0], "/s/%d/a/%d.html", i%20, i)
		if i%300 == 0 {
			buf = append(buf, bytes.Repeat([]byte{'x'}, arenaBlock/4)...) // made on its own
		}
		got, want = append(got, a.str(buf)), append(want, string(buf))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("string %d is %q; want %q", i, got[i], want[i])
		}
	}
	if s := (*strArena)(nil).str([]byte("x")); s != "x" {
		t.Fatalf("nil arena gave %q", s)
	}
}

// TestParseReuse: a page parses the same whatever was parsed before it by
// the pooled walkers, in parallel too, and with Options.Links given the
// slice of another page.
func TestParseReuse(t *testing.T) {
	bodies := [][]byte{tocPage()}
	golden, _ := filepath.Glob("testdata/golden/*.html")
	for _, name := range golden {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	for _, s := range append(append([]string{}, fuzzSeeds...), rawAttrSeeds...) {
		bodies = append(bodies, []byte(s))
	}
	base := mustURL(t, "http://127.0.0.13:8081/a/contact.html")
	for _, unresolved := range []bool{true, false} {
		want := make([]*Page, len(bodies))
		for i, b := range bodies {
			p, err := Parse(base, b, Options{Unresolved: unresolved})
			if err != nil {
				t.Fatal(err)
			}
			want[i] = p
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var links []Link
				for r := range 3 * len(bodies) {
					i := (r*7 + g) % len(bodies)
					p, err := Parse(base, bodies[i], Options{Unresolved: unresolved, Links: links})
					if err != nil {
						t.Error(err)
						return
					}
					if !reflect.DeepEqual(p, want[i]) {
						t.Errorf("page %d (unresolved %v) parsed after others differs:\n%+v\nwant\n%+v", i, unresolved, p, want[i])
						return
					}
					links = p.Links
				}
			}()
		}
		wg.Wait()
	}
}
