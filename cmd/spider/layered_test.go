package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/layered"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestCrawlLayered runs `spider crawl --mode layered` end to end on a web
// with noise: the report is printed and saved, no noise URL is fetched,
// `spider stats` reads the merged page store, and bad flags are refused
// with a clear message.
func TestCrawlLayered(t *testing.T) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 7, Hosts: 6, PagesPerHost: 15, Enable: websim.FeatureNoise, TroubleShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(2)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	samples := filepath.Join(dir, "noise.txt")
	if err := os.WriteFile(samples, []byte("# extra samples\n?ref=\n/print/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"crawl", "--mode", "layered", "--data", data, "--scope", "any", "--delay", "0s", "--allow-private"}
	for _, r := range srv.Resolve() {
		base = append(base, "--resolve", r)
	}
	args := append(append(base, "--rounds", "3", "--groups", "4", "--noise-samples", samples), seeds...)
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("layered crawl: code %d\n%s", code, errOut)
	}
	for _, want := range []string{"layered crawl: 3 rounds", "noise-dom", "dup-visit", "all", "report:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var reps []layered.RoundReport
	b, err := os.ReadFile(filepath.Join(data, layered.DirName, layered.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &reps); err != nil || len(reps) != 3 {
		t.Fatalf("report.json: %v, %d rounds", err, len(reps))
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, r := range raw { // elapsed_ms, snake_case keys: the JSON style of issue 20
		checkJSON(t, "layered/report.json", "LayeredRoundReport", string(r))
	}
	for _, u := range truth.NoiseURLs {
		if srv.Log().Count(u) > 0 {
			t.Errorf("noise URL %s was fetched", u)
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
	fetched := 0
	for _, r := range reps {
		fetched += r.Fetched
	}
	if s.URLs != int64(fetched) || fetched == 0 {
		t.Errorf("stats sees %d URLs, the layered report %d", s.URLs, fetched)
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds"},
		{[]string{"--noise-samples", filepath.Join(dir, "missing.txt")}, "noise-samples"},
		{[]string{"--noise-threshold", "3"}, "noise threshold"},
		{[]string{"--cluster-threshold", "-1"}, "cluster threshold"},
	}
	for _, c := range bad {
		args := append(append(append([]string(nil), base...), "--data", filepath.Join(dir, "bad")), c.args...)
		code, _, errOut := runCLI(t, append(args, seeds...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: code %d, stderr %q; want an error about %s", c.args, code, errOut, c.want)
		}
	}
}

// TestCrawlLayeredRedis runs two processes' worth of CLI runs on one Redis:
// the first coordinates, the second works; the coordinator's data directory
// gets the whole crawl.
func TestCrawlLayeredRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 8, Hosts: 6, PagesPerHost: 15, Enable: websim.FeatureNoise})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	args := func(data string) []string {
		a := []string{"crawl", "--mode", "layered", "--data", data, "--scope", "any", "--delay", "0s", "--allow-private",
			"--redis", rs.URL(), "--crawl", "cli", "--rounds", "2", "--groups", "4", "--lease-ttl", "1s"}
		for _, r := range srv.Resolve() {
			a = append(a, "--resolve", r)
		}
		return append(a, srv.SeedURLs(2)...)
	}
	type result struct {
		code     int
		out, err string
	}
	coordDone := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(t, args(filepath.Join(dir, "coord"))...)
		coordDone <- result{code, out, errOut}
	}()
	// The worker starts once the coordinator created the crawl (polled every 10 ms; the
	// deadline fails the test).
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ok, _ := rs.Client().HExists(context.Background(), "{spider:cli}:layered:meta", "layout").Result(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the coordinator did not create the crawl in 60 s")
		}
	}
	code, out, errOut := runCLI(t, args(filepath.Join(dir, "worker"))...)
	if code != 0 {
		t.Fatalf("worker: code %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "coordinator holds the pages") {
		t.Errorf("worker output: %s", out)
	}
	r := <-coordDone
	if r.code != 0 || !strings.Contains(r.out, "layered crawl: 2 rounds") {
		t.Fatalf("coordinator: code %d\n%s\n%s", r.code, r.out, r.err)
	}
}

// TestLayeredThresholdRanges: the noise filter's thresholds out of range
// are usage errors (exit 2) naming the flag and the range, and nothing is
// created.
func TestLayeredThresholdRanges(t *testing.T) {
	for _, c := range []struct{ flag, value string }{
		{"--noise-threshold", "3"}, {"--noise-threshold", "0"},
		{"--cluster-threshold", "-1"}, {"--cluster-threshold", "1.5"},
		{"--noise-similarity", "0"}, {"--noise-deviation", "1"}, {"--noise-deviation", "-0.1"},
	} {
		data := filepath.Join(t.TempDir(), "d")
		code, _, errOut := runCLI(t, "crawl", "--mode", "layered", "--data", data, c.flag, c.value, "http://127.0.0.1:1/")
		if code != 2 || !strings.Contains(errOut, c.flag+" "+c.value) || !strings.Contains(errOut, "at most 1") && !strings.Contains(errOut, "below 1") {
			t.Errorf("%s %s: exit %d, stderr %q; want exit 2 naming the flag and its range", c.flag, c.value, code, errOut)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("%s %s: the data directory was created", c.flag, c.value)
		}
	}
}

// TestLayeredNoiseRule: --noise-rule takes template or ratio; anything else
// is a usage error (exit 2) naming the flag and the rules, before anything
// is created.
func TestLayeredNoiseRule(t *testing.T) {
	data := filepath.Join(t.TempDir(), "d")
	code, _, errOut := runCLI(t, "crawl", "--mode", "layered", "--data", data, "--noise-rule", "links", "http://127.0.0.1:1/")
	if code != 2 || !strings.Contains(errOut, "--noise-rule") || !strings.Contains(errOut, "template") || !strings.Contains(errOut, "ratio") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the flag and the rules", code, errOut)
	}
	if _, err := os.Stat(data); err == nil {
		t.Error("the data directory was created")
	}
}
