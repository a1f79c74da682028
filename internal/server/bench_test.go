package server

import (
	"net/http/httptest"
	"testing"
)

// BenchmarkSearchPage measures the server's own cost of a search page (a
// cached 10-hit result rendered through html/template), without the index.
func BenchmarkSearchPage(b *testing.B) {
	s, err := New(Options{Searcher: &fakeSearcher{testHits()}})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/?q=crawler&p=2", nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkSearchAPI is the same for /api/search.
func BenchmarkSearchAPI(b *testing.B) {
	s, err := New(Options{Searcher: &fakeSearcher{testHits()}})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/api/search?q=crawler&offset=10", nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
