package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// spiderBin is the spider binary the tests run, built by the first
// buildSpider and removed by TestMain.
var spiderBin struct {
	once sync.Once
	dir  string // os.MkdirTemp's directory holding the binary
	path string
	err  error
}

// buildSpider compiles the spider binary once per test binary run (each go
// build costs a staleness check of every package and, under load, seconds)
// and returns its path. Tests only run the binary: none writes next to it.
func buildSpider(t *testing.T) string {
	t.Helper()
	spiderBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "spider-test-bin-")
		if err != nil {
			spiderBin.err = fmt.Errorf("cannot make a directory for the spider binary: %w", err)
			return
		}
		spiderBin.dir, spiderBin.path = dir, filepath.Join(dir, "spider")
		if out, err := exec.Command("go", "build", "-o", spiderBin.path, ".").CombinedOutput(); err != nil {
			spiderBin.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if spiderBin.err != nil {
		t.Fatal(spiderBin.err)
	}
	return spiderBin.path
}

// TestKillResume kills a crawl with SIGKILL at random moments, runs the
// same command again each time, and checks at the end that every URL of
// the ground truth was fetched, none that must not be, and that no URL was
// requested more often than the kills can explain (at most one extra
// request per URL in flight at a kill).
func TestKillResume(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several crawls")
	}
	bin := buildSpider(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 21, Hosts: 16, PagesPerHost: 60, Latency: 3 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: 4, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	resolve := filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	const concurrency = 8
	// --sitemaps=false: the ground truth follows links (websim's /sitemap.xml lists every page).
	args := append([]string{"crawl", "--data", data, "--resolve-file", resolve, "--allow-private",
		"--delay", "5ms", "--concurrency", strconv.Itoa(concurrency), "--scope", "any", "--max-depth", "4", "--quiet", "--sitemaps=false"},
		rules.Seeds...)

	rng := rand.New(rand.NewPCG(1, 2))
	// Kill points: record counts at random fractions of the ground truth, in order, so
	// every kill lands inside the crawl whatever the machine's speed (a clock time
	// after start may land before the crawl began).
	var points []int
	for range 8 {
		points = append(points, len(truth.MustFetch)*(5+rng.IntN(85))/100)
	}
	slices.Sort(points)
	kills := 0
	for run := 0; ; run++ {
		if run > 40 {
			t.Fatal("the crawl did not finish after 40 runs")
		}
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if kills == len(points) { // the last run finishes
			if err := <-done; err != nil {
				t.Fatalf("run %d failed: %v\n%s", run, err, stderr.String())
			}
			t.Logf("run %d finished after %d kills", run, kills)
			break
		}
		// Poll the records file (every 10 ms) until the kill point; the crawl must not
		// end or stall before it.
		deadline := time.Now().Add(2 * time.Minute)
		for countRecords(data) < points[kills] {
			select {
			case err := <-done:
				t.Fatalf("run %d ended (%v) at %d records, before its kill point %d\n%s", run, err, countRecords(data), points[kills], stderr.String())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d did not reach its kill point %d in 2 minutes (%d records)", run, points[kills], countRecords(data))
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("run %d: cannot kill the crawl at its kill point: %v", run, err)
		}
		<-done
		kills++
	}
	if kills == 0 {
		t.Fatal("the crawl finished before the first kill: make the web larger")
	}
	recs := map[string]store.Record{}
	rs, err := store.OpenRecords(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Iterate(func(r store.Record) error { recs[r.URL] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	for _, u := range truth.MustFetch {
		if _, ok := recs[u]; !ok {
			t.Errorf("lost: %s was never recorded", u)
		}
	}
	for u, r := range recs {
		if r.Outcome == crawl.OutcomeRobots {
			continue
		}
		if _, ok := truth.MustNotFetch[u]; ok {
			t.Errorf("fetched %s, which must not be", u)
		}
	}
	extra := 0
	for u, n := range srv.Log().Duplicates() {
		extra += n - 1
		if n > 1+kills {
			t.Errorf("%s requested %d times with %d kills", u, n, kills)
		}
	}
	// Each kill can leave at most `concurrency` URLs in flight to refetch.
	if extra > kills*concurrency {
		t.Errorf("%d repeated requests after %d kills, want at most %d", extra, kills, kills*concurrency)
	}
	t.Logf("%d kills, %d URLs, %d repeated requests", kills, len(truth.MustFetch), extra)
}
