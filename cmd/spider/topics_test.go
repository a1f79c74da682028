package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/topics"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestCrawlTopicsEndToEnd crawls a growing websim with three topics (one
// registrable domain each; alpha has the highest priority and revisits two
// section hubs) and checks: every topic gets pages, alpha's come first, the
// stats and status commands show the topics, hub revisits find articles
// published during the crawl, and a second run resumes the task records.
func TestCrawlTopicsEndToEnd(t *testing.T) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 3, Hosts: 12, Domains: 4, PagesPerHost: 30,
		PublishEvery: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	words := func(tp websim.Topic) string {
		en, _ := websim.TopicWords(tp)
		return "[" + strings.Join(en, ", ") + "]"
	}
	yml := `period: 2s
tick: 100ms
base_slice: 40ms
topics:
  - name: alpha
    description: time-critical news
    priority: 2
    seeds: [` + srv.URL("www.d0.test", "/") + `]
    patterns: ["http://(test,d0,"]
    terms: ` + words(websim.TopicTax) + `
    min_pages: 5
    recrawl: 300ms
    hubs: [` + srv.URL("www.d0.test", "/s/1/") + `, ` + srv.URL("www.d0.test", "/s/2/") + `]
  - name: beta
    priority: 1
    seeds: [` + srv.URL("www.d1.test", "/") + `]
    patterns: ["http://(test,d1,"]
    terms: ` + words(websim.TopicFinance) + `
  - name: gamma
    priority: 0
    seeds: [` + srv.URL("www.d2.test", "/") + `]
    patterns: ["http://(test,d2,"]
    terms: ` + words(websim.TopicSports) + `
`
	tfile := filepath.Join(dir, "topics.yaml")
	if err := os.WriteFile(tfile, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"crawl", "--topics", tfile, "--data", data, "--scope", "domain", "--allow-private",
		"--delay", "25ms", "--concurrency", "1", "--max-pages", "220", "--quiet"}
	for _, r := range srv.Resolve() {
		args = append(args, "--resolve", r)
	}
	if code, _, errOut := runCLI(t, args...); code != 0 {
		t.Fatalf("crawl: code %d\n%s", code, errOut)
	}

	// Every topic got pages; alpha, the highest priority, came first.
	recs := recordsInOrder(t, data)
	topicOf := func(u string) string {
		for _, d := range []string{"d0", "d1", "d2"} {
			if strings.Contains(u, "."+d+".test") || strings.Contains(u, "//"+d+".test") {
				return map[string]string{"d0": "alpha", "d1": "beta", "d2": "gamma"}[d]
			}
		}
		return ""
	}
	first := map[string]int{}
	for _, r := range recs[:6] {
		first[topicOf(r.URL)]++
	}
	if first["alpha"] < 4 {
		t.Errorf("first 6 fetches by topic %v: want alpha (priority 2) first", first)
	}
	fresh := 0
	for _, r := range recs {
		if _, ok := websim.NewArticle(r.URL); ok && topicOf(r.URL) == "alpha" {
			fresh++
		}
	}
	if fresh == 0 {
		t.Errorf("no article published during the crawl was fetched: hub revisits do not work")
	}

	code, out, errOut := runCLI(t, "stats", "--data", data, "--json")
	if code != 0 {
		t.Fatalf("stats: %d %s", code, errOut)
	}
	var st struct {
		URLs   int64         `json:"urls"`
		Topics topics.Status `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	pages := map[string]int64{}
	for _, ts := range st.Topics.Tasks {
		pages[ts.Name] = ts.Pages
		if ts.Name == "alpha" && ts.Recrawls == 0 {
			t.Errorf("alpha never revisited its hubs: %+v", ts)
		}
	}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if pages[name] == 0 {
			t.Errorf("topic %s got no pages: %v", name, pages)
		}
	}
	code, out, _ = runCLI(t, "stats", "--data", data)
	if code != 0 || !strings.Contains(out, "topics: epoch") || !strings.Contains(out, "gamma") {
		t.Errorf("stats text lacks the topics table:\n%s", out)
	}
	code, out, _ = runCLI(t, "status", "--data", data)
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "slice ST/SR") {
		t.Errorf("status --data lacks the topics:\n%s", out)
	}

	// A second run resumes the task records (page counters keep growing).
	for i, a := range args {
		if a == "--max-pages" {
			args[i+1] = "260"
		}
	}
	if code, _, errOut := runCLI(t, args...); code != 0 {
		t.Fatalf("second crawl: code %d\n%s", code, errOut)
	}
	ts2, err := topics.ReadStatus(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range ts2.Tasks {
		if ts.Name == "alpha" && ts.Pages < pages["alpha"] {
			t.Errorf("alpha's pages went from %d to %d: task records not resumed", pages["alpha"], ts.Pages)
		}
	}
	t.Logf("pages per topic %v, %d fresh articles fetched", pages, fresh)

	// Bad input says what is wrong.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("topics: [{name: x}]"), 0o644)
	if code, _, errOut := runCLI(t, "crawl", "--topics", bad, "--data", t.TempDir()); code == 0 || !strings.Contains(errOut, "give seeds, patterns or urls") {
		t.Errorf("bad topics file: code %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "crawl", "--topics", filepath.Join(dir, "missing.yaml"), "--data", t.TempDir()); code == 0 || !strings.Contains(errOut, "topics file") {
		t.Errorf("missing topics file: code %d, %s", code, errOut)
	}
}

func recordsInOrder(t *testing.T, data string) []store.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(data, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []store.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r store.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
