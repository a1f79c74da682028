package browser

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/spider-crawler/spider/internal/websim"
)

// waitJS polls a JavaScript condition for up to d and fails the test with
// what when it never holds (instead of hanging until the test's time-out).
func waitJS(t *testing.T, ctx context.Context, cond string, d time.Duration, what string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(d))); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: not within %v (%s): %v\nthe page says:\n%s", what, d, cond, err, page)
	}
}

// chartInk is what the dashboard's chart drew: the axis labels kept on
// the chart's element, the tick labels its axes drew, and counts of inked
// pixels of the canvas in the y axis label's strip (left edge), the x axis
// label's strip (bottom edge) and of the series' colour in the plot.
type chartInk struct {
	Canvas    bool   `json:"canvas"`
	XLabel    string `json:"xLabel"`
	YLabel    string `json:"yLabel"`
	XTicks    string `json:"xTicks"`
	YTicks    string `json:"yTicks"`
	YLabelInk int    `json:"yLabelInk"`
	XLabelInk int    `json:"xLabelInk"`
	LineInk   int    `json:"lineInk"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
}

const chartInkJS = `(() => {
  const el = document.getElementById("chart");
  const c = el && el.querySelector("canvas");
  if (!c) return {canvas: false};
  const g = c.getContext("2d");
  const r = window.devicePixelRatio || 1;
  const ink = (x, y, w, h, pred) => {
    const d = g.getImageData(Math.round(x), Math.round(y), Math.max(1, Math.round(w)), Math.max(1, Math.round(h))).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (pred(d[i], d[i+1], d[i+2], d[i+3])) n++;
    return n;
  };
  const any = (r_, g_, b_, a) => a > 100;
  const blue = (r_, g_, b_, a) => a > 200 && b_ > 140 && r_ < 90 && g_ < 130;
  // The plot area; each axis has 50 CSS px of ticks and values next to
  // it and its label beyond them.
  const [left, top, w, h] = (el.dataset.plot || "0 0 0 0").split(" ").map(Number);
  const axis = 50 * r;
  return {
    canvas: true, width: c.width, height: c.height,
    xLabel: el.dataset.xLabel || "", yLabel: el.dataset.yLabel || "",
    xTicks: el.dataset.xTicks || "", yTicks: el.dataset.yTicks || "",
    yLabelInk: w ? ink(0, top, left - axis, h, any) : 0,
    xLabelInk: w ? ink(left, top + h + axis, w, c.height - (top + h + axis), any) : 0,
    lineInk: w ? ink(left, top, w, h, blue) : 0,
  };
})()`

// checkChart checks that the chart is a uPlot canvas with a time axis and
// a pages/s axis, both labelled and with tick values, and a drawn series.
func checkChart(t *testing.T, ctx context.Context) {
	t.Helper()
	waitJS(t, ctx, `!document.getElementById("chart-section").hidden && document.querySelector("#chart canvas") !== null && (document.getElementById("chart").dataset.yTicks || "") !== ""`,
		30*time.Second, "the chart with its axes")
	ink := get(t, ctx, chromedp.Evaluate[chartInk](chartInkJS))
	t.Logf("chart: %+v", ink)
	yTicks := strings.Fields(ink.YTicks)
	switch {
	case !ink.Canvas:
		t.Fatal("the chart has no canvas")
	case ink.XLabel != "time (local)" || ink.YLabel != "pages/s":
		t.Fatalf("axis labels %q, %q; want time (local), pages/s", ink.XLabel, ink.YLabel)
	case len(yTicks) < 2 || yTicks[0] != "0":
		t.Fatalf("the pages/s axis drew ticks %q; want a scale from 0", ink.YTicks)
	case !regexp.MustCompile(`^\d\d:\d\d:\d\d`).MatchString(ink.XTicks):
		t.Fatalf("the time axis drew ticks %q; want clock times", ink.XTicks)
	case ink.YLabelInk < 30 || ink.XLabelInk < 30:
		t.Fatalf("axis labels not drawn on the canvas: %d inked pixels in the y label's strip, %d in the x label's", ink.YLabelInk, ink.XLabelInk)
	case ink.LineInk < 30:
		t.Fatalf("no series drawn: %d pixels of its colour", ink.LineInk)
	}
	for _, tick := range yTicks {
		if _, err := strconv.ParseFloat(tick, 64); err != nil {
			t.Fatalf("pages/s tick %q is not a number (ticks %q)", tick, ink.YTicks)
		}
	}
}

var badText = regexp.MustCompile(`\b(undefined|NaN|null|Infinity)\b`)

// checkNoBadText fails when the page's text (shown or hidden) says
// undefined, NaN, null or Infinity anywhere.
func checkNoBadText(t *testing.T, ctx context.Context, stage string) {
	t.Helper()
	for _, expr := range []string{`document.body.innerText`, `document.body.textContent`} {
		text := get(t, ctx, chromedp.Evaluate[string](expr))
		if m := badText.FindStringIndex(text); m != nil {
			from, to := max(0, m[0]-80), min(len(text), m[1]+80)
			t.Fatalf("%s: the page says %q: …%s…", stage, text[m[0]:m[1]], text[from:to])
		}
	}
}

// sectionsShown maps each dashboard section's id to whether it is shown.
func sectionsShown(t *testing.T, ctx context.Context) map[string]bool {
	t.Helper()
	return get(t, ctx, chromedp.Evaluate[map[string]bool](`Object.fromEntries([...document.querySelectorAll("main section[id]")].map(s => [s.id, !s.hidden && s.offsetParent !== null]))`))
}

// hostRows returns the cells of the host table's rows.
func hostRows(t *testing.T, ctx context.Context) [][]string {
	t.Helper()
	return get(t, ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#hosts tbody tr")].map(tr => [...tr.cells].map(td => td.textContent))`))
}

var (
	intCell  = regexp.MustCompile(`^\d[\d,]*$`)
	msCell   = regexp.MustCompile(`^\d[\d,]*\.\d$`)
	waitCell = regexp.MustCompile(`^(now|fetching|in \d+\.\d (s|min))$`)
)

// checkHostRows checks every host row: a host name, pages > 0, errors,
// mean latency in ms, and with clock the URLs queued and the next allowed
// fetch ("now", "fetching", "in 0.4 s").
func checkHostRows(t *testing.T, rows [][]string, clock bool) {
	t.Helper()
	if len(rows) == 0 {
		t.Fatal("the host table has no rows")
	}
	want := 4
	if clock {
		want = 6
	}
	for _, r := range rows {
		if len(r) != want || !strings.HasSuffix(r[0], ".test") && !strings.Contains(r[0], ".test:") ||
			!intCell.MatchString(r[1]) || r[1] == "0" || !intCell.MatchString(r[2]) || !msCell.MatchString(r[3]) {
			t.Fatalf("host row %q: want host, pages, errors, mean latency (ms)%s", r, map[bool]string{true: ", queued, next allowed fetch"}[clock])
		}
		if clock && (!intCell.MatchString(r[4]) || !waitCell.MatchString(r[5])) {
			t.Fatalf("host row %q: queued and next allowed fetch are not a count and a relative time", r)
		}
	}
}

// checkPNG checks a screenshot: a PNG of the browser's width, at least
// minHeight tall, with enough colours not to be a blank or single-colour
// page.
func checkPNG(t *testing.T, name string, b []byte, minHeight int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	bounds := img.Bounds()
	if bounds.Dx() != 1280 || bounds.Dy() < minHeight || len(b) < 20<<10 {
		t.Fatalf("screenshot %s: %dx%d, %d bytes; want 1280 wide, at least %d tall, 20 KiB", name, bounds.Dx(), bounds.Dy(), len(b), minHeight)
	}
	if n := colours(img, 256); n < 16 {
		t.Fatalf("screenshot %s has %d colours: a blank page?", name, n)
	}
}

// colours counts the distinct colours of img, up to limit.
func colours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// TestDashboardFailures crawls a web with missing pages, redirect loops
// and over-long redirect chains: the dashboard lists the failed URLs by
// class with the CLI's hints and example URLs (too many redirects among
// them), the host table counts the errors, the recent errors show no
// "undefined" for outcomes without an error text, and the screenshot is
// checked.
func TestDashboardFailures(t *testing.T) {
	ctx := newBrowser(t)
	web, err := websim.Start(context.Background(), websim.Config{Seed: 5, Hosts: 3, PagesPerHost: 60, ChineseShare: -1,
		Enable: websim.FeatureNotFound | websim.FeatureLongRedirects | websim.FeatureRedirectLoops, TroubleShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	data := t.TempDir()
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(web.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"crawl", "--data", data, "--resolve-file", resolve,
		"--allow-private", "--delay", "50ms", "--concurrency", "4", "--scope", "any", "--max-depth", "-1", "--max-pages", "400",
		"--user-agent", "spider-browser-test/1 (+http://example.test/)", "--addr", "127.0.0.1:0"}, web.SeedURLs(3)...)
	const token = "browser-test-token-0123456789"
	base, _, done := startSpider(t, []string{"SPIDER_TOKEN=" + token}, args...)

	// Every Content-Security-Policy violation (the server allows only its
	// own scripts and styles) is kept in window.__csp, from before the
	// dashboard's scripts run: uPlot must draw without one.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.__csp = []; document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`,
	}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(base+"/dashboard"))
	waitJS(t, ctx, `[...document.querySelectorAll("#failures tbody tr td:first-child")].some(td => td.textContent === "too-many-redirects")`,
		2*time.Minute, "a too-many-redirects class in the failures section")
	waitJS(t, ctx, `[...document.querySelectorAll("#failures tbody tr td:first-child")].some(td => td.textContent === "404")`,
		time.Minute, "a 404 class in the failures section")
	// Paused, the crawl (and its server) stays up for the checks below.
	post(t, base+"/api/crawl/pause", token)
	waitJS(t, ctx, `document.getElementById("state").textContent === "paused"`, 30*time.Second, "the paused state")
	rows := get(t, ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#failures tbody tr")].map(tr => [...tr.cells].map(td => td.textContent))`))
	for _, r := range rows {
		if len(r) != 4 || !intCell.MatchString(r[1]) || r[2] == "" || !strings.Contains(r[3], "http://") {
			t.Fatalf("failure row %q: want class, URLs, hint, example URLs", r)
		}
		if r[0] == "too-many-redirects" && !strings.Contains(r[2], "--max-redirects") {
			t.Fatalf("too-many-redirects: hint %q, want the CLI's (naming --max-redirects)", r[2])
		}
	}
	shown := sectionsShown(t, ctx)
	if !shown["failures-section"] || !shown["errors-section"] || !shown["hosts-section"] || !shown["config-section"] {
		t.Fatalf("sections shown: %v", shown)
	}
	if shown["nodes-section"] || shown["topics-section"] {
		t.Fatalf("empty Nodes/Topics shown on a plain crawl: %v", shown)
	}
	// The 404s wait for their retry (issue 26): the revisit schedule's
	// table counts them as failed, awaiting retry.
	if !shown["schedule-section"] {
		t.Fatalf("no revisit schedule shown for a crawl with failures to retry: %v", shown)
	}
	sched := get(t, ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("#schedule tr")].map(tr => [tr.cells[0].textContent, tr.cells[1].textContent]))`))
	if n, err := strconv.Atoi(strings.ReplaceAll(sched["failed, awaiting retry"], ",", "")); err != nil || n == 0 || sched["URLs scheduled"] == "" {
		t.Fatalf("revisit schedule table %v: want URLs scheduled and failed URLs awaiting retry", sched)
	}
	hosts := hostRows(t, ctx)
	checkHostRows(t, hosts, true)
	var errs int
	for _, r := range hosts {
		n, _ := strconv.Atoi(strings.ReplaceAll(r[2], ",", ""))
		errs += n
	}
	if errs == 0 {
		t.Fatalf("failing URLs, but no host counts an error: %q", hosts)
	}
	cfg := get(t, ctx, chromedp.Text(`#config`))
	for _, want := range []string{"spider-browser-test/1", "400", "50 ms", web.SeedURLs(1)[0], "unlimited"} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("configuration %q does not show %q", cfg, want)
		}
	}
	b := screenshot(t, ctx, "dashboard_failures.png")
	checkChart(t, ctx)
	checkNoBadText(t, ctx, "dashboard of a failing web")
	if v := get(t, ctx, chromedp.Evaluate[[]string](`window.__csp || ["the CSP listener did not run"]`)); len(v) > 0 {
		t.Fatalf("Content-Security-Policy violations: %q", v)
	}
	checkPNG(t, "dashboard_failures.png", b, 1000)
	post(t, base+"/api/crawl/stop", token)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crawl exited with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the crawl did not stop")
	}
}

// post sends a control request with the bearer token and fails the test
// unless it answers 200.
func post(t *testing.T, url, token string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s: %s", url, resp.Status, body)
	}
}
