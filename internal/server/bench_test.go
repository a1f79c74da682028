package server

import (
	"net/http/httptest"
	"testing"
)

// benchServer measures the server's own cost of one request (a 10-hit
// result, without the index): with the response cache (the hit path: a
// look-up and a write) or without any cache (the miss path's rendering:
// html/template or JSON encoding).
func benchServer(b *testing.B, cacheSize int, target string) {
	s, err := New(Options{Searcher: &fakeSearcher{testHits()}, CacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkSearchPage: page 2 of a 10-hit result, from the response cache.
func BenchmarkSearchPage(b *testing.B) { benchServer(b, 0, "/?q=crawler&p=2") }

// BenchmarkSearchPageRender: the same page rendered through html/template
// every time (caches off).
func BenchmarkSearchPageRender(b *testing.B) { benchServer(b, -1, "/?q=crawler&p=2") }

// BenchmarkSearchAPI: /api/search from the response cache.
func BenchmarkSearchAPI(b *testing.B) { benchServer(b, 0, "/api/search?q=crawler&offset=10") }

// BenchmarkSearchAPIEncode: /api/search encoded every time (caches off).
func BenchmarkSearchAPIEncode(b *testing.B) { benchServer(b, -1, "/api/search?q=crawler&offset=10") }
