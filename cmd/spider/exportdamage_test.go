package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/store/warc"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestWARCExportSkipsBadRecords: records whose page belongs to another URL
// or is missing are left out of a WARC export, counted in its message, and
// every other page is exported (one bad record does not abort the export);
// spider fsck names the bad records and --repair makes the export whole
// after a resumed crawl.
func TestWARCExportSkipsBadRecords(t *testing.T) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 8, Hosts: 2, PagesPerHost: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 2, Scope: websim.ScopeAny}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	crawlArgs := append([]string{"crawl", "--data", data, "--resolve-file", resolve, "--allow-private", "--delay", "0s",
		"--scope", "any", "--max-depth", "2", "--quiet"}, rules.Seeds...)
	if code, _, errOut := runCLI(t, crawlArgs...); code != 0 {
		t.Fatalf("crawl: %d %s", code, errOut)
	}
	responses := func() (int, string) {
		t.Helper()
		path := filepath.Join(dir, "out.warc.gz")
		os.Remove(path)
		_, _, errOut := runCLI(t, "export", "--data", data, "--format", "warc", "--out", path)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := warc.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return n, errOut
			}
			if err != nil {
				t.Fatalf("exported WARC: %v", err)
			}
			if rec.Type() == "response" {
				n++
			}
		}
	}
	clean, errOut := responses()
	if clean < 10 || errOut != "" {
		t.Fatalf("clean export: %d responses, stderr %q", clean, errOut)
	}

	// Point two records at each other's pages.
	path := filepath.Join(data, store.RecordsFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	var idx []int
	var recs []store.Record
	for i, l := range lines {
		var r store.Record
		if json.Unmarshal([]byte(l), &r) == nil && r.PageNo >= 0 {
			idx, recs = append(idx, i), append(recs, r)
		}
		if len(idx) == 2 {
			break
		}
	}
	if len(idx) < 2 {
		t.Fatal("fewer than two records with pages")
	}
	for k, i := range idx {
		r := recs[k]
		r.PageNo = recs[1-k].PageNo
		enc, _ := json.Marshal(r)
		lines[i] = string(enc) + "\n"
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	got, errOut := responses()
	if got != clean-2 || !strings.Contains(errOut, "left out 2 damaged records") || !strings.Contains(errOut, "fsck") {
		t.Errorf("export with two mismatched records: %d responses (clean %d), stderr %q; want the other pages exported and the 2 counted", got, clean, errOut)
	}
	code, out, _ := runCLI(t, "fsck", "--data", data)
	if code != 1 || !strings.Contains(out, recs[0].URL) || !strings.Contains(out, recs[1].URL) {
		t.Errorf("fsck: exit %d, want 1 naming both records\n%s", code, out)
	}
	if code, out, errOut := runCLI(t, "fsck", "--data", data, "--repair"); code != 0 {
		t.Fatalf("fsck --repair: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, crawlArgs...); code != 0 {
		t.Fatalf("crawl after repair: %d %s", code, errOut)
	}
	if got, errOut := responses(); got != clean || errOut != "" {
		t.Errorf("export after repair and resume: %d responses, clean %d, stderr %q", got, clean, errOut)
	}
}
