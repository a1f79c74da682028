package crawl_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
	"github.com/spider-crawler/spider/internal/sitemap"
	"github.com/spider-crawler/spider/internal/websim"
)

// sitemapWeb is two hosts of 150 pages whose sitemaps are an index of four
// files of 40 URLs (two of them gzip), with lastmod and changefreq; host 1's
// robots.txt also names a sitemap on host 0 (cross-submission).
func sitemapWeb(t *testing.T) *websim.Server {
	return startWeb(t, websim.Config{Seed: 9, Hosts: 2, PagesPerHost: 150, Sitemaps: true, SitemapMaxURLs: 40})
}

func sitemapConfig(t *testing.T, srv *websim.Server, seeds []string, depth int) crawl.Config {
	c := crawlConfig(t, srv, websim.TruthRules{Seeds: seeds, MaxDepth: depth, Scope: "seeds"})
	c.Sitemaps = true
	return c
}

func isSitemapPath(p string) bool {
	return strings.HasPrefix(p, "/sitemap") // /sitemap.xml[.gz], /sitemaps/…, /sitemap-…
}

// TestSitemapsCrawl: under --max-depth 1 a host's pages that only its
// sitemaps reach are crawled (at depth 1), through the index and its gzip
// files; sitemaps are recorded as such, never stored as pages; the other
// host, out of scope, is not crawled though the sitemap it cross-submits is.
func TestSitemapsCrawl(t *testing.T) {
	srv := sitemapWeb(t)
	web := srv.Web
	seed := web.SeedURLs(1)
	// What links alone reach at depth 1.
	truth, err := web.Truth(websim.TruthRules{Seeds: seed, MaxDepth: 1, Scope: "seeds"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sitemapConfig(t, srv, seed, 1)
	runCrawl(t, cfg)
	recs := records(t, cfg.Data)

	pages := web.PageURLs(0)
	if len(truth.MustFetch) >= len(pages) {
		t.Fatalf("links reach %d of %d pages at depth 1: the test needs pages only the sitemap lists", len(truth.MustFetch), len(pages))
	}
	for _, u := range pages {
		r, ok := recs[u]
		if !ok {
			t.Errorf("%s: listed in the sitemap, not crawled", u)
			continue
		}
		if r.Depth > crawl.SitemapDepth {
			t.Errorf("%s: depth %d", u, r.Depth)
		}
	}
	h0 := web.URL("www.d0.test", "")
	wantSitemaps := []string{h0 + "/sitemap.xml", h0 + "/sitemaps/1.xml", h0 + "/sitemaps/2.xml.gz", h0 + "/sitemaps/3.xml", h0 + "/sitemaps/4.xml.gz"}
	for _, u := range wantSitemaps {
		r, ok := recs[u]
		switch {
		case !ok:
			t.Errorf("%s: sitemap not read", u)
		case r.Outcome != crawl.OutcomeSitemap || r.PageNo != -1 || r.Error != "":
			t.Errorf("%s: outcome %q, page %d, error %q; want a sitemap read whole, not stored", u, r.Outcome, r.PageNo, r.Error)
		}
	}
	h1 := web.URL(web.Hosts()[1], "")
	for u, r := range recs {
		if strings.HasPrefix(u, h1) {
			t.Errorf("%s (%s): host 1 is out of scope", u, r.Outcome)
		}
	}
	// Each sitemap was fetched once.
	n := map[string]int{}
	for _, e := range web.Log().Entries() {
		if isSitemapPath(e.Path) {
			n[e.URL]++
		}
	}
	for u, c := range n {
		if c != 1 {
			t.Errorf("%s fetched %d times", u, c)
		}
	}
	if len(n) != len(wantSitemaps) {
		t.Errorf("sitemaps fetched: %v, want %d", n, len(wantSitemaps))
	}
}

// TestSitemapsCrossSubmitted: a sitemap on host 0 named by host 1's
// robots.txt may list host 1's pages (sitemaps.org cross-submission); read
// without that robots.txt line, the same entries are out of place.
func TestSitemapsCrossSubmitted(t *testing.T) {
	srv := sitemapWeb(t)
	web := srv.Web
	cfg := sitemapConfig(t, srv, web.SeedURLs(2), 1)
	runCrawl(t, cfg)
	recs := records(t, cfg.Data)
	cross := web.URL("www.d0.test", "/sitemaps/host-1.xml")
	if r := recs[cross]; r.Outcome != crawl.OutcomeSitemap || r.Error != "" {
		t.Errorf("%s: outcome %q, error %q; want read with every entry in place", cross, r.Outcome, r.Error)
	}
	for _, u := range web.PageURLs(1) {
		if _, ok := recs[u]; !ok {
			t.Errorf("%s: not crawled", u)
		}
	}
}

// TestSitemapsOff: without Config.Sitemaps (--sitemaps=false), and under
// --max-depth 0, no sitemap is requested.
func TestSitemapsOff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sitemaps bool
		depth    int
	}{{"off", false, 1}, {"depth 0", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sitemapWeb(t)
			cfg := sitemapConfig(t, srv, srv.Web.SeedURLs(1), tc.depth)
			cfg.Sitemaps = tc.sitemaps
			runCrawl(t, cfg)
			for _, e := range srv.Web.Log().Entries() {
				if isSitemapPath(e.Path) {
					t.Errorf("%s requested", e.URL)
				}
			}
			for u, r := range records(t, cfg.Data) {
				if strings.HasPrefix(r.Outcome, "sitemap") || r.Outcome == crawl.OutcomeNoSitemap {
					t.Errorf("%s: %s", u, r.Outcome)
				}
			}
		})
	}
}

// TestSitemapsBad: a sitemap that answers 404, one that is an HTML page
// (no sitemap there) and one whose XML breaks off (a failure) are counted
// by outcome class, not fatal; the entries before the break are crawled; a
// sitemap robots.txt disallows is not queued.
func TestSitemapsBad(t *testing.T) {
	var host string
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "User-agent: *\nDisallow: /private/\nSitemap: http://%s/missing.xml\nSitemap: http://%[1]s/page.html\nSitemap: http://%[1]s/broken.xml\nSitemap: http://%[1]s/private/sitemap.xml\n", host)
	})
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<html><head><title>t</title></head><body>"+body+"</body></html>")
		}
	}
	mux.HandleFunc("/{$}", html(`<a href="/a">a</a>`))
	mux.HandleFunc("/a", html("page a"))
	mux.HandleFunc("/b", html("page b, only in the broken sitemap"))
	mux.HandleFunc("/page.html", html("not a sitemap"))
	mux.HandleFunc("/broken.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://%s/b</loc></url><url><loc>http://`, host)
	})
	ts := httptest.NewServer(mux) // answers 404 for /missing.xml and /sitemap.xml
	defer ts.Close()
	host = strings.TrimPrefix(ts.URL, "http://")

	cfg := crawl.NewConfig()
	cfg.Data, cfg.Seeds, cfg.MaxDepth, cfg.AllowPrivate, cfg.Delay, cfg.Sitemaps = t.TempDir(), []string{ts.URL + "/"}, 2, true, 0, true
	runCrawl(t, cfg)
	recs := records(t, cfg.Data)
	want := map[string]string{
		"/missing.xml": crawl.OutcomeNoSitemap, "/sitemap.xml": crawl.OutcomeNoSitemap,
		"/page.html": crawl.OutcomeNoSitemap, "/broken.xml": crawl.OutcomeSitemapFailed,
		"/": "200", "/a": "200", "/b": "200",
	}
	for p, o := range want {
		if r := recs[ts.URL+p]; r.Outcome != o {
			t.Errorf("%s: outcome %q (%s), want %q", p, r.Outcome, r.Error, o)
		}
	}
	if len(recs) != len(want) {
		t.Errorf("%d records, want %d", len(recs), len(want))
	}
	if e := recs[ts.URL+"/page.html"].Error; !strings.Contains(e, "not a sitemap") {
		t.Errorf("HTML sitemap's error %q", e)
	}
	if e := recs[ts.URL+"/broken.xml"].Error; !strings.Contains(e, "the 1 entries before the fault were read") {
		t.Errorf("broken sitemap's error %q", e)
	}
	for _, o := range []string{crawl.OutcomeSitemap, crawl.OutcomeNoSitemap} {
		if crawl.Failed(o) {
			t.Errorf("Failed(%q): a sitemap read, or a site without one, is no failure", o)
		}
	}
}

// TestSitemapHuge reads websim's 1 GiB sitemap (and its gzip variant) as
// the fetch role does: the protocol's 50,000 URLs are discovered, the
// record says the sitemap was cut, and the heap never holds the file.
func TestSitemapHuge(t *testing.T) {
	if testing.Short() {
		t.Skip("streams a few MiB of a 1 GiB sitemap")
	}
	srv := startWeb(t, websim.Config{Seed: 1, Hosts: 1, PagesPerHost: 20, Sitemaps: true})
	cfg := sitemapConfig(t, srv, srv.Web.SeedURLs(1), 3)
	cfg.Timeout = crawl.Duration(time.Minute) // the whole read of a sitemap is one fetch (slow under -race)
	f, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var peak atomic.Uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	for _, path := range []string{"/sitemap-huge.xml", "/sitemap-huge.xml.gz"} {
		u := srv.Web.URL("www.d0.test", path)
		v, err := f.Visit(context.Background(), frontier.Request{URL: u, Key: "www.d0.test", Kind: frontier.KindSitemap}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pages := 0
		for _, d := range v.Discovered {
			if d.Kind == frontier.KindPage {
				pages++
			}
		}
		if v.Outcome != crawl.OutcomeSitemap || pages != sitemap.ProtocolMaxURLs {
			t.Errorf("%s: outcome %q (%s), %d pages discovered; want %q and %d", path, v.Outcome, records(t, cfg.Data)[u].Error, pages, crawl.OutcomeSitemap, sitemap.ProtocolMaxURLs)
		}
	}
	close(done)
	wg.Wait()
	grew := int64(peak.Load()) - int64(base)
	t.Logf("heap in use grew by at most %.1f MiB reading two 1 GiB sitemaps", float64(grew)/(1<<20))
	// 50,000 discovered requests take about 10 MiB; the file would take 1 GiB.
	if grew > 96<<20 {
		t.Errorf("heap grew by %d MiB: the sitemap is held in memory", grew>>20)
	}
	// What websim sent of each 1 GiB file: the reading stopped, the rest
	// was never transferred (the connection closed, not drained).
	for _, path := range []string{"/sitemap-huge.xml", "/sitemap-huge.xml.gz"} {
		var sent int64 = -1
		for deadline := time.Now().Add(10 * time.Second); sent < 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, e := range srv.Web.Log().Entries() {
				if e.Path == path {
					sent = e.Bytes
				}
			}
		}
		t.Logf("%s: websim sent %.1f MiB", path, float64(sent)/(1<<20))
		if sent < 0 || sent > 64<<20 {
			t.Errorf("%s: websim sent %d bytes; want the first few MiB only", path, sent)
		}
	}
	recs := records(t, cfg.Data)
	r := recs[srv.Web.URL("www.d0.test", "/sitemap-huge.xml")]
	if !strings.Contains(r.Error, "sitemap cut at the protocol's 50000 URLs") || r.PageNo != -1 {
		t.Errorf("huge sitemap's record: %+v", r)
	}
}

// TestSitemapHints: a page URL's changefreq travels on its request as a
// revisit entry holding only that hint; an index's sitemaps may list what
// the index may.
func TestSitemapHints(t *testing.T) {
	srv := sitemapWeb(t)
	cfg := sitemapConfig(t, srv, srv.Web.SeedURLs(1), 1)
	f, err := crawl.NewFetcher(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	visit := func(path string) crawl.Visit {
		u := srv.Web.URL("www.d0.test", path)
		v, err := f.Visit(context.Background(), frontier.Request{URL: u, Key: "www.d0.test", Kind: frontier.KindSitemap}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// /sitemaps/1.xml lists pages outside /sitemaps/: out of place unless
	// read as a file of the root's index.
	if v := visit("/sitemaps/1.xml"); slices.ContainsFunc(v.Discovered, func(r frontier.Request) bool { return r.Kind == frontier.KindPage }) {
		t.Errorf("a sitemap under /sitemaps/ read alone gave URLs outside its directory: %v", v.Discovered)
	}
	if v := visit("/sitemap.xml"); len(v.Discovered) != 4 || v.Discovered[0].Kind != frontier.KindSitemap || v.Discovered[0].Depth != 0 {
		t.Fatalf("index: %+v", v.Discovered)
	}
	v := visit("/sitemaps/1.xml")
	if v.ContentHash == 0 || v.ContentHash == visit("/sitemaps/3.xml").ContentHash || v.ContentHash != visit("/sitemaps/1.xml").ContentHash {
		t.Errorf("a sitemap's content hash %x: want one per content, the same on a second read", v.ContentHash)
	}
	hinted := 0
	for _, d := range v.Discovered {
		if d.Kind != frontier.KindPage {
			continue
		}
		if d.Depth != crawl.SitemapDepth || d.Priority != crawl.SitemapDepth {
			t.Errorf("%s: depth %d, priority %d", d.URL, d.Depth, d.Priority)
		}
		if d.Schedule == "" {
			continue
		}
		e, err := revisit.UnmarshalEntry([]byte(d.Schedule))
		if err != nil {
			t.Fatalf("%s: %v", d.URL, err)
		}
		if e.ChangeFreq == revisit.FreqUnknown || !e.LastFetch.IsZero() || !e.Next.IsZero() {
			t.Errorf("%s: hint entry %+v", d.URL, e)
		}
		hinted++
	}
	if hinted != 40 {
		t.Errorf("%d of the file's 40 pages carry a changefreq hint", hinted)
	}
}
