package websim

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
	"golang.org/x/net/html"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// startWeb serves cfg on loopback and returns the server and a client that reaches every
// host of it (no redirects followed, no transparent decompression).
func startWeb(t *testing.T, cfg Config) (*Server, *http.Client) {
	t.Helper()
	srv, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Addr())
		},
		DisableCompression: true,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return srv, &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type reply struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

func fetch(t *testing.T, c *http.Client, u string, hdr ...string) (reply, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: body, took: time.Since(start)}, err
}

func mustFetch(t *testing.T, c *http.Client, u string, hdr ...string) reply {
	t.Helper()
	r, err := fetch(t, c, u, hdr...)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return r
}

func TestRedirectChains(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureRedirects | FeatureRedirectLoops | FeatureLongRedirects})
	for _, code := range redirectCodes {
		for hops := 1; hops <= 3; hops++ {
			u := srv.URL("www.d0.test", "/x/r/"+strconv.Itoa(code)+"/"+strconv.Itoa(hops)+"/7")
			for i := range hops {
				r := mustFetch(t, c, u)
				if r.status != code || r.header.Get("Location") == "" {
					t.Fatalf("hop %d of %s: %d, Location %q", i, u, r.status, r.header.Get("Location"))
				}
				next, ok := Canonical(mustParse(t, u), r.header.Get("Location"))
				if !ok {
					t.Fatalf("bad Location %q", r.header.Get("Location"))
				}
				u = next.String()
			}
			if want := srv.URL("www.d0.test", string(appendPath(nil, srv.shape.pageRoute(7)))); u != want {
				t.Fatalf("chain ends at %s, want %s", u, want)
			}
			if r := mustFetch(t, c, u); r.status != 200 {
				t.Fatalf("chain target %s: %d", u, r.status)
			}
		}
	}
	// A loop: a → b → a.
	a := srv.URL("www.d0.test", "/x/loop/3/a")
	r := mustFetch(t, c, a)
	b, _ := Canonical(mustParse(t, a), r.header.Get("Location"))
	r = mustFetch(t, c, b.String())
	back, _ := Canonical(b, r.header.Get("Location"))
	if r.status != 302 || back.String() != a || b.String() == a {
		t.Fatalf("loop: %s → %s → %s", a, b, back)
	}
	// A long chain defeats a client that follows at most 10 redirects.
	follow := &http.Client{Transport: c.Transport}
	_, err := follow.Get(srv.URL("www.d0.test", "/x/r/302/12/1"))
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Fatalf("12-hop chain: %v", err)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, ok := Canonical(nil, s)
	if !ok {
		t.Fatalf("cannot parse %q", s)
	}
	return u
}

func TestErrorStatuses(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureNotFound | FeatureGone | FeatureServerErrors})
	for path, want := range map[string]int{"/missing/1.html": 404, "/x/gone/1": 410, "/x/error/1": 500, "/no/such/page": 404} {
		r := mustFetch(t, c, srv.URL("www.d1.test", path))
		if r.status != want || !bytes.Contains(r.body, []byte("/hidden/")) {
			t.Errorf("%s: %d, want %d with a link to a hidden page", path, r.status, want)
		}
	}
}

func TestUnavailableThenOK(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureUnavailable, BusyCount: 2})
	u := srv.URL("www.d0.test", "/x/busy/4")
	for i := range 2 {
		r := mustFetch(t, c, u)
		if r.status != 503 || r.header.Get("Retry-After") != "1" {
			t.Fatalf("request %d: %d, Retry-After %q", i, r.status, r.header.Get("Retry-After"))
		}
	}
	if r := mustFetch(t, c, u); r.status != 200 || !bytes.Contains(r.body, []byte("<a href=")) {
		t.Fatalf("third request: %d", r.status)
	}
	if r := mustFetch(t, c, u+"?other=1"); r.status != 503 {
		t.Fatalf("another URL starts busy: %d", r.status)
	}
	if got := srv.Log().Retries()[u]; got != 2 {
		t.Fatalf("Retries()[%s] = %d, want 2", u, got)
	}
	if d := srv.Log().Duplicates(); len(d) != 0 {
		t.Fatalf("503 retries counted as duplicates: %v", d)
	}
}

func TestSlowHosts(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureSlow | FeatureLarge, SlowShare: 1, SlowLatency: 150 * time.Millisecond,
		SlowBandwidth: 1 << 20, LargeSize: 300 << 10})
	r := mustFetch(t, c, srv.URL("www.d0.test", "/about.html"))
	if r.took < 150*time.Millisecond {
		t.Errorf("slow host answered in %v", r.took)
	}
	r = mustFetch(t, c, srv.URL("www.d0.test", "/x/large/1"))
	// 300 KiB at 1 MiB/s: about 0.3 s after the latency.
	if r.took < 350*time.Millisecond || len(r.body) != 300<<10 {
		t.Errorf("large page on a slow host: %d bytes in %v", len(r.body), r.took)
	}
	fast, c2 := startWeb(t, Config{Latency: 0})
	if r := mustFetch(t, c2, fast.URL("www.d0.test", "/")); r.took > 100*time.Millisecond {
		t.Logf("a normal page took %v (machine busy?)", r.took)
	}
}

func TestHangAndReset(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureHang | FeatureReset, HangTime: 400 * time.Millisecond})
	impatient := &http.Client{Transport: c.Transport, Timeout: 100 * time.Millisecond}
	_, err := impatient.Get(srv.URL("www.d0.test", "/x/hang/1"))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("hang page with a 100ms time-out: %v", err)
	}
	r := mustFetch(t, c, srv.URL("www.d0.test", "/x/hang/2"))
	if r.status != 200 || r.took < 400*time.Millisecond {
		t.Fatalf("hang page without time-out: %d after %v", r.status, r.took)
	}
	_, err = fetch(t, c, srv.URL("www.d0.test", "/x/reset/1"))
	if err == nil {
		t.Fatal("reset page answered")
	}
	// The handler records its entry after the reset: wait for it (the client saw the
	// reset first), then check it. Without the entry there would be nothing to check.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var reset []Entry
	err = srv.Log().WaitFor(ctx, func(es []Entry) bool {
		reset = reset[:0]
		for _, e := range es {
			if strings.HasPrefix(e.Path, "/x/reset/") {
				reset = append(reset, e)
			}
		}
		return len(reset) > 0
	})
	if err != nil {
		t.Fatalf("the reset request was never logged: %v", err)
	}
	for _, e := range reset {
		if e.Status != 0 {
			t.Errorf("reset logged with status %d", e.Status)
		}
	}
}

func TestCompression(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureCompress})
	u := srv.URL("www.d0.test", "/s/1/")
	plain := mustFetch(t, c, u)
	decoders := map[string]func(io.Reader) (io.Reader, error){
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
	}
	cases := []struct{ accept, want string }{
		{"gzip", "gzip"}, {"br", "br"}, {"gzip, deflate, br", "br"}, {"br;q=0, gzip", "gzip"},
		{"identity", ""}, {"", ""}, {"*", "gzip"},
	}
	for _, tc := range cases {
		r := mustFetch(t, c, u, "Accept-Encoding", tc.accept)
		if got := r.header.Get("Content-Encoding"); got != tc.want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tc.accept, got, tc.want)
			continue
		}
		body := r.body
		if tc.want != "" {
			dec, err := decoders[tc.want](bytes.NewReader(r.body))
			if err == nil {
				body, err = io.ReadAll(dec)
			}
			if err != nil {
				t.Fatalf("%s body: %v", tc.want, err)
			}
			if len(r.body) >= len(body) {
				t.Errorf("%s body is not smaller: %d ≥ %d", tc.want, len(r.body), len(body))
			}
		}
		if !bytes.Equal(body, plain.body) {
			t.Errorf("Accept-Encoding %q: decoded body differs", tc.accept)
		}
	}
	if r := mustFetch(t, c, srv.URL("www.d0.test", "/img/1.png"), "Accept-Encoding", "gzip"); r.header.Get("Content-Encoding") != "" {
		t.Error("images are compressed")
	}
}

func TestWrongContentTypes(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureWrongType})
	r := mustFetch(t, c, srv.URL("www.d0.test", "/x/plain/3"))
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || !bytes.Contains(r.body, []byte(`<a href="/hidden/3.html"`)) {
		t.Errorf("plain page: %q, HTML body %v", r.header.Get("Content-Type"), bytes.Contains(r.body, []byte("<a ")))
	}
	r = mustFetch(t, c, srv.URL("www.d0.test", "/x/bin/3"))
	if r.header.Get("Content-Type") != "text/html" || utf8.Valid(r.body) || bytes.ContainsAny(r.body, "<>") || len(r.body) != 4096 {
		t.Errorf("binary page: %q, %d bytes, valid UTF-8 %v", r.header.Get("Content-Type"), len(r.body), utf8.Valid(r.body))
	}
	for path, want := range map[string]string{"/img/1.png": "image/png", "/img/1.jpg": "image/jpeg", "/img/1.gif": "image/gif",
		"/doc/1.pdf": "application/pdf", "/static/site.css": "text/css", "/static/app.js": "text/javascript", "/sitemap.xml": "application/xml"} {
		r := mustFetch(t, c, srv.URL("www.d0.test", path))
		mt := strings.SplitN(r.header.Get("Content-Type"), ";", 2)[0]
		if mt != want || len(r.body) == 0 {
			t.Errorf("%s: %q, want %q", path, mt, want)
		}
		if sniffed := strings.SplitN(http.DetectContentType(r.body), ";", 2)[0]; strings.HasPrefix(want, "image/") && sniffed != want {
			t.Errorf("%s sniffs as %s", path, sniffed)
		}
	}
}

func TestCharsets(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureCharsets})
	encs := map[string]encoding.Encoding{"gbk": simplifiedchinese.GBK, "big5": traditionalchinese.Big5, "sjis": japanese.ShiftJIS}
	phrases := map[string][]string{"big5": phrasesBig5, "sjis": phrasesSJIS}
	for slug, enc := range encs {
		for _, where := range []string{"header", "meta"} {
			r := mustFetch(t, c, srv.URL("www.d0.test", "/x/cs/"+slug+"/"+where+"/1"))
			ct := r.header.Get("Content-Type")
			name := charsetNames[indexOf(charsetSlugs[:], slug)]
			inHeader := strings.Contains(ct, "charset="+name)
			inMeta := bytes.Contains(r.body, []byte(`<meta charset="`+name+`">`))
			if inHeader != (where == "header") || inMeta != (where == "meta") {
				t.Errorf("%s/%s: header %q, meta %v", slug, where, ct, inMeta)
			}
			if utf8.Valid(r.body) {
				t.Errorf("%s/%s: body is valid UTF-8, not %s", slug, where, name)
			}
			dec, err := enc.NewDecoder().Bytes(r.body)
			if err != nil || !utf8.Valid(dec) {
				t.Fatalf("%s/%s: cannot decode: %v", slug, where, err)
			}
			want := phrases[slug]
			if want == nil {
				want = stopZH
			}
			hits := 0
			for _, p := range want {
				hits += strings.Count(string(dec), p)
			}
			if hits < 10 {
				t.Errorf("%s/%s: decoded text has %d known phrases", slug, where, hits)
			}
		}
	}
}

func TestMalformedPage(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureMalformed})
	r := mustFetch(t, c, srv.URL("www.d0.test", "/x/malformed/1"))
	if utf8.Valid(r.body) || bytes.Count(r.body, []byte("<div>")) < 3000 || bytes.Contains(r.body, []byte("</body>")) {
		t.Fatalf("malformed page is not malformed enough (%d bytes)", len(r.body))
	}
	z := html.NewTokenizer(bytes.NewReader(r.body))
	var hrefs []string
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		if tok := z.Token(); tt == html.StartTagToken && tok.Data == "a" {
			for _, a := range tok.Attr {
				if a.Key == "href" {
					hrefs = append(hrefs, a.Val)
				}
			}
		}
	}
	if len(hrefs) != 2 {
		t.Fatalf("links in the malformed page: %v", hrefs)
	}
}

func TestLargePageAndBomb(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureLarge | FeatureGzipBomb, LargeSize: 1 << 20, BombSize: 64 << 20})
	r := mustFetch(t, c, srv.URL("www.d0.test", "/x/large/1"))
	if len(r.body) != 1<<20 || r.header.Get("Content-Length") != strconv.Itoa(1<<20) || !bytes.HasSuffix(r.body, []byte("</html>\n")) {
		t.Fatalf("large page: %d bytes, Content-Length %q", len(r.body), r.header.Get("Content-Length"))
	}
	r = mustFetch(t, c, srv.URL("www.d0.test", "/x/bomb/1"))
	if r.header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("bomb headers: %v", r.header)
	}
	gz, err := gzip.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, gz)
	if err != nil || n != 64<<20 {
		t.Fatalf("bomb expands to %d bytes (%v), want %d", n, err, 64<<20)
	}
	if ratio := n / int64(len(r.body)); ratio < 500 {
		t.Fatalf("bomb ratio %d:1 (%d compressed bytes)", ratio, len(r.body))
	}
}

func TestDuplicatesAndNoiseVariants(t *testing.T) {
	srv, c := startWeb(t, Config{Enable: FeatureDuplicates | FeatureNoise | FeatureTraps})
	article := mustFetch(t, c, srv.URL("www.d0.test", "/s/2/a/3.html"))
	print := mustFetch(t, c, srv.URL("www.d0.test", "/print/s/2/a/3.html"))
	if textOf(article.body, "content") != textOf(print.body, "content") || bytes.Contains(print.body, []byte("href=")) {
		t.Fatal("print mirror does not repeat the article's text without links")
	}
	for _, variant := range []string{"/s/2/a/3.html;jsessionid=0a1b", "/s/2/a/3.html?sid=77", "/s/2/a/3.html?utm_source=x&utm_medium=y"} {
		if r := mustFetch(t, c, srv.URL("www.d0.test", variant)); !bytes.Equal(r.body, article.body) {
			t.Errorf("%s differs from the article", variant)
		}
	}
	cal := mustFetch(t, c, srv.URL("www.d0.test", "/calendar/2026/12/"))
	if !bytes.Contains(cal.body, []byte("2027/01/")) || !bytes.Contains(cal.body, []byte("/calendar/2026/11/")) {
		t.Errorf("calendar page does not link next and previous months")
	}
	if r := mustFetch(t, c, srv.URL("www.d0.test", "/beacon?p=3")); r.header.Get("Content-Type") != "image/gif" {
		t.Errorf("beacon: %q", r.header.Get("Content-Type"))
	}
	deep := "/trap/"
	for i := 1; i <= 200; i++ {
		deep += strconv.Itoa(i) + "/"
	}
	r := mustFetch(t, c, srv.URL("www.d0.test", deep))
	if r.status != 200 || !bytes.Contains(r.body, []byte("201/")) {
		t.Errorf("trap at depth 200: %d", r.status)
	}
}

// textOf returns the text of the <div class=cls> block.
func textOf(body []byte, cls string) string {
	z := html.NewTokenizer(bytes.NewReader(body))
	depth := 0
	var b strings.Builder
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		tok := z.Token()
		switch {
		case tt == html.StartTagToken && tok.Data == "div":
			if depth > 0 {
				depth++
			}
			for _, a := range tok.Attr {
				if a.Key == "class" && a.Val == cls && depth == 0 {
					depth = 1
				}
			}
		case tt == html.EndTagToken && tok.Data == "div" && depth > 0:
			depth--
		case tt == html.TextToken && depth > 0:
			b.WriteString(tok.Data)
		}
	}
	return b.String()
}

func TestRobotsMenuServed(t *testing.T) {
	for k := RobotsAllowAll; k < numRobotsKinds; k++ {
		t.Run(k.String(), func(t *testing.T) {
			srv, c := startWeb(t, Config{Robots: k.String(), Hosts: 2})
			r := mustFetch(t, c, srv.URL("www.d1.test", "/robots.txt"))
			wantStatus := map[RobotsKind]int{RobotsNotFound: 404, RobotsServerError: 500, RobotsUnavailable: 503, RobotsRedirect: 301}[k]
			if wantStatus == 0 {
				wantStatus = 200
			}
			if r.status != wantStatus || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
				t.Fatalf("status %d (want %d), type %q", r.status, wantStatus, r.header.Get("Content-Type"))
			}
			switch k {
			case RobotsRedirect:
				if loc := r.header.Get("Location"); loc != srv.URL("www.d1.test", "/robots-real.txt") {
					t.Fatalf("Location %q", loc)
				}
				if real := mustFetch(t, c, srv.URL("www.d1.test", "/robots-real.txt")); real.status != 200 || !bytes.Contains(real.body, []byte("Disallow: /s/1/")) {
					t.Fatalf("robots-real.txt: %d", real.status)
				}
			case RobotsHuge:
				cut := r.body[:RobotsMaxBytes]
				if len(r.body) < 600<<10 || bytes.Contains(cut, []byte("Disallow: /\n")) || !bytes.Contains(r.body[RobotsMaxBytes:], []byte("\nDisallow: /\n")) {
					t.Fatalf("huge robots.txt: %d bytes", len(r.body))
				}
				if i := bytes.LastIndexByte(cut, '\n'); !bytes.HasPrefix(r.body[i+1:], []byte("Disallow: /nothing/")) {
					t.Fatalf("the 500 KiB cut does not fall inside a filler line")
				}
			}
			if r.status == 200 && !bytes.Contains(r.body, []byte("Sitemap: "+srv.URL("www.d1.test", "/sitemap.xml"))) {
				t.Errorf("no Sitemap line")
			}
		})
	}
}

func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.1.2.3:0", ":0", "example.com:80"} {
		if _, err := Start(t.Context(), Config{Addr: addr}); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("Start on %s: %v, want ErrNotLoopback", addr, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := Start(ctx, Config{Addr: "localhost:0"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// The listener closes asynchronously after the cancel: poll for it (every 10 ms);
	// the deadline fails a server that keeps listening.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("server still listening 10 s after its context was cancelled")
}
