package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

func TestServeRejectsBadInput(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "token")
	short := filepath.Join(t.TempDir(), "token")
	os.WriteFile(empty, []byte("\n"), 0o600)
	os.WriteFile(short, []byte("abc\n"), 0o600)
	shared := filepath.Join(t.TempDir(), "token")
	os.WriteFile(shared, []byte("0123456789abcdef0123456789abcdef\n"), 0o644)
	data := t.TempDir()
	// A crawl's directory (an empty crawl), so that the cases below reach
	// the check they name.
	if err := os.WriteFile(filepath.Join(data, store.RecordsFileName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nothing to serve", []string{"serve"}, 2, "--data DIR"},
		{"argument", []string{"serve", "--data", data, "extra"}, 2, "unexpected argument"},
		{"missing dir", []string{"serve", "--data", filepath.Join(data, "nope")}, 2, "nope does not exist"},
		{"dir without a crawl", []string{"serve", "--data", t.TempDir()}, 2, "holds no crawl"},
		{"empty token file", []string{"serve", "--data", data, "--token-file", empty}, 1, "is empty"},
		{"short token", []string{"serve", "--data", data, "--token-file", short, "--addr", "127.0.0.1:0"}, 1, "at least 16"},
		{"token readable by others", []string{"serve", "--data", data, "--token-file", shared}, 1, "chmod 600"},
		{"bad address", []string{"serve", "--data", data, "--addr", "256.1.1.1:80"}, 1, "cannot listen"},
		{"bad preload", []string{"serve", "--data", data, "--preload", "later"}, 2, "use background, wait or off"},
		{"bad cache size", []string{"serve", "--data", data, "--cache-size", "-2"}, 2, "--cache-size -1 (off)"},
		{"bad cache memory", []string{"serve", "--data", data, "--cache-mb", "0"}, 2, "--cache-mb 1 or more"},
		{"bad max searches", []string{"serve", "--data", data, "--max-searches", "-3"}, 2, "--max-searches -3"},
		{"bad doc maps", []string{"serve", "--data", data, "--doc-maps-mb", "-1"}, 2, "--doc-maps-mb -1: give 0 (no maps) or more"},
		{"bad cache ttl", []string{"serve", "--data", data, "--cache-ttl", "0s"}, 2, "positive --cache-ttl"},
		{"bad pprof address", []string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--pprof", "256.1.1.1:80"}, 1, "cannot listen on --pprof"},
		{"crawl: bad pprof address", []string{"crawl", "--data", data, "--pprof", "256.1.1.1:80", "http://a.test/"}, 1, "cannot listen on --pprof"},
		{"crawl --addr with --redis", []string{"crawl", "--data", data, "--addr", "127.0.0.1:0", "--redis", "redis://127.0.0.1:1", "http://a.test/"}, 2, "--addr serves an embedded crawl only"},
		{"crawl --addr with --mode layered", []string{"crawl", "--data", data, "--addr", "127.0.0.1:0", "--mode", "layered", "http://a.test/"}, 2, "--addr serves an embedded crawl only"},
		{"crawl --addr with --dedup protocol", []string{"crawl", "--data", data, "--addr", "127.0.0.1:0", "--dedup", "protocol", "http://a.test/"}, 2, "--addr serves an embedded crawl only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("code %d (want %d), stderr %q (want %q)", code, c.code, errOut, c.want)
			}
		})
	}
}

// process is a spider command run in-process (no binary to build) whose
// server address is read from its "serving on http://ADDR/" line.
type process struct {
	base   string
	out    syncBuffer // stdout and stderr
	done   chan error
	cancel context.CancelFunc
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingRE = regexp.MustCompile(`serving on (http://[^/ ]+)/`)

// startCommand runs a subcommand's run function until it returns or the
// test ends, and waits for its server's address.
func startCommand(t *testing.T, fn func(context.Context, []string, io.Writer, io.Writer) error, args ...string) *process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{done: make(chan error, 1), cancel: cancel}
	go func() { p.done <- fn(ctx, args, &p.out, &p.out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Error("the command did not end after its context was cancelled")
		}
	})
	// Poll the output (every 20 ms) for the address; the deadline fails the test.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := servingRE.FindStringSubmatch(p.out.String()); m != nil {
			p.base = m[1]
			return p
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%v exited before serving: %v\n%s", args, err, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v printed no address\n%s", args, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the command to return by itself, without error.
func (p *process) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("command failed: %v\n%s", err, p.out.String())
		}
	case <-time.After(d):
		t.Fatalf("command did not return within %s\n%s", d, p.out.String())
	}
}

func getJSON(t *testing.T, u string, v any) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode
}

func post(t *testing.T, u, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventually polls cond every 100 ms until it holds, and fails the test when it does not
// within d: a wait for a state of another goroutine or process, never a pass by default.
func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	defer func(start time.Time) { t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond)) }(time.Now())
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeEndToEnd: spider crawl --addr serves a live dashboard whose
// control endpoints pause, resume, add a seed and stop the crawl; then
// spider index builds the index and spider serve searches it.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds the binary, crawls, indexes")
	}
	web, err := websim.Start(context.Background(), websim.Config{Seed: 5, Hosts: 4, PagesPerHost: 80, ChineseShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	seeds := web.SeedURLs(2)
	data := t.TempDir()
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	os.WriteFile(resolve, []byte(strings.Join(web.Resolve(), "\n")), 0o600)
	const token = "e2e-token-0123456789abcdef"

	t.Setenv("SPIDER_TOKEN", token)
	crawl := startCommand(t, runCrawl, "--data", data, "--resolve-file", resolve, "--log-level", "info",
		"--allow-private", "--delay", "40ms", "--concurrency", "2", "--scope", "host", "--max-depth", "-1", "--addr", "127.0.0.1:0", seeds[0])
	if strings.Contains(crawl.out.String(), token) {
		t.Fatal("the token was printed")
	}
	var st server.CrawlStatus
	eventually(t, "pages on the dashboard API", time.Minute, func() bool {
		getJSON(t, crawl.base+"/api/crawl", &st)
		return st.Pages >= 5
	})
	if st.Source != "in-process" || st.State != "running" || !st.Control || st.Queue == nil {
		t.Fatalf("status %+v", st)
	}
	resp, err := http.Get(crawl.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"spider_pages_total", "spider_http_requests_total", "go_goroutines"} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics has no %s", want)
		}
	}

	if code, body := post(t, crawl.base+"/api/crawl/pause", "", ""); code != 401 {
		t.Fatalf("pause without token: %d %s", code, body)
	}
	if code, body := post(t, crawl.base+"/api/crawl/pause", token, ""); code != 200 {
		t.Fatalf("pause: %d %s", code, body)
	}
	eventually(t, "paused state with nothing in flight", 30*time.Second, func() bool {
		getJSON(t, crawl.base+"/api/crawl", &st)
		return st.State == "paused" && st.Queue.InFlight == 0
	})
	// Nothing in flight: every fetch's record reached the file before its lease ended,
	// and the dashboard must come to count them all.
	recs := int64(len(readRecords(t, data)))
	eventually(t, "the dashboard counting every record", 30*time.Second, func() bool {
		getJSON(t, crawl.base+"/api/crawl", &st)
		return st.Pages == recs
	})
	paused, requests := st.Pages, web.Log().Len()
	time.Sleep(1500 * time.Millisecond) // time is the subject: a paused crawl stays idle for a while
	if n := web.Log().Len(); n != requests {
		t.Fatalf("paused crawl made %d requests", n-requests)
	}
	if getJSON(t, crawl.base+"/api/crawl", &st); st.Pages != paused {
		t.Fatalf("paused crawl went from %d to %d pages", paused, st.Pages)
	}
	if code, body := post(t, crawl.base+"/api/crawl/seeds", token, `{"urls": ["javascript:alert(1)"]}`); code != 400 {
		t.Fatalf("bad seed: %d %s", code, body)
	}
	if code, body := post(t, crawl.base+"/api/crawl/seeds", token, fmt.Sprintf(`{"urls": [%q]}`, seeds[1])); code != 200 || !strings.Contains(body, `"added": 1`) {
		t.Fatalf("add seed: %d %s", code, body)
	}
	if code, body := post(t, crawl.base+"/api/crawl/resume", token, ""); code != 200 {
		t.Fatalf("resume: %d %s", code, body)
	}
	eventually(t, "the added seed in the records", time.Minute, func() bool {
		_, ok := readRecords(t, data)[seeds[1]]
		return ok
	})
	if code, body := post(t, crawl.base+"/api/crawl/stop", token, ""); code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	crawl.wait(t, time.Minute)
	if !strings.Contains(crawl.out.String(), "crawled") || strings.Contains(crawl.out.String(), token) {
		t.Fatalf("no summary after stop, or the token was printed: %q", crawl.out.String())
	}

	// Index what was crawled, then search it through spider serve.
	var indexOut bytes.Buffer
	if err := runIndex(context.Background(), []string{"--data", data}, &indexOut, &indexOut); err != nil {
		t.Fatalf("spider index: %v\n%s", err, indexOut.String())
	}
	word := titleWord(t, data)
	t.Setenv("SPIDER_TOKEN", "")
	srv := startCommand(t, runServe, "--data", data, "--addr", "127.0.0.1:0")
	var ans struct {
		Total int          `json:"total"`
		Hits  []server.Hit `json:"hits"`
	}
	if code := getJSON(t, srv.base+"/api/search?q="+url.QueryEscape(word)+"&explain=true", &ans); code != 200 || ans.Total == 0 || len(ans.Hits) == 0 {
		t.Fatalf("search %q: %d, %+v", word, code, ans)
	}
	resp, err = http.Get(srv.base + "/?q=" + url.QueryEscape(word))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte("<mark>")) || !bytes.Contains(page, []byte(ans.Hits[0].URL)) {
		t.Fatalf("search page for %q: %d\n%s", word, resp.StatusCode, page)
	}
	if code := getJSON(t, srv.base+"/api/crawl", &st); code != 200 || st.Source != "data-dir" || st.State != "stopped" || st.Pages == 0 {
		t.Fatalf("served data dir status: %d %+v", code, st)
	}
	if code, _ := post(t, srv.base+"/api/crawl/pause", "", ""); code != 403 {
		t.Fatalf("control on serve without a token: %d, want 403", code)
	}
	srv.cancel()
	srv.wait(t, 30*time.Second)
}

func readRecords(t *testing.T, dir string) map[string]store.Record {
	t.Helper()
	out := map[string]store.Record{}
	b, err := os.ReadFile(filepath.Join(dir, store.RecordsFileName))
	if err != nil {
		return out
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r store.Record
		if json.Unmarshal(line, &r) == nil {
			out[r.URL] = r
		}
	}
	return out
}

// titleWord picks the most frequent lower-case ASCII word (4+ letters) in
// the crawled titles: a query that surely has hits.
func titleWord(t *testing.T, dir string) string {
	t.Helper()
	counts := map[string]int{}
	for _, r := range readRecords(t, dir) {
		for _, w := range regexp.MustCompile(`[A-Za-z]{4,}`).FindAllString(r.Title, -1) {
			counts[strings.ToLower(w)]++
		}
	}
	var words []string
	for w := range counts {
		words = append(words, w)
	}
	sort.Slice(words, func(i, j int) bool {
		if counts[words[i]] != counts[words[j]] {
			return counts[words[i]] > counts[words[j]]
		}
		return words[i] < words[j]
	})
	if len(words) == 0 {
		t.Fatal("no word in the crawled titles")
	}
	return words[0]
}

// TestServeProfilerAndCaches: --pprof serves Go's profiler on its own
// listener only, and the cache counters are on /metrics.
func TestServeProfilerAndCaches(t *testing.T) {
	srv := startCommand(t, runServe, "--data", emptyCrawlDir(t), "--addr", "127.0.0.1:0", "--pprof", "127.0.0.1:0", "--preload", "off", "--cache-size", "100", "--cache-ttl", "5s")
	m := regexp.MustCompile(`pprof on (http://[^/ ]+)/`).FindStringSubmatch(srv.out.String())
	if m == nil {
		t.Fatalf("no pprof address printed:\n%s", srv.out.String())
	}
	for _, tc := range []struct {
		url  string
		code int
	}{
		{m[1] + "/debug/pprof/", 200},
		{m[1] + "/debug/pprof/goroutine?debug=1", 200},
		{srv.base + "/debug/pprof/", 404},
	} {
		resp, err := http.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s: %d, want %d", tc.url, resp.StatusCode, tc.code)
		}
	}
	resp, err := http.Get(srv.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(metrics, []byte(`spider_search_cache_requests_total{cache="page",result="miss"} 0`)) {
		t.Errorf("/metrics has no cache counters:\n%s", metrics)
	}
}
