package fetch

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// TestStream: the body comes content-decoded and unread into memory; a
// reader that stops early ends the exchange without reading the rest (the
// server sees its writes fail); redirects are followed; a failed request is
// an *Error.
func TestStream(t *testing.T) {
	var wrote atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/xml")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, "<urlset>hello</urlset>")
		zw.Close()
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		bw := bufio.NewWriter(w)
		line := strings.Repeat("x", 1023) + "\n"
		for range 1 << 20 { // 1 GiB, unless the client goes away
			if _, err := bw.WriteString(line); err != nil {
				return
			}
			wrote.Add(int64(len(line)))
		}
	})
	mux.Handle("/moved", http.RedirectHandler("/gz", http.StatusMovedPermanently))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := newClient(t, Config{AllowPrivate: true})
	get := func(path string, follow int, fn func(*Response, io.Reader) error) error {
		u, _ := url.Parse(srv.URL + path)
		return c.Stream(context.Background(), &Request{URL: u, FollowRedirects: follow}, fn)
	}

	for _, path := range []string{"/gz", "/moved"} {
		var body string
		var resp *Response
		if err := get(path, 2, func(r *Response, b io.Reader) error {
			resp = r
			bb, err := io.ReadAll(b)
			body = string(bb)
			return err
		}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if body != "<urlset>hello</urlset>" || resp.Status != 200 || resp.ContentType != "application/xml" || resp.Body != nil || !strings.HasSuffix(resp.FinalURL.Path, "/gz") {
			t.Errorf("%s: body %q, response %+v", path, body, resp)
		}
	}

	stop := errors.New("enough")
	err := get("/endless", 0, func(r *Response, b io.Reader) error {
		_, err := io.ReadFull(b, make([]byte, 64<<10))
		if err != nil {
			return err
		}
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("endless: %v, want fn's own error", err)
	}
	if n := wrote.Load(); n > 64<<20 {
		t.Errorf("the server wrote %d MiB for a reader that took 64 KiB", n>>20)
	}

	err = get("/moved", 0, func(r *Response, b io.Reader) error {
		if r.Status != 301 || r.Location == nil {
			t.Errorf("not followed: %+v", r)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	u, _ := url.Parse("http://127.0.0.1:1/closed")
	var fe *Error
	if err := c.Stream(context.Background(), &Request{URL: u}, func(*Response, io.Reader) error { return nil }); !errors.As(err, &fe) || fe.Outcome != OutcomeRefused {
		t.Errorf("closed port: %v", err)
	}
}

// TestStreamReusesConnection: an answer whose body fn leaves unread but
// which has little left (a 404 sitemap's error page, a short document) is
// drained, so the next request to the host reuses the connection; the crawl
// of a host whose /sitemap.xml is missing opened a second connection.
func TestStreamReusesConnection(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("<url/>", 100))
	})
	srv := httptest.NewUnstartedServer(mux) // unknown paths: 404 with a short page
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newClient(t, Config{AllowPrivate: true})
	for _, path := range []string{"/sitemap.xml", "/sitemap.xml", "/short", "/robots-sitemap.xml"} {
		u, _ := url.Parse(srv.URL + path)
		if err := c.Stream(context.Background(), &Request{URL: u}, func(*Response, io.Reader) error { return nil }); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 4 requests whose short bodies were left unread, want 1", n)
	}
}
