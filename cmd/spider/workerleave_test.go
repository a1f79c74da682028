package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestWorkerInterruptLeaves: Ctrl-C to `spider worker` in the middle of a
// crawl makes it leave cleanly: it says so, finishes its fetches in flight
// (websim answers after 100 ms, so some are) and exits 0 with "left the
// crawl"; the master and the other worker finish the crawl (exit 0), and
// no page was requested twice or abandoned.
func TestWorkerInterruptLeaves(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a Redis server and three processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 21, Hosts: 6, PagesPerHost: 25, Latency: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	common := append([]string{"--redis", rs.URL(), "--crawl", "leave", "--allow-private"}, resolveArgs(srv)...)
	master := startProc(t, bin, append(append([]string{"master", "--data", filepath.Join(dir, "m"), "--delay", "5ms",
		"--scope", "any", "--max-depth", "-1", "--quiet"}, common...), srv.SeedURLs(2)...)...)
	stay := startProc(t, bin, append([]string{"worker", "--data", filepath.Join(dir, "w1"), "--concurrency", "3"}, common...)...)
	leaver := startProc(t, bin, append([]string{"worker", "--data", filepath.Join(dir, "w2"), "--concurrency", "3"}, common...)...)
	if code := interruptWhenServed(t, leaver, srv, 30); code != 0 {
		t.Fatalf("the interrupted worker: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, leaver.stdout.String(), leaver.stderr.String())
	}
	if !strings.Contains(leaver.stdout.String(), "left the crawl") || !strings.Contains(leaver.stderr.String(), "finishing the fetches in flight") {
		t.Errorf("the interrupted worker did not say it left:\nstdout:\n%s\nstderr:\n%s", leaver.stdout.String(), leaver.stderr.String())
	}
	if code := master.wait(t, "master"); code != 0 {
		t.Fatalf("master: exit %d\nstdout:\n%s\nstderr:\n%s", code, master.stdout.String(), master.stderr.String())
	}
	if code := stay.wait(t, "worker"); code != 0 {
		t.Fatalf("the other worker: exit %d\n%s", code, stay.stderr.String())
	}
	count := map[string]int{}
	for _, e := range srv.Log().Entries() {
		if strings.HasPrefix(e.Path, "/robots") {
			continue
		}
		count[e.URL]++
		if e.Status == 0 {
			t.Errorf("%s: a request abandoned in flight", e.URL)
		}
	}
	for u, n := range count {
		if n > 1 {
			t.Errorf("%s requested %d times", u, n)
		}
	}
	if len(count) < 100 {
		t.Errorf("%d pages requested: the crawl did not complete", len(count))
	}
}

// TestWorkerSecondInterruptAbandons: a second Ctrl-C to a leaving `spider
// worker` abandons its fetches in flight (websim answers after 3 s) at
// once: exit 130 well before they would have ended; their tasks are handed
// back, so a worker started afterwards fetches them and the crawl ends
// with no URL lost.
func TestWorkerSecondInterruptAbandons(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a Redis server and three processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 22, Hosts: 4, PagesPerHost: 3, Latency: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir := t.TempDir()
	common := append([]string{"--redis", rs.URL(), "--crawl", "abandon", "--allow-private"}, resolveArgs(srv)...)
	master := startProc(t, bin, append(append([]string{"master", "--data", filepath.Join(dir, "m"), "--delay", "5ms",
		"--scope", "any", "--max-depth", "1", "--quiet"}, common...), srv.SeedURLs(2)...)...)
	leaver := startProc(t, bin, append([]string{"worker", "--data", filepath.Join(dir, "w1"), "--concurrency", "2"}, common...)...)
	// The only worker is work number 1: a task in its processing list is
	// a fetch just started (a robots.txt and a page, 3 s each).
	rdb := rs.Client()
	deadline := time.Now().Add(30 * time.Second)
	for rdb.LLen(context.Background(), "{spider:abandon}:mw:proc:1").Val() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the worker took no task\nstderr:\n%s", leaver.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := leaver.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := leaver.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("the worker ended before the second Ctrl-C although a fetch was in flight: %v", err)
	}
	second := time.Now()
	code := leaver.wait(t, "the twice interrupted worker")
	took := time.Since(second)
	if code != 130 {
		t.Fatalf("the twice interrupted worker: exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, leaver.stdout.String(), leaver.stderr.String())
	}
	if took > 2*time.Second {
		t.Errorf("the worker exited %s after the second Ctrl-C: its fetch in flight was not abandoned", took)
	}
	if !strings.Contains(leaver.stderr.String(), "Ctrl-C again to abandon") {
		t.Errorf("the first Ctrl-C did not say a second one abandons:\n%s", leaver.stderr.String())
	}
	stay := startProc(t, bin, append([]string{"worker", "--data", filepath.Join(dir, "w2"), "--concurrency", "4"}, common...)...)
	if code := master.wait(t, "master"); code != 0 {
		t.Fatalf("master: exit %d\nstdout:\n%s\nstderr:\n%s", code, master.stdout.String(), master.stderr.String())
	}
	if code := stay.wait(t, "worker"); code != 0 {
		t.Fatalf("the second worker: exit %d\n%s", code, stay.stderr.String())
	}
	abandoned, served := 0, map[string]bool{}
	for _, e := range srv.Log().Entries() {
		if e.Status == 0 {
			abandoned++
		} else {
			served[e.URL] = true
		}
	}
	if abandoned == 0 {
		t.Error("no request was abandoned: the second Ctrl-C found no fetch in flight")
	}
	for _, e := range srv.Log().Entries() {
		if e.Status == 0 && !served[e.URL] {
			t.Errorf("%s: abandoned and never fetched again (lost)", e.URL)
		}
	}
	for _, u := range srv.SeedURLs(2) {
		if !served[u] {
			t.Errorf("seed %s never fetched", u)
		}
	}
}
