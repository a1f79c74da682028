package crawl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
)

func TestFailed(t *testing.T) {
	for _, c := range []struct {
		outcome string
		failed  bool
	}{
		{"200", false}, {"204", false}, {"301", false}, {"304", false},
		{"404", true}, {"410", true}, {"503", true}, {"100", true},
		{crawl.OutcomeDNS, true}, {crawl.OutcomeRefused, true}, {crawl.OutcomeTLS, true},
		{crawl.OutcomeRobots, true}, {crawl.OutcomeRobotsUnavailable, true}, {crawl.OutcomeError, true},
	} {
		if got := crawl.Failed(c.outcome); got != c.failed {
			t.Errorf("Failed(%q) = %v, want %v", c.outcome, got, c.failed)
		}
	}
}

// TestHint: every failure class the crawler records has a hint of its
// own (not the catch-all), and the named hints say what to do.
func TestHint(t *testing.T) {
	catchAll := crawl.Hint("no-such-class")
	for _, o := range []string{crawl.OutcomeRobots, crawl.OutcomeRobotsUnavailable, crawl.OutcomeTooManyRedirects,
		crawl.OutcomeTimeout, crawl.OutcomeReset, crawl.OutcomeDNS, crawl.OutcomeRefused, crawl.OutcomeTLS,
		crawl.OutcomeUnreachable, crawl.OutcomeForbiddenAddress, "404", "403", "429", "503"} {
		if h := crawl.Hint(o); h == "" || h == catchAll {
			t.Errorf("Hint(%q) = %q: want a hint of its own", o, h)
		}
	}
	for o, want := range map[string]string{
		crawl.OutcomeDNS:              "check the name or your network",
		crawl.OutcomeRefused:          "refused",
		crawl.OutcomeTLS:              "certificate",
		crawl.OutcomeRobots:           "robots.txt disallows",
		crawl.OutcomeForbiddenAddress: "--allow-private",
	} {
		if h := crawl.Hint(o); !strings.Contains(h, want) {
			t.Errorf("Hint(%q) = %q, want it to say %q", o, h, want)
		}
	}
}

// writeRecords writes recs to dir/records.jsonl.
func writeRecords(t *testing.T, dir string, recs []store.Record) {
	t.Helper()
	rs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.PageNo == 0 {
			r.PageNo = -1
		}
		if err := rs.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStatsFailures: the summary groups failed URLs by class, largest
// first, with the first MaxFailureExamples in record order; a URL counts
// by its last record (refetched after a resume), so one that failed and
// later succeeded is no failure; NothingFetched holds only without a 2xx.
func TestStatsFailures(t *testing.T) {
	dir := t.TempDir()
	recs := []store.Record{
		{URL: "http://a.invalid/", Outcome: crawl.OutcomeDNS, Error: "no such host a"},
		{URL: "http://b.invalid/", Outcome: crawl.OutcomeDNS, Error: "no such host b"},
		{URL: "http://c.test/", Outcome: crawl.OutcomeRefused, Error: "connection refused"},
		{URL: "http://d.test/x", Outcome: "404", Status: 404},
		{URL: "http://e.invalid/", Outcome: crawl.OutcomeDNS},
		{URL: "http://f.invalid/", Outcome: crawl.OutcomeDNS},
		{URL: "http://g.test/", Outcome: crawl.OutcomeRefused},
		{URL: "http://g.test/", Outcome: "301", Status: 301}, // refetched: its last record counts
	}
	writeRecords(t, dir, recs)
	s, err := crawl.Stats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Failures) != 3 {
		t.Fatalf("failures %+v, want 3 classes", s.Failures)
	}
	dns, notFound, refused := s.Failures[0], s.Failures[1], s.Failures[2] // ties by class name
	if dns.Class != crawl.OutcomeDNS || dns.URLs != 4 || len(dns.Examples) != crawl.MaxFailureExamples ||
		dns.Examples[0] != (crawl.FailedURL{URL: "http://a.invalid/", Error: "no such host a"}) || dns.Examples[2].URL != "http://e.invalid/" {
		t.Errorf("dns class %+v, want 4 URLs, the first 3 in record order", dns)
	}
	if refused.Class != crawl.OutcomeRefused || refused.URLs != 1 || notFound.Class != "404" || notFound.URLs != 1 {
		t.Errorf("classes %+v %+v, want refused 1 (g.test ended 301) and 404 1", refused, notFound)
	}
	if dns.Hint != crawl.Hint(crawl.OutcomeDNS) {
		t.Errorf("dns hint %q", dns.Hint)
	}
	if s.FailedURLs() != 6 || !s.NothingFetched() {
		t.Errorf("FailedURLs %d NothingFetched %v, want 6 and true (no 2xx)", s.FailedURLs(), s.NothingFetched())
	}
	var b strings.Builder
	s.Print(&b)
	for _, want := range []string{"failed: 6 of 7 URLs", "dns: 4 URLs: " + dns.Hint, "http://a.invalid/  (no such host a)", "… and 1 more", "404: 1 URL"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}

	writeRecords(t, dir, []store.Record{{URL: "http://h.test/", Outcome: "200", Status: 200}})
	if s, err = crawl.Stats(dir); err != nil {
		t.Fatal(err)
	}
	if s.NothingFetched() {
		t.Error("NothingFetched with a 2xx page")
	}
}

// TestOtherSeeds: a directory holding a crawl from other seeds is told
// apart from a new directory and from a resumed crawl (any of its seeds
// given again, in any spelling the normaliser makes equal).
func TestOtherSeeds(t *testing.T) {
	dir := t.TempDir()
	cfg := crawl.Config{Data: dir, Seeds: []string{"http://new.test/"}}
	if old, err := crawl.OtherSeeds(cfg); err != nil || old != nil {
		t.Fatalf("no records: %v %v, want nothing", old, err)
	}
	writeRecords(t, dir, []store.Record{
		{URL: "http://old.test/", Outcome: "301", Depth: 0},
		{URL: "https://old.test/", Outcome: "200", Depth: 0},
		{URL: "https://old.test/a", Outcome: "200", Depth: 1},
		{URL: "http://other.test/", Outcome: "200", Depth: 0},
	})
	old, err := crawl.OtherSeeds(cfg)
	if err != nil || strings.Join(old, " ") != "http://old.test/ https://old.test/ http://other.test/" {
		t.Errorf("other seeds: %v %v, want the three depth-0 URLs", old, err)
	}
	for _, seeds := range [][]string{{"http://OLD.test:80"}, {"http://new.test/", "http://other.test/"}} {
		cfg.Seeds = seeds
		if old, err := crawl.OtherSeeds(cfg); err != nil || old != nil {
			t.Errorf("seeds %v (one of the crawl's): %v %v, want nothing", seeds, old, err)
		}
	}
	cfg.Seeds = nil // --topics without seeds
	if old, err := crawl.OtherSeeds(cfg); err != nil || old != nil {
		t.Errorf("no seeds: %v %v, want nothing", old, err)
	}
}

// TestCheckCrawlDir: a directory with records.jsonl passes; a missing one,
// an empty one and a file fail wrapping ErrNoCrawl and naming the path;
// nothing is created.
func TestCheckCrawlDir(t *testing.T) {
	parent := t.TempDir()
	crawlDir := filepath.Join(parent, "crawl")
	writeRecords(t, crawlDir, nil)
	if err := crawl.CheckCrawlDir(crawlDir); err != nil {
		t.Errorf("a crawl: %v", err)
	}
	os.Mkdir(filepath.Join(parent, "empty"), 0o755)
	os.WriteFile(filepath.Join(parent, "file"), nil, 0o644)
	for dir, want := range map[string]string{"missing": "does not exist", "empty": "holds no crawl", "file": "is not a directory"} {
		path := filepath.Join(parent, dir)
		err := crawl.CheckCrawlDir(path)
		if !errors.Is(err, crawl.ErrNoCrawl) || !strings.Contains(err.Error(), path+" "+want) {
			t.Errorf("%s: %v, want ErrNoCrawl saying %q", dir, err, path+" "+want)
		}
	}
	if _, err := os.Stat(filepath.Join(parent, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CheckCrawlDir created the missing directory: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(parent, "empty")); len(ents) != 0 {
		t.Errorf("CheckCrawlDir created %v in the empty directory", ents)
	}
}
