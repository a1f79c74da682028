package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"

	"github.com/spider-crawler/spider/bench/internal/benchdir"
)

// TestMain lets the test binary act as the launcher, as peerbench does when
// run benchmarks start it with measureArg.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == measureArg {
		os.Exit(measureMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func TestAnalyze(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	truth := &websim.Truth{
		MustFetch: []string{"http://a.test:8/", "http://a.test:8/x", "http://b.test:8/"},
		MustNotFetch: map[string]string{
			"http://a.test:8/private": websim.ReasonRobots,
			"http://a.test:8/deep":    websim.ReasonDepth,
		},
	}
	entries := []websim.Entry{
		{Time: at(0), Host: "a.test", URL: "http://a.test:8/robots.txt", Path: "/robots.txt", Status: 200, OpenAtArrival: 1},
		{Time: at(10), Host: "a.test", URL: "http://A.test:8", Path: "/", Status: 200, OpenAtArrival: 1},
		{Time: at(12), Host: "a.test", URL: "http://a.test:8/x", Path: "/x", Status: 200, OpenAtArrival: 2},
		{Time: at(30), Host: "a.test", URL: "http://a.test:8/x", Path: "/x", Status: 200, OpenAtArrival: 1},
		{Time: at(40), Host: "a.test", URL: "http://a.test:8/private", Path: "/private", Status: 200, OpenAtArrival: 1},
		{Time: at(50), Host: "a.test", URL: "http://a.test:8/deep", Path: "/deep", Status: 404, OpenAtArrival: 1},
		{Time: at(5), Host: "b.test", URL: "http://b.test:8/robots.txt", Path: "/robots.txt", Status: 500, OpenAtArrival: 1},
		{Time: at(500), Host: "b.test", URL: "http://b.test:8/z", Path: "/z", Status: 0, OpenAtArrival: 1},
		{Time: at(600), Host: "b.test", URL: "http://b.test:8/z", Path: "/z", Status: 200, OpenAtArrival: 1},
	}
	dup := map[string]int{"http://a.test:8/x": 2, "http://b.test:8/y": 3}
	retries := map[string]int{"http://b.test:8/y": 1, "http://b.test:8/z": 1}
	for _, tc := range []struct {
		name    string
		perHost int
		delay   time.Duration
		want    logMetrics
	}{
		{"per-host 1, no delay", 1, 0, logMetrics{
			Requests: 9, Pages: 7, Covered: 2, MustFetch: 3, Outside: 3, RobotsViolations: 1,
			Duplicates: 2, Errors: 3, PolitenessHosts: 1, MaxOpen: 2, Hosts: 2,
			MinGap: 2 * time.Millisecond, Span: 600 * time.Millisecond,
			Busiest: "a.test", BusiestN: 6, BusiestLast: 50 * time.Millisecond, BusiestMeanGap: 10 * time.Millisecond,
			Last: "b.test", LastN: 3, LastFirst: 5 * time.Millisecond, LastLast: 600 * time.Millisecond, LastMeanGap: 297500 * time.Microsecond,
		}},
		{"per-host 2, delay 15ms", 2, 15 * time.Millisecond, logMetrics{
			Requests: 9, Pages: 7, Covered: 2, MustFetch: 3, Outside: 3, RobotsViolations: 1,
			Duplicates: 2, Errors: 3, PolitenessHosts: 0, MaxOpen: 2, GapHosts: 1, Hosts: 2,
			MinGap: 2 * time.Millisecond, Span: 600 * time.Millisecond,
			Busiest: "a.test", BusiestN: 6, BusiestLast: 50 * time.Millisecond, BusiestMeanGap: 10 * time.Millisecond,
			Last: "b.test", LastN: 3, LastFirst: 5 * time.Millisecond, LastLast: 600 * time.Millisecond, LastMeanGap: 297500 * time.Microsecond,
			GapExamples: []string{"a.test: /robots.txt → / 10ms", "a.test: / → /x 2ms", "a.test: /x → /private 10ms", "a.test: /private → /deep 10ms"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := analyze(entries, dup, retries, truth, tc.perHost, tc.delay)
			got.RobotsExamples, got.OutsideExamples = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("analyze =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
	m := analyze(entries, dup, retries, truth, 1, 0)
	if len(m.RobotsExamples) != 1 || m.RobotsExamples[0] != "http://a.test:8/private" {
		t.Errorf("robots examples %q", m.RobotsExamples)
	}
	if c := m.Coverage(); c < 0.66 || c > 0.67 {
		t.Errorf("coverage %.3f, want 2/3", c)
	}
	if c := (logMetrics{}).Coverage(); c != 1 {
		t.Errorf("coverage of an empty truth %.3f, want 1", c)
	}
}

func TestParseFlags(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(config) bool
	}{
		{"defaults", []string{"--root", root}, "", func(c config) bool {
			return c.Hosts == 1000 && c.Pages == 100 && c.Depth == 6 && strings.Join(c.Crawlers, ",") == "spider,colly,bare,crawlee,scrapy,wget,wget2"
		}},
		{"subset", []string{"--root", root, "--crawlers", "bare, spider", "--latency", "50ms", "--delay", "100ms"}, "", func(c config) bool {
			return strings.Join(c.Crawlers, ",") == "bare,spider" && c.Latency == 50*time.Millisecond && c.Delay == 100*time.Millisecond
		}},
		{"unknown crawler", []string{"--root", root, "--crawlers", "heritrix"}, "cannot run crawler", nil},
		{"peers", []string{"--root", root, "--crawlers", "scrapy,wget2,crawlee"}, "", func(c config) bool { return len(c.Crawlers) == 3 }},
		{"frontier unbounded", []string{"--root", root, "--frontier", "1m", "--depth", "-1"}, "", func(c config) bool { return c.Frontier == time.Minute && c.MaxRSS == 4096<<20 }},
		{"bad sample", []string{"--root", root, "--frontier", "1m", "--sample", "0s"}, "--sample", nil},
		{"spider args", []string{"--root", root, "--spider-args", " --loose-depth  --seen bloom"}, "", func(c config) bool { return strings.Join(c.SpiderArgs, ",") == "--loose-depth,--seen,bloom" }},
		{"no crawler", []string{"--root", root, "--crawlers", ","}, "without crawlers", nil},
		{"negative depth", []string{"--root", root, "--depth", "-1"}, "negative --depth", nil},
		{"zero hosts", []string{"--root", root, "--hosts", "0"}, "below 1", nil},
		{"arguments", []string{"--root", root, "extra"}, "flags only", nil},
		{"distributed", []string{"--root", root, "--crawlers", "spider,spider-p2p,spider-mw", "--dist-nodes", "3"}, "", func(c config) bool {
			return strings.Join(c.Crawlers, ",") == "spider,spider-p2p,spider-mw" && c.DistNodes == 3
		}},
		{"dist-nodes default", []string{"--root", root}, "", func(c config) bool { return c.DistNodes == 2 }},
		{"dist-nodes zero", []string{"--root", root, "--dist-nodes", "0"}, "--dist-nodes below 1", nil},
		{"concurrency below nodes", []string{"--root", root, "--crawlers", "spider-mw", "--concurrency", "2", "--dist-nodes", "3"}, "cannot split --concurrency 2", nil},
		{"concurrency below nodes, single node only", []string{"--root", root, "--crawlers", "spider", "--concurrency", "2", "--dist-nodes", "3"}, "", func(c config) bool { return c.Concurrency == 2 }},
		{"frontier refuses p2p", []string{"--root", root, "--frontier", "1m", "--crawlers", "spider,spider-p2p"}, "cannot run spider-p2p in the large-frontier mode", nil},
		{"frontier refuses mw", []string{"--root", root, "--frontier", "1m", "--crawlers", "spider-mw"}, "it supports spider,colly", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			c, err := parseFlags(tc.args, &errOut)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

func TestFindRoot(t *testing.T) {
	root, err := benchdir.Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "spider")); err != nil {
		t.Errorf("root %s has no cmd/spider: %v", root, err)
	}
}

func TestLastJSON(t *testing.T) {
	out := []byte("noise\n{\"crawler\":\"bare\",\"pages\":3}\n{\"other\":1}\n{\"crawler\":\"colly\",\"pages\":5,\"errors\":1,\"seconds\":2.5}\ntrailing")
	r := lastJSON(out)
	if r == nil || r.Crawler != "colly" || r.Pages != 5 || r.Errors != 1 || r.Seconds != 2.5 {
		t.Errorf("lastJSON = %+v", r)
	}
	if r := lastJSON([]byte("nothing here\n")); r != nil {
		t.Errorf("lastJSON of no report = %+v", r)
	}
}

func FuzzLastJSON(f *testing.F) {
	for _, s := range []string{"", "{}", `{"crawler":"x","pages":-1}`, "{\"crawler\":\"a\"}\n{", "\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r := lastJSON([]byte(s)); r != nil && r.Crawler == "" {
			t.Errorf("report without a crawler name: %+v", r)
		}
	})
}

func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		args     []string
		wantExit int
	}{
		{"success", []string{"/bin/sh", "-c", "exit 0"}, 0},
		{"exit code", []string{"/bin/sh", "-c", "exit 3"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".json")
			// As peerbench does: a fresh, small launcher process (this test
			// binary, through TestMain), whatever this process's own RSS.
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(self, append([]string{measureArg, out}, tc.args...)...)
			err = cmd.Run()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatalf("launcher: %v", err)
			}
			if code != tc.wantExit {
				t.Fatalf("launcher exit %d, want %d", code, tc.wantExit)
			}
			// In-process too: the exit code is the program's.
			if code := measureMain(append([]string{out + ".in"}, tc.args...)); code != tc.wantExit {
				t.Fatalf("exit %d, want %d", code, tc.wantExit)
			}
			u, err := readUsage(out)
			if err != nil {
				t.Fatal(err)
			}
			if u.Exit != tc.wantExit || u.WallNS <= 0 || u.MaxRSSKB <= 0 {
				t.Errorf("usage %+v", u)
			}
			// The shell's peak RSS is its own, not this test binary's.
			if u.MaxRSSKB > 64<<10 {
				t.Errorf("maxrss %d KiB: the parent's high-water mark leaked in", u.MaxRSSKB)
			}
		})
	}
	if code := measureMain([]string{filepath.Join(dir, "x.json")}); code != 2 {
		t.Errorf("measure without a program: exit %d, want 2", code)
	}
	if code := measureMain([]string{filepath.Join(dir, "y.json"), filepath.Join(dir, "missing")}); code != 2 {
		t.Errorf("measure of a missing program: exit %d, want 2", code)
	}
}

// TestBenchBare runs the whole pipeline on a tiny web with the bare loop
// only: build, ground truth, launcher, access-log analysis and the report.
func TestBenchBare(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	var out, errOut bytes.Buffer
	args := []string{"--hosts", "10", "--pages", "10", "--seeds", "2", "--depth", "3", "--crawlers", "bare", "--concurrency", "4", "--work", t.TempDir()}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	report := out.String()
	if !strings.Contains(report, "| bare | ") || !strings.Contains(report, "| 1.0000 |") {
		t.Errorf("report lacks a complete bare row:\n%s\n%s", report, errOut.String())
	}
}

// TestSpiderDelayFromStart: the issue-23 goal line (printDoneRuleGoal) is
// printed only for spider's default delay rule, so the flag's two spellings
// must both be recognised.
func TestSpiderDelayFromStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--loose-depth"}, false},
		{[]string{"--delay-from", "start"}, true},
		{[]string{"--strict-levels", "--delay-from=start"}, true},
		{[]string{"--delay-from", "done"}, false},
		{[]string{"--delay-from"}, false},
	} {
		if got := spiderDelayFromStart(tc.args); got != tc.want {
			t.Errorf("spiderDelayFromStart(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
