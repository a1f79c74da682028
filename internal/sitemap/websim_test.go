package sitemap

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// serve starts websim and returns a client that reaches every host on it.
func serve(t *testing.T, cfg websim.Config) (*websim.Server, *http.Client) {
	t.Helper()
	srv, err := websim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	addr := srv.Addr()
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		DisableCompression: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return srv, &http.Client{Transport: tr, Timeout: time.Minute}
}

// fetchParse GETs a sitemap and parses it.
func fetchParse(t *testing.T, c *http.Client, u string, opt Options) (Result, []Entry) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("%s: status %d", u, res.StatusCode)
	}
	var got []Entry
	r, err := Parse(context.Background(), res.Body, opt, func(e Entry) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	return r, got
}

// robotsSitemaps returns the Sitemap: lines of a host's robots.txt.
func robotsSitemaps(t *testing.T, c *http.Client, origin string) []string {
	t.Helper()
	res, err := c.Get(origin + "/robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Sitemap: "); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestWebsimSitemaps follows a host's sitemaps from robots.txt: the index, its files
// (plain and gzip) and every page of the host, each with its true lastmod; the
// cross-submitted sitemap on another host; the out-of-place one.
func TestWebsimSitemaps(t *testing.T) {
	srv, c := serve(t, websim.Config{Seed: 9, Hosts: 4, PagesPerHost: 150, Sitemaps: true, SitemapMaxURLs: 40, ChangeDay: time.Hour})
	web := srv.Web
	h0 := web.URL("www.d0.test", "")
	sm := robotsSitemaps(t, c, h0)
	if len(sm) != 1 || sm[0] != h0+"/sitemap.xml" {
		t.Fatalf("host 0 robots.txt sitemaps %q", sm)
	}
	idx, children := fetchParse(t, c, sm[0], Options{SitemapURL: sm[0]})
	if idx.Kind != KindIndex || len(children) != 4 || !strings.HasSuffix(children[1].Loc, ".xml.gz") {
		t.Fatalf("index %+v: %v", idx, children)
	}
	var locs []string
	gzipped := 0
	for _, ch := range children {
		r, pages := fetchParse(t, c, ch.Loc, Options{SitemapURL: ch.Loc, Hosts: []string{h0}})
		if r.Gzip {
			gzipped++
		}
		if r.OutOfPlace != 0 || r.Kind != KindURLSet {
			t.Errorf("%s: %+v", ch.Loc, r)
		}
		for _, p := range pages {
			locs = append(locs, p.Loc)
			if p.LastMod.IsZero() || p.ChangeFreq == "" {
				t.Errorf("%s: no lastmod or changefreq", p.Loc)
			}
		}
		// lastmod is the time of the current version: the page's Last-Modified.
		p := pages[len(pages)/2]
		res, err := c.Get(p.Loc)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if lm, _ := http.ParseTime(res.Header.Get("Last-Modified")); !lm.Equal(p.LastMod) {
			t.Errorf("%s: lastmod %s, Last-Modified %s", p.Loc, p.LastMod, lm)
		}
	}
	want := web.PageURLs(0)
	sort.Strings(locs)
	sort.Strings(want)
	if strings.Join(locs, " ") != strings.Join(want, " ") || gzipped != 2 {
		t.Errorf("the sitemaps list %d URLs (%d files gzip), the host has %d pages", len(locs), gzipped, len(want))
	}

	// Host 1's robots.txt cross-submits a sitemap on host 0.
	h1 := web.URL(web.Hosts()[1], "")
	sm1 := robotsSitemaps(t, c, h1)
	if len(sm1) != 2 || sm1[1] != h0+"/sitemaps/host-1.xml" {
		t.Fatalf("host 1 sitemaps %q", sm1)
	}
	r, pages := fetchParse(t, c, sm1[1], Options{SitemapURL: sm1[1], Hosts: []string{h1}})
	if r.OutOfPlace != 0 || len(pages) != 40 || !strings.HasPrefix(pages[0].Loc, h1+"/") {
		t.Errorf("cross-submitted: %+v, %d pages", r, len(pages))
	}
	if r, _ := fetchParse(t, c, sm1[1], Options{SitemapURL: sm1[1]}); r.OutOfPlace != 40 || r.Entries != 0 {
		t.Errorf("not cross-submitted: %+v", r)
	}
	// sitemap-others.xml lists other hosts' pages: out of place.
	var dropped []string
	r, pages = fetchParse(t, c, h0+"/sitemap-others.xml", Options{SitemapURL: h0 + "/sitemap-others.xml", OnOutOfPlace: func(e Entry) { dropped = append(dropped, e.Loc) }})
	if r.OutOfPlace != 9 || len(dropped) != 9 || len(pages) != 3 {
		t.Errorf("others: %+v, %d kept, %d dropped", r, len(pages), len(dropped))
	}
}

func TestWebsimLyingLastmod(t *testing.T) {
	srv, c := serve(t, websim.Config{Seed: 2, Hosts: 1, PagesPerHost: 200, Sitemaps: true, SitemapLieShare: 0.3})
	before := time.Now().Add(-2 * time.Second)
	h0 := srv.Web.URL("www.d0.test", "")
	_, pages := fetchParse(t, c, h0+"/sitemap.xml", Options{})
	lies := 0
	for _, p := range pages {
		recent := p.LastMod.After(before)
		if recent != srv.Web.LastmodLies(p.Loc) {
			t.Fatalf("%s: lastmod %s, lies %v", p.Loc, p.LastMod, srv.Web.LastmodLies(p.Loc))
		}
		if recent {
			lies++
		}
	}
	if lies < 30 || lies > 90 {
		t.Errorf("%d of %d lastmods lie", lies, len(pages))
	}
}

// TestWebsimHugeSitemap reads websim's 1 GiB sitemap: the URL cap stops it after 50,000
// URLs, the byte cap after 50 MiB of its gzip variant, in bounded memory and time.
func TestWebsimHugeSitemap(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 50 MiB")
	}
	srv, c := serve(t, websim.Config{Seed: 1, Hosts: 1, Sitemaps: true})
	// The test's own bound on time (below) and not the client's default
	// minute: under -race on a loaded CI machine the gzip read alone once
	// took longer than that.
	c.Timeout = 2 * time.Minute
	h0 := srv.Web.URL("www.d0.test", "")
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	r, _ := fetchCount(t, c, h0+"/sitemap-huge.xml", Options{})
	if !r.Truncated || r.TruncatedBy != "urls" || r.Entries != ProtocolMaxURLs || r.Bytes > 8<<20 {
		t.Errorf("huge by URLs: %+v", r)
	}
	r, n := fetchCount(t, c, h0+"/sitemap-huge.xml.gz", Options{MaxURLs: 1 << 30})
	if !r.Truncated || r.TruncatedBy != "bytes" || r.Bytes != ProtocolMaxBytes || !r.Gzip || n < 500_000 {
		t.Errorf("huge by bytes: %+v, %d entries", r, n)
	}
	close(done)
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("huge sitemaps read in %s, peak heap in use %.1f MiB", elapsed, float64(peak.Load())/(1<<20))
	if peak.Load() > 64<<20 {
		t.Errorf("peak heap %d MiB: the parser holds the file", peak.Load()>>20)
	}
	if elapsed > 2*time.Minute {
		t.Errorf("took %s", elapsed)
	}
}

func fetchCount(t *testing.T, c *http.Client, u string, opt Options) (Result, int) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	n := 0
	r, err := Parse(context.Background(), res.Body, opt, func(Entry) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return r, n
}
