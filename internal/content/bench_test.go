package content

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/spider-crawler/spider/internal/parse"
	"github.com/spider-crawler/spider/internal/websim"
)

// websimPages returns the HTML pages of a small PageModel web.
func websimPages(b *testing.B) ([]*url.URL, [][]byte) {
	w, err := websim.New(websim.Config{Port: 8080, Hosts: 4, PagesPerHost: 40, PageModel: true})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := w.Truth(websim.TruthRules{Seeds: w.SeedURLs(4), MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		b.Fatal(err)
	}
	var bases []*url.URL
	var bodies [][]byte
	for page := range tr.LinkBlocks {
		u, _ := url.Parse(page)
		req := httptest.NewRequest("GET", u.RequestURI(), nil)
		req.Host = u.Host
		rr := httptest.NewRecorder()
		w.Handler().ServeHTTP(rr, req)
		if rr.Code == 200 {
			bases = append(bases, u)
			bodies = append(bodies, rr.Body.Bytes())
		}
	}
	return bases, bodies
}

// BenchmarkAnalyze compares, per page, the crawler's parser (parse.Parse),
// the one-pass parse.ParseBlocks and content.Model.Analyze (with and
// without the navigation-row rule).
func BenchmarkAnalyze(b *testing.B) {
	bases, bodies := websimPages(b)
	b.Run("parse", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			parse.Parse(bases[i%len(bases)], bodies[i%len(bases)], parse.Options{Unresolved: true})
		}
	})
	b.Run("parseblocks", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			parse.ParseBlocks(bases[i%len(bases)], bodies[i%len(bases)], parse.Options{Unresolved: true})
		}
	})
	b.Run("analyze", func(b *testing.B) {
		m := NewModel(Options{})
		for i := 0; b.Loop(); i++ {
			m.Analyze(bases[i%len(bases)], bodies[i%len(bases)])
		}
	})
	b.Run("analyze-unresolved", func(b *testing.B) {
		m := NewModel(Options{Parse: parse.Options{Unresolved: true}})
		for i := 0; b.Loop(); i++ {
			m.Analyze(bases[i%len(bases)], bodies[i%len(bases)])
		}
	})
	// The same without the navigation-row rule (its cost is the difference).
	b.Run("analyze-unresolved-nonav", func(b *testing.B) {
		m := NewModel(Options{Parse: parse.Options{Unresolved: true}, MaxNavLinks: -1})
		for i := 0; b.Loop(); i++ {
			m.Analyze(bases[i%len(bases)], bodies[i%len(bases)])
		}
	})
}
