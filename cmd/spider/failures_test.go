package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/websim"
)

// emptyCrawlDir returns a directory holding an empty crawl (an empty
// records.jsonl), which spider serve and the other readers accept.
func emptyCrawlDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "records.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// closedPort returns a loopback address on which nothing listens (a
// listener's port, closed again): a connection to it is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// pagesSite serves a page at every path but /robots.txt (404: everything
// allowed), each without links.
func pagesSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>page %s</title></head><body>text of %s</body></html>", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCrawlEverySeedFailed: a crawl whose every seed failed exits 1 and
// says so on stderr, with the class, the failed URL and the class's hint;
// the summary on stdout lists the failure too, for the classes the issue
// names (DNS, refused, TLS, robots). A .invalid host never resolves
// (RFC 6761), so the DNS case needs no network.
func TestCrawlEverySeedFailed(t *testing.T) {
	refused := "http://" + closedPort(t) + "/"
	// A server whose certificate no one signed that spider trusts.
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	// A server whose robots.txt disallows everything.
	robotsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /\n")
			return
		}
		fmt.Fprint(w, "<html><body>not to be fetched</body></html>")
	}))
	defer robotsSrv.Close()
	cases := []struct {
		name, seed, class, hint string
		extra                   []string
	}{
		{"dns", "http://no-such-host.invalid/", "dns: 1 URL", "check the name or your network", nil},
		{"refused", refused, "refused: 1 URL", "nothing listens on that host and port", []string{"--allow-private"}},
		{"tls", tlsSrv.URL + "/", "tls: 1 URL", "certificate", []string{"--allow-private"}},
		{"robots", robotsSrv.URL + "/page", "robots: 1 URL", "robots.txt disallows", []string{"--allow-private"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"crawl", "--data", t.TempDir(), "--max-retries", "0", "--delay", "0"}, c.extra...)
			code, out, errOut := runCLI(t, append(args, c.seed)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (every seed failed)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, want := range []string{"every seed failed", c.class, c.seed, c.hint} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			for _, want := range []string{"failed: 1 of 1 URLs", c.class, c.seed} {
				if !strings.Contains(out, want) {
					t.Errorf("summary lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestCrawlSomeSeedsFail: a crawl in which one seed failed and another
// was fetched exits 0, and its summary lists the failed one by class
// with the hint; nothing claims that every seed failed.
func TestCrawlSomeSeedsFail(t *testing.T) {
	srv := pagesSite(t)
	bad := "http://other-host.invalid/start"
	// --sitemaps=false: the site's /sitemap.xml would be a URL of its own.
	code, out, errOut := runCLI(t, "crawl", "--data", t.TempDir(), "--allow-private", "--max-retries", "0", "--delay", "0",
		"--scope", "seeds", "--sitemaps=false", srv.URL+"/", bad)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (one seed was fetched)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"failed: 1 of 2 URLs", "dns: 1 URL", bad, "check the name or your network"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "every seed failed") {
		t.Errorf("stderr says every seed failed, but one was fetched:\n%s", errOut)
	}
}

// TestCrawlOtherSeedsWarns: a crawl into a directory holding a crawl
// from other seeds warns on stderr, naming the old seed and both ways on
// (a new --data, or carry on); the same seed again does not.
func TestCrawlOtherSeedsWarns(t *testing.T) {
	srv := pagesSite(t)
	data := t.TempDir()
	crawlSeed := func(seed string) string {
		t.Helper()
		code, out, errOut := runCLI(t, "crawl", "--data", data, "--allow-private", "--delay", "0", "--max-depth", "0", seed)
		if code != 0 {
			t.Fatalf("crawl %s: exit %d\n%s%s", seed, code, out, errOut)
		}
		return errOut
	}
	first, second := srv.URL+"/first", srv.URL+"/second"
	if errOut := crawlSeed(first); strings.Contains(errOut, "other seeds") {
		t.Errorf("a crawl into a new directory warns about other seeds:\n%s", errOut)
	}
	if errOut := crawlSeed(first); strings.Contains(errOut, "other seeds") {
		t.Errorf("the same seed again (a resumed crawl) warns about other seeds:\n%s", errOut)
	}
	errOut := crawlSeed(second)
	for _, want := range []string{"other seeds", first, "new --data", "on purpose"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("a crawl from other seeds: stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestCrawlInterruptPrintsSummary: SIGINT to a running crawl (the real
// binary, signalled once records.jsonl shows progress) prints the summary
// so far and exits 130.
func TestCrawlInterruptPrintsSummary(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	bin := buildSpider(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 7, Hosts: 4, PagesPerHost: 400, Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	data := t.TempDir()
	args := []string{"crawl", "--data", data, "--allow-private", "--delay", "10ms", "--scope", "any", "--max-depth", "-1"}
	for _, r := range srv.Resolve() {
		args = append(args, "--resolve", r)
	}
	cmd := exec.Command(bin, append(args, srv.SeedURLs(2)...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	const progress = 5
	deadline := time.Now().Add(time.Minute)
	for countRecords(data) < progress {
		select {
		case err := <-done:
			t.Fatalf("the crawl ended (%v) before %d records\n%s", err, progress, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no %d records after a minute (%d)", progress, countRecords(data))
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var exitErr *exec.ExitError
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("the crawl did not stop within a minute of SIGINT")
	}
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"interrupted after", "result", "total", "top hosts"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary so far lacks %q:\nstdout:\n%s\nstderr:\n%s", want, out, stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the crawl was interrupted:\n%s", stderr.String())
	}
	// The summary's total is the records' count: at least the progress seen.
	var total int
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "total" {
			fmt.Sscan(f[1], &total)
		}
	}
	if total < progress || total != countRecords(data) {
		t.Errorf("summary total %d, want the %d records (at least %d)", total, countRecords(data), progress)
	}
}

// treeOf lists every file and directory under root with its size and
// modification time ("" when root does not exist).
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(&b, "%s %v %d %s\n", rel, fi.Mode(), fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadOnlyCommandsTypoDir: every command that reads a crawl, run (the
// real binary) on a missing directory, an empty one and a file, exits 2
// naming the path and leaves nothing on disk; run on a real crawl, the
// read-only ones change nothing in it.
func TestReadOnlyCommandsTypoDir(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	bin := buildSpider(t)
	runBin := func(args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("%v: still running after 30 s (serving a directory without a crawl?)\n%s", args, out.String())
		}
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatalf("%v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	commands := [][]string{
		{"export"}, {"export", "--format", "warc"}, {"stats"}, {"stats", "--json"},
		{"search", "anything"}, {"status"}, {"serve", "--addr", "127.0.0.1:0"},
		{"index"}, {"rank"},
	}
	parent := t.TempDir()
	if err := os.Mkdir(filepath.Join(parent, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "file"), []byte("not a crawl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, parent)
	for _, dir := range []string{"TYPO", "empty", "file", filepath.Join("TYPO", "deeper")} {
		path := filepath.Join(parent, dir)
		for _, c := range commands {
			args := append([]string{c[0], "--data", path}, c[1:]...)
			code, out := runBin(args...)
			if code != 2 || !strings.Contains(out, path) {
				t.Errorf("%v: exit %d, want 2 with an error naming %s:\n%s", args, code, path, out)
			}
			if after := treeOf(t, parent); after != before {
				t.Fatalf("%v changed the disk:\nbefore:\n%safter:\n%s", args, before, after)
			}
		}
	}

	// A real crawl: the read-only commands change nothing in it (search
	// without an index fails naming spider index, creating no index).
	srv := pagesSite(t)
	data := filepath.Join(t.TempDir(), "data")
	if code, out := runBin("crawl", "--data", data, "--allow-private", "--delay", "0", srv.URL+"/"); code != 0 {
		t.Fatalf("crawl: exit %d\n%s", code, out)
	}
	before = treeOf(t, data)
	for _, c := range [][]string{{"export"}, {"export", "--format", "warc"}, {"stats"}, {"stats", "--json"}, {"search", "page"}, {"status"}} {
		args := append([]string{c[0], "--data", data}, c[1:]...)
		code, out := runBin(args...)
		if code == 2 {
			t.Errorf("%v on a real crawl: exit 2 (no crawl there?)\n%s", args, out)
		}
		if after := treeOf(t, data); after != before {
			t.Errorf("%v changed the crawl's directory:\nbefore:\n%safter:\n%s", args, before, after)
		}
	}
	if code, out := runBin("search", "--data", data, "page"); code != 1 || !strings.Contains(out, "spider index") {
		t.Errorf("search before spider index: exit %d, want 1 naming spider index:\n%s", code, out)
	}
	// serve, until it listens and is interrupted.
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", "127.0.0.1:0", "--preload", "off")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "serving on") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("serve on a real crawl did not listen within 30 s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond) // polling serve's output for its listen line
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if after := treeOf(t, data); after != before {
		t.Errorf("serve changed the crawl's directory:\nbefore:\n%safter:\n%s", before, after)
	}
}

// TestPeerInterruptPrintsSummary: SIGINT to a peer of a distributed crawl
// (`spider crawl --redis`, the real binary, signalled once its records show
// progress) prints the node's summary so far and exits 130.
func TestPeerInterruptPrintsSummary(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: a Redis server and a crawl")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 8, Hosts: 4, PagesPerHost: 400, Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	data := t.TempDir()
	args := []string{"crawl", "--redis", rs.URL(), "--crawl", "int", "--node-id", "n0", "--buckets", "16", "--data", data,
		"--allow-private", "--delay", "10ms", "--scope", "any", "--max-depth", "-1"}
	for _, r := range srv.Resolve() {
		args = append(args, "--resolve", r)
	}
	cmd := exec.Command(bin, append(args, srv.SeedURLs(2)...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	const progress = 5
	for deadline := time.Now().Add(time.Minute); countRecords(data) < progress; {
		select {
		case err := <-done:
			t.Fatalf("the peer ended (%v) before %d records\n%s", err, progress, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d records after a minute (%d)", progress, countRecords(data))
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the peer did not stop within a minute of SIGINT")
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"node n0: interrupted after", "result", "total"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary so far lacks %q:\nstdout:\n%s\nstderr:\n%s", want, stdout.String(), stderr.String())
		}
	}
}

// TestBadSeedCreatesNothing: a seed that is not an http(s) URL is a usage
// error (exit 2) naming the seed, found before the data directory is made.
func TestBadSeedCreatesNothing(t *testing.T) {
	for _, seeds := range [][]string{{"ftp://a.test/"}, {"http://a.test/", "ht!tp://bad"}, {"a.test/no-scheme"}} {
		data := filepath.Join(t.TempDir(), "data")
		code, _, errOut := runCLI(t, append([]string{"crawl", "--data", data}, seeds...)...)
		bad := seeds[len(seeds)-1]
		if code != 2 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, "not a usable http(s) URL") {
			t.Errorf("seeds %v: exit %d, want 2 naming %q:\n%s", seeds, code, bad, errOut)
		}
		if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("seeds %v: the data directory was created (%v)", seeds, err)
		}
	}
}
