package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/fsck"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestFsckBinary runs the real binary: a crawl, a clean fsck (exit 0), a
// truncated records.jsonl that fsck reports (exit 1, naming the file), a
// repair that lists the URLs queued again, a clean fsck after it, a
// resumed crawl that records every URL of the ground truth again, and a
// fsck refused while a crawl holds the directory.
func TestFsckBinary(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("builds the binary and crawls")
	}
	bin := buildSpider(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 5, Hosts: 4, PagesPerHost: 15})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(1), MaxDepth: 3, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	crawlArgs := append([]string{"crawl", "--data", data, "--resolve-file", resolve, "--allow-private",
		"--delay", "0s", "--scope", "any", "--max-depth", "3", "--quiet"}, rules.Seeds...)
	spider := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	if code, _, errOut := spider(crawlArgs...); code != 0 {
		t.Fatalf("crawl: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := spider("fsck", "--data", data); code != 0 || !strings.Contains(out, "clean") {
		t.Fatalf("fsck of a clean crawl: exit %d\n%s%s", code, out, errOut)
	}

	recPath := filepath.Join(data, store.RecordsFileName)
	info, err := os.Stat(recPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(recPath, info.Size()*6/10); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := spider("fsck", "--data", data)
	if code != 1 || !strings.Contains(out, "records.jsonl") || !strings.Contains(errOut, "--repair") {
		t.Fatalf("fsck of a truncated records.jsonl: exit %d, want 1 naming the file\n%s%s", code, out, errOut)
	}
	if code, _, errOut := spider(crawlArgs...); code == 0 || !strings.Contains(errOut, "fsck") {
		t.Errorf("crawl over lost records: exit %d, want a refusal naming spider fsck\n%s", code, errOut)
	}
	code, out, errOut = spider("fsck", "--data", data, "--repair")
	if code != 0 || !strings.Contains(out, "requeued: http://") || !strings.Contains(out, "repaired") {
		t.Fatalf("fsck --repair: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = spider("fsck", "--data", data, "--json")
	var rep fsck.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.Clean() {
		t.Fatalf("fsck --json after repair: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if code, _, errOut := spider(crawlArgs...); code != 0 {
		t.Fatalf("crawl after repair: exit %d\n%s", code, errOut)
	}
	lines, err := store.ScanRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, l := range lines {
		recorded[l.Rec.URL] = l.Err == nil
	}
	for _, u := range truth.MustFetch {
		if !recorded[u] {
			t.Errorf("lost: %s has no record after repair and resume", u)
		}
	}

	// A damaged state: the crawl refuses it naming fsck; repair rebuilds
	// it from the records (keeping the damaged file) and the crawl goes on.
	statePath := filepath.Join(data, "state", "state.db")
	if err := os.Truncate(statePath, 4096*3); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := spider(crawlArgs...); code == 0 || !strings.Contains(errOut, "fsck") {
		t.Errorf("crawl over a truncated state.db: exit %d, want a refusal naming spider fsck\n%s", code, errOut)
	}
	code, out, errOut = spider("fsck", "--data", data)
	if code != 1 || !strings.Contains(out, "state/state.db") {
		t.Errorf("fsck of a truncated state.db: exit %d, want 1 naming it\n%s%s", code, out, errOut)
	}
	if code, out, errOut := spider("fsck", "--data", data, "--repair"); code != 0 || !strings.Contains(out, "state.db.damaged") {
		t.Fatalf("fsck --repair of a truncated state.db: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := spider(crawlArgs...); code != 0 {
		t.Fatalf("crawl after the state was rebuilt: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := spider("fsck", "--data", data); code != 0 {
		t.Errorf("fsck after the resumed crawl: exit %d\n%s%s", code, out, errOut)
	}
	lines, err = store.ScanRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	recorded = map[string]bool{}
	for _, l := range lines {
		recorded[l.Rec.URL] = l.Err == nil
	}
	for _, u := range truth.MustFetch {
		if !recorded[u] {
			t.Errorf("lost after the state was rebuilt: %s", u)
		}
	}

	// A crawl holding the directory: fsck refuses, with or without --repair.
	slow, err := websim.Start(context.Background(), websim.Config{Seed: 6, Hosts: 2, PagesPerHost: 50, Latency: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	busy := t.TempDir()
	slowResolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(slowResolve, []byte(strings.Join(slow.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"crawl", "--data", busy, "--resolve-file", slowResolve, "--allow-private",
		"--delay", "0s", "--scope", "any", "--quiet"}, slow.SeedURLs(1)...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for !store.Locked(busy) {
		if time.Now().After(deadline) {
			t.Fatal("the crawl did not take its lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, args := range [][]string{{"fsck", "--data", busy}, {"fsck", "--data", busy, "--repair"}} {
		if code, out, errOut := spider(args...); code != 3 || !strings.Contains(errOut, "locked") {
			t.Errorf("%v on a running crawl: exit %d, want 3 (a resource problem) and a refusal saying it is locked\n%s%s", args, code, out, errOut)
		}
	}
}
