package websim

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/publicsuffix"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// get serves one request in process and returns status, header and body.
func get(t testing.TB, w *Web, rawURL string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, rawURL, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rr := httptest.NewRecorder()
	w.Handler().ServeHTTP(rr, req)
	return rr.Code, rr.Header(), rr.Body.Bytes()
}

func mustNew(t testing.TB, cfg Config) *Web {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want error
	}{
		{"zero", Config{}, nil},
		{"hostile", Config{Profile: "HOSTILE"}, nil},
		{"bad profile", Config{Profile: "mean"}, ErrBadConfig},
		{"negative hosts", Config{Hosts: -1}, ErrBadConfig},
		{"too many pages", Config{PagesPerHost: 2_000_000}, ErrBadConfig},
		{"bad port", Config{Port: 70000}, ErrBadConfig},
		{"per-ip too many", Config{PerIP: true, Hosts: MaxPerIPHosts + 1}, ErrBadConfig},
		{"negative latency", Config{Latency: -1}, ErrBadConfig},
		{"bad robots kind", Config{Robots: "maybe"}, ErrBadConfig},
		{"domains capped", Config{Hosts: 2, Domains: 9}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDefaultsAndProfiles(t *testing.T) {
	w := mustNew(t, Config{})
	if len(w.Hosts()) != 20 || w.shape.pages != 50 || w.Features() != 0 {
		t.Fatalf("defaults: %d hosts, %d pages, features %v", len(w.Hosts()), w.shape.pages, w.Features())
	}
	h := mustNew(t, Config{Profile: ProfileHostile, Disable: FeatureHang | FeatureReset})
	if h.Features() != AllFeatures&^(FeatureHang|FeatureReset) {
		t.Fatalf("hostile minus hang, reset: %v", h.Features())
	}
	c := mustNew(t, Config{Enable: FeatureTraps})
	if c.Features() != FeatureTraps {
		t.Fatalf("clean plus traps: %v", c.Features())
	}
}

func TestParseFeatures(t *testing.T) {
	cases := []struct {
		in   string
		want Feature
		err  bool
	}{
		{"", 0, false},
		{"none", 0, false},
		{"all", AllFeatures, false},
		{"redirects", FeatureRedirects, false},
		{" Hang , reset ", FeatureHang | FeatureReset, false},
		{"gzip-bomb,robots", FeatureGzipBomb | FeatureRobots, false},
		{"hang,nonsense", 0, true},
	}
	for _, tc := range cases {
		got, err := ParseFeatures(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseFeatures(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrUnknownFeature) {
			t.Errorf("error %v does not wrap ErrUnknownFeature", err)
		}
	}
	for _, f := range FeatureList() {
		back, err := ParseFeatures(f.String())
		if err != nil || back != f {
			t.Errorf("round trip of %v: %v, %v", f, back, err)
		}
	}
	if back, _ := ParseFeatures(AllFeatures.String()); back != AllFeatures {
		t.Errorf("round trip of all: %v", back)
	}
}

func TestHostNamesAndDomains(t *testing.T) {
	w := mustNew(t, Config{Hosts: 14, Domains: 3, Port: 8080})
	hosts := w.Hosts()
	want := []string{"www.d0.test", "www.d1.test", "www.d2.test", "d0.test", "d1.test", "d2.test",
		"blog.d0.test", "blog.d1.test", "blog.d2.test", "news.d0.test", "news.d1.test", "news.d2.test", "site12.d0.test", "site13.d1.test"}
	seen := map[string]bool{}
	for i, h := range hosts {
		if h != want[i] {
			t.Errorf("host %d = %q, want %q", i, h, want[i])
		}
		if seen[h] {
			t.Errorf("duplicate host %q", h)
		}
		seen[h] = true
		etld1, err := publicsuffix.EffectiveTLDPlusOne(h)
		if err != nil || etld1 != w.Domain(h) {
			t.Errorf("eTLD+1 of %q = %q (%v), Web.Domain says %q", h, etld1, err, w.Domain(h))
		}
	}
	if got := w.URL("WWW.D1.TEST", "/s/1/"); got != "http://www.d1.test:8080/s/1/" {
		t.Errorf("URL = %q", got)
	}
	if got := w.SeedURLs(2); len(got) != 2 || got[0] != "http://www.d0.test:8080/" {
		t.Errorf("SeedURLs = %v", got)
	}
	if got := w.Resolve()[3]; got != "d0.test:8080:127.0.0.1" {
		t.Errorf("Resolve()[3] = %q", got)
	}
}

func TestHostAddrDistinct(t *testing.T) {
	seen := map[netip.Addr]int{}
	for i := range MaxPerIPHosts {
		a := HostAddr(i)
		b := a.As4()
		if !a.IsLoopback() || a == netip.MustParseAddr("127.0.0.1") || b[3] == 0 || b[3] == 255 {
			t.Fatalf("HostAddr(%d) = %v", i, a)
		}
		if j, dup := seen[a]; dup {
			t.Fatalf("HostAddr(%d) = HostAddr(%d) = %v", i, j, a)
		}
		seen[a] = i
	}
}

// samplePaths covers every route kind of a hostile web.
func samplePaths(w *Web) []string {
	paths := []string{"/", "/?q=1", "/s/1/", "/s/2/a/1.html", "/s/3/a/2.html#x", "/about.html", "/contact.html",
		"/frames.html", "/old/2.html", "/user/4/", "/hidden/1.html", "/print/s/1/a/1.html", "/trap/1/2/3/",
		"/calendar/2026/12/", "/beacon?p=1", "/sitemap.xml", "/robots.txt", "/robots-real.txt",
		"/static/site.css", "/static/app.js", "/img/1.png", "/img/2.jpg", "/img/3.gif", "/doc/4.pdf",
		"/x/r/301/2/5", "/x/r/308/12/1", "/x/loop/1/a", "/x/loop/1/b", "/x/gone/1", "/x/error/2",
		"/x/plain/1", "/x/bin/2", "/x/malformed/3", "/x/cs/gbk/header/1", "/x/cs/big5/meta/2",
		"/x/cs/sjis/header/3", "/s/1/a/1.html;jsessionid=abc123", "/s/1/?sid=ff", "/nothing/here",
	}
	for id := range w.shape.pages {
		paths = append(paths, string(appendPath(nil, w.shape.pageRoute(id))))
	}
	return paths
}

func TestDeterministicAcrossInstances(t *testing.T) {
	cfg := Config{Seed: 42, Hosts: 12, PagesPerHost: 40, Profile: ProfileHostile, Disable: FeatureSlow, Port: 8080, TroubleShare: 1, LargeSize: 100 << 10}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	for _, host := range a.Hosts() {
		for _, p := range samplePaths(a) {
			u := "http://" + host + ":8080" + p
			sa, ha, ba := get(t, a, u)
			sb, hb, bb := get(t, b, u)
			if sa != sb || !bytes.Equal(ba, bb) || ha.Get("Content-Type") != hb.Get("Content-Type") || ha.Get("Location") != hb.Get("Location") {
				t.Fatalf("%s differs between two webs of the same config: %d/%d, %d/%d bytes", u, sa, sb, len(ba), len(bb))
			}
		}
	}
	ta, err := a.Truth(TruthRules{Seeds: a.SeedURLs(3), MaxDepth: 3, Scope: ScopeDomain})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := b.Truth(TruthRules{Seeds: b.SeedURLs(3), MaxDepth: 3, Scope: ScopeDomain})
	if strings.Join(ta.MustFetch, " ") != strings.Join(tb.MustFetch, " ") || len(ta.MustNotFetch) != len(tb.MustNotFetch) {
		t.Fatal("truth differs between two webs of the same config")
	}
}

func TestSeedsDiffer(t *testing.T) {
	a := mustNew(t, Config{Seed: 1, Port: 8080})
	b := mustNew(t, Config{Seed: 2, Port: 8080})
	same := 0
	paths := []string{"/", "/s/1/", "/s/2/a/1.html", "/s/3/a/3.html", "/about.html"}
	for _, p := range paths {
		_, _, ba := get(t, a, "http://www.d0.test:8080"+p)
		_, _, bb := get(t, b, "http://www.d0.test:8080"+p)
		if bytes.Equal(ba, bb) {
			same++
		}
	}
	if same > 0 {
		t.Fatalf("%d of %d pages are identical under different seeds", same, len(paths))
	}
	ra := mustNew(t, Config{Seed: 1, Hosts: 40, Profile: ProfileHostile})
	rb := mustNew(t, Config{Seed: 2, Hosts: 40, Profile: ProfileHostile})
	diff := 0
	for i := range ra.hosts {
		if ra.hosts[i].robots != rb.hosts[i].robots {
			diff++
		}
	}
	if diff == 0 {
		t.Fatal("robots.txt menu choices do not depend on the seed")
	}
}

func TestRouteRoundTrip(t *testing.T) {
	for _, pages := range []int{1, 2, 3, 10, 50, 101, 1000} {
		sh := newShape(pages)
		if sh.sections+sh.articles()+1 != pages {
			t.Fatalf("pages %d: %d sections + %d articles + index", pages, sh.sections, sh.articles())
		}
		for id := range pages {
			rt := sh.pageRoute(id)
			p := string(appendPath(nil, rt))
			back, ok := parsePath(p, sh)
			if !ok || back != rt || sh.pageID(back) != id {
				t.Fatalf("pages %d id %d: %q parses to %+v, %v", pages, id, p, back, ok)
			}
		}
	}
	sh := newShape(50)
	for _, p := range samplePaths(&Web{shape: sh}) {
		path := strings.SplitN(strings.SplitN(p, "?", 2)[0], "#", 2)[0]
		rt, ok := parsePath(path, sh)
		if !ok {
			continue
		}
		if back := string(appendPath(nil, rt)); back != path {
			t.Errorf("%q → %+v → %q", path, rt, back)
		}
	}
	for _, bad := range []string{"", "x", "/s/0/", "/s/8/", "/s/1/a/0.html", "/s/1/a/99.html", "/s/01/", "/trap/1/3/",
		"/calendar/2026/13/", "/calendar/2026/1/", "/x/r/303/1/1", "/x/r/301/0/1", "/x/r/301/1/50", "/img/1.bmp", "/x/loop/1/c"} {
		if rt, ok := parsePath(bad, sh); ok {
			t.Errorf("parsePath(%q) = %+v, want no route", bad, rt)
		}
	}
}

func TestAppendRel(t *testing.T) {
	cases := []struct{ dir, target string }{
		{"/", "/"}, {"/", "/s/1/"}, {"/s/1/", "/"}, {"/s/1/a/", "/s/1/a/2.html"}, {"/s/1/a/", "/s/2/"},
		{"/s/1/a/", "/about.html"}, {"/trap/1/2/", "/trap/1/2/3/"}, {"/calendar/2026/11/", "/calendar/2026/12/"},
		{"/calendar/2026/12/", "/calendar/2027/01/"}, {"/s/1/", "/s/10/a/1.html"}, {"/s/10/", "/s/1/"},
	}
	for _, tc := range cases {
		for _, bare := range []bool{false, true} {
			rel := string(appendRel(nil, []byte(tc.dir), tc.target, bare))
			base, _ := url.Parse("http://h.test" + tc.dir + "page")
			ref, _ := url.Parse(rel)
			if got := base.ResolveReference(ref).Path; got != tc.target {
				t.Errorf("from %s to %s: %q resolves to %s", tc.dir, tc.target, rel, got)
			}
		}
	}
}

func TestVocabulary(t *testing.T) {
	owner := map[string]Topic{}
	gbk := simplifiedchinese.GBK.NewEncoder()
	for _, topic := range Topics() {
		en, zh := TopicWords(topic)
		if len(en) < 38 || len(zh) < 38 {
			t.Errorf("%v: %d English, %d Chinese words", topic, len(en), len(zh))
		}
		for _, w := range append(append([]string{}, en...), zh...) {
			if o, dup := owner[w]; dup && o != topic {
				t.Errorf("word %q is in %v and %v", w, o, topic)
			}
			owner[w] = topic
			if strings.ContainsAny(w, "<>&\" ") {
				t.Errorf("word %q needs escaping", w)
			}
		}
		if _, err := gbk.String(strings.Join(zh, "")); err != nil {
			t.Errorf("%v: Chinese words not representable in GBK: %v", topic, err)
		}
	}
	_, stopZH := StopWords()
	if _, err := gbk.String(strings.Join(stopZH, "")); err != nil {
		t.Errorf("stop words not representable in GBK: %v", err)
	}
	if _, err := traditionalchinese.Big5.NewEncoder().String(strings.Join(phrasesBig5, "，。")); err != nil {
		t.Errorf("Big5 phrases: %v", err)
	}
	if _, err := japanese.ShiftJIS.NewEncoder().String(strings.Join(phrasesSJIS, "，。")); err != nil {
		t.Errorf("Shift_JIS phrases: %v", err)
	}
}

func TestPageTextUsesItsTopics(t *testing.T) {
	w := mustNew(t, Config{Seed: 9, Port: 8080, ChineseShare: -1})
	truth, err := w.Truth(TruthRules{MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for u, topics := range truth.Topics {
		if !strings.Contains(u, "/a/") {
			continue
		}
		_, _, body := get(t, w, u)
		counts := map[Topic]int{}
		for _, word := range strings.FieldsFunc(string(body), func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
			for _, topic := range Topics() {
				en, _ := TopicWords(topic)
				for _, v := range en {
					if v == word {
						counts[topic]++
					}
				}
			}
		}
		best, bestN := Topic(0), -1
		for topic, n := range counts {
			if n > bestN {
				best, bestN = topic, n
			}
		}
		found := false
		for _, name := range topics {
			found = found || name == best.String()
		}
		if !found {
			t.Errorf("%s: most frequent topic %v (%v) is not among %v", u, best, counts, topics)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("checked only %d articles", checked)
	}
}

func TestBigWebIsLazy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 100,000-host web")
	}
	w := mustNew(t, Config{Hosts: 100_000, PagesPerHost: 100, Port: 8080})
	last := w.Hosts()[99_999]
	code, _, body := get(t, w, "http://"+last+":8080/s/9/a/10.html")
	if code != 200 || !bytes.Contains(body, []byte("<a href=")) {
		t.Fatalf("page on the last host: %d, %d bytes", code, len(body))
	}
	if code, _, _ := get(t, w, "http://"+last+":8080/s/9/a/11.html"); code != 404 {
		t.Fatalf("article beyond the host's 100 pages: %d", code)
	}
}

func TestHandlerBasics(t *testing.T) {
	w := mustNew(t, Config{Port: 8080})
	cases := []struct {
		method, url string
		want        int
	}{
		{"GET", "http://www.d0.test:8080/", 200},
		{"GET", "http://WWW.D0.TEST/", 200},
		{"HEAD", "http://www.d0.test:8080/s/1/", 200},
		{"POST", "http://www.d0.test:8080/", 405},
		{"GET", "http://unknown.test:8080/", 421},
		{"GET", "http://www.d0.test:8080/x/hang/1", 404}, // behaviour off in the clean profile
		{"GET", "http://www.d0.test:8080/trap/1/", 404},  // traps off
		{"GET", "http://www.d0.test:8080/s/1/;jsessionid=ab", 404},
	}
	for _, tc := range cases {
		req := httptest.NewRequest(tc.method, tc.url, nil)
		rr := httptest.NewRecorder()
		w.Handler().ServeHTTP(rr, req)
		if rr.Code != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.url, rr.Code, tc.want)
		}
		if tc.method == "HEAD" && rr.Body.Len() != 0 {
			t.Errorf("HEAD wrote %d body bytes", rr.Body.Len())
		}
	}
}

func TestCleanProfileOnlyGoodPages(t *testing.T) {
	w := mustNew(t, Config{Seed: 5, Hosts: 6, PagesPerHost: 30, Port: 8080})
	truth, err := w.Truth(TruthRules{Seeds: w.SeedURLs(6), MaxDepth: -1, Scope: ScopeSeeds})
	if err != nil {
		t.Fatal(err)
	}
	for u, f := range truth.Final {
		if f != "200" {
			t.Errorf("clean web: %s ends %s", u, f)
		}
		_, h, body := get(t, w, u)
		if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !bytes.HasPrefix(body, []byte("<!DOCTYPE html>")) {
			t.Errorf("clean web: %s is not HTML", u)
		}
	}
	for u, r := range truth.MustNotFetch {
		if r == ReasonRobots || r == ReasonRedirects {
			t.Errorf("clean web: %s excluded by %s", u, r)
		}
	}
	// Every page of every host is reachable.
	pages := 0
	for _, u := range truth.MustFetch {
		if p, _ := url.Parse(u); p.RawQuery == "" {
			if _, ok := parsePath(p.Path, w.shape); ok && w.shape.pageID(mustRoute(p.Path, w.shape)) >= 0 {
				pages++
			}
		}
	}
	if pages != 6*30 {
		t.Errorf("reached %d of %d hierarchy pages", pages, 6*30)
	}
}

func mustRoute(p string, sh shape) route {
	rt, _ := parsePath(p, sh)
	return rt
}
