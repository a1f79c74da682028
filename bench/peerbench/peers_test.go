package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/bench/internal/benchdir"
)

func TestPolitenessBound(t *testing.T) {
	must := []string{
		"http://a.test:8/", "http://a.test:8/1", "http://a.test:8/2", "http://a.test:8/3",
		"http://b.test:8/", "http://b.test:8/1",
	}
	depth := map[string]int{
		"http://a.test:8/": 0, "http://a.test:8/1": 1, "http://a.test:8/2": 1, "http://a.test:8/3": 2,
		"http://b.test:8/": 1, "http://b.test:8/1": 2,
	}
	for _, tc := range []struct {
		name                       string
		conc                       int
		delay, latency             time.Duration
		rate, makespan, levelBound float64
	}{
		// Period 1 s: a.test needs (4 pages + robots.txt) × 1 s = 5 s; 6 pages / 5 s.
		// Levels: 1 + 2 + 1 = 4 s → 1.5 pages/s, but never above the whole-crawl bound.
		{"delay binds", 32, time.Second, 100 * time.Millisecond, 2, 6.0 / 5, 6.0 / 5},
		// Period 0.5 s (latency); concurrency 1: (6 + 2) × 0.5 s = 4 s beats 5 × 0.5 = 2.5 s.
		{"concurrency binds", 1, 0, 500 * time.Millisecond, 2, 6.0 / 4, 6.0 / 4},
		// Levels: level 0: 1 page; level 1: a has 2, b 1; level 2: 1 each → (1+2+1) × 1 s = 4 s
		// against the whole crawl's 5 s: the whole-crawl bound binds.
		{"no latency", 32, time.Second, 0, 2, 6.0 / 5, 6.0 / 5},
		{"CPU-bound regime", 32, 0, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := politenessBound(must, depth, tc.conc, tc.delay, tc.latency)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if !near(b.Rate, tc.rate) || !near(b.Makespan, tc.makespan) || !near(b.LevelsBound, tc.levelBound) {
				t.Errorf("bound %+v, want rate %.3f makespan %.3f levels %.3f", b, tc.rate, tc.makespan, tc.levelBound)
			}
			if tc.makespan > 0 && (b.Hosts != 2 || b.MaxHost != 4 || b.Levels != 3) {
				t.Errorf("hosts %d max %d levels %d, want 2, 4, 3", b.Hosts, b.MaxHost, b.Levels)
			}
		})
	}
}

func TestLevelsBoundBelowMakespan(t *testing.T) {
	// Two hosts of 10 pages each, all on one level; plus one page per host
	// on each of 5 more levels: levels cost more than the whole crawl.
	var must []string
	depth := map[string]int{}
	for h := range 2 {
		for i := range 15 {
			u := fmt.Sprintf("http://h%d.test/%d", h, i)
			must = append(must, u)
			depth[u] = max(0, i-9)
		}
	}
	b := politenessBound(must, depth, 64, 100*time.Millisecond, 10*time.Millisecond)
	if b.LevelsBound > b.Makespan {
		t.Errorf("levels bound %.2f above the whole-crawl bound %.2f", b.LevelsBound, b.Makespan)
	}
	if want := 30 / (16 * 0.1); math.Abs(b.Makespan-want) > 1e-9 {
		t.Errorf("makespan bound %.3f, want %.3f", b.Makespan, want)
	}
}

func TestCrawlerArgs(t *testing.T) {
	c := config{Depth: 4, Concurrency: 16, PerHost: 1, Delay: 250 * time.Millisecond, SpiderArgs: []string{"--loose-depth"}}
	seeds := []string{"http://www.d0.test:9/", "http://www.d1.test:9/"}
	for _, tc := range []struct {
		name string
		want []string // consecutive arguments that must appear
	}{
		{"spider", []string{"--delay 250ms", "--per-host 1", "--concurrency 16", "--max-depth 4", "--resolve-file R", "--loose-depth"}},
		{"colly", []string{"--delay 250ms", "--parallelism 16", "--max-depth 4"}},
		{"bare", []string{"--parallelism 16", "--max-depth 4"}},
		{"crawlee", []string{"--delay 0.25", "--concurrency 16", "--max-depth 4", "--resolve-file R"}},
		{"scrapy", []string{"--delay 0.25", "--concurrency 16", "--per-host 1", "--max-depth 4"}},
		{"wget", []string{"-e http_proxy=http://127.0.0.1:9/", "-e robots=on", "--level 4", "--wait 0.25", "--reject png,jpg"}},
		{"wget2", []string{"--http-proxy http://127.0.0.1:9/", "--robots=on", "--level 4", "--wait 0.25", "--max-threads 16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := crawlerArgs(c, tc.name, "D", "R", "127.0.0.1:9", seeds)
			line := " " + strings.Join(a, " ") + " "
			for _, w := range tc.want {
				if !strings.Contains(line, " "+w) {
					t.Errorf("args %q lack %q", a, w)
				}
			}
			if !slices.Equal(a[len(a)-2:], seeds) {
				t.Errorf("args %q do not end with the seeds", a)
			}
			if peerNotes[tc.name] == "" {
				t.Errorf("no table note for %s", tc.name)
			}
		})
	}
	c.Depth = -1
	if a := strings.Join(crawlerArgs(c, "wget", "D", "R", "P", nil), " "); !strings.Contains(a, "--level inf") {
		t.Errorf("wget with unlimited depth: %s", a)
	}
}

func TestOkExit(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		want bool
	}{
		{"spider", 0, true}, {"spider", 1, false}, {"wget", 8, true}, {"wget2", 4, true},
		{"wget", 1, false}, {"scrapy", 8, false},
	} {
		if got := okExit(tc.name, tc.code); got != tc.want {
			t.Errorf("okExit(%s, %d) = %v, want %v", tc.name, tc.code, got, tc.want)
		}
	}
}

// TestPrepareSkipsMissing checks that a crawler whose program is missing is
// skipped with a note naming what to install, not reported as a failure.
func TestPrepareSkipsMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	bins, skipped, err := prepare(context.Background(), t.TempDir(), t.TempDir(), []string{"wget", "wget2", "crawlee"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bins) != 0 || len(skipped) != 3 {
		t.Fatalf("bins %v skipped %q, want 3 skipped", bins, skipped)
	}
	for i, want := range []string{"apt-get install wget", "apt-get install wget2", "node is not on PATH"} {
		if !strings.Contains(skipped[i], want) {
			t.Errorf("note %q lacks %q", skipped[i], want)
		}
	}
	if _, _, err := prepare(context.Background(), t.TempDir(), t.TempDir(), []string{"heritrix"}); err == nil {
		t.Error("prepare of an unknown crawler: no error")
	}
}

func TestGoModVersion(t *testing.T) {
	root, err := benchdir.Root()
	if err != nil {
		t.Fatal(err)
	}
	if v := goModVersion(root+"/bench/peers/colly/go.mod", "github.com/gocolly/colly/v2"); !strings.HasPrefix(v, "v2.") {
		t.Errorf("colly version %q", v)
	}
	if v := goModVersion(root+"/go.mod", "no.such/module"); v != "unknown" {
		t.Errorf("missing module: %q", v)
	}
}

func TestPrintGoals(t *testing.T) {
	ok := result{Crawler: "spider"}
	bad := result{Crawler: "spider", Log: logMetrics{Duplicates: 1}}
	for _, tc := range []struct {
		name    string
		med     map[string]float64
		spider  result
		bd      bound
		want    string
		wantNot string
	}{
		{"met", map[string]float64{"spider": 300, "colly": 100, "bare": 900, "scrapy": 140}, ok, bound{},
			"(scrapy): 300 / 140 = 2.14, violations 0: met", "NOT"},
		{"violations", map[string]float64{"spider": 300, "colly": 100}, bad, bound{},
			"violations 1: NOT met", ""},
		{"slow", map[string]float64{"spider": 150, "wget2": 100}, ok, bound{},
			"= 1.50, violations 0: NOT met", ""},
		{"latency", map[string]float64{"spider": 95, "colly": 10}, ok, bound{Makespan: 100},
			"95 / 100 = 0.95: met", "CPU-bound"},
		{"discovery-aware", map[string]float64{"spider": 95, "colly": 10}, ok, bound{Makespan: 200, Discovery: 100},
			"discovery-aware politeness bound: 95 / 100 = 0.95: met", "CPU-bound"},
		{"discovery-aware not met", map[string]float64{"spider": 85}, ok, bound{Makespan: 200, Discovery: 100},
			"85 / 100 = 0.85: NOT met", ""},
		{"depth-aware", map[string]float64{"spider": 92}, ok, bound{Makespan: 200, Discovery: 110, DiscoveryDepth: 100},
			"depth-aware discovery bound: 92 / 100 = 0.92: met", ""},
		{"depth-aware, depth-blind shown", map[string]float64{"spider": 92}, ok, bound{Makespan: 200, Discovery: 110, DiscoveryDepth: 100},
			"depth-blind discovery bound (URLs known from any answer naming them, depth aside): 92 / 110 = 0.84: NOT met", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printGoals(&out, config{}, tc.bd, tc.med, tc.med, []result{tc.spider})
			if !strings.Contains(out.String(), tc.want) || (tc.wantNot != "" && strings.Contains(out.String(), tc.wantNot)) {
				t.Errorf("goals:\n%s\nwant %q, not %q", out.String(), tc.want, tc.wantNot)
			}
		})
	}
}

// TestBenchPeers runs every installed peer (Crawlee, Scrapy, wget, wget2) on
// a tiny web through the whole pipeline; peers that are not installed must
// be skipped with a note, never fail the run.
func TestBenchPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node and Python crawlers")
	}
	var out, errOut bytes.Buffer
	args := []string{"--hosts", "6", "--pages", "8", "--seeds", "2", "--depth", "2", "--crawlers", "crawlee,scrapy,wget,wget2",
		"--concurrency", "4", "--latency", "2ms", "--delay", "5ms", "--work", t.TempDir()}
	err := run(context.Background(), args, &out, &errOut)
	if err != nil && strings.Contains(err.Error(), "cannot run any crawler") {
		t.Skipf("no peer installed: %v", err)
	}
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	report := out.String()
	for _, name := range []string{"crawlee", "scrapy", "wget", "wget2"} {
		row := strings.Contains(report, "| "+name+" | ")
		skipped := strings.Contains(report, "- "+name+" skipped: ")
		if row == skipped {
			t.Errorf("%s: row %v, skipped %v; want exactly one\n%s", name, row, skipped, report)
		}
	}
	if !strings.Contains(report, "politeness bound") || !strings.Contains(report, "fraction of the whole-crawl bound") ||
		!strings.Contains(report, "fraction of the discovery-aware bound") {
		t.Errorf("latency-bound report without the bound:\n%s", report)
	}
}
