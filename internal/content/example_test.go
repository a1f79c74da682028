package content_test

import (
	"fmt"
	"net/url"

	"github.com/spider-crawler/spider/internal/content"
)

// Offline (the index build sees every page of a site): count each site's
// pages first, then judge each page with its site's model.
func Example_offline() {
	page := func(n int, toc string) []byte {
		return []byte(fmt.Sprintf(`<title>Page %d</title>
<nav><a href="/">Home</a> <a href="/guide/">Guide</a> <a href="/api/">API</a></nav>
<h1>Topic %d</h1><p>Text of page %d, its own words and nobody else's.</p>%s
<footer><p><a href="/about">About</a> · <a href="/terms">Terms</a></p></footer>`, n, n, n, toc))
	}
	bodies := [][]byte{page(1, `<ul><li><a href="/a">Alpha</a></li><li><a href="/b">Beta</a></li></ul>`), page(2, ""), page(3, ""), page(4, "")}
	m := content.NewModel(content.Options{})
	var pages []*content.Page
	for i, b := range bodies {
		u, _ := url.Parse(fmt.Sprintf("http://docs.example/p%d", i+1))
		p, _ := content.Extract(u, b, m.Options())
		m.Site(u.Hostname()).Observe(p)
		pages = append(pages, p)
	}
	p := pages[0]
	p.Classify(m.Site("docs.example"), m.Options())
	fmt.Printf("title %q\nheadings %q\nmain %q\n", p.Title, p.Headings, p.MainText)
	for _, l := range p.Links {
		fmt.Println(l.URL.Path, l.Kind)
	}
	// Output:
	// title "Page 1"
	// headings ["Topic 1"]
	// main "Topic 1 Text of page 1, its own words and nobody else's. Alpha Beta"
	// / noise
	// /guide/ noise
	// /api/ noise
	// /a content
	// /b content
	// /about noise
	// /terms noise
}
