package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func get(t *testing.T, c *Client, rawURL string, follow int) (*Response, error) {
	t.Helper()
	return c.Fetch(context.Background(), &Request{URL: mustURL(t, rawURL), FollowRedirects: follow})
}

// serve starts a loopback HTTP server for handler.
func serve(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

// serveOn starts a server on a given loopback address, e.g. "127.0.0.2:0".
func serveOn(t *testing.T, addr string, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: handler}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchBasics(t *testing.T) {
	var gotUA, gotAccept, gotAE, gotExtra string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotAccept, gotAE, gotExtra = r.UserAgent(), r.Header.Get("Accept"), r.Header.Get("Accept-Encoding"), r.Header.Get("X-Extra")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<title>hi</title>")
	})
	c := newClient(t, Config{AllowPrivate: true})
	resp, err := c.Fetch(context.Background(), &Request{URL: mustURL(t, srv.URL+"/page#frag"), Header: http.Header{"x-extra": {"1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if gotUA != DefaultUserAgent || gotAccept != acceptHeader || gotAE != "gzip, br" || gotExtra != "1" {
		t.Fatalf("request headers UA=%q Accept=%q Accept-Encoding=%q X-Extra=%q", gotUA, gotAccept, gotAE, gotExtra)
	}
	if resp.Status != 200 || string(resp.Body) != "<title>hi</title>" || !resp.IsHTML() || resp.Charset != "utf-8" {
		t.Fatalf("response %d %q html=%v charset=%q", resp.Status, resp.Body, resp.IsHTML(), resp.Charset)
	}
	if resp.URL.String() != srv.URL+"/page#frag" || resp.FinalURL.String() != resp.URL.String() || resp.Redirects != 0 {
		t.Fatalf("URL %s final %s redirects %d", resp.URL, resp.FinalURL, resp.Redirects)
	}
	if resp.RemoteAddr != srv.Listener.Addr().String() {
		t.Fatalf("RemoteAddr %q, want %q", resp.RemoteAddr, srv.Listener.Addr())
	}
	if resp.Proto != "HTTP/1.1" || !bytes.HasPrefix(resp.RawHeader, []byte("HTTP/1.1 200 OK\r\n")) ||
		!bytes.HasSuffix(resp.RawHeader, []byte("\r\n\r\n")) || !bytes.Contains(resp.RawHeader, []byte("Content-Type: text/html; charset=utf-8\r\n")) {
		t.Fatalf("proto %q raw header %q", resp.Proto, resp.RawHeader)
	}
	if resp.RequestHeader.Get("User-Agent") != DefaultUserAgent || resp.RequestHeader.Get("X-Extra") != "1" {
		t.Fatalf("RequestHeader %v", resp.RequestHeader)
	}
	if resp.Started.IsZero() || resp.TTFB <= 0 || resp.Duration < resp.TTFB || resp.Truncated || resp.Location != nil {
		t.Fatalf("timing %v %v %v truncated %v location %v", resp.Started, resp.TTFB, resp.Duration, resp.Truncated, resp.Location)
	}
}

func TestFetchRejectsBadRequests(t *testing.T) {
	c := newClient(t, Config{AllowPrivate: true})
	for _, raw := range []string{"ftp://example.com/", "/relative", "mailto:a@b"} {
		_, err := get(t, c, raw, 0)
		if err == nil || Classify(err) != OutcomeOther || !strings.HasPrefix(err.Error(), "cannot fetch") {
			t.Errorf("Fetch(%q) error = %v", raw, err)
		}
	}
	if _, err := c.Fetch(context.Background(), nil); err == nil {
		t.Error("nil request accepted")
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{
		{ConnectTimeout: -1}, {MaxBodyBytes: -5}, {DNSMaxInFlight: -1},
		{Resolve: []string{"bad entry"}},
	} {
		if _, err := New(cfg, nil, nil); err == nil || !strings.HasPrefix(err.Error(), "cannot configure the fetcher") {
			t.Errorf("New(%+v) error = %v", cfg, err)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := New(Config{}, nil, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{}, nil, reg); err == nil {
		t.Error("second Client on one registry: no error")
	}
}

func TestRedirects(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/r/%d", &n); err == nil && n > 0 {
			code := []int{301, 302, 303, 307, 308}[n%5]
			// Relative Location forms: absolute path, dot-segments, query.
			loc := fmt.Sprintf("/r/%d", n-1)
			if n == 2 {
				loc = fmt.Sprintf("../r/%d?x=1", n-1)
			}
			http.Redirect(w, r, loc, code)
			return
		}
		fmt.Fprint(w, "done "+r.URL.RawQuery)
	})
	c := newClient(t, Config{AllowPrivate: true})

	t.Run("followed", func(t *testing.T) {
		resp, err := get(t, c, srv.URL+"/r/4", 10)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != 200 || resp.Redirects != 4 || resp.FinalURL.String() != srv.URL+"/r/0" ||
			resp.URL.String() != srv.URL+"/r/4" || string(resp.Body) != "done " {
			t.Fatalf("status %d redirects %d final %s body %q", resp.Status, resp.Redirects, resp.FinalURL, resp.Body)
		}
	})
	t.Run("exactly at the limit", func(t *testing.T) {
		resp, err := get(t, c, srv.URL+"/r/3", 3)
		if err != nil || resp.Status != 200 || resp.Redirects != 3 {
			t.Fatalf("%v %v", resp, err)
		}
	})
	t.Run("not followed", func(t *testing.T) {
		resp, err := get(t, c, srv.URL+"/r/2", 0)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != 303 || resp.Location == nil || resp.Location.String() != srv.URL+"/r/1?x=1" || resp.Redirects != 0 {
			t.Fatalf("status %d location %v", resp.Status, resp.Location)
		}
	})
	t.Run("hop limit", func(t *testing.T) {
		before := hits.Load()
		_, err := get(t, c, srv.URL+"/r/4", 2)
		if !errors.Is(err, ErrTooManyRedirects) || Classify(err) != OutcomeTooManyRedirects {
			t.Fatalf("error %v, want ErrTooManyRedirects", err)
		}
		if n := hits.Load() - before; n != 3 {
			t.Fatalf("%d requests for a 2-redirect limit, want 3", n)
		}
	})
	t.Run("CheckHop veto", func(t *testing.T) {
		veto := errors.New("off limits")
		var seen []string
		req := &Request{URL: mustURL(t, srv.URL+"/r/3"), FollowRedirects: 10, CheckHop: func(u *url.URL) error {
			seen = append(seen, u.Path)
			if u.Path == "/r/1" {
				return veto
			}
			return nil
		}}
		before := hits.Load()
		_, err := c.Fetch(context.Background(), req)
		if !errors.Is(err, veto) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("error %v, want the veto", err)
		}
		if strings.Join(seen, ",") != "/r/2,/r/1" || hits.Load()-before != 2 {
			t.Fatalf("hops checked %v, requests %d", seen, hits.Load()-before)
		}
	})
}

func TestRedirectEdgeCases(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ftp":
			w.Header().Set("Location", "ftp://example.com/file")
			w.WriteHeader(302)
		case "/no-location":
			w.WriteHeader(302)
		case "/bad-location":
			w.Header().Set("Location", "http://[::1/")
			w.WriteHeader(301)
		case "/not-modified":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(304)
		}
	})
	c := newClient(t, Config{AllowPrivate: true})
	if _, err := get(t, c, srv.URL+"/ftp", 5); err == nil || !strings.Contains(err.Error(), "unsupported scheme") {
		t.Errorf("redirect to ftp: %v", err)
	}
	for _, path := range []string{"/no-location", "/bad-location"} {
		resp, err := get(t, c, srv.URL+path, 5)
		if err != nil || resp.Status/100 != 3 || resp.Location != nil || resp.Redirects != 0 {
			t.Errorf("%s: %+v, %v; want the 3xx as is without Location", path, resp, err)
		}
	}
	resp, err := get(t, c, srv.URL+"/not-modified", 5)
	if err != nil || resp.Status != 304 || resp.Location == nil {
		t.Errorf("304 is not followed but keeps its Location: %+v, %v", resp, err)
	}
}

func TestRedirectDropsCredentialsAcrossHosts(t *testing.T) {
	var gotAuth atomic.Value
	other := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Authorization") + "|" + r.Header.Get("X-Keep"))
	})
	first := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "secret" {
			t.Errorf("first hop lost its Authorization header")
		}
		http.Redirect(w, r, other.URL+"/", 302)
	})
	c := newClient(t, Config{AllowPrivate: true})
	_, err := c.Fetch(context.Background(), &Request{URL: mustURL(t, first.URL), FollowRedirects: 1,
		Header: http.Header{"Authorization": {"secret"}, "X-Keep": {"yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := gotAuth.Load(); got != "|yes" {
		t.Fatalf("second host saw %q, want no Authorization and X-Keep", got)
	}
}

func TestForbiddenAddresses(t *testing.T) {
	var hits atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	lookup := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	check := func(t *testing.T, c *Client, raw string) {
		t.Helper()
		_, err := get(t, c, raw, 5)
		if !errors.Is(err, ErrForbiddenAddress) || Classify(err) != OutcomeForbiddenAddress {
			t.Fatalf("Fetch(%s) error %v, want ErrForbiddenAddress", raw, err)
		}
		if !strings.Contains(err.Error(), "--allow-private") || !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("error %q does not explain what to do", err)
		}
	}
	t.Run("literal IP", func(t *testing.T) {
		check(t, newClient(t, Config{}), srv.URL)
	})
	t.Run("name resolving to loopback", func(t *testing.T) {
		check(t, newClient(t, Config{Lookup: lookup}), fmt.Sprintf("http://rebind.test:%d/", port))
	})
	t.Run("resolve override to loopback", func(t *testing.T) {
		check(t, newClient(t, Config{Resolve: []string{"over.test:*:127.0.0.1"}}), fmt.Sprintf("http://over.test:%d/", port))
	})
	t.Run("IPv6 loopback", func(t *testing.T) {
		check(t, newClient(t, Config{}), fmt.Sprintf("http://[::1]:%d/", port))
	})
	if hits.Load() != 0 {
		t.Fatalf("the server was reached %d times", hits.Load())
	}
	t.Run("allowed with AllowPrivate", func(t *testing.T) {
		resp, err := get(t, newClient(t, Config{AllowPrivate: true, Lookup: lookup}), fmt.Sprintf("http://rebind.test:%d/", port), 0)
		if err != nil || resp.Status != 200 {
			t.Fatalf("%v %v", resp, err)
		}
	})
}

// TestForbiddenAfterRedirect starts on an allowed address and is redirected
// to a forbidden one: the guard must stop the second connection. Here the
// policy forbids only 127.0.0.2 so the first hop can be on loopback.
func TestForbiddenAfterRedirect(t *testing.T) {
	var reached atomic.Bool
	inner := serveOn(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) { reached.Store(true) })
	innerPort := inner.Listener.Addr().(*net.TCPAddr).Port
	outer := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-ip":
			http.Redirect(w, r, inner.URL+"/", 302)
		case "/to-name":
			http.Redirect(w, r, fmt.Sprintf("http://inside.test:%d/", innerPort), 302)
		}
	})
	c := newClient(t, Config{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
	}})
	c.policy = func(a netip.Addr) string {
		if a == netip.MustParseAddr("127.0.0.2") {
			return "private"
		}
		return ""
	}
	for _, path := range []string{"/to-ip", "/to-name"} {
		_, err := get(t, c, outer.URL+path, 5)
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Fatalf("%s: error %v, want ErrForbiddenAddress", path, err)
		}
	}
	if reached.Load() {
		t.Fatal("the forbidden server was reached")
	}
}

func TestDialTriesAddressesInOrder(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	// Nothing listens on 127.0.0.3:port, so the first address is refused.
	c := newClient(t, Config{AllowPrivate: true, Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.1")}, nil
	}})
	resp, err := get(t, c, fmt.Sprintf("http://multi.test:%d/", port), 0)
	if err != nil {
		t.Fatal(err)
	}
	if resp.RemoteAddr != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Fatalf("RemoteAddr %q", resp.RemoteAddr)
	}
}

func TestResolveEntries(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Host) })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	c := newClient(t, Config{AllowPrivate: true,
		Resolve: []string{
			"*:*:127.0.0.3", // nothing listens there
			fmt.Sprintf("exact.test:%d:127.0.0.1", port),
			"*.wild.test:*:127.0.0.1",
		},
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			t.Errorf("DNS asked for %q despite the overrides", host)
			return nil, errors.New("unexpected")
		},
	})
	for _, host := range []string{"exact.test", "a.wild.test", "a.b.wild.test"} {
		resp, err := get(t, c, fmt.Sprintf("http://%s:%d/", host, port), 0)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if want := fmt.Sprintf("%s:%d", host, port); string(resp.Body) != want || resp.RemoteAddr != srv.Listener.Addr().String() {
			t.Fatalf("%s: body %q remote %q", host, resp.Body, resp.RemoteAddr)
		}
	}
	_, err := get(t, c, fmt.Sprintf("http://other.test:%d/", port), 0)
	if Classify(err) != OutcomeRefused {
		t.Fatalf("catch-all entry: %v (%s), want refused at 127.0.0.3", err, Classify(err))
	}
}

func TestDNSFailure(t *testing.T) {
	var calls atomic.Int32
	c := newClient(t, Config{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		calls.Add(1)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}})
	for range 3 {
		_, err := get(t, c, "http://nowhere.test/", 0)
		if Classify(err) != OutcomeDNS {
			t.Fatalf("error %v (%s), want dns", err, Classify(err))
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d look-ups, want 1 (negative cache)", calls.Load())
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = get(t, newClient(t, Config{AllowPrivate: true}), "http://"+addr+"/", 0)
	if Classify(err) != OutcomeRefused {
		t.Fatalf("error %v (%s), want refused", err, Classify(err))
	}
}

func TestContentEncodings(t *testing.T) {
	const text = "<html><body>compressed body, compressed body, compressed body</body></html>"
	compress := map[string]func(io.Writer) io.WriteCloser{
		"gzip":    func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) },
		"br":      func(w io.Writer) io.WriteCloser { return brotli.NewWriter(w) },
		"deflate": func(w io.Writer) io.WriteCloser { return zlib.NewWriter(w) },
		"raw-deflate": func(w io.Writer) io.WriteCloser {
			fw, _ := flate.NewWriter(w, flate.DefaultCompression)
			return fw
		},
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		w.Header().Set("Content-Type", "text/html")
		switch name {
		case "identity":
			fmt.Fprint(w, text)
			return
		case "empty":
			w.Header().Set("Content-Encoding", "gzip")
			return
		case "gzip,br":
			w.Header().Set("Content-Encoding", "gzip, br")
			bw := brotli.NewWriter(w)
			gw := gzip.NewWriter(bw)
			io.WriteString(gw, text)
			gw.Close()
			bw.Close()
			return
		case "zstd":
			w.Header().Set("Content-Encoding", "zstd")
			fmt.Fprint(w, "whatever")
			return
		case "corrupt":
			w.Header().Set("Content-Encoding", "gzip")
			fmt.Fprint(w, "not gzip at all")
			return
		}
		enc := name
		if name == "raw-deflate" {
			enc = "deflate"
		}
		w.Header().Set("Content-Encoding", enc)
		cw := compress[name](w)
		io.WriteString(cw, text)
		cw.Close()
	})
	c := newClient(t, Config{AllowPrivate: true})
	for _, name := range []string{"identity", "gzip", "br", "deflate", "raw-deflate", "gzip,br"} {
		resp, err := get(t, c, srv.URL+"/"+name, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(resp.Body) != text {
			t.Fatalf("%s: body %q", name, resp.Body)
		}
	}
	if resp, err := get(t, c, srv.URL+"/empty", 0); err != nil || len(resp.Body) != 0 {
		t.Fatalf("empty gzip body: %v %v", resp, err)
	}
	for _, name := range []string{"zstd", "corrupt"} {
		if _, err := get(t, c, srv.URL+"/"+name, 0); err == nil {
			t.Fatalf("%s: no error", name)
		}
	}
}

func TestBodyCap(t *testing.T) {
	const limit = 64 << 10
	// One gzip member of 1 MiB of zeros, repeated 1024 times: a 1 GiB bomb
	// in about 1 MiB on the wire (gzip readers read concatenated members).
	var member bytes.Buffer
	gw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	gw.Write(make([]byte, 1<<20))
	gw.Close()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/bomb":
			w.Header().Set("Content-Encoding", "gzip")
			for range 1024 {
				if _, err := w.Write(member.Bytes()); err != nil {
					return
				}
			}
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 3*limit))
		case "/exact":
			w.Write(bytes.Repeat([]byte("x"), limit))
		}
	})
	c := newClient(t, Config{AllowPrivate: true, MaxBodyBytes: limit})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := get(t, c, srv.URL+"/bomb", 0)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Truncated || len(resp.Body) != limit {
		t.Fatalf("bomb: truncated %v, %d bytes; want truncated at %d", resp.Truncated, len(resp.Body), limit)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("decoding the bomb allocated %d MiB: not bounded by the cap", alloc>>20)
	}
	resp, err = get(t, c, srv.URL+"/big", 0)
	if err != nil || !resp.Truncated || len(resp.Body) != limit {
		t.Fatalf("big: %v, truncated %v, %d bytes", err, resp.Truncated, len(resp.Body))
	}
	resp, err = get(t, c, srv.URL+"/exact", 0)
	if err != nil || resp.Truncated || len(resp.Body) != limit {
		t.Fatalf("exact: %v, truncated %v, %d bytes", err, resp.Truncated, len(resp.Body))
	}
}

func TestCharsets(t *testing.T) {
	gbk, _ := simplifiedchinese.GBK.NewEncoder().Bytes([]byte("中文网页"))
	big5, _ := traditionalchinese.Big5.NewEncoder().Bytes([]byte("繁體中文"))
	sjis, _ := japanese.ShiftJIS.NewEncoder().Bytes([]byte("日本語"))
	pages := map[string]struct {
		contentType string
		body        []byte
	}{
		"/gbk-header":   {"text/html; charset=gbk", append([]byte("<p>"), gbk...)},
		"/gbk-meta":     {"text/html", append([]byte(`<meta charset="gb2312"><p>`), gbk...)},
		"/big5-header":  {"text/html; charset=Big5", append([]byte("<p>"), big5...)},
		"/big5-meta":    {"text/html", append([]byte(`<meta http-equiv="Content-Type" content="text/html; charset=big5"><p>`), big5...)},
		"/sjis-header":  {"text/html; charset=Shift_JIS", append([]byte("<p>"), sjis...)},
		"/sjis-meta":    {"text/html", append([]byte(`<META HTTP-EQUIV=Content-Type CONTENT="text/html; charset=shift_jis"><p>`), sjis...)},
		"/utf8-sniffed": {"text/html", []byte("<p>中文网页")},
	}
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		p := pages[r.URL.Path]
		w.Header().Set("Content-Type", p.contentType)
		w.Write(p.body)
	})
	c := newClient(t, Config{AllowPrivate: true})
	tests := []struct{ path, charset, text string }{
		{"/gbk-header", "gbk", "<p>中文网页"},
		{"/gbk-meta", "gbk", `<meta charset="gb2312"><p>中文网页`},
		{"/big5-header", "big5", "<p>繁體中文"},
		{"/big5-meta", "big5", `<meta http-equiv="Content-Type" content="text/html; charset=big5"><p>繁體中文`},
		{"/sjis-header", "shift_jis", "<p>日本語"},
		{"/sjis-meta", "shift_jis", `<META HTTP-EQUIV=Content-Type CONTENT="text/html; charset=shift_jis"><p>日本語`},
		{"/utf8-sniffed", "utf-8", "<p>中文网页"},
	}
	for _, tt := range tests {
		resp, err := get(t, c, srv.URL+tt.path, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(resp.Body, pages[tt.path].body) {
			t.Fatalf("%s: Body was altered", tt.path)
		}
		got, err := resp.UTF8()
		if err != nil || resp.Charset != tt.charset || string(got) != tt.text {
			t.Errorf("%s: charset %q UTF8 %q, %v; want %q %q", tt.path, resp.Charset, got, err, tt.charset, tt.text)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/seconds":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(503)
		case "/date":
			w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			w.WriteHeader(429)
		case "/none":
			w.WriteHeader(503)
		}
	})
	c := newClient(t, Config{AllowPrivate: true})
	resp, err := get(t, c, srv.URL+"/seconds", 0)
	if err != nil || resp.Status != 503 || resp.RetryAfter != 120*time.Second {
		t.Fatalf("seconds: %v %v", resp, err)
	}
	resp, err = get(t, c, srv.URL+"/date", 0)
	if err != nil || resp.Status != 429 || resp.RetryAfter < 58*time.Minute || resp.RetryAfter > time.Hour {
		t.Fatalf("date: RetryAfter %v, %v", resp.RetryAfter, err)
	}
	resp, err = get(t, c, srv.URL+"/none", 0)
	if err != nil || resp.RetryAfter != 0 {
		t.Fatalf("none: %v %v", resp, err)
	}
}

func TestFirstByteTimeout(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	c := newClient(t, Config{AllowPrivate: true, FirstByteTimeout: 150 * time.Millisecond})
	start := time.Now()
	_, err := get(t, c, srv.URL, 0)
	if Classify(err) != OutcomeTimeout {
		t.Fatalf("error %v (%s), want timeout", err, Classify(err))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestTotalTimeout(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		for range 100 {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	c := newClient(t, Config{AllowPrivate: true, TotalTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := get(t, c, srv.URL, 0)
	if Classify(err) != OutcomeTimeout {
		t.Fatalf("error %v (%s), want timeout", err, Classify(err))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
	// A cancelled caller is "canceled", not "timeout".
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = c.Fetch(ctx, &Request{URL: mustURL(t, srv.URL)})
	if Classify(err) != OutcomeCanceled {
		t.Fatalf("cancelled fetch: %v (%s), want canceled", err, Classify(err))
	}
}

// TestConnectTimeout fills the accept queue of a listener that never
// accepts, so that the kernel drops further SYNs and connects hang.
func TestConnectTimeout(t *testing.T) {
	addr := fullListener(t)
	c := newClient(t, Config{AllowPrivate: true, ConnectTimeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := get(t, c, "http://"+addr+"/", 0)
	if Classify(err) != OutcomeTimeout {
		t.Fatalf("error %v (%s), want timeout", err, Classify(err))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestConnectionReset(t *testing.T) {
	gotHeaders := make(chan struct{}, 1)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		if r.URL.Path == "/mid-body" {
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly a few bytes")
			buf.Flush()
			// Reset only once the client has the headers, so the reset lands in the
			// body (a reset before the client read anything would test the other path).
			select {
			case <-gotHeaders:
			case <-time.After(10 * time.Second): // bounds a client that never reads; not a synchronisation
				t.Error("the client did not read the answer's headers in 10 s")
			}
		}
		conn.(*net.TCPConn).SetLinger(0) // close with RST
		conn.Close()
	})
	c := newClient(t, Config{AllowPrivate: true})
	for _, path := range []string{"/before-headers", "/mid-body"} {
		trace := &httptrace.ClientTrace{GotFirstResponseByte: func() {
			select {
			case gotHeaders <- struct{}{}:
			default:
			}
		}}
		ctx := httptrace.WithClientTrace(context.Background(), trace)
		_, err := c.Fetch(ctx, &Request{URL: mustURL(t, srv.URL+path)})
		if Classify(err) != OutcomeReset {
			t.Errorf("%s: error %v (%s), want reset", path, err, Classify(err))
		}
		if body := strings.Contains(fmt.Sprint(err), "reading the body"); body != (path == "/mid-body") {
			t.Errorf("%s: error %v: reset while reading the body %v, want %v", path, err, body, path == "/mid-body")
		}
	}
}

func TestHTTP2AndTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsCfg.RootCAs = pool

	h2 := newClient(t, Config{AllowPrivate: true, TLSConfig: tlsCfg})
	resp, err := get(t, h2, srv.URL, 0)
	if err != nil || resp.Proto != "HTTP/2.0" || string(resp.Body) != "HTTP/2.0" {
		t.Fatalf("h2: %v %v", resp, err)
	}
	if !bytes.HasPrefix(resp.RawHeader, []byte("HTTP/2.0 200 OK\r\n")) {
		t.Fatalf("h2 raw header %q", resp.RawHeader)
	}
	h1 := newClient(t, Config{AllowPrivate: true, TLSConfig: tlsCfg, DisableHTTP2: true})
	resp, err = get(t, h1, srv.URL, 0)
	if err != nil || resp.Proto != "HTTP/1.1" || string(resp.Body) != "HTTP/1.1" {
		t.Fatalf("h1: %v %v", resp, err)
	}
	_, err = get(t, newClient(t, Config{AllowPrivate: true}), srv.URL, 0)
	if Classify(err) != OutcomeTLS {
		t.Fatalf("untrusted certificate: %v (%s), want tls", err, Classify(err))
	}
}

func TestKeepAlive(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newClient(t, Config{AllowPrivate: true})
	for range 5 {
		if _, err := get(t, c, srv.URL, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 sequential fetches, want 1", n)
	}
}

func TestRobotsFetch(t *testing.T) {
	big := bytes.Repeat([]byte("# comment line\n"), 50_000) // 750 KB
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err == nil {
			if n > 0 {
				http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), 301)
				return
			}
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
			return
		}
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow:\n")
		case "/big":
			w.Write(big)
		default:
			http.NotFound(w, r)
		}
	})
	c := newClient(t, Config{AllowPrivate: true, MaxBodyBytes: 1 << 20})
	var fetchFunc func(context.Context, *url.URL) (int, []byte, error) = c.RobotsFetch
	ctx := context.Background()

	status, body, err := fetchFunc(ctx, mustURL(t, srv.URL+"/robots.txt"))
	if err != nil || status != 200 || string(body) != "User-agent: *\nDisallow:\n" {
		t.Fatalf("plain: %d %q %v", status, body, err)
	}
	status, body, err = fetchFunc(ctx, mustURL(t, srv.URL+"/hop/5"))
	if err != nil || status != 200 || !strings.Contains(string(body), "/private") {
		t.Fatalf("5 redirects: %d %q %v", status, body, err)
	}
	status, _, err = fetchFunc(ctx, mustURL(t, srv.URL+"/hop/6"))
	if err != nil || status != 301 {
		t.Fatalf("6 redirects: %d %v; want the last 301 without error", status, err)
	}
	status, body, err = fetchFunc(ctx, mustURL(t, srv.URL+"/big"))
	if err != nil || status != 200 || len(body) != robotsMaxBody {
		t.Fatalf("big: %d, %d bytes, %v; want %d bytes", status, len(body), err, robotsMaxBody)
	}
	status, _, err = fetchFunc(ctx, mustURL(t, srv.URL+"/missing"))
	if err != nil || status != 404 {
		t.Fatalf("missing: %d %v", status, err)
	}
}

func TestMetrics(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "hello")
	})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	reg := prometheus.NewRegistry()
	c, err := New(Config{AllowPrivate: true, Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	for _, p := range []string{"/", "/", "/missing"} {
		if _, err := get(t, c, fmt.Sprintf("http://m.test:%d%s", port, p), 0); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			switch {
			case m.GetCounter() != nil:
				got[name] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				got[name] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"spider_fetch_requests_total{outcome=200}": 2,
		"spider_fetch_requests_total{outcome=404}": 1,
		"spider_fetch_duration_seconds":            3,
		"spider_fetch_dns_lookups_total":           1,
		"spider_fetch_dns_cache_hits_total":        0, // the connection is reused: no second look-up
		"spider_fetch_dns_failures_total":          0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if got["spider_fetch_bytes_total"] < 10 {
		t.Errorf("spider_fetch_bytes_total = %v", got["spider_fetch_bytes_total"])
	}
}

// TestHostileContentLength: a server announces a huge body (1e15 bytes,
// 4e9 bytes) and sends a few bytes or none. The client must neither panic
// nor allocate for the announced size: the buffer is pre-sized from
// Content-Length by at most 1 MiB and grows with the bytes that arrive.
func TestHostileContentLength(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		cl := strings.TrimPrefix(r.URL.Path, "/")
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %s\r\n\r\n", cl)
		if r.URL.Query().Get("body") != "" {
			buf.WriteString("<html><title>short</title></html>")
		}
		buf.Flush()
	})
	for _, maxBody := range []int64{10 << 20, MaxBodyLimit} {
		c := newClient(t, Config{AllowPrivate: true, MaxBodyBytes: maxBody})
		for _, path := range []string{"/1000000000000000", "/1000000000000000?body=1", "/4000000000", "/4000000000?body=1", "/1000000000", "/1000000000?body=1", "/9223372036854775807"} {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			resp, err := get(t, c, srv.URL+path, 0)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Errorf("max %d, Content-Length %s: a body cut short was accepted (%d bytes)", maxBody, path, len(resp.Body))
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("max %d, Content-Length %s: allocated %d MiB for a body of at most 34 bytes", maxBody, path, alloc>>20)
			}
		}
	}
}

func TestReadCappedPresize(t *testing.T) {
	for _, tt := range []struct {
		max, hint int64
		body      string
	}{
		{10, 1 << 62, "0123456789abc"},
		{math.MaxInt64, math.MaxInt64, "abc"},
		{math.MaxInt64, 0, "abc"},
		{0, 5, "abc"},
		{1 << 30, 1 << 40, ""},
	} {
		body, truncated, err := readCapped(strings.NewReader(tt.body), tt.max, tt.hint)
		want := tt.body[:min(int64(len(tt.body)), tt.max)]
		if err != nil || string(body) != want || truncated != (int64(len(tt.body)) > tt.max) {
			t.Errorf("readCapped(%q, max %d, hint %d) = %q, %v, %v", tt.body, tt.max, tt.hint, body, truncated, err)
		}
		if cap(body) > 2*maxPresize+len(tt.body)*2+64 {
			t.Errorf("readCapped(max %d, hint %d): buffer of %d bytes for %d", tt.max, tt.hint, cap(body), len(tt.body))
		}
	}
}

func TestNewRefusesHostileConfig(t *testing.T) {
	for _, cfg := range []Config{
		{MaxBodyBytes: MaxBodyLimit + 1},
		{UserAgent: "spider/1\r\nX-Injected: 1"},
		{UserAgent: "spider/1\n"},
		{UserAgent: "spider\x00"},
		{UserAgent: "spider\x7f"},
		{UserAgent: "spider\tbot"},
	} {
		if _, err := New(cfg, nil, nil); err == nil || !strings.HasPrefix(err.Error(), "cannot configure the fetcher") {
			t.Errorf("New(%q, %d) error = %v, want refused", cfg.UserAgent, cfg.MaxBodyBytes, err)
		}
	}
	if _, err := New(Config{UserAgent: "spider/1 (+https://example.org/bot; ü)", MaxBodyBytes: MaxBodyLimit}, nil, nil); err != nil {
		t.Errorf("a printable user agent and the largest body cap: %v", err)
	}
}

// TestRawBody checks Response.Raw, the body as transferred for WARC: the
// content-coded bytes exactly as the server wrote them (not the decoded
// text), the same slice as Body without a content coding, capped like Body
// (a gzip bomb's Raw stays within the cap), a chunked answer's
// Transfer-Encoding named in RawHeader, and an encoded body's Raw kept only
// with Config.KeepRaw.
func TestRawBody(t *testing.T) {
	const text = "<html><body>raw body, raw body, raw body, raw body</body></html>"
	const limit = 64 << 10
	var gz, br bytes.Buffer
	gw := gzip.NewWriter(&gz)
	io.WriteString(gw, text)
	gw.Close()
	bw := brotli.NewWriter(&br)
	io.WriteString(bw, text)
	bw.Close()
	var member bytes.Buffer
	mw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	mw.Write(make([]byte, 1<<20))
	mw.Close()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", fmt.Sprint(gz.Len()))
			w.Write(gz.Bytes())
		case "/br-chunked": // no Content-Length and a flush: chunked
			w.Header().Set("Content-Encoding", "br")
			w.Write(br.Bytes()[:3])
			w.(http.Flusher).Flush()
			w.Write(br.Bytes()[3:])
		case "/identity":
			io.WriteString(w, text)
		case "/bomb":
			w.Header().Set("Content-Encoding", "gzip")
			for range 1024 {
				if _, err := w.Write(member.Bytes()); err != nil {
					return
				}
			}
		}
	})
	c := newClient(t, Config{AllowPrivate: true, MaxBodyBytes: limit, KeepRaw: true})
	for _, tc := range []struct {
		path    string
		wire    []byte
		chunked bool
	}{{"/gzip", gz.Bytes(), false}, {"/br-chunked", br.Bytes(), true}, {"/identity", []byte(text), false}} {
		resp, err := get(t, c, srv.URL+tc.path, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if string(resp.Body) != text || !bytes.Equal(resp.Raw, tc.wire) || resp.RawTruncated {
			t.Fatalf("%s: body %q, raw %q (truncated %v), want raw %q", tc.path, resp.Body, resp.Raw, resp.RawTruncated, tc.wire)
		}
		if got := bytes.Contains(resp.RawHeader, []byte("\r\nTransfer-Encoding: chunked\r\n")); got != tc.chunked {
			t.Fatalf("%s: RawHeader names chunked: %v, want %v:\n%s", tc.path, got, tc.chunked, resp.RawHeader)
		}
		if tc.path == "/identity" && &resp.Raw[0] != &resp.Body[0] {
			t.Fatal("identity: Raw is a copy of Body, want the same bytes")
		}
	}
	resp, err := get(t, c, srv.URL+"/bomb", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Truncated || !resp.RawTruncated || len(resp.Raw) > limit || len(resp.Raw) == 0 {
		t.Fatalf("bomb: truncated %v, raw truncated %v, %d raw bytes; want both truncated, raw within %d", resp.Truncated, resp.RawTruncated, len(resp.Raw), limit)
	}
	if !bytes.HasPrefix(member.Bytes(), resp.Raw[:min(len(resp.Raw), member.Len())]) {
		t.Fatal("bomb: Raw does not start with the bytes sent")
	}

	// Without KeepRaw an encoded body's Raw is not kept; a plain one's is
	// the body.
	c = newClient(t, Config{AllowPrivate: true, MaxBodyBytes: limit})
	if resp, err := get(t, c, srv.URL+"/gzip", 0); err != nil || resp.Raw != nil || string(resp.Body) != text {
		t.Fatalf("gzip without KeepRaw: raw %d bytes, body %q, %v", len(resp.Raw), resp.Body, err)
	}
	if resp, err := get(t, c, srv.URL+"/identity", 0); err != nil || string(resp.Raw) != text {
		t.Fatalf("identity without KeepRaw: raw %q, %v", resp.Raw, err)
	}
}
