package main

import (
	"bytes"
	"context"
	"errors"
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

// TestMasterWorkerKill runs `spider master` and three `spider worker`
// processes against a real redis-server, kills one worker with SIGKILL in
// the middle of the crawl, and checks that every processe exits by itself
// and every ground-truth URL was fetched by some worker.
func TestMasterWorkerKill(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 41, Hosts: 12, PagesPerHost: 40, Latency: 15 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(3), MaxDepth: 3, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(name string, args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, &out, done
	}
	redisURL := rs.URL()
	_, mout, mdone := start("master", append([]string{"master", "--redis", redisURL, "--crawl", "t", "--data", filepath.Join(dir, "master"),
		"--resolve-file", resolve, "--allow-private", "--delay", "5ms", "--scope", "any", "--max-depth", "3", "--worker-ttl", "1s"}, rules.Seeds...)...)
	var wdirs []string
	var wdone []chan error
	var wouts []*bytes.Buffer
	var victim *exec.Cmd
	for i := 0; i < 3; i++ {
		d := filepath.Join(dir, "w"+string(rune('0'+i)))
		wdirs = append(wdirs, d)
		cmd, out, done := start("worker", "worker", "--redis", redisURL, "--crawl", "t", "--data", d,
			"--resolve-file", resolve, "--allow-private", "--concurrency", "4")
		wdone, wouts = append(wdone, done), append(wouts, out)
		if i == 0 {
			victim = cmd
		}
	}
	// Kill the first worker once it has fetched something (its records file, polled
	// every 20 ms); a worker that never gets there fails the test, since its kill
	// would test nothing.
	for deadline := time.Now().Add(60 * time.Second); countRecords(wdirs[0]) < 10; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first worker recorded %d fetches in 60 s, want 10 before its kill", countRecords(wdirs[0]))
		}
	}
	code, out, errOut := runCLI(t, "status", "--redis", redisURL, "--crawl", "t")
	if code != 0 || !strings.Contains(out, "workers:") || !strings.Contains(out, "srq") {
		t.Errorf("status: code %d\n%s%s", code, out, errOut)
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-wdone[0]
	wait := func(name string, done chan error, out *bytes.Buffer) {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s failed: %v\n%s", name, err, out)
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("%s did not exit by itself\n%s", name, out)
		}
	}
	wait("master", mdone, mout)
	for i := 1; i < 3; i++ {
		wait("worker", wdone[i], wouts[i])
	}
	got := map[string]bool{}
	for _, d := range wdirs {
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs.Iterate(func(r store.Record) error { got[r.URL] = true; return nil })
		rs.Close()
	}
	missing := 0
	for _, u := range truth.MustFetch {
		if !got[u] {
			missing++
			if missing < 5 {
				t.Errorf("never fetched: %s", u)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d URLs lost after a worker was killed\nmaster:\n%s", missing, len(truth.MustFetch), mout)
	}
	if !strings.Contains(mout.String(), "done") {
		t.Errorf("master summary missing:\n%s", mout)
	}
	t.Logf("%d URLs; master said: %s", len(truth.MustFetch), strings.TrimSpace(mout.String()))
}

func countRecords(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, store.RecordsFileName))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// TestWorkerGuardIsLocal: the master runs with --allow-private and
// --resolve-file; a worker with the same resolve file but without
// --allow-private must not fetch one loopback page (every record says
// forbidden-address), and a worker that finds an attacker's configuration
// in Redis warns and keeps its guard.
func TestWorkerGuardIsLocal(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 43, Hosts: 3, PagesPerHost: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(3)
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (*exec.Cmd, *syncBuffer, chan error) {
		cmd := exec.Command(bin, args...)
		out := new(syncBuffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, out, done
	}
	wait := func(name string, done chan error, out *syncBuffer) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s failed: %v\n%s", name, err, out)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s did not exit by itself\n%s", name, out)
		}
	}
	_, mout, mdone := run(append([]string{"master", "--redis", rs.URL(), "--crawl", "g", "--data", filepath.Join(dir, "master"),
		"--resolve-file", resolve, "--allow-private", "--delay", "5ms", "--scope", "any", "--max-depth", "2", "--max-retries", "0"}, seeds...)...)
	wdata := filepath.Join(dir, "worker")
	_, wout, wdone := run("worker", "--redis", rs.URL(), "--crawl", "g", "--data", wdata, "--resolve-file", resolve, "--concurrency", "2")
	// Every seed fails (forbidden-address): the master says so and exits 1,
	// as the embedded crawl does.
	select {
	case err := <-mdone:
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 || !strings.Contains(mout.String(), "every seed failed") ||
			!strings.Contains(mout.String(), "forbidden-address") {
			t.Fatalf("master: %v, want exit 1 saying every seed failed (forbidden-address)\n%s", err, mout)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("master did not exit by itself\n%s", mout)
	}
	wait("worker", wdone, wout)
	if n := len(srv.Log().Entries()); n != 0 {
		t.Fatalf("a worker without --allow-private made %d requests to the loopback web", n)
	}
	recs, err := store.OpenRecords(wdata, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer recs.Close()
	n := 0
	recs.Iterate(func(r store.Record) error {
		n++
		if r.Outcome != "forbidden-address" {
			t.Errorf("%s: outcome %q, want forbidden-address", r.URL, r.Outcome)
		}
		return nil
	})
	if n < len(seeds) {
		t.Fatalf("%d records, want one per seed at least", n)
	}

	// An attacker rewrites the configuration key and a worker starts.
	hostile := `{"AllowPrivate":true,"ResolveFile":"/etc/passwd","Data":"/","MaxBodyBytes":1125899906842624,"UserAgent":"x/1","Scope":"any","MaxDepth":1,"Seen":"exact","DelayFrom":"done","FPRate":1e-6,"ExpectedURLs":10}`
	if err := rs.Client().Set(context.Background(), "{spider:evil}:mw:config", hostile, 0).Err(); err != nil {
		t.Fatal(err)
	}
	cmd, eout, edone := run("worker", "--redis", rs.URL(), "--crawl", "evil", "--data", filepath.Join(dir, "w2"))
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(eout.String(), "ignoring local-only settings") && time.Now().Before(deadline) {
		select {
		case err := <-edone:
			t.Fatalf("worker exited: %v\n%s", err, eout)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cmd.Process.Kill()
	<-edone
	out := eout.String()
	if !strings.Contains(out, "ignoring local-only settings") || !strings.Contains(out, "AllowPrivate") || strings.Count(out, "level=WARN") != 1 {
		t.Fatalf("want one warning naming the ignored settings, got:\n%s", out)
	}
}

// TestWorkerManyLoopsKeepsHeartbeat: a worker whose fetch loops outnumber
// go-redis's default connection pool (each loop blocks on srq for up to a
// second while the master waits out a host's delay) must still heart-beat
// in time: its pool is sized for its loops. With the default pool the
// heartbeat waited behind the loops and the master declared the worker
// dead within seconds (found by a test on Redis Cluster, then with one
// worker of --concurrency 64, the figure docs/distributed.md shows).
func TestWorkerManyLoopsKeepsHeartbeat(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs 12 s")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 44, Hosts: 2, PagesPerHost: 30, Latency: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	master := startProc(t, bin, append([]string{"master", "--redis", rs.URL(), "--crawl", "pool", "--data", filepath.Join(dir, "m"),
		"--resolve-file", resolve, "--allow-private", "--delay", "2s", "--worker-ttl", "2s", "--scope", "any", "--max-depth", "2",
		"--log-level", "info"}, srv.SeedURLs(1)...)...)
	worker := startProc(t, bin, "worker", "--redis", rs.URL(), "--crawl", "pool", "--data", filepath.Join(dir, "w"),
		"--resolve-file", resolve, "--allow-private", "--concurrency", "64", "--log-level", "info")
	time.Sleep(12 * time.Second)
	for _, p := range []*proc{worker, master} {
		p.cmd.Process.Kill()
		<-p.done
	}
	if n := srv.Log().Len(); n == 0 {
		t.Fatalf("the worker fetched nothing\nworker:\n%s\nmaster:\n%s", worker.stderr.String(), master.stderr.String())
	}
	for name, out := range map[string]string{"worker": worker.stderr.String(), "master": master.stderr.String()} {
		if strings.Contains(out, "declared dead") {
			t.Errorf("the %s says a worker was declared dead (a late heartbeat):\n%s", name, out)
		}
	}
}
