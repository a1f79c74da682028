package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/index/analysis"
	"github.com/spider-crawler/spider/internal/websim"
)

// crawlForIndex crawls a small websim web with the CLI and returns the data
// directory.
func crawlForIndex(t *testing.T) string {
	t.Helper()
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 9, Hosts: 4, PagesPerHost: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	data := filepath.Join(t.TempDir(), "data")
	args := []string{"crawl", "--data", data, "--delay", "0", "--allow-private", "--scope", "any", "--max-depth", "3"}
	for _, r := range srv.Resolve() {
		args = append(args, "--resolve", r)
	}
	if code, _, errOut := runCLI(t, append(args, srv.SeedURLs(2)...)...); code != 0 {
		t.Fatalf("crawl: code %d\n%s", code, errOut)
	}
	return data
}

func TestIndexAndSearchCommands(t *testing.T) {
	data := crawlForIndex(t)
	code, out, errOut := runCLI(t, "index", "--data", data)
	if code != 0 || !strings.Contains(out, "pages added") {
		t.Fatalf("index: code %d\n%s\n%s", code, out, errOut)
	}
	// Nothing new: the checkpoint holds.
	if code, out, _ := runCLI(t, "index", "--data", data); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second index: code %d %s", code, out)
	}
	en, _ := websim.TopicWords(websim.Topics()[0])
	code, out, errOut = runCLI(t, "search", "--data", data, "--limit", "3", "--explain", en[0]+" OR "+en[1])
	if code != 0 {
		t.Fatalf("search: code %d\n%s", code, errOut)
	}
	for _, want := range []string{"results 1–3 of", "1. ", "http://", "[", "score ", "| score", "bm25", "\n   fetched "} {
		if !strings.Contains(out, want) {
			t.Errorf("search output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "no PageRank scores") || strings.Count(errOut, "no PageRank scores") != 1 {
		t.Errorf("missing ranks should be said once:\n%s", errOut)
	}
	code, page2, _ := runCLI(t, "search", "--data", data, "--limit", "3", "--page", "2", en[0]+" OR "+en[1])
	if code != 0 || !strings.Contains(page2, "results 4–") {
		t.Errorf("page 2: %s", page2)
	}
	if code, out, _ := runCLI(t, "search", "--data", data, "--json", en[0]); code != 0 || !strings.Contains(out, `"hits"`) || !strings.Contains(out, `"took_ms"`) || !strings.Contains(out, `"fetched_at": "20`) {
		t.Errorf("json: %s", out)
	}
}

func TestSearchRejectsBadInput(t *testing.T) {
	data := crawlForIndex(t)
	if code, _, errOut := runCLI(t, "index", "--data", data); code != 0 {
		t.Fatal(errOut)
	}
	noIndex := t.TempDir() // a crawl (empty) without an index
	if err := os.WriteFile(filepath.Join(noIndex, "records.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--data", data}, "give a query"},
		{[]string{"--data", data, `"unclosed`}, "not closed"},
		{[]string{"--data", data, "--", "-only"}, "only excludes"},
		{[]string{"--data", data, "the"}, "no searchable words"},
		{[]string{"--data", data, "--limit", "0", "x"}, "--limit"},
		{[]string{"--data", data, "--page", "0", "x"}, "--page"},
		{[]string{"--data", noIndex, "x"}, "spider index --data"},
		{[]string{"--data", t.TempDir(), "x"}, "run spider crawl --data"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		err := runSearch(context.Background(), c.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--writer", "--mapper", "--redis", "redis://x"}, "exclude"},
		{[]string{"--writer"}, "need --redis"},
		{[]string{"--redis", "redis://127.0.0.1:1"}, "--writer or --mapper"},
		{[]string{"--batch", "0"}, "positive"},
		{[]string{"extra"}, "no arguments"},
		{[]string{"--data", t.TempDir()}, "no crawl records"},
	} {
		var out, errb bytes.Buffer
		err := runIndex(context.Background(), c.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("index %v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestDistributedIndexCommand runs the writer and two mappers as the CLI
// runs them, against a real redis-server, and checks the index answers.
func TestDistributedIndexCommand(t *testing.T) {
	data := crawlForIndex(t)
	srv := redistest.Start(t)
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]string, 3)
	errs := make([]error, 3)
	roles := [][]string{
		{"--data", out, "--writer", "--redis", srv.URL(), "--crawl", "cli", "--lease-ttl", "2s"},
		{"--data", data, "--mapper", "--redis", srv.URL(), "--crawl", "cli", "--task-records", "20"},
		{"--data", data, "--mapper", "--redis", srv.URL(), "--crawl", "cli", "--task-records", "20"},
	}
	for i, args := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o, e bytes.Buffer
			errs[i] = runIndex(context.Background(), args, &o, &e)
			results[i] = o.String() + e.String()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("role %d: %v\n%s", i, err, results[i])
		}
	}
	if !strings.Contains(results[0], "index built:") {
		t.Errorf("writer output:\n%s", results[0])
	}
	en, _ := websim.TopicWords(websim.Topics()[1])
	code, res, errOut := runCLI(t, "search", "--data", out, en[0]+" OR "+en[1]+" OR "+en[2])
	if code != 0 || !strings.Contains(res, "results 1–") {
		t.Errorf("search of the distributed index: code %d\n%s\n%s", code, res, errOut)
	}
}

// englishSite serves three English pages that link to each other.
func englishSite(t *testing.T) *httptest.Server {
	t.Helper()
	pages := map[string]string{
		"/":       `<html><head><title>Garden notes</title></head><body><p>Tomatoes need sun and water.</p><a href="/a.html">roses</a> <a href="/b.html">soil</a></body></html>`,
		"/a.html": `<html><head><title>Roses</title></head><body><p>Roses bloom in June; prune the roses in March.</p><a href="/">home</a></body></html>`,
		"/b.html": `<html><head><title>Soil</title></head><body><p>Good soil holds water and feeds the tomatoes.</p><a href="/">home</a></body></html>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestEnglishIndexLeavesDictionaryUnloaded indexes and searches an
// English-only crawl in a fresh process (this test binary run again) and
// checks that the Chinese dictionaries were never loaded.
func TestEnglishIndexLeavesDictionaryUnloaded(t *testing.T) {
	if dir := os.Getenv("SPIDER_TEST_ENGLISH_INDEX"); dir != "" {
		// The child: index, search, report.
		code, out, errOut := runCLI(t, "index", "--data", dir)
		fmt.Printf("INDEX %d %s %s\n", code, out, errOut)
		code, out, errOut = runCLI(t, "search", "--data", dir, "water tomatoes")
		fmt.Printf("SEARCH %d %s %s\n", code, out, errOut)
		a, _ := analysis.Shared()
		fmt.Printf("LOADED=%v\n", a.Loaded())
		return
	}
	srv := englishSite(t)
	data := filepath.Join(t.TempDir(), "data")
	if code, _, errOut := runCLI(t, "crawl", "--data", data, "--delay", "0", "--allow-private", "--quiet", srv.URL+"/"); code != 0 {
		t.Fatalf("crawl: code %d\n%s", code, errOut)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnglishIndexLeavesDictionaryUnloaded$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SPIDER_TEST_ENGLISH_INDEX="+data)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{"INDEX 0 indexed", "3 pages added", "Chinese dictionary not loaded", "SEARCH 0 results 1–2 of 2", "[water]", "[tomatoes]", "LOADED=false"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}
