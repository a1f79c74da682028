package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store/warc"
	"github.com/spider-crawler/spider/internal/websim"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "crawl") || !strings.Contains(out, "robots") {
		t.Fatalf("help: code %d\n%s", code, out)
	}
	// Asked-for help is output: stdout, exit 0, the same for "help CMD".
	for _, args := range [][]string{{"crawl", "-h"}, {"crawl", "--help"}, {"help", "crawl"}, {"crawl", "http://a.test/", "-h"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, "-max-depth") || errOut != "" {
			t.Fatalf("%v: code %d, stdout %d bytes, stderr %q", args, code, len(out), errOut)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if code, out, _ := runCLI(t, args...); code != 0 || !strings.HasPrefix(out, "spider ") {
			t.Fatalf("%v: code %d, %q", args, code, out)
		}
	}
	if code, _, errOut := runCLI(t, "help", "nope"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("help nope: code %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "nope"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: code %d, %s", code, errOut)
	}
}

func TestRobotsCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "robots.txt")
	body := "User-agent: *\nDisallow: /private\nAllow: /private/ok$\n\nUser-agent: spider\nDisallow: /only-spider\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		agent, url, want string
	}{
		{"other", "http://a.test/private/x", "disallowed"},
		{"other", "http://a.test/private/ok", "allowed"},
		{"other", "http://a.test/private/ok/more", "disallowed"},
		{"spider/1.0", "http://a.test/private/x", "allowed"}, // the spider group replaces *
		{"spider/1.0", "http://a.test/only-spider", "disallowed"},
		{"other", "http://a.test/", "allowed"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(t, "robots", "--robots", file, "--agent", c.agent, "--url", c.url)
		if code != 0 || strings.TrimSpace(out) != c.want {
			t.Errorf("%s %s: code %d out %q err %q, want %s", c.agent, c.url, code, out, errOut, c.want)
		}
	}
	code, out, _ := runCLI(t, "robots", "--robots", file, "--agent", "other", "--url", "http://a.test/private/x", "--explain")
	if code != 0 || !strings.Contains(out, "Disallow: /private") {
		t.Errorf("--explain: %q", out)
	}
	if code, _, _ := runCLI(t, "robots", "--robots", file); code != 2 {
		t.Errorf("missing --url: code %d, want 2", code)
	}
}

func TestCrawlRejectsBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no seeds", []string{"crawl", "--data", t.TempDir()}, "seed"},
		{"bad scope", []string{"crawl", "--data", t.TempDir(), "--scope", "planet", "http://a.test/"}, "unknown scope"},
		{"bad seed", []string{"crawl", "--data", t.TempDir(), "ftp://a.test/"}, "not a usable http(s) URL"},
		{"bad delay", []string{"crawl", "--delay", "soon", "http://a.test/"}, "duration"},
		{"bad resolve", []string{"crawl", "--data", t.TempDir(), "--resolve", "nonsense", "http://a.test/"}, "resolve"},
		{"rate cap", []string{"crawl", "--data", t.TempDir(), "--max-rate", "1e9", "http://a.test/"}, "max-rate"},
		{"bad mode", []string{"crawl", "--data", t.TempDir(), "--mode", "sideways", "http://a.test/"}, "unknown --mode"},
		{"bad dedup", []string{"crawl", "--data", t.TempDir(), "--dedup", "maybe", "http://a.test/"}, "unknown --dedup"},
		{"topics with redis", []string{"crawl", "--data", t.TempDir(), "--topics", "t.yaml", "--redis", "redis://127.0.0.1:1/0", "http://a.test/"}, "single-node crawl only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, c.args...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Fatalf("code %d, stderr %q, want an error mentioning %q", code, errOut, c.want)
			}
		})
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spider.yaml")
	write := func(s string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("max_depth: 2\nscope: domain\ndelay: 250ms\nconcurrency: 3\n", 0o600)
	cfg := crawl.NewConfig()
	if err := crawl.LoadFile(path, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxDepth != 2 || cfg.Scope != "domain" || time.Duration(cfg.Delay) != 250*time.Millisecond || cfg.Concurrency != 3 {
		t.Fatalf("config not applied: %+v", cfg)
	}
	write("max_dept: 2\n", 0o600)
	if err := crawl.LoadFile(path, &cfg); err == nil || !strings.Contains(err.Error(), "max_dept") {
		t.Fatalf("typo accepted: %v", err)
	}
	write("delay: fast\n", 0o600)
	if err := crawl.LoadFile(path, &cfg); err == nil || !strings.Contains(err.Error(), "duration") {
		t.Fatalf("bad duration accepted: %v", err)
	}
	write("max_depth: 1\n", 0o666)
	if err := crawl.LoadFile(path, &cfg); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("world-writable config accepted: %v", err)
	}
}

// TestCrawlExportStats runs the CLI end to end: a crawl configured by a
// file and overridden by flags, then stats and both export formats.
func TestCrawlExportStats(t *testing.T) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 2, Hosts: 3, PagesPerHost: 15})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 2, Scope: websim.ScopeHost}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfgPath := filepath.Join(dir, "c.yaml")
	// The file says depth 0; the flag must win.
	cfgYAML := "max_depth: 0\nscope: host\ndelay: 1ms\nallow_private: true\nresolve: [" + strings.Join(srv.Resolve(), ", ") + "]\n"
	if err := os.WriteFile(cfgPath, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	// --sitemaps=false: the truth follows links (websim's /sitemap.xml lists every page).
	code, out, errOut := runCLI(t, append([]string{"crawl", "--config", cfgPath, "--data", data, "--max-depth", "2", "--warc", "--sitemaps=false"}, rules.Seeds...)...)
	if code != 0 {
		t.Fatalf("crawl: code %d\n%s", code, errOut)
	}
	for _, want := range []string{"result", "200", "too many redirects", "top hosts"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI(t, "stats", "--data", data, "--json")
	if code != 0 {
		t.Fatalf("stats: %d %s", code, errOut)
	}
	var s crawl.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.URLs != int64(len(truth.MustFetch)) {
		t.Errorf("stats: %d URLs, truth has %d", s.URLs, len(truth.MustFetch))
	}

	code, out, errOut = runCLI(t, "export", "--data", data, "--format", "jsonl")
	if code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	got := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r crawl.ExportRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		if r.URL == "" || r.FetchedAt == "" || r.OutLinks == nil {
			t.Errorf("incomplete record %+v", r)
		}
		got[r.URL] = true
	}
	for _, u := range truth.MustFetch {
		if !got[u] {
			t.Errorf("export lacks %s", u)
		}
	}

	warcPath := filepath.Join(dir, "out.warc.gz")
	if code, _, errOut := runCLI(t, "export", "--data", data, "--format", "warc", "--out", warcPath); code != 0 {
		t.Fatalf("export warc: %d %s", code, errOut)
	}
	for _, path := range append([]string{warcPath}, globWARC(t, filepath.Join(data, "warc"))...) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := warc.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		types := map[string]int{}
		for {
			rec, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%s: %v", path, err)
				}
				break
			}
			types[rec.Type()]++
		}
		f.Close()
		if types["response"] < len(truth.MustFetch)/2 || types["metadata"] == 0 {
			t.Errorf("%s: record types %v", path, types)
		}
	}
}

func globWARC(t *testing.T, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no WARC files in %s (%v)", dir, err)
	}
	return m
}
