package crawl_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/websim"
)

// dupSite is a small site on a.test (and b.test) with exact and near
// duplicates, short pages and canonical links of every kind.
type dupSite struct {
	dir   string // the crawl's data directory
	mu    sync.Mutex
	hosts map[string]int // host → requests
	paths map[string]int // a.test path → requests
}

func words(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "w%d ", r.IntN(5000))
	}
	return b.String()
}

func (d *dupSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port, _ := net.SplitHostPort(r.Host)
	d.mu.Lock()
	d.hosts[host]++
	if host == "a.test" {
		d.paths[r.URL.RequestURI()]++
	}
	d.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	article := words(1, 2000) // long enough for a date line to move its SimHash by at most a bit or two
	page := func(head, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>t</title>%s</head><body>%s</body></html>", head, body)
	}
	switch r.URL.RequestURI() {
	case "/":
		page("", `<a href="/article">a</a> <a href="/print/article">p</a> <a href="/dated">d</a> <a href="/other">o</a>
			<a href="/one">1</a> <a href="/one-again">1</a> <a href="/canon-self">s</a> <a href="/canon-to-article">c</a>
			<a href="/canon-header">h</a> <a href="/canon-offsite">x</a> <a href="/canon-404">z</a> <a href="/loop-a">l</a>`)
	case "/article":
		page(`<link rel="canonical" href="/article">`, "<p>"+article+"</p>")
	case "/print/article": // exact copy
		page("", "<p>"+article+"</p>")
	case "/dated": // the article with a date line
		page("", "<p>Updated 25 November 2026</p><p>"+article+"</p>")
	case "/other":
		page("", "<p>"+words(2, 400)+"</p>")
	case "/one", "/one-again": // one word each: exact duplicates, never near ones
		page("", "<p>hello</p>")
	case "/canon-self":
		page(`<link rel="canonical" href="http://a.test:`+port+`/canon-self">`, "<p>"+words(3, 50)+"</p>")
	case "/canon-to-article":
		page(`<link rel="canonical" href="/article?from=x">`, "<p>"+words(4, 50)+"</p>")
	case "/canon-header":
		w.Header().Set("Link", `</style.css>; rel="preload", </header-canonical>; rel="canonical"`)
		page(`<link rel="canonical" href="/ignored-html-canonical">`, "<p>"+words(5, 50)+"</p>")
	case "/canon-offsite":
		page(`<link rel="canonical" href="http://b.test:`+port+`/elsewhere">`, "<p>"+words(6, 50)+"</p>")
	case "/canon-404":
		page(`<link rel="canonical" href="/gone">`, "<p>"+words(7, 50)+"</p>")
	case "/loop-a":
		page(`<link rel="canonical" href="/loop-b">`, "<p>"+words(8, 50)+"</p>")
	case "/loop-b":
		page(`<link rel="canonical" href="/loop-a">`, "<p>"+words(9, 50)+"</p>")
	case "/header-canonical":
		page("", "<p>"+words(10, 50)+"</p>")
	case "/article?from=x":
		page("", "<p>"+words(11, 50)+"</p>")
	default:
		http.NotFound(w, r)
	}
}

func dupCrawl(t *testing.T, mutate func(*crawl.Config)) (*dupSite, map[string]storeRec, *prometheus.Registry) {
	t.Helper()
	site := &dupSite{hosts: map[string]int{}, paths: map[string]int{}}
	ts := httptest.NewServer(site)
	t.Cleanup(ts.Close)
	addr := strings.TrimPrefix(ts.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	c := crawl.NewConfig()
	c.Data = t.TempDir()
	c.Seeds = []string{"http://a.test:" + port + "/"}
	c.Scope = "any"
	c.MaxDepth = 3
	c.Resolve = []string{"a.test:" + port + ":127.0.0.1", "b.test:" + port + ":127.0.0.1"}
	c.AllowPrivate = true
	c.Delay = 0
	c.Concurrency = 1 // pages complete in link order: the first of each cluster is the article
	c.Timeout = crawl.Duration(3 * time.Second)
	if mutate != nil {
		mutate(&c)
	}
	site.dir = c.Data
	reg := prometheus.NewRegistry()
	eng, err := crawl.New(c, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := eng.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	out := map[string]storeRec{}
	for u, r := range records(t, c.Data) {
		path := strings.TrimPrefix(u, "http://a.test:"+port)
		out[path] = storeRec{canonical: strings.TrimPrefix(r.Canonical, "http://a.test:"+port), simhash: r.SimHash, status: r.Status,
			duplicateOf: strings.TrimPrefix(r.DuplicateOf, "http://a.test:"+port), near: r.Near}
	}
	return site, out, reg
}

type storeRec struct {
	canonical, simhash string
	status             int
	duplicateOf        string // the record's duplicate_of, its host's prefix cut
	near               bool
}

func TestCrawlNearDuplicatesAndCanonical(t *testing.T) {
	site, recs, reg := dupCrawl(t, nil)
	exact := counter(t, reg, "spider_duplicate_content_total")
	near := counter(t, reg, "spider_near_duplicate_content_total")
	// Exact: /print/article of /article, /one-again of /one. Near: /dated.
	if exact != 2 || near != 1 {
		t.Errorf("duplicates found at crawl time: %v exact, %v near; want 2 and 1", exact, near)
	}
	sum, err := crawl.Stats(site.dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Duplicates != 2 || sum.NearDuplicates != 1 {
		t.Errorf("spider stats: %d duplicates, %d near; want 2 and 1", sum.Duplicates, sum.NearDuplicates)
	}
	// The records carry the same decision (issue #27): a copy names its
	// original, near only when found by SimHash; an original names none.
	wantDup := map[string]storeRec{
		"/print/article": {duplicateOf: "/article"},
		"/one-again":     {duplicateOf: "/one"},
		"/dated":         {duplicateOf: "/article", near: true},
		"/article":       {}, "/one": {}, "/other": {}, "/": {},
	}
	for p, want := range wantDup {
		if got := recs[p]; got.duplicateOf != want.duplicateOf || got.near != want.near {
			t.Errorf("%s: record's duplicate_of %q near %v, want %q %v", p, got.duplicateOf, got.near, want.duplicateOf, want.near)
		}
	}
	for _, p := range []string{"/one", "/one-again"} {
		if recs[p].simhash != "" {
			t.Errorf("%s (one word) has a SimHash %s", p, recs[p].simhash)
		}
	}
	if recs["/article"].simhash == "" || recs["/dated"].simhash == "" {
		t.Error("article pages have no SimHash in their records")
	}
	wantCanon := map[string]string{
		"/article":          "", // itself
		"/canon-self":       "", // itself, written absolute
		"/canon-to-article": "/article?from=x",
		"/canon-header":     "/header-canonical", // the header wins over the HTML link
		"/canon-offsite":    "",                  // another host: ignored
		"/canon-404":        "/gone",
		"/loop-a":           "/loop-b",
		"/loop-b":           "/loop-a",
	}
	for p, want := range wantCanon {
		if got := recs[p].canonical; got != want {
			t.Errorf("%s: canonical %q, want %q", p, got, want)
		}
	}
	if recs["/gone"].status != 404 {
		t.Errorf("the canonical /gone was not fetched (404): %+v", recs["/gone"])
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	if site.hosts["b.test"] != 0 {
		t.Errorf("an off-site canonical link was followed: %d requests to b.test", site.hosts["b.test"])
	}
	for p, n := range site.paths {
		if n > 1 {
			t.Errorf("%s requested %d times (a canonical loop must not loop)", p, n)
		}
	}
	if site.paths["/ignored-html-canonical"] != 0 {
		t.Error("the HTML canonical was followed although the Link header names another")
	}
}

func TestCrawlNearDuplicatesOff(t *testing.T) {
	site, recs, reg := dupCrawl(t, func(c *crawl.Config) { c.NearDupDistance, c.Canonical = 0, false })
	if near := counter(t, reg, "spider_near_duplicate_content_total"); near != 0 {
		t.Errorf("--near-dup-distance 0 found %v near-duplicates", near)
	}
	if r := recs["/dated"]; r.near || r.duplicateOf != "" {
		t.Errorf("off, the dated copy's record says duplicate_of %q near %v; want neither (its text differs)", r.duplicateOf, r.near)
	}
	if r := recs["/print/article"]; r.duplicateOf != "/article" || r.near {
		t.Errorf("off, the exact copy's record says duplicate_of %q near %v; want /article, not near", r.duplicateOf, r.near)
	}
	if recs["/article"].simhash != "" || recs["/canon-404"].canonical != "" {
		t.Errorf("off, records still carry SimHash %q / canonical %q", recs["/article"].simhash, recs["/canon-404"].canonical)
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	if site.hosts["b.test"] == 0 {
		t.Error("--canonical=false: the canonical <link> is an ordinary link again, and scope any admits b.test")
	}
}

// counter is the value of the counter called name in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var s float64
			for _, m := range mf.GetMetric() {
				s += m.GetCounter().GetValue()
			}
			return s
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestCrawlMatchesTruthNearDups: on a web with copies and canonical links
// (websim NearDups) the crawl fetches what the truth says, canonical links
// respected (same host at the page's depth, never off-site, 404s and loops
// fetched once) or, with --canonical=false, followed as ordinary links.
func TestCrawlMatchesTruthNearDups(t *testing.T) {
	for _, canonical := range []bool{true, false} {
		t.Run(fmt.Sprint("canonical=", canonical), func(t *testing.T) {
			srv := startWeb(t, websim.Config{Seed: 11, Hosts: 8, PagesPerHost: 25, NearDups: true})
			rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 3, Scope: websim.ScopeSeeds, Canonical: canonical}
			truth, err := srv.Truth(rules)
			if err != nil {
				t.Fatal(err)
			}
			if len(truth.Duplicates) == 0 || len(truth.Canonicals) == 0 {
				t.Fatalf("the web has %d copies and %d canonical links: the test web is wrong", len(truth.Duplicates), len(truth.Canonicals))
			}
			cfg := crawlConfig(t, srv, rules)
			cfg.Canonical = canonical
			runCrawl(t, cfg)
			checkTruth(t, srv, cfg.Data, truth)
			recs := records(t, cfg.Data)
			for p, c := range truth.Canonicals {
				r, ok := recs[p]
				if !ok {
					continue
				}
				pu, _ := url.Parse(p)
				cu, _ := url.Parse(c)
				want := ""
				if canonical && pu.Host == cu.Host {
					want = c
				}
				if r.Canonical != want {
					t.Errorf("%s: record's canonical %q, want %q", p, r.Canonical, want)
				}
			}
		})
	}
}

// TestCrawlDuplicateRecordsConcurrent (issue #27): with pages fetched and
// processed at once, each text's copies have exactly one original, every
// other copy's record names a page of its text, and the counters count
// exactly the records that name one (one decision per page).
func TestCrawlDuplicateRecordsConcurrent(t *testing.T) {
	_, recs, reg := dupCrawl(t, func(c *crawl.Config) { c.Concurrency = 8 })
	var exact, near float64
	for _, r := range recs {
		switch {
		case r.duplicateOf != "" && r.near:
			near++
		case r.duplicateOf != "":
			exact++
		}
	}
	if got := counter(t, reg, "spider_duplicate_content_total"); got != exact {
		t.Errorf("exact duplicates: counter %v, records %v", got, exact)
	}
	if got := counter(t, reg, "spider_near_duplicate_content_total"); got != near {
		t.Errorf("near duplicates: counter %v, records %v", got, near)
	}
	for _, group := range [][]string{{"/article", "/print/article", "/dated"}, {"/one", "/one-again"}} {
		originals := 0
		for _, p := range group {
			r := recs[p]
			if r.duplicateOf == "" {
				originals++
				continue
			}
			if !slices.Contains(group, r.duplicateOf) || r.duplicateOf == p {
				t.Errorf("%s names %q, not another copy of its text %v", p, r.duplicateOf, group)
			}
		}
		if originals != 1 {
			t.Errorf("%v: %d originals recorded, want exactly 1", group, originals)
		}
	}
}
