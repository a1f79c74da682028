package websim

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestPageModelTruth: with PageModel, every fetched HTML page's <a> links
// are labelled in Truth.LinkBlocks, every kind of block occurs, the noise
// labels agree with Truth.NoiseLinks, and the links the labels name are
// the links the page's HTML holds (read with x/net/html, not the
// renderer). Without PageModel, LinkBlocks is nil. It fails when a block
// is rendered without its label or labelled without being rendered.
func TestPageModelTruth(t *testing.T) {
	cfg := Config{Port: 8080, Hosts: 4, PagesPerHost: 30, PageModel: true}
	w := mustNew(t, cfg)
	tr, err := w.Truth(TruthRules{Seeds: w.SeedURLs(4), MaxDepth: 2, Scope: ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.LinkBlocks) < 20 {
		t.Fatalf("%d pages labelled", len(tr.LinkBlocks))
	}
	kinds := map[string]int{}
	for page, lbs := range tr.LinkBlocks {
		var noise []string
		want := map[string]bool{}
		for _, lb := range lbs {
			kinds[lb.Block]++
			if lb.Noise {
				noise = append(noise, lb.URL)
			}
			want[lb.URL] = true
		}
		slices.Sort(noise)
		if !slices.Equal(slices.Compact(noise), tr.NoiseLinks[page]) {
			t.Errorf("%s: noise labels %v, NoiseLinks %v", page, noise, tr.NoiseLinks[page])
		}
		status, _, body := get(t, w, page)
		if status != 200 {
			t.Fatalf("%s: %d", page, status)
		}
		got := anchors(t, page, body)
		for u := range want {
			if !got[u] {
				t.Errorf("%s: labelled link %s is not on the page", page, u)
			}
		}
		for u := range got {
			if !want[u] {
				t.Errorf("%s: link %s on the page is not labelled", page, u)
			}
		}
	}
	for _, k := range []string{"nav", "footer", "sidebar", "share", "language", "export", "tags", "ads", "toc", "editorial", "content"} {
		if kinds[k] == 0 {
			t.Errorf("no %s links", k)
		}
	}
	plain := mustNew(t, Config{Port: 8080, Hosts: 4, PagesPerHost: 30})
	tp, err := plain.Truth(TruthRules{Seeds: plain.SeedURLs(4), MaxDepth: 2, Scope: ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	if tp.LinkBlocks != nil {
		t.Error("LinkBlocks without PageModel")
	}
	// Deterministic: the same config gives the same bytes.
	again := mustNew(t, cfg)
	for page := range tr.LinkBlocks {
		_, _, a := get(t, w, page)
		_, _, b := get(t, again, page)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two webs of one config", page)
		}
		break
	}
}

// TestPageModelTemplate: the template blocks' text is the same on every
// page of a host (so a site model can learn it), the ads box in at most
// three variants.
func TestPageModelTemplate(t *testing.T) {
	w := mustNew(t, Config{Port: 8080, Hosts: 2, PagesPerHost: 30, PageModel: true, ChineseShare: -1})
	tr, err := w.Truth(TruthRules{Seeds: w.SeedURLs(1), MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	shares, ads := map[string]bool{}, map[string]bool{}
	n := 0
	for page := range tr.LinkBlocks {
		_, _, body := get(t, w, page)
		s := string(body)
		shares[between(s, `<div class="tags">`, "</div>")] = true
		ads[between(s, `class="ads">`, "</")] = true
		n++
	}
	if n < 10 || len(shares) != 1 || len(ads) > 3 {
		t.Errorf("%d pages: %d tag clouds, %d ads boxes", n, len(shares), len(ads))
	}
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

// anchors returns the canonical URLs of the page's <a href> links.
func anchors(t *testing.T, page string, body []byte) map[string]bool {
	base, _ := url.Parse(page)
	out := map[string]bool{}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken {
			continue
		}
		tok := z.Token()
		switch tok.Data {
		case "base":
			for _, a := range tok.Attr {
				if a.Key == "href" {
					if b, ok := Canonical(base, a.Val); ok {
						base = b
					}
				}
			}
		case "a":
			for _, a := range tok.Attr {
				if a.Key == "href" {
					if u, ok := Canonical(base, a.Val); ok {
						out[u.String()] = true
					}
				}
			}
		}
	}
}
