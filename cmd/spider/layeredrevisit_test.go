package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/layered"
)

// TestLayeredRetryFailed is TestFailedSeedSummary for --mode layered: the
// site's server down, the layered crawl's summary says when its failed seed
// will be retried and how to retry it now; with the server up,
// --retry-failed on the finished crawl fetches it. (It replaces the
// refusal of --retry-failed with --mode layered.)
func TestLayeredRetryFailed(t *testing.T) {
	bin := buildSpider(t)
	port, up := downSite(t)
	data := t.TempDir()
	args := []string{"crawl", "--mode", "layered", "--rounds", "1", "--groups", "2", "--data", data, "--resolve", "site.test:" + port + ":127.0.0.1", "--allow-private",
		"--delay", "0", "--max-retries", "0", "http://site.test:" + port + "/"}
	run := runner(bin, args)
	out, _ := run()
	if !strings.Contains(out, "1 failed URL will be retried after") || !strings.Contains(out, "--retry-failed") {
		t.Fatalf("first run (server down): output:\n%s", out)
	}
	up()
	out, err := run("--retry-failed")
	if err != nil || !strings.Contains(out, "retries of failed URLs: 1") {
		t.Fatalf("--retry-failed: err %v, output:\n%s", err, out)
	}
	if got := revisittest.Fetched(t, data, time.Time{}); !got["http://site.test:"+port+"/"] {
		t.Fatalf("--retry-failed did not store the seed: %v\n%s", got, out)
	}
}

// TestLayeredContinuousKill kills (SIGKILL) the coordinator and the worker
// of a continuous, adaptive layered crawl on Redis (real processes, spider
// crawl --mode layered --redis --continuous) during its revisit rounds, in
// turn, restarting each; then a last run of both goes on for 8 s and is
// stopped with SIGINT (both exit 0). No schedule entry may be lost: every
// page fetched before the last run is fetched again during it (its
// interval is at most --revisit-max, 1 s), and the schedule in the
// coordinator's data directory holds every page fetched, due or pending.
func TestLayeredContinuousKill(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv := revisittest.StartWeb(t, continuousWeb)
	dir := t.TempDir()
	resolve := revisittest.ResolveFile(t, dir, srv)
	coordData, workerData := filepath.Join(dir, "coord"), filepath.Join(dir, "worker")
	start := func(data string) *logProc {
		return startLogged(t, bin, append([]string{"crawl", "--mode", "layered", "--redis", rs.URL(), "--crawl", "lrv", "--data", data,
			"--rounds", "6", "--groups", "4", "--delay", "0", "--scope", "seeds", "--lease-ttl", "2s",
			"--resolve-file", resolve, "--allow-private"}, continuousArgs(srv.SeedURLs(4)...)...)...)
	}
	kill := func(p *logProc) {
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
	}
	// revisiting reports whether the coordinator is in a revisit round.
	revisiting := func() bool {
		m, _ := filepath.Glob(filepath.Join(coordData, layered.DirName, "revisits", "round-*", "in.json"))
		return len(m) > 0
	}
	coord := start(coordData)
	// The coordinator role goes to coordData: the worker starts once the
	// crawl is created there.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(coordData, layered.DirName, layered.ManifestFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no crawl created in 30 s\n%s", coord.out.String())
		}
	}
	worker := start(workerData)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 4 {
		at := countRecords(coordData) + 10 + rng.IntN(40)
		deadline := time.Now().Add(time.Minute)
		for countRecords(coordData) < at || !revisiting() {
			select {
			case err := <-coord.done:
				t.Fatalf("kill %d: the coordinator ended (%v)\n%s", i, err, coord.out.String())
			case err := <-worker.done:
				t.Fatalf("kill %d: the worker ended (%v)\n%s", i, err, worker.out.String())
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: %d records in a minute, want %d in a revisit round\n%s", i, countRecords(coordData), at, coord.out.String())
			}
		}
		if i%2 == 0 {
			kill(coord)
			coord = start(coordData)
		} else {
			kill(worker)
			worker = start(workerData)
		}
	}
	before := revisittest.Fetched(t, coordData, time.Time{})
	if len(before) < 30 {
		t.Fatalf("only %d pages fetched before the last run", len(before))
	}
	// The last run: both restarted, 8 s, then Ctrl-C.
	kill(worker)
	kill(coord)
	last := time.Now()
	coord = start(coordData)
	worker = start(workerData) // coordData holds the crawl: the worker never coordinates
	time.Sleep(8 * time.Second)
	for name, p := range map[string]*logProc{"coordinator": coord, "worker": worker} {
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatalf("the %s ended before SIGINT: %v\n%s", name, err, p.out.String())
		}
	}
	for name, p := range map[string]*logProc{"coordinator": coord, "worker": worker} {
		if err := <-p.done; err != nil {
			t.Errorf("the %s of a continuous layered crawl stopped by SIGINT must exit 0: %v\n%s", name, err, p.out.String())
		}
	}
	after := revisittest.Fetched(t, coordData, last)
	lost := revisittest.Missing(before, after)
	if len(lost) > 0 {
		t.Errorf("%d of %d pages never revisited after the kills (schedule entries lost?): %v", len(lost), len(before), lost[:min(5, len(lost))])
	}
	// A pending URL (taken by the round the last run stopped in) keeps its
	// entry in the request, as TakeDue made it pending.
	have, due := revisittest.Scheduled(t, filepath.Join(coordData, layered.DirName, "schedule"), true)
	all := revisittest.Fetched(t, coordData, time.Time{})
	missing := revisittest.Missing(all, have)
	if len(missing) > 0 {
		t.Errorf("%d of %d pages fetched have no schedule entry: %v", len(missing), len(all), missing[:min(5, len(missing))])
	}
	t.Logf("%d pages before the last run, %d fetched again in it; schedule: %d due, %d pending", len(before), len(after), due, len(have)-due)
}
