package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/websim"
)

// chromePath finds Chromium: $SPIDER_CHROME, else the usual names.
func chromePath() string {
	if p := os.Getenv("SPIDER_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts headless Chromium for one test, or skips the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromePath()
	if path == "" {
		t.Skip("no Chromium found: install it (apt-get install -y chromium) or set SPIDER_CHROME to run the browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("cannot start Chromium at %s: %v", path, err)
	}
	return ctx
}

// get runs one action and returns its value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// do runs actions that return nothing.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// screenshot saves a full-page PNG under $SPIDER_SCREENSHOTS (kept) or
// the test's temporary directory, and returns it.
func screenshot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	dir := os.Getenv("SPIDER_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return png
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// spiderBin builds the spider binary once for the test run.
func spiderBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spider-browser-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "spider")
		// Built in the main module (../..), with its own go.mod and go.sum.
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/spider")
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

var servingRE = regexp.MustCompile(`serving on (http://[^/ ]+)/`)

// startSpider runs spider with args and returns its server's base URL
// and a channel with its exit.
func startSpider(t *testing.T, env []string, args ...string) (string, *exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command(spiderBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw // serve prints its address on stdout, crawl on stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); done <- err }()
	t.Cleanup(func() { cmd.Process.Kill() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return a, cmd, done
	case err := <-done:
		t.Fatalf("spider %s exited: %v", args[0], err)
	case <-time.After(time.Minute):
		t.Fatalf("spider %s printed no address", args[0])
	}
	return "", nil, nil
}

// TestDashboardAndSearch watches the dashboard update in Chromium during
// a websim crawl (spider crawl --addr), stops the crawl, indexes it, and
// searches it through the search page in English and Chinese.
func TestDashboardAndSearch(t *testing.T) {
	ctx := newBrowser(t)
	web, err := websim.Start(context.Background(), websim.Config{Seed: 3, Hosts: 4, PagesPerHost: 100, ChineseShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	data := t.TempDir()
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(web.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "browser-test-token-0123456789"
	args := append([]string{"crawl", "--data", data, "--resolve-file", resolve,
		"--allow-private", "--delay", "50ms", "--concurrency", "2", "--scope", "any", "--max-depth", "-1",
		"--addr", "127.0.0.1:0"}, web.SeedURLs(4)...)
	base, _, done := startSpider(t, []string{"SPIDER_TOKEN=" + token}, args...)

	// The dashboard updates by itself: the page count grows without reload.
	do(t, ctx, chromedp.Navigate(base+"/dashboard"))
	waitJS(t, ctx, `document.querySelectorAll("#hosts tbody tr").length > 0`, time.Minute, "the host table")
	pages1 := get(t, ctx, chromedp.AttributeValue(`#summary`, "data-pages")).Value
	do(t, ctx, chromedp.Sleep(3*time.Second))
	pages2 := get(t, ctx, chromedp.AttributeValue(`#summary`, "data-pages")).Value
	ticks := get(t, ctx, chromedp.AttributeValue(`#updated`, "data-ticks")).Value
	state := get(t, ctx, chromedp.Text(`#state`))
	n1, _ := strconv.Atoi(pages1)
	n2, _ := strconv.Atoi(pages2)
	nt, _ := strconv.Atoi(ticks)
	if n2 <= n1 || nt < 3 || state != "running" {
		t.Fatalf("dashboard did not update live: pages %s → %s, %s polls, state %q", pages1, pages2, ticks, state)
	}
	if n := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#outcomes tbody tr").length`)); n == 0 {
		t.Fatal("no outcome rows")
	}
	png := screenshot(t, ctx, "dashboard.png")
	checkChart(t, ctx)
	checkHostRows(t, hostRows(t, ctx), true)
	// A plain crawl of a clean web: no nodes, no topics, no failures.
	shown := sectionsShown(t, ctx)
	for id, want := range map[string]bool{"chart-section": true, "hosts-section": true, "config-section": true, "queue-section": true, "outcomes-section": true,
		"nodes-section": false, "topics-section": false, "failures-section": false, "errors-section": false} {
		if shown[id] != want {
			t.Errorf("section %s shown: %v, want %v (all: %v)", id, shown[id], want, shown)
		}
	}
	checkNoBadText(t, ctx, "dashboard of a running crawl")
	checkPNG(t, "dashboard.png", png, 900)

	// Stop the crawl from the dashboard's control form.
	do(t, ctx, chromedp.SendKeys(`#token`, token), chromedp.Click(`#stop`))
	get(t, ctx, chromedp.Poll[bool](`document.getElementById("control-result").textContent.length > 0`))
	if result := get(t, ctx, chromedp.Text(`#control-result`)); result != "stop: done" {
		t.Fatalf("stop from the dashboard: %q", result)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crawl exited with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the crawl did not stop")
	}

	if out, err := exec.Command(spiderBin(t), "index", "--data", data).CombinedOutput(); err != nil {
		t.Fatalf("spider index: %v\n%s", err, out)
	}
	sbase, scmd, sdone := startSpider(t, nil, "serve", "--data", data, "--addr", "127.0.0.1:0")
	defer func() { scmd.Process.Signal(os.Interrupt); <-sdone }()

	// The dashboard of the data directory: hosts without the politeness
	// columns (no frontier here), no configuration (not recorded in it).
	do(t, ctx, chromedp.Navigate(sbase+"/dashboard"))
	waitJS(t, ctx, `document.getElementById("state").textContent === "stopped" && document.querySelectorAll("#hosts tbody tr").length > 0`, 30*time.Second, "the stopped crawl's dashboard")
	checkHostRows(t, hostRows(t, ctx), false)
	shown = sectionsShown(t, ctx)
	if shown["config-section"] || shown["nodes-section"] || shown["topics-section"] || shown["control"] || !shown["chart-section"] {
		t.Errorf("data-directory dashboard sections: %v", shown)
	}
	checkNoBadText(t, ctx, "dashboard of a data directory")
	png = screenshot(t, ctx, "dashboard_datadir.png")
	checkPNG(t, "dashboard_datadir.png", png, 900)

	for _, q := range []string{findQuery(t, sbase, data, false), findQuery(t, sbase, data, true)} {
		do(t, ctx, chromedp.Navigate(sbase+"/"), chromedp.WaitVisible(`#q`), chromedp.SendKeys(`#q`, q))
		// Results appear as one types, without submitting or reloading.
		get(t, ctx, chromedp.Poll[bool](`document.querySelectorAll("#results li.hit").length > 0 && document.getElementById("status").textContent.startsWith("Results")`))
		status := get(t, ctx, chromedp.Text(`#status`))
		hits := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#results li.hit").length`))
		marks := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#results mark").length`))
		title := get(t, ctx, chromedp.Text(`#results li.hit a.title`))
		if hits == 0 || marks == 0 || title == "" {
			t.Fatalf("search %q: %d hits, %d highlighted terms, first title %q, status %q", q, hits, marks, title, status)
		}
		t.Logf("search %q: %s; first: %s", q, status, title)
		name := "search_en.png"
		if strings.ContainsFunc(q, func(r rune) bool { return r > 0x2E80 }) {
			name = "search_zh.png"
		}
		screenshot(t, ctx, name)
	}
	// Rank signals on demand.
	do(t, ctx, chromedp.Click(`#signals`))
	get(t, ctx, chromedp.Poll[bool](`document.querySelectorAll("#results .signals").length > 0`))
	screenshot(t, ctx, "search_signals.png")
	// Paging without reload, when there is a next page.
	if get(t, ctx, chromedp.Evaluate[bool](`document.getElementById("next") !== null`)) {
		do(t, ctx, chromedp.Click(`#next`))
		get(t, ctx, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("Results 11")`))
	}
}

// findQuery finds a query with hits: a word of a crawled title, Chinese
// (two Han characters) or English (five letters or more), checked with
// the search API.
func findQuery(t *testing.T, base, data string, chinese bool) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`[a-z]{5,}`)
	if chinese {
		re = regexp.MustCompile(`\p{Han}{2}`)
	}
	tried := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		var r struct {
			Title string `json:"title"`
		}
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		for _, w := range re.FindAllString(strings.ToLower(r.Title), -1) {
			if tried[w] || len(tried) > 200 {
				continue
			}
			tried[w] = true
			var check struct {
				Total int `json:"total"`
			}
			resp, err := http.Get(base + "/api/search?q=" + url.QueryEscape(w))
			if err != nil {
				t.Fatal(err)
			}
			json.NewDecoder(resp.Body).Decode(&check)
			resp.Body.Close()
			if check.Total > 0 {
				return w
			}
		}
	}
	t.Fatalf("no query with hits among %d words of the crawled titles (chinese: %v)", len(tried), chinese)
	return ""
}

// xssSearcher returns hits whose crawled text tries to run script.
type xssSearcher struct{}

func (xssSearcher) Search(context.Context, server.SearchRequest) (*server.SearchResult, error) {
	return &server.SearchResult{Total: 3, Terms: []string{"xss"}, Hits: []server.Hit{
		{URL: "javascript:window.__xss='href'", Title: `<script>window.__xss='title'</script><img src=x onerror="window.__xss='img'">`,
			Snippet: []server.Fragment{{Text: `<img src=x onerror="window.__xss='snippet'">`}, {Text: "<script>window.__xss='mark'</script>", Match: true}}},
		{URL: `http://evil.test/"><img src=x onerror="window.__xss='attr'">`, Title: "attr"},
		{URL: "http://ok.test/", Title: "<svg onload=\"window.__xss='svg'\">", Explain: "<script>window.__xss='explain'</script>"},
	}}, nil
}

func (xssSearcher) Stats() server.IndexStats { return server.IndexStats{Docs: 3} }

// TestXSSInBrowser: crawled titles, snippets and URLs with script, in the
// server-rendered page and in the page the JavaScript renders, run nothing
// in a real browser, even when the link is clicked.
func TestXSSInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	srv, err := server.New(server.Options{Searcher: xssSearcher{}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	dialogs := make(chan string, 10)
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			select {
			case dialogs <- d.Message:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		select {
		case m := <-dialogs:
			t.Fatalf("%s: a dialog opened: %q", stage, m)
		default:
		}
		if xss := get(t, ctx, chromedp.Evaluate[string](`String(window.__xss || "")`)); xss != "" {
			t.Fatalf("%s: crawled content ran script (%s)", stage, xss)
		}
	}
	do(t, ctx, chromedp.Navigate(hs.URL+"/?q=xss&signals=1"), chromedp.WaitVisible(`#results li.hit`), chromedp.Sleep(500*time.Millisecond))
	if n := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#results a.title").length`)); n != 3 {
		t.Fatalf("%d results shown", n)
	}
	check("server-rendered page")
	get(t, ctx, chromedp.Evaluate[string](`document.getElementById("q").value = ""`))
	do(t, ctx, chromedp.SendKeys(`#q`, "xss"))
	get(t, ctx, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("Results")`))
	do(t, ctx, chromedp.Sleep(500*time.Millisecond))
	check("script-rendered results")
	screenshot(t, ctx, "xss.png")
	do(t, ctx, chromedp.Click(`#results li.hit a.title`), chromedp.Sleep(500*time.Millisecond))
	check("after clicking a javascript: link")
}
