package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestPeersKill runs three `spider crawl --redis` peers, kills one with
// SIGKILL mid-crawl and checks that the other two finish the crawl by
// themselves (its buckets' leases expire and move, its inbox is adopted)
// with every ground-truth URL fetched.
func TestPeersKill(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t, redistest.AppendOnlyEverySec())
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 61, Hosts: 30, PagesPerHost: 25, Latency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(3), MaxDepth: -1, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		cmd  *exec.Cmd
		out  *bytes.Buffer
		done chan error
		data string
	}
	var ps []*proc
	for i := 0; i < 3; i++ {
		p := &proc{out: &bytes.Buffer{}, done: make(chan error, 1), data: filepath.Join(dir, fmt.Sprintf("n%d", i))}
		p.cmd = exec.Command(bin, append([]string{"crawl", "--redis", rs.URL(), "--crawl", "k", "--node-id", fmt.Sprintf("n%d", i),
			"--buckets", "128", "--data", p.data, "--resolve-file", resolve, "--allow-private", "--delay", "2ms",
			"--concurrency", "4", "--scope", "any", "--max-depth", "-1"}, rules.Seeds...)...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		ps = append(ps, p)
	}
	// Kill the first peer once it has fetched 30 URLs (its records file, polled every
	// 20 ms); a peer that never gets there fails the test, since its kill would test
	// nothing.
	for deadline := time.Now().Add(60 * time.Second); countRecords(ps[0].data) < 30; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first peer recorded %d fetches in 60 s, want 30 before its kill", countRecords(ps[0].data))
		}
	}
	code, out, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "k", "--buckets", "128")
	if code != 0 || !strings.Contains(out, "peer-to-peer") || !strings.Contains(out, "n1") {
		t.Errorf("status: code %d\n%s%s", code, out, errOut)
	}
	if err := ps[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ps[0].done
	for _, p := range ps[1:] {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("peer failed: %v\n%s", err, p.out)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("peer did not finish by itself\n%s", p.out)
		}
	}
	got := map[string]bool{}
	for _, p := range ps {
		r, err := store.OpenRecords(p.data, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.Iterate(func(rec store.Record) error { got[rec.URL] = true; return nil })
		r.Close()
	}
	missing := 0
	for _, u := range truth.MustFetch {
		if !got[u] {
			missing++
			if missing <= 5 {
				t.Errorf("lost: %s", u)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d URLs lost after a peer was killed", missing, len(truth.MustFetch))
	}
	repeats := 0
	for _, n := range srv.Log().Duplicates() {
		repeats += n - 1
	}
	// The killed peer's URLs in flight (≤ 4) may be fetched again.
	if repeats > 4 {
		t.Errorf("%d repeated requests", repeats)
	}
	t.Logf("%d URLs, %d repeated requests; n1: %s", len(truth.MustFetch), repeats, strings.SplitN(ps[1].out.String(), "\n", 2)[0])
}

// TestPeersDefaultNodeIDs starts three `spider crawl --redis` peers on one
// machine without --node-id, as a new user would: each takes the id kept
// in its data directory (distinct), and together they crawl the web with
// nothing missing and no URL fetched twice. A fourth process given the id
// of a live peer is refused with exit 3, naming --node-id, and fetches
// nothing.
func TestPeersDefaultNodeIDs(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 62, Hosts: 24, PagesPerHost: 20, Latency: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(3), MaxDepth: -1, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		cmd  *exec.Cmd
		out  *bytes.Buffer
		done chan error
		data string
	}
	start := func(data string, extra ...string) *proc {
		p := &proc{out: &bytes.Buffer{}, done: make(chan error, 1), data: data}
		args := append([]string{"crawl", "--redis", rs.URL(), "--crawl", "ids", "--buckets", "64", "--data", data,
			"--resolve-file", resolve, "--allow-private", "--delay", "2ms", "--concurrency", "4", "--scope", "any", "--max-depth", "-1"}, extra...)
		p.cmd = exec.Command(bin, append(args, rules.Seeds...)...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		return p
	}
	var ps []*proc
	for i := 0; i < 3; i++ {
		ps = append(ps, start(filepath.Join(dir, fmt.Sprintf("n%d", i))))
	}
	// Once the first peer is crawling (records written), a fourth process
	// claims its id.
	for deadline := time.Now().Add(60 * time.Second); countRecords(ps[0].data) < 5; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first peer recorded %d fetches in 60 s\n%s", countRecords(ps[0].data), ps[0].out)
		}
	}
	id0, err := os.ReadFile(filepath.Join(ps[0].data, "NODE_ID"))
	if err != nil {
		t.Fatalf("the first peer kept no id in its data directory: %v", err)
	}
	dup := start(filepath.Join(dir, "dup"), "--node-id", strings.TrimSpace(string(id0)))
	select {
	case err := <-dup.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(dup.out.String(), "in use by a live node") ||
			!strings.Contains(dup.out.String(), "--node-id") {
			t.Errorf("a process with a live peer's id: %v, want exit 3 saying the id is in use and naming --node-id\n%s", err, dup.out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("a process with a live peer's id was not refused\n%s", dup.out)
	}
	ids := map[string]bool{}
	for _, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("peer failed: %v\n%s", err, p.out)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("peer did not finish by itself\n%s", p.out)
		}
		id, err := os.ReadFile(filepath.Join(p.data, "NODE_ID"))
		if err != nil {
			t.Fatal(err)
		}
		ids[strings.TrimSpace(string(id))] = true
		if !strings.Contains(p.out.String(), "node "+strings.TrimSpace(string(id))+":") {
			t.Errorf("the summary does not name the node's kept id %s:\n%s", id, p.out)
		}
	}
	if len(ids) != 3 {
		t.Errorf("three peers without --node-id took %d distinct ids: %v", len(ids), ids)
	}
	got := map[string]bool{}
	for _, p := range ps {
		r, err := store.OpenRecords(p.data, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.Iterate(func(rec store.Record) error { got[rec.URL] = true; return nil })
		r.Close()
	}
	missing := 0
	for _, u := range truth.MustFetch {
		if !got[u] {
			missing++
			if missing <= 5 {
				t.Errorf("missing: %s", u)
			}
		}
	}
	repeats := 0
	for u, n := range srv.Log().Duplicates() {
		repeats += n - 1
		if repeats <= 5 {
			t.Errorf("fetched %d times: %s", n, u)
		}
	}
	if missing > 0 || repeats > 0 {
		t.Fatalf("%d of %d URLs missing, %d repeated requests", missing, len(truth.MustFetch), repeats)
	}
}
