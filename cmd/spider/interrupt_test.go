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
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/websim"
)

// proc is a spider process of a test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan error
}

// startProc starts the spider binary with args; the test's end kills it.
func startProc(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// wait returns the process's exit code, failing the test after a minute.
func (p *proc) wait(t *testing.T, what string) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return exitErr.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatalf("%s did not end within a minute\nstdout:\n%s\nstderr:\n%s", what, p.stdout.String(), p.stderr.String())
		return -1
	}
}

// interruptWhenServed sends SIGINT to p once the web has served n
// requests (its access log, not a sleep), and returns p's exit code.
func interruptWhenServed(t *testing.T, p *proc, srv *websim.Server, n int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		select {
		case err := <-p.done: // ended early: WaitFor must not wait a minute
			p.done <- err
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Log().WaitFor(ctx, func(es []websim.Entry) bool { return len(es) >= n }); err != nil {
		t.Fatalf("the web served %d requests, want %d before the interrupt (%v)\nstdout:\n%s\nstderr:\n%s",
			srv.Log().Len(), n, err, p.stdout.String(), p.stderr.String())
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	return p.wait(t, "the interrupted process")
}

// slowWeb is a web large and slow enough that a crawl is still running
// when it is interrupted.
func slowWeb(t *testing.T, seed int64) *websim.Server {
	t.Helper()
	srv, err := websim.Start(context.Background(), websim.Config{Seed: seed, Hosts: 4, PagesPerHost: 400, Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// resolveArgs are --resolve flags for every host of srv.
func resolveArgs(srv *websim.Server) []string {
	var args []string
	for _, r := range srv.Resolve() {
		args = append(args, "--resolve", r)
	}
	return args
}

// TestMasterInterruptPrintsSummary: SIGINT to `spider master` in the middle
// of a crawl prints the summary so far ("interrupted after") and exits 130,
// as the embedded crawl does.
func TestMasterInterruptPrintsSummary(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: a Redis server and two processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv := slowWeb(t, 9)
	dir := t.TempDir()
	common := append([]string{"--redis", rs.URL(), "--crawl", "int", "--allow-private"}, resolveArgs(srv)...)
	master := startProc(t, bin, append(append([]string{"master", "--data", filepath.Join(dir, "m"), "--delay", "10ms",
		"--scope", "any", "--max-depth", "-1"}, common...), srv.SeedURLs(2)...)...)
	startProc(t, bin, append([]string{"worker", "--data", filepath.Join(dir, "w"), "--concurrency", "4"}, common...)...)
	code := interruptWhenServed(t, master, srv, 10)
	if code != 130 {
		t.Fatalf("master: exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, master.stdout.String(), master.stderr.String())
	}
	for _, want := range []string{`crawl "int" interrupted after`, "tasks handed", "200"} {
		if !strings.Contains(master.stdout.String(), want) {
			t.Errorf("master's summary so far lacks %q:\nstdout:\n%s\nstderr:\n%s", want, master.stdout.String(), master.stderr.String())
		}
	}
}

// TestMasterEverySeedFailed: a master–worker crawl whose every seed fails
// says so on stderr with the failure classes and exits 1, as the embedded
// crawl does.
func TestMasterEverySeedFailed(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: a Redis server and two processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	dir := t.TempDir()
	common := []string{"--redis", rs.URL(), "--crawl", "fail", "--allow-private", "--connect-timeout", "2s"}
	// Nothing listens on port 1: every fetch (robots.txt first) is refused.
	master := startProc(t, bin, append([]string{"master", "--data", filepath.Join(dir, "m"), "--max-retries", "0", "--worker-ttl", "1s",
		"http://127.0.0.1:1/", "http://127.0.0.1:1/other"}, common...)...)
	worker := startProc(t, bin, append([]string{"worker", "--data", filepath.Join(dir, "w")}, common...)...)
	code := master.wait(t, "master")
	if code != 1 || !strings.Contains(master.stderr.String(), "every seed failed") || !strings.Contains(master.stderr.String(), "refused") {
		t.Errorf("master: exit %d, want 1 with \"every seed failed\" and the class refused on stderr\nstdout:\n%s\nstderr:\n%s",
			code, master.stdout.String(), master.stderr.String())
	}
	if code := worker.wait(t, "worker"); code != 0 {
		t.Errorf("worker: exit %d\n%s", code, worker.stderr.String())
	}
}

// TestLayeredInterruptPrintsSummary: SIGINT to a layered crawl prints the
// rounds finished so far ("interrupted after") and exits 130.
func TestLayeredInterruptPrintsSummary(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: a crawl")
	}
	bin := buildSpider(t)
	srv := slowWeb(t, 10)
	args := append([]string{"crawl", "--mode", "layered", "--rounds", "6", "--groups", "2", "--data", filepath.Join(t.TempDir(), "d"),
		"--scope", "any", "--delay", "5ms", "--allow-private"}, resolveArgs(srv)...)
	p := startProc(t, bin, append(args, srv.SeedURLs(2)...)...)
	if code := interruptWhenServed(t, p, srv, 40); code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	if !strings.Contains(p.stdout.String(), "layered crawl interrupted after") {
		t.Errorf("no summary so far:\nstdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderr.String())
	}
}

// TestProtocolInterruptPrintsSummary: SIGINT to a host of the mixed
// topology (`spider crawl --dedup protocol`) prints its summary so far and
// exits 130.
func TestProtocolInterruptPrintsSummary(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: two Redis servers and two processes")
	}
	bin := buildSpider(t)
	srv := slowWeb(t, 11)
	center, local := redistest.Start(t), redistest.Start(t)
	dir := t.TempDir()
	conf := fmt.Sprintf("crawl: int\nnetworks:\n  - name: n1\n    center_redis: %s\n    hosts:\n      - id: h1\n        redis: %s\n", center.URL(), local.URL())
	cfgFile := filepath.Join(dir, "protocol.yaml")
	if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	startProc(t, bin, "center", "--protocol-config", cfgFile, "--network", "n1")
	args := append([]string{"crawl", "--dedup", "protocol", "--protocol-config", cfgFile, "--network", "n1", "--host-id", "h1",
		"--data", filepath.Join(dir, "h1"), "--allow-private", "--delay", "5ms", "--concurrency", "4", "--scope", "any", "--max-depth", "-1"},
		resolveArgs(srv)...)
	p := startProc(t, bin, append(args, srv.SeedURLs(2)...)...)
	if code := interruptWhenServed(t, p, srv, 10); code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	for _, want := range []string{"interrupted after", "result", "total"} {
		if !strings.Contains(p.stdout.String(), want) {
			t.Errorf("the host's summary so far lacks %q:\nstdout:\n%s\nstderr:\n%s", want, p.stdout.String(), p.stderr.String())
		}
	}
}
