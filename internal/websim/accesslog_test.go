package websim

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAccessLogMaxOpenAndMinGap(t *testing.T) {
	srv, c := startWeb(t, Config{Latency: 150 * time.Millisecond})
	// Five requests together to one host, one to another.
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustFetch(t, c, srv.URL("www.d0.test", "/s/1/?n="+string(rune('a'+i))))
		}()
	}
	wg.Wait()
	mustFetch(t, c, srv.URL("www.d1.test", "/"))
	log := srv.Log()
	if got := log.MaxOpen("www.d0.test"); got != 5 {
		t.Errorf("MaxOpen(www.d0.test) = %d, want 5", got)
	}
	if got := log.MaxOpen("WWW.D1.TEST:80"); got != 1 {
		t.Errorf("MaxOpen(www.d1.test) = %d, want 1", got)
	}
	if got := log.MaxOpen("nobody.test"); got != 0 {
		t.Errorf("MaxOpen of an unseen host = %d", got)
	}
	if gap, ok := log.MinGap("www.d0.test"); !ok || gap > 100*time.Millisecond {
		t.Errorf("MinGap of concurrent requests = %v, %v", gap, ok)
	}
	if _, ok := log.MinGap("www.d1.test"); ok {
		t.Error("MinGap with one request reports a gap")
	}
	for _, e := range log.HostEntries("www.d0.test") {
		if e.End.Sub(e.Time) < 150*time.Millisecond || e.Status != 200 || e.Bytes == 0 || e.Method != "GET" {
			t.Errorf("entry %+v", e)
		}
	}

	log.Reset()
	if log.Len() != 0 {
		t.Fatal("Reset kept entries")
	}
	// Sequential requests 250ms apart, robots.txt in between right after a
	// page. A loaded machine delays the robots.txt request, so it is only
	// required to come closer to its page than the pages to each other.
	srv2, c2 := startWeb(t, Config{})
	for i := range 3 {
		if i > 0 {
			time.Sleep(250 * time.Millisecond) // time is the subject: the gaps MinGap measures
		}
		mustFetch(t, c2, srv2.URL("www.d0.test", "/s/2/"))
		if i == 1 {
			mustFetch(t, c2, srv2.URL("www.d0.test", "/robots.txt"))
		}
	}
	l2 := srv2.Log()
	all, _ := l2.MinGap("www.d0.test")
	pages, _ := l2.MinGapFunc("www.d0.test", func(e Entry) bool { return e.Path != "/robots.txt" })
	if all >= pages || pages < 250*time.Millisecond {
		t.Errorf("MinGap = %v (robots.txt right after a page), MinGapFunc without robots.txt = %v", all, pages)
	}
	if got := l2.Count(srv2.URL("www.d0.test", "/s/2/")); got != 3 {
		t.Errorf("Count = %d, want 3", got)
	}
	if got := l2.Count("/s/2/"); got != 3 {
		t.Errorf("Count(path) = %d, want 3", got)
	}
	if d := l2.Duplicates(); d[srv2.URL("www.d0.test", "/s/2/")] != 3 || len(d) != 1 {
		t.Errorf("Duplicates = %v", d)
	}
	if hosts := l2.Hosts(); len(hosts) != 1 || hosts[0] != "www.d0.test" {
		t.Errorf("Hosts = %v", hosts)
	}
}

func TestAccessLogCapAndJSONLines(t *testing.T) {
	var buf safeBuffer
	srv, c := startWeb(t, Config{LogCap: 2, LogWriter: &buf})
	for _, p := range []string{"/", "/s/1/", "/about.html"} {
		mustFetch(t, c, srv.URL("news.d2.test", p), "User-Agent", "spider-test/2")
	}
	if srv.Log().Len() != 2 || srv.Log().Dropped() != 1 {
		t.Errorf("kept %d, dropped %d; want 2, 1", srv.Log().Len(), srv.Log().Dropped())
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d JSON lines, want 3", len(lines))
	}
	for _, line := range lines {
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Host != "news.d2.test" || e.UserAgent != "spider-test/2" || e.Status != 200 || !strings.HasPrefix(e.URL, "http://news.d2.test:") || e.OpenAtArrival != 1 {
			t.Errorf("entry %+v", e)
		}
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestPerIPListenersAndMisrouting(t *testing.T) {
	srv, err := Start(t.Context(), Config{Hosts: 3, PerIP: true})
	if err != nil {
		t.Skipf("cannot listen on 127.x addresses here: %v", err)
	}
	defer srv.Close()
	entries := srv.Resolve()
	if len(entries) != 3 {
		t.Fatalf("Resolve: %v", entries)
	}
	client := func(addr string) *http.Client {
		return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}}
	}
	for i, entry := range entries {
		host, port, addr, err := ParseResolve(entry)
		if err != nil || addr != HostAddr(i) || port != srv.Port() {
			t.Fatalf("entry %q: %v", entry, err)
		}
		resp, err := client(net.JoinHostPort(addr.String(), itoaPort(port))).Get(srv.URL(host, "/"))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s via %s: %v", host, addr, err)
		}
		resp.Body.Close()
	}
	// Entries are recorded after the answers were sent: wait for all three before
	// checking that none was misrouted.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := srv.Log().WaitFor(ctx, func(es []Entry) bool { return len(es) == len(entries) }); err != nil {
		t.Fatalf("the requests were never logged (%d entries): %v", srv.Log().Len(), err)
	}
	if srv.Log().Misrouted() != 0 {
		t.Fatalf("%d misrouted requests", srv.Log().Misrouted())
	}
	// Host 0 asked on host 1's address.
	_, _, wrong, _ := ParseResolve(entries[1])
	resp, err := client(net.JoinHostPort(wrong.String(), itoaPort(srv.Port()))).Get(srv.URL(srv.Hosts()[0], "/about.html"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("misrouted request not served: %v", err)
	}
	resp.Body.Close()
	// The entry is recorded after the answer was sent: wait for it.
	if err := srv.Log().WaitFor(ctx, func(es []Entry) bool { return len(es) == len(entries)+1 }); err != nil {
		t.Fatalf("the misrouted request was never logged (%d entries): %v", srv.Log().Len(), err)
	}
	if srv.Log().Misrouted() != 1 {
		t.Fatalf("Misrouted() = %d, want 1", srv.Log().Misrouted())
	}
}

func itoaPort(p int) string { return strings.TrimPrefix(portSuffix(p), ":") }

func TestAccessLogWaitFor(t *testing.T) {
	srv, c := startWeb(t, Config{})
	log := srv.Log()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := log.WaitFor(ctx, func(es []Entry) bool { return len(es) > 0 }); err == nil {
		t.Fatal("WaitFor on an empty log with a cancelled context returned nil")
	}
	if err := log.WaitFor(ctx, func(es []Entry) bool { return len(es) == 0 }); err != nil {
		t.Fatalf("WaitFor with a condition that holds: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		done <- log.WaitFor(ctx, func(es []Entry) bool { return len(es) == 2 })
	}()
	mustFetch(t, c, srv.URL("www.d0.test", "/"))
	mustFetch(t, c, srv.URL("www.d0.test", "/about.html"))
	if err := <-done; err != nil {
		t.Fatalf("WaitFor did not see two requests: %v", err)
	}
	if n := log.Len(); n != 2 {
		t.Fatalf("WaitFor returned with %d entries, want 2", n)
	}
}
