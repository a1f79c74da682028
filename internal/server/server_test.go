package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/html"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/topics"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const testToken = "0123456789abcdef-test-token"

// fakeSearcher answers from a fixed list of hits: a hit matches when its
// title or snippet contains the query (case-insensitive); "(" is a syntax
// error.
type fakeSearcher struct{ hits []Hit }

func (f *fakeSearcher) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	if strings.Contains(req.Query, "(") {
		return nil, fmt.Errorf("cannot parse query %q: unbalanced parenthesis: %w", req.Query, ErrBadQuery)
	}
	if req.Query == "later" {
		return nil, fmt.Errorf("%w: the index is being built", ErrUnavailable)
	}
	if req.Query == "boom" {
		return nil, errors.New("index segment 3 is unreadable")
	}
	var all []Hit
	for _, h := range f.hits {
		text := h.Title
		for _, fr := range h.Snippet {
			text += fr.Text
		}
		if strings.Contains(strings.ToLower(text), strings.ToLower(req.Query)) {
			if !req.Explain {
				h.Explain = ""
			}
			all = append(all, h)
		}
	}
	res := &SearchResult{Total: len(all), Took: 1500 * time.Microsecond, Terms: strings.Fields(strings.ToLower(req.Query))}
	if req.Offset < len(all) {
		res.Hits = all[req.Offset:min(len(all), req.Offset+req.Limit)]
	}
	return res, nil
}

func (f *fakeSearcher) Stats() IndexStats {
	return IndexStats{Docs: len(f.hits), Terms: 42, Segments: 2, Bytes: 4096}
}

// testHits: 25 "crawler" pages (for paging), one Chinese page, and hostile ones.
func testHits() []Hit {
	var hits []Hit
	for i := range 25 {
		hits = append(hits, Hit{
			URL: fmt.Sprintf("http://www.d0.test/s/1/a/%d.html", i), Title: fmt.Sprintf("Crawler article %d", i),
			Snippet: []Fragment{{Text: "a polite "}, {Text: "crawler", Match: true}, {Text: " fetches pages"}},
			Score:   1 - float64(i)/100, BM25: 2.5, PageRank: 0.001 * float64(i+1), Explain: "bm25=2.5 pagerank=0.001",
			FetchedAt: time.Date(2026, 3, 1, 10, 4, 5, 0, time.UTC),
		})
	}
	hits = append(hits,
		Hit{URL: "http://www.d1.test/zh.html", Title: "分布式爬虫", Snippet: []Fragment{{Text: "一个"}, {Text: "分布式", Match: true}, {Text: "网络爬虫"}}, Score: 0.5},
		Hit{URL: "javascript:alert('url')", Title: "<script>alert('title')</script>xss",
			Snippet: []Fragment{{Text: "<img src=x onerror=alert('snippet')>"}, {Text: "<b>xss</b>", Match: true}}, Score: 0.1},
		Hit{URL: `http://evil.test/"><script>alert('attr')</script>`, Title: "", Snippet: []Fragment{{Text: "xss attribute"}}, Score: 0.05},
	)
	return hits
}

// fakeCrawl returns a fixed status.
type fakeCrawl struct{ st CrawlStatus }

func (f *fakeCrawl) Snapshot(context.Context) (*CrawlStatus, error) { st := f.st; return &st, nil }

func testStatus() CrawlStatus {
	at := time.Date(2026, 3, 30, 8, 31, 34, 0, time.UTC)
	return CrawlStatus{
		Source: "in-process", State: "running", Pages: 1234, PagesPerSec: 56.5,
		Series:     []RatePoint{{T: at.Unix() - 2, Step: 1, PagesPerSec: 50}, {T: at.Unix() - 1, Step: 1, PagesPerSec: 63}},
		Rows:       []Count{{"200", 1200}, {"404", 34}},
		Outcomes:   []Count{{"200", 1200}, {"404", 34}},
		TopHosts:   []Count{{"www.d0.test", 700}, {"d1.test", 534}},
		Bytes:      9876543,
		Queue:      &Queue{Queued: 500, InFlight: 8, Hosts: 12},
		Nodes:      []Node{{ID: "n1", Role: "peer", Weight: 100, Buckets: 2048, PagesPerSec: 28.1, Queue: 250}},
		Topics:     []Topic{},
		TopicNodes: []topics.NodeLoad{},
		Errors:     []RecentError{{At: at, URL: "http://www.d0.test/<script>alert(1)</script>", Outcome: "404", Status: 404}},
		Hosts: []HostRow{{Host: "www.d0.test", Pages: 700, Errors: 34, MeanLatencyMS: 12.5, NextFetchMS: 400, InFlight: 1, Queued: 20},
			{Host: "d1.test", Pages: 534, MeanLatencyMS: 8}},
		HostsTotal: 2,
		HostClock:  true,
		Failures: []crawl.FailureClass{{Class: "404", URLs: 34, Hint: crawl.Hint("404"),
			Examples: []crawl.FailedURL{{URL: "http://www.d0.test/<script>alert(1)</script>"}}}},
		Config: NewCrawlConfig(crawl.Config{Seeds: []string{"http://www.d0.test/"}, Scope: "seeds", MaxDepth: 5, MaxPages: 2000,
			Concurrency: 32, PerHost: 1, Delay: crawl.Duration(time.Second), DelayFrom: "done", MaxRetries: 3,
			Timeout: crawl.Duration(time.Minute), UserAgent: crawl.DefaultUserAgent, RobotsAgent: "spider"}),
		Control: true,
		Updated: at,
	}
}

// fakeControl records calls; err is returned by every call.
type fakeControl struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (f *fakeControl) record(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	return f.err
}
func (f *fakeControl) Pause(context.Context) error  { return f.record("pause") }
func (f *fakeControl) Resume(context.Context) error { return f.record("resume") }
func (f *fakeControl) Stop(context.Context) error   { return f.record("stop") }
func (f *fakeControl) AddSeeds(_ context.Context, urls []string) (int, error) {
	return len(urls), f.record("seeds " + strings.Join(urls, " "))
}
func (f *fakeControl) SetTopicPriority(_ context.Context, topic string, p int) error {
	return f.record(fmt.Sprintf("topic %s %d", topic, p))
}

func newTestServer(t *testing.T, opt Options) *Server {
	t.Helper()
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, h http.Handler, method, target, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// golden compares got with testdata/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestAPIGolden(t *testing.T) {
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	full := newTestServer(t, Options{Searcher: &fakeSearcher{testHits()}, Crawl: &fakeCrawl{testStatus()}, Control: &fakeControl{}, Token: testToken})
	empty := newTestServer(t, Options{Token: testToken})
	unsupported := newTestServer(t, Options{Control: &fakeControl{err: fmt.Errorf("%w: topics are not enabled in this crawl", ErrUnsupported)}, Token: testToken})
	conflict := newTestServer(t, Options{Control: &fakeControl{err: fmt.Errorf("%w: cannot pause: the crawl has finished", ErrConflict)}, Token: testToken})
	tests := []struct {
		name        string
		srv         *Server
		method, url string
		body        string
		header      map[string]string
		code        int
	}{
		{"search", full, "GET", "/api/search?q=crawler&limit=2&offset=1", "", nil, 200},
		{"search_explain", full, "GET", "/api/search?q=crawler&limit=1&explain=true&rank_weight=0.3", "", nil, 200},
		{"search_chinese", full, "GET", "/api/search?q=%E5%88%86%E5%B8%83%E5%BC%8F", "", nil, 200},
		{"search_xss", full, "GET", "/api/search?q=xss", "", nil, 200},
		{"search_none", full, "GET", "/api/search?q=nothing", "", nil, 200},
		{"search_no_query", full, "GET", "/api/search", "", nil, 400},
		{"search_bad_limit", full, "GET", "/api/search?q=a&limit=0", "", nil, 400},
		{"search_bad_offset", full, "GET", "/api/search?q=a&offset=-1", "", nil, 400},
		{"search_bad_weight", full, "GET", "/api/search?q=a&rank_weight=101", "", nil, 400},
		{"search_unavailable", full, "GET", "/api/search?q=later", "", nil, 503},
		{"search_bad_explain", full, "GET", "/api/search?q=a&explain=maybe", "", nil, 400},
		{"search_bad_query", full, "GET", "/api/search?q=(crawler", "", nil, 400},
		{"search_internal", full, "GET", "/api/search?q=boom", "", nil, 500},
		{"search_no_index", empty, "GET", "/api/search?q=a", "", nil, 503},
		{"index", full, "GET", "/api/index", "", nil, 200},
		{"index_none", empty, "GET", "/api/index", "", nil, 503},
		{"crawl", full, "GET", "/api/crawl", "", nil, 200},
		{"crawl_none", empty, "GET", "/api/crawl", "", nil, 503},
		{"pause", full, "POST", "/api/crawl/pause", "", auth, 200},
		{"pause_no_control", empty, "POST", "/api/crawl/pause", "", auth, 501},
		{"pause_conflict", conflict, "POST", "/api/crawl/pause", "", auth, 409},
		{"seeds", full, "POST", "/api/crawl/seeds", `{"urls": ["http://www.d2.test/"]}`, auth, 200},
		{"seeds_empty", full, "POST", "/api/crawl/seeds", `{"urls": []}`, auth, 400},
		{"seeds_bad_json", full, "POST", "/api/crawl/seeds", `{"url": "x"}`, auth, 400},
		{"topic", full, "PUT", "/api/topics/sports/priority", `{"priority": 3}`, auth, 200},
		{"topic_bad", full, "PUT", "/api/topics/sports/priority", `{"priority": -1}`, auth, 400},
		{"topic_unsupported", unsupported, "PUT", "/api/topics/sports/priority", `{"priority": 3}`, auth, 501},
		{"not_found", full, "GET", "/api/nothing", "", nil, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := do(t, tc.srv.Handler(), tc.method, tc.url, tc.body, tc.header)
			if w.Code != tc.code {
				t.Errorf("status %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("not JSON: %s", w.Body)
			}
			golden(t, "api_"+tc.name+".json", w.Body.Bytes())
		})
	}
}

func TestControlAuth(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctl := &fakeControl{}
	s := newTestServer(t, Options{Control: ctl, Token: testToken, Logger: logger})
	noToken := newTestServer(t, Options{Control: ctl})
	tests := []struct {
		name   string
		srv    *Server
		header string
		code   int
	}{
		{"no header", s, "", 401},
		{"basic scheme", s, "Basic " + testToken, 401},
		{"wrong token", s, "Bearer " + strings.Repeat("x", len(testToken)), 401},
		{"prefix of token", s, "Bearer " + testToken[:10], 401},
		{"token plus more", s, "Bearer " + testToken + "x", 401},
		{"right token", s, "Bearer " + testToken, 200},
		{"lower-case scheme", s, "bearer " + testToken, 200},
		{"server without token", noToken, "Bearer " + testToken, 403},
	}
	for _, tc := range tests {
		for _, ep := range []struct{ method, path, body string }{
			{"POST", "/api/crawl/pause", ""}, {"POST", "/api/crawl/resume", ""}, {"POST", "/api/crawl/stop", ""},
			{"POST", "/api/crawl/seeds", `{"urls":["http://a.test/"]}`}, {"PUT", "/api/topics/t/priority", `{"priority":1}`},
		} {
			t.Run(tc.name+" "+ep.path, func(t *testing.T) {
				ctl.mu.Lock()
				before := len(ctl.calls)
				ctl.mu.Unlock()
				h := map[string]string{}
				if tc.header != "" {
					h["Authorization"] = tc.header
				}
				w := do(t, tc.srv.Handler(), ep.method, ep.path, ep.body, h)
				if w.Code != tc.code {
					t.Fatalf("status %d, want %d: %s", w.Code, tc.code, w.Body)
				}
				ctl.mu.Lock()
				called := len(ctl.calls) > before
				ctl.mu.Unlock()
				if called != (tc.code == 200) {
					t.Fatalf("controller called: %v with status %d", called, w.Code)
				}
				if tc.code == 401 && w.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			})
		}
	}
	if strings.Contains(logs.String(), testToken) || strings.Contains(logs.String(), testToken[:10]) {
		t.Fatalf("the token reached the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "action=pause") {
		t.Fatalf("control actions are not logged:\n%s", logs.String())
	}
	// Reads stay public.
	if w := do(t, s.Handler(), "GET", "/api/openapi.json", "", nil); w.Code != 200 {
		t.Fatalf("openapi: %d", w.Code)
	}
}

func TestNewRejectsShortToken(t *testing.T) {
	if _, err := New(Options{Token: "short"}); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("short token accepted or unclear error: %v", err)
	}
}

// TestXSS: crawled titles, snippets and URLs with markup are shown as text.
func TestXSS(t *testing.T) {
	s := newTestServer(t, Options{Searcher: &fakeSearcher{testHits()}, Crawl: &fakeCrawl{testStatus()}})
	// Each page twice: rendered, then from the response cache.
	for i, target := range []string{"/?q=xss", "/?q=xss", "/?q=xss&signals=1", "/?q=xss&signals=1", "/?q=%3Cscript%3Ealert(1)%3C/script%3E",
		"/?q=%3Cscript%3Ealert(1)%3C/script%3E", "/?q=x%22+onfocus%3Dalert(1)", "/?q=x%22+onfocus%3Dalert(1)"} {
		w := do(t, s.Handler(), "GET", target, "", nil)
		body := w.Body.String()
		if cached := strings.Contains(body, "(cached)") || strings.Contains(body, "No page matches"); i%2 == 1 && w.Code == 200 && !cached {
			t.Errorf("%s: second answer not from the cache", target)
		}
		for _, bad := range []string{"<script>alert", "<img src=x", "<b>xss", `href="javascript:`, `"><script>`, `" onfocus`} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: page contains %q unescaped", target, bad)
			}
		}
		if strings.Contains(body, "alert('title')") && !strings.Contains(body, "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;") {
			t.Errorf("%s: title not escaped as text", target)
		}
		checkActiveContent(t, target, body, `/static/search.js`)
	}
	w := do(t, s.Handler(), "GET", "/?q=xss", "", nil)
	if !strings.Contains(w.Body.String(), `href="#ZgotmplZ"`) {
		t.Error("javascript: URL was not neutralised")
	}
	// The JSON API escapes markup too (for clients that paste it as HTML).
	w = do(t, s.Handler(), "GET", "/api/crawl", "", nil)
	if strings.Contains(w.Body.String(), "<script>") {
		t.Error("/api/crawl contains raw <script>")
	}
}

// checkActiveContent parses a page and fails on anything that could run:
// a script other than the page's own static file, an event-handler
// attribute, a javascript: URL, inline style.
func checkActiveContent(t *testing.T, name, page, script string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		for _, a := range tok.Attr {
			v := strings.ToLower(strings.TrimSpace(a.Val))
			switch {
			case strings.HasPrefix(a.Key, "on"):
				t.Errorf("%s: <%s> has event handler %s=%q", name, tok.Data, a.Key, a.Val)
			case a.Key == "style":
				t.Errorf("%s: <%s> has inline style", name, tok.Data)
			case (a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(v, "javascript:"):
				t.Errorf("%s: <%s %s=%q>", name, tok.Data, a.Key, a.Val)
			}
		}
		if tok.Data == "script" {
			src := ""
			for _, a := range tok.Attr {
				if a.Key == "src" {
					src = a.Val
				}
			}
			if src != script {
				t.Errorf("%s: unexpected <script src=%q>", name, src)
			}
		}
		if tok.Data == "iframe" || tok.Data == "object" || tok.Data == "embed" || tok.Data == "img" || tok.Data == "b" {
			t.Errorf("%s: crawled markup became a <%s> element", name, tok.Data)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	s := newTestServer(t, Options{Searcher: &fakeSearcher{testHits()}, Crawl: &fakeCrawl{testStatus()}})
	for _, target := range []string{"/", "/?q=crawler", "/dashboard", "/static/search.js", "/static/style.css", "/api/search?q=a", "/api/crawl", "/healthz", "/metrics", "/nothing"} {
		w := do(t, s.Handler(), "GET", target, "", nil)
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q", target, csp)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no X-Content-Type-Options", target)
		}
	}
}

func TestStaticAndPages(t *testing.T) {
	s := newTestServer(t, Options{Searcher: &fakeSearcher{testHits()}, Crawl: &fakeCrawl{testStatus()}})
	tests := []struct {
		target, ctype string
		code          int
		want          []string
	}{
		{"/static/search.js", "text/javascript", 200, []string{"/api/search"}},
		{"/static/dashboard.js", "text/javascript", 200, []string{"/api/crawl"}},
		{"/static/style.css", "text/css", 200, []string{"mark"}},
		{"/static/nothing.js", "", 404, nil},
		{"/dashboard", "text/html", 200, []string{`id="chart"`, `src="/static/dashboard.js"`,
			`src="/static/vendor/uplot/uPlot.iife.min.js"`, `href="/static/vendor/uplot/uPlot.min.css"`,
			`id="hosts"`, `id="failures"`, `id="config"`, `id="nodes-section" hidden`, `id="topics-section" hidden`}},
		// uPlot, vendored and embedded: served from this server, its licence beside it.
		{"/static/vendor/uplot/uPlot.iife.min.js", "text/javascript", 200, []string{"uPlot"}},
		{"/static/vendor/uplot/uPlot.min.css", "text/css", 200, []string{".uplot"}},
		{"/static/vendor/uplot/LICENSE", "", 200, []string{"The MIT License", "Leon Sorokin"}},
		{"/static/vendor/uplot/README.md", "", 200, []string{"uPlot 1.6.32"}},
		{"/static/vendor/uplot/", "", 404, nil},
		{"/", "text/html", 200, []string{"28 pages indexed"}},
		{"/?q=crawler", "text/html", 200, []string{"Results 1–10 of 25", `id="next" href="/?p=2&amp;q=crawler"`, "<mark>crawler</mark>", "page 1 of 3",
			`fetched <time datetime="2026-03-01T10:04:05Z">1 Mar 2026 10:04 UTC</time>`}},
		{"/api/search?q=crawler&limit=1", "application/json", 200, []string{`"fetched_at": "2026-03-01T10:04:05Z"`}},
		{"/?q=crawler&p=3", "text/html", 200, []string{"Results 21–25 of 25", `id="prev" href="/?p=2&amp;q=crawler"`, `start="21"`}},
		{"/?q=crawler&signals=1", "text/html", 200, []string{"BM25 2.5000", "bm25=2.5 pagerank=0.001", `signals=1`}},
		{"/?q=%E5%88%86%E5%B8%83%E5%BC%8F", "text/html", 200, []string{"分布式爬虫", "<mark>分布式</mark>"}},
		{"/?q=nothing", "text/html", 200, []string{"No page matches"}},
		{"/?q=(a", "text/html", 400, []string{"unbalanced parenthesis"}},
		{"/?q=boom", "text/html", 500, []string{"the search failed"}},
		{"/?q=later", "text/html", 503, []string{"No search index here"}},
		{"/?q=a&p=x", "text/html", 400, []string{"page number"}},
	}
	for _, tc := range tests {
		w := do(t, s.Handler(), "GET", tc.target, "", nil)
		if w.Code != tc.code {
			t.Errorf("%s: status %d, want %d", tc.target, w.Code, tc.code)
			continue
		}
		if !strings.HasPrefix(w.Header().Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: Content-Type %q", tc.target, w.Header().Get("Content-Type"))
		}
		for _, s := range tc.want {
			if !strings.Contains(w.Body.String(), s) {
				t.Errorf("%s: no %q in\n%s", tc.target, s, w.Body)
			}
		}
	}
	if w := do(t, s.Handler(), "GET", "/?q=boom", "", nil); strings.Contains(w.Body.String(), "segment 3") {
		t.Error("an internal error text reached the page")
	}
	noIndex := newTestServer(t, Options{})
	if w := do(t, noIndex.Handler(), "GET", "/?q=a", "", nil); w.Code != 503 || !strings.Contains(w.Body.String(), "spider index --data") {
		t.Errorf("no index: %d %s", w.Code, w.Body)
	}
	if w := do(t, noIndex.Handler(), "GET", "/dashboard", "", nil); !strings.Contains(w.Body.String(), "No crawl to show here") {
		t.Errorf("no crawl: %s", w.Body)
	}
}

// TestOpenAPIListsEveryRoute: openapi.json describes exactly the API
// routes (everything but the pages and static files), with their methods.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	s := newTestServer(t, Options{})
	w := do(t, s.Handler(), "GET", "/api/openapi.json", "", nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	var described, served []string
	for p, ops := range doc.Paths {
		for m := range ops {
			described = append(described, strings.ToUpper(m)+" "+p)
		}
	}
	for _, rt := range routes {
		if strings.HasPrefix(rt.pattern, "/api/") || rt.pattern == "/metrics" || rt.pattern == "/healthz" {
			served = append(served, rt.method+" "+rt.pattern)
		}
	}
	sort.Strings(described)
	sort.Strings(served)
	if strings.Join(described, "\n") != strings.Join(served, "\n") {
		t.Fatalf("openapi.json lists\n%s\nbut the server has\n%s", strings.Join(described, "\n"), strings.Join(served, "\n"))
	}
	for _, rt := range routes {
		if !rt.control {
			continue
		}
		op := doc.Paths[rt.pattern][strings.ToLower(rt.method)]
		if !strings.Contains(string(op), `"bearer"`) {
			t.Errorf("%s %s needs the token but openapi.json does not say so", rt.method, rt.pattern)
		}
	}
}

func TestMetricsAndHealth(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "spider_pages_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(7)
	s := newTestServer(t, Options{Registry: reg, Searcher: &fakeSearcher{testHits()}})
	do(t, s.Handler(), "GET", "/api/search?q=crawler", "", nil)
	if w := do(t, s.Handler(), "GET", "/healthz", "", nil); w.Code != 200 || w.Body.String() != "ok\n" {
		t.Fatalf("healthz: %d %q", w.Code, w.Body)
	}
	w := do(t, s.Handler(), "GET", "/metrics", "", nil)
	for _, want := range []string{"spider_pages_total 7", `spider_http_requests_total{code="200",route="GET /api/search"} 1`, "spider_http_request_duration_seconds_bucket"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	// A second server on the same registry reuses the collectors.
	if _, err := New(Options{Registry: reg}); err != nil {
		t.Fatal(err)
	}
}

func TestServeShutsDown(t *testing.T) {
	s := newTestServer(t, Options{})
	ln := httptest.NewUnstartedServer(nil).Listener
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx ended")
	}
}

func FuzzSearchParams(f *testing.F) {
	for _, s := range []string{"q=crawler", "q=a&offset=10&limit=100", "q=%E4%B8%AD&rank_weight=0.5&explain=1", "limit=-1", "offset=99999999999999999999", "rank_weight=NaN", "q=%ff", ""} {
		f.Add(s)
	}
	s, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.RawQuery = raw
		req, err := s.searchParams(r)
		if err != nil {
			return
		}
		if req.Offset < 0 || req.Offset > maxOffset || req.Limit < 1 || req.Limit > maxLimit || !(req.RankWeight == -1 || req.RankWeight >= 0 && req.RankWeight <= maxRankWeight) || len(req.Query) > maxQueryBytes {
			t.Fatalf("accepted out-of-range request %+v from %q", req, raw)
		}
	})
}

// TestDashboardLoadsOnlyOwnFiles: every script and stylesheet of the
// dashboard comes from this server's embedded files (the chart works
// offline and under the Content-Security-Policy), and none is inline.
func TestDashboardLoadsOnlyOwnFiles(t *testing.T) {
	s := newTestServer(t, Options{Crawl: &fakeCrawl{testStatus()}})
	w := do(t, s.Handler(), "GET", "/dashboard", "", nil)
	doc, err := html.Parse(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	var refs int
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		for _, a := range n.Attr {
			if (a.Key == "src" || (a.Key == "href" && n.Data == "link")) && !strings.HasPrefix(a.Val, "/static/") {
				t.Errorf("<%s %s=%q>: not one of the server's static files", n.Data, a.Key, a.Val)
			}
			if a.Key == "src" || a.Key == "href" && n.Data == "link" {
				refs++
				if r := do(t, s.Handler(), "GET", a.Val, "", nil); r.Code != 200 {
					t.Errorf("%s: %d", a.Val, r.Code)
				}
			}
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" {
				t.Errorf("<%s %s>: inline script or style, refused by the Content-Security-Policy", n.Data, a.Key)
			}
		}
		if (n.Data == "script" || n.Data == "style") && n.FirstChild != nil {
			t.Errorf("inline <%s>", n.Data)
		}
	}
	if refs < 4 {
		t.Errorf("%d static files referenced, want style.css, uPlot's CSS and JS, dashboard.js", refs)
	}
}
