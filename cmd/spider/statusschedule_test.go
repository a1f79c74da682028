package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/websim"
)

// scheduleWeb starts a websim of pages and returns its seed URLs plus one
// on a closed port (a refused connection: a failure the schedule retries
// on its back-off), and a resolve file for --resolve-file.
func scheduleWeb(t *testing.T) (seeds []string, resolve string, pages int) {
	t.Helper()
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 3, Hosts: 2, PagesPerHost: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	resolve = filepath.Join(t.TempDir(), "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return append(srv.SeedURLs(2), "http://"+closed+"/"), resolve, 2 * 6
}

// goRun runs a command's run function until it returns or the test
// ends (its context is cancelled then, and the run waited for); it returns
// a channel with the run's error and its output.
func goRun(t *testing.T, fn func(context.Context, []string, io.Writer, io.Writer) error, args ...string) (<-chan error, *syncBuffer) {
	done, out, _ := goRunStop(t, fn, args...)
	return done, out
}

// goRunStop is goRun with a function that cancels the run's context.
func goRunStop(t *testing.T, fn func(context.Context, []string, io.Writer, io.Writer) error, args ...string) (<-chan error, *syncBuffer, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done, ended := make(chan error, 1), make(chan struct{})
	out := &syncBuffer{}
	go func() { defer close(ended); done <- fn(ctx, args, out, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			t.Errorf("spider %s did not end after its context was cancelled", strings.Join(args, " "))
		}
	})
	return done, out, cancel
}

// checkStatusSchedule checks a schedule as status shows it after a
// one-shot crawl with --revisit fixed of scheduleWeb: every URL fetched is
// scheduled an hour ahead (none due now), the refused seed failed and
// waits for its retry.
func checkStatusSchedule(t *testing.T, what string, s *server.Schedule, atLeast int) {
	t.Helper()
	if s == nil {
		t.Fatalf("%s: no schedule", what)
	}
	if s.Scheduled < int64(atLeast) || s.Due != s.Scheduled || s.Overdue != 0 || s.Failed != 1 || s.NextDue.IsZero() || !s.NextDue.After(time.Now()) {
		t.Errorf("%s: schedule %+v, want ≥ %d scheduled, all due later, none overdue, 1 failed, a next due time ahead", what, *s, atLeast)
	}
}

// TestStatusScheduleData: spider status --data shows the revisit schedule
// of a local crawl (human and --json, which matches DataStatus), while the
// crawl runs (from the figures it rewrites) and after; so does the
// dashboard API of spider serve --data; a crawl without a schedule shows
// none (status --data says it has neither topics nor a schedule).
func TestStatusScheduleData(t *testing.T) {
	seeds, resolve, pages := scheduleWeb(t)
	dir := t.TempDir()
	args := append([]string{"crawl", "--data", dir, "--resolve-file", resolve, "--allow-private", "--delay", "0", "--quiet",
		"--revisit", "fixed", "--revisit-initial", "1h", "--revisit-min", "1h", "--max-depth", "2", "--max-retries", "0"}, seeds...)
	if code, out, errOut := runCLI(t, args...); code != 0 {
		t.Fatalf("crawl: exit %d\n%s%s", code, out, errOut)
	}
	out := jsonCLI(t, "status", "--data", dir, "--json")
	checkJSON(t, "status --data --json", "DataStatus", out)
	var st server.DataStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != nil {
		t.Errorf("status --data --json of a crawl without topics shows topics: %s", out)
	}
	checkStatusSchedule(t, "status --data --json", st.Schedule, pages)
	human := jsonCLI(t, "status", "--data", dir)
	for _, want := range []string{"revisit schedule: ", "0 due now", "next due ", "failed, waiting for a retry", "1 URL"} {
		if !strings.Contains(human, want) {
			t.Errorf("status --data lacks %q:\n%s", want, human)
		}
	}
	web := startCommand(t, runServe, "--data", dir, "--addr", "127.0.0.1:0")
	var dash server.CrawlStatus
	getJSON(t, web.base+"/api/crawl", &dash)
	checkStatusSchedule(t, "the dashboard of serve --data", dash.Schedule, pages)

	// While a continuous crawl holds the directory: the figures it writes.
	crawlArgs := append([]string{"--data", dir, "--resolve-file", resolve, "--allow-private", "--delay", "0", "--quiet",
		"--revisit", "fixed", "--revisit-initial", "1h", "--revisit-min", "1h", "--max-depth", "2", "--max-retries", "0", "--continuous"}, seeds...)
	crawlDone, crawlOut := goRun(t, runCrawl, crawlArgs...)
	eventually(t, "status --data of the running crawl", 20*time.Second, func() bool {
		if !server.Locked(dir) {
			return false
		}
		code, out, _ := runCLI(t, "status", "--data", dir, "--json")
		var st server.DataStatus
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Schedule != nil && time.Since(st.Schedule.At) < 2*crawl.ScheduleFileEvery+time.Second
	})
	select {
	case err := <-crawlDone:
		t.Fatalf("the continuous crawl ended: %v\n%s", err, crawlOut)
	default:
	}

	// No schedule: a plain one-shot crawl of pages that all answer.
	plain := t.TempDir()
	if code, out, errOut := runCLI(t, append([]string{"crawl", "--data", plain, "--resolve-file", resolve, "--allow-private", "--delay", "0", "--quiet", "--max-depth", "1"}, seeds[:2]...)...); code != 0 {
		t.Fatalf("crawl: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "status", "--data", plain)
	if code == 0 || !strings.Contains(errOut, "no revisit schedule") || strings.Contains(out, "revisit schedule") {
		t.Errorf("status --data of a crawl with neither topics nor a schedule: exit %d\n%s%s", code, out, errOut)
	}
	web2 := startCommand(t, runServe, "--data", plain, "--addr", "127.0.0.1:0")
	var dash2 map[string]any
	getJSON(t, web2.base+"/api/crawl", &dash2)
	if _, ok := dash2["schedule"]; ok {
		t.Errorf("the dashboard of a crawl without a schedule shows one: %v", dash2["schedule"])
	}
}

// TestStatusScheduleRedis: spider status --redis shows the revisit
// schedule of a peer-to-peer crawl and of a master–worker crawl over all
// their buckets or parts (human and --json, which matches ClusterStatus),
// and so does the dashboard API of spider serve --redis.
func TestStatusScheduleRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawls on Redis")
	}
	seeds, resolve, pages := scheduleWeb(t)
	rs := redistest.Start(t)
	common := []string{"--resolve-file", resolve, "--allow-private", "--delay", "0", "--quiet",
		"--revisit", "fixed", "--revisit-initial", "1h", "--revisit-min", "1h", "--max-depth", "2", "--max-retries", "0"}
	check := func(t *testing.T, crawlName string, extra ...string) {
		out := jsonCLI(t, append([]string{"status", "--redis", rs.URL(), "--crawl", crawlName, "--json"}, extra...)...)
		checkJSON(t, "status --redis --json", "ClusterStatus", out)
		var st server.ClusterStatus
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		checkStatusSchedule(t, "status --redis --json", st.Schedule, pages)
		human := jsonCLI(t, append([]string{"status", "--redis", rs.URL(), "--crawl", crawlName}, extra...)...)
		if !strings.Contains(human, "revisit schedule: ") || !strings.Contains(human, "failed, waiting for a retry on their class's back-off: 1 URL") {
			t.Errorf("status --redis lacks the schedule:\n%s", human)
		}
		web := startCommand(t, runServe, append([]string{"--redis", rs.URL(), "--crawl", crawlName, "--addr", "127.0.0.1:0"}, extra...)...)
		var dash server.CrawlStatus
		getJSON(t, web.base+"/api/crawl", &dash)
		checkStatusSchedule(t, "the dashboard of serve --redis", dash.Schedule, pages)
	}
	t.Run("peer-to-peer", func(t *testing.T) {
		args := append([]string{"crawl", "--redis", rs.URL(), "--crawl", "sp", "--node-id", "p0", "--buckets", "64", "--data", t.TempDir()}, common...)
		if code, out, errOut := runCLI(t, append(args, seeds...)...); code != 0 {
			t.Fatalf("crawl: exit %d\n%s%s", code, out, errOut)
		}
		check(t, "sp", "--buckets", "64")
	})
	t.Run("master-worker", func(t *testing.T) {
		master, masterOut := goRun(t, runMaster, append(append([]string{"--redis", rs.URL(), "--crawl", "sm", "--data", t.TempDir()}, common...), seeds...)...)
		worker, workerOut := goRun(t, runWorker, "--redis", rs.URL(), "--crawl", "sm", "--data", t.TempDir(), "--resolve-file", resolve, "--allow-private", "--concurrency", "4")
		for ended := false; !ended; {
			select {
			case err := <-master:
				if err != nil {
					t.Fatalf("master: %v\n%s", err, masterOut)
				}
				ended = true
			case err := <-worker: // it leaves when the crawl is done, often first
				if err != nil {
					t.Fatalf("the worker failed: %v\n%s", err, workerOut)
				}
				worker = nil
			case <-time.After(40 * time.Second):
				t.Fatalf("the master did not end\n%s\nworker:\n%s", masterOut, workerOut)
			}
		}
		check(t, "sm")
	})
	// No schedule: a plain crawl shows none.
	t.Run("none", func(t *testing.T) {
		args := []string{"crawl", "--redis", rs.URL(), "--crawl", "sn", "--node-id", "p0", "--buckets", "64", "--data", t.TempDir(),
			"--resolve-file", resolve, "--allow-private", "--delay", "0", "--quiet", "--max-depth", "1"}
		if code, out, errOut := runCLI(t, append(args, seeds[:2]...)...); code != 0 {
			t.Fatalf("crawl: exit %d\n%s%s", code, out, errOut)
		}
		out := jsonCLI(t, "status", "--redis", rs.URL(), "--crawl", "sn", "--buckets", "64", "--json")
		if strings.Contains(out, `"schedule"`) {
			t.Errorf("status --json of a crawl without a schedule shows one:\n%s", out)
		}
		if human := jsonCLI(t, "status", "--redis", rs.URL(), "--crawl", "sn", "--buckets", "64"); strings.Contains(human, "revisit schedule") {
			t.Errorf("status of a crawl without a schedule shows one:\n%s", human)
		}
	})
}
