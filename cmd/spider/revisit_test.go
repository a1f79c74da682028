package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/websim"
)

// continuousWeb is the web of the CLI's continuous-crawl kill tests: 4
// hosts of 15 pages that change (a day of the change model is 2 s) and
// never disappear.
var continuousWeb = websim.Config{Seed: 9, Hosts: 4, PagesPerHost: 15, ChangeDay: 2 * time.Second, DisappearShare: -1}

// continuousArgs are the flags that make spider crawl a continuous,
// adaptive crawl whose revisit interval is at most 1 s (a page not fetched
// again in a few seconds lost its schedule entry), then seeds; a new slice
// at every call.
func continuousArgs(seeds ...string) []string {
	return append([]string{"--continuous", "--revisit", "adaptive", "--revisit-min", "200ms", "--revisit-initial", "400ms", "--revisit-max", "1s"}, seeds...)
}

// TestContinuousKillNoScheduleLost kills a continuous, adaptive crawl of
// websim's changing pages with SIGKILL at random record counts, restarts
// it each time, then lets a last run go on for a while and stops it with
// SIGINT (exit 0: Ctrl-C is how a continuous crawl ends). No schedule entry
// may be lost: every page fetched before the last run is fetched again
// during it (its interval is at most --revisit-max, 1 s, so a URL not
// revisited in 6 s lost its entry), and the state keeps a revisit record
// for every page fetched. It fails if a completion and its schedule are not
// one transaction, or if TakeDue's URLs are neither due nor pending after a
// kill.
func TestContinuousKillNoScheduleLost(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: several crawls")
	}
	bin := buildSpider(t)
	srv := revisittest.StartWeb(t, continuousWeb)
	data := t.TempDir()
	resolve := revisittest.ResolveFile(t, t.TempDir(), srv)
	args := append([]string{"crawl", "--data", data, "--resolve-file", resolve, "--allow-private", "--delay", "0",
		"--concurrency", "8", "--scope", "seeds", "--max-depth", "-1", "--quiet"},
		continuousArgs(srv.SeedURLs(4)...)...)
	rng := rand.New(rand.NewPCG(3, 4))
	for kill := range 4 {
		at := countRecords(data) + 20 + rng.IntN(80)
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.Now().Add(time.Minute)
		for countRecords(data) < at {
			select {
			case err := <-done:
				t.Fatalf("kill %d: the continuous crawl ended (%v) at %d records\n%s", kill, err, countRecords(data), stderr.String())
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: %d records in a minute, want %d", kill, countRecords(data), at)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-done
	}
	before := revisittest.Fetched(t, data, time.Time{})
	if len(before) < 30 {
		t.Fatalf("only %d pages fetched before the last run", len(before))
	}
	// The last run: 6 s, then Ctrl-C.
	start := time.Now()
	cmd := exec.Command(bin, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--quiet" })...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("a continuous crawl stopped by SIGINT must exit 0: %v\n%s", err, stderr.String())
	}
	after := revisittest.Fetched(t, data, start)
	lost := revisittest.Missing(before, after)
	if len(lost) > 0 {
		t.Errorf("%d of %d pages never revisited after the kills (schedule entries lost?): %v", len(lost), len(before), lost[:min(5, len(lost))])
	}
	st, err := state.Open(filepath.Join(data, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	records, _, err := st.Scheduled(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := revisittest.Fetched(t, data, time.Time{})
	if records < int64(len(all)) {
		t.Errorf("the state keeps %d revisit records for %d fetched pages", records, len(all))
	}
	if !strings.Contains(stdout.String(), "continuous crawl stopped after") || !strings.Contains(stdout.String(), "revisits: ") {
		t.Errorf("summary of a stopped continuous crawl:\n%s", stdout.String())
	}
}

// downSite returns the port of a loopback address nothing listens on: the
// server of site.test (--resolve site.test:PORT:127.0.0.1) is down. up
// starts it on that address (retrying briefly: the port was just closed),
// serving a small page at / until the test ends.
func downSite(t *testing.T) (port string, up func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // down
	_, port, _ = net.SplitHostPort(addr)
	return port, func() {
		t.Helper()
		var l net.Listener
		var err error
		for range 50 {
			if l, err = net.Listen("tcp", addr); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprint(w, "<html><title>up</title><p>up again</p></html>")
		})}
		go s.Serve(l)
		t.Cleanup(func() { s.Close() })
	}
}

// logProc is a spider process of a test whose output (stdout and stderr
// together) can be read while it runs.
type logProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error // its exit, once
}

// startLogged starts the spider binary with args; the test's end kills it
// if it still runs.
func startLogged(t *testing.T, bin string, args ...string) *logProc {
	t.Helper()
	p := &logProc{out: new(syncBuffer), done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// runner runs the spider binary bin with args and then extra, and returns
// what it wrote (stdout and stderr) and how it exited.
func runner(bin string, args []string) func(extra ...string) (string, error) {
	return func(extra ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.Command(bin, append(append([]string{}, args...), extra...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
}

// TestFailedSeedSummary runs spider crawl with the site's server down and
// then up, as a new user would: the first run says when the failed seed
// will be retried and how to retry it now; the second, before then, says
// nothing was due and when; --retry-failed fetches it. It fails if a
// failure is done for good or the summary does not say when.
func TestFailedSeedSummary(t *testing.T) {
	bin := buildSpider(t)
	port, up := downSite(t)
	data := t.TempDir()
	args := []string{"crawl", "--data", data, "--resolve", "site.test:" + port + ":127.0.0.1", "--allow-private",
		"--delay", "0", "--max-retries", "0", "--max-depth", "0", "http://site.test:" + port + "/"}
	run := runner(bin, args)
	out, err := run()
	if err == nil || !strings.Contains(out, "1 failed URL will be retried after") || !strings.Contains(out, "--retry-failed") {
		t.Fatalf("first run (server down): err %v, output:\n%s", err, out)
	}
	up()
	out, _ = run()
	if !strings.Contains(out, "crawled 0 URLs") || !strings.Contains(out, "nothing was due yet: 1 URL scheduled, the next at") {
		t.Fatalf("second run (before the retry is due):\n%s", out)
	}
	out, err = run("--retry-failed")
	if err != nil || !strings.Contains(out, "crawled 1 URL ") || !strings.Contains(out, "retries of failed URLs: 1") {
		t.Fatalf("--retry-failed: err %v, output:\n%s", err, out)
	}
}

// TestRevisitFlagsRefused: bad revisit settings and modes without a
// revisit schedule are usage errors (exit 2) naming the flag. (--mode
// layered and --dedup protocol keep a schedule now: TestLayeredRetryFailed,
// TestLayeredContinuousKill and TestProtocolContinuousKill test it instead
// of its refusal.)
func TestRevisitFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"bad mode", []string{"--revisit", "sometimes"}, "--revisit"},
		{"min above max", []string{"--revisit-min", "2h", "--revisit-max", "1h"}, "--revisit-max"},
		{"min too small", []string{"--revisit-min", "1ms"}, "--revisit-min"},
		{"share", []string{"--revisit-share", "1.5"}, "--revisit-share"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"crawl", "--data", t.TempDir()}, c.args...), "http://a.test/")
			code, _, errOut := runCLI(t, args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Fatalf("code %d, stderr %q, want exit 2 naming %q", code, errOut, c.want)
			}
		})
	}
}
