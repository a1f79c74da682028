package websim

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// nullWriter is a minimal http.ResponseWriter for handler benchmarks.
type nullWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *nullWriter) Header() http.Header         { return w.h }
func (w *nullWriter) WriteHeader(code int)        { w.status = code }
func (w *nullWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// benchURLs returns requests for articles, sections and index pages spread over hosts.
func benchURLs(w *Web, n int) []*http.Request {
	reqs := make([]*http.Request, 0, n)
	hosts := w.Hosts()
	for i := range n {
		id := (i * 7919) % w.shape.pages
		p := string(appendPath(nil, w.shape.pageRoute(id)))
		reqs = append(reqs, httptest.NewRequest(http.MethodGet, "http://"+hosts[(i*31)%len(hosts)]+":8080"+p, nil))
	}
	return reqs
}

func BenchmarkHandler(b *testing.B) {
	for _, profile := range []string{ProfileClean, ProfileHostile} {
		b.Run(profile, func(b *testing.B) {
			w, err := New(Config{Hosts: 1000, PagesPerHost: 100, Port: 8080, Profile: profile, LogCap: -1,
				Disable: FeatureSlow | FeatureHang | FeatureCompress})
			if err != nil {
				b.Fatal(err)
			}
			reqs := benchURLs(w, 4096)
			h := w.Handler()
			rw := &nullWriter{h: http.Header{}}
			bytes := 0
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				clear(rw.h)
				rw.n = 0
				h.ServeHTTP(rw, reqs[i%len(reqs)])
				bytes += rw.n
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(float64(bytes)/float64(i), "B/page")
		})
	}
}

// loadGen fetches every URL once with workers concurrent keep-alive clients and returns
// how many answered 200.
func loadGen(ctx context.Context, srv *Server, urls []string, workers int) (int, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Addr())
		},
		MaxIdleConns:        0, // no limit: every host keeps its connections
		MaxIdleConnsPerHost: workers,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var next, ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(urls) || ctx.Err() != nil {
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, urls[i], nil)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return int(ok.Load()), <-errs
}

func loadURLs(srv *Server, n int) []string {
	hosts := srv.Hosts()
	urls := make([]string, n)
	for i := range urls {
		id := (i / len(hosts)) % srv.shape.pages
		urls[i] = srv.URL(hosts[i%len(hosts)], string(appendPath(nil, srv.shape.pageRoute(id))))
	}
	return urls
}

func TestLoadGenerator(t *testing.T) {
	srv, err := Start(t.Context(), Config{Hosts: 50, PagesPerHost: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	urls := loadURLs(srv, 2000)
	start := time.Now()
	n, err := loadGen(t.Context(), srv, urls, 8)
	if err != nil || n != len(urls) {
		t.Fatalf("%d of %d pages answered 200: %v", n, len(urls), err)
	}
	if srv.Log().Len() != len(urls) || len(srv.Log().Duplicates()) != 0 {
		t.Fatalf("log has %d entries, %d duplicates", srv.Log().Len(), len(srv.Log().Duplicates()))
	}
	t.Logf("%d pages over loopback in %v (%.0f pages/s)", n, time.Since(start), float64(n)/time.Since(start).Seconds())
}

func BenchmarkLoopback(b *testing.B) {
	srv, err := Start(b.Context(), Config{Hosts: 200, PagesPerHost: 100, LogCap: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	urls := loadURLs(srv, 50_000)
	b.ResetTimer()
	total := 0
	start := time.Now()
	for b.Loop() {
		n, err := loadGen(b.Context(), srv, urls[:1000], 8)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "pages/s")
}
