package fault

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl/revisittest"
	"github.com/spider-crawler/spider/internal/layered"
)

// TestKillContinuousLayered kills a process of a continuous layered crawl (`spider crawl
// --mode layered --continuous --revisit fixed`) on a redis-server with SIGKILL and
// restarts it: the coordinator (its data directory holds the crawl, the revisit schedule
// in DATA/layered/schedule) or the worker (the coordinator works on tasks too). Two
// kills a run: the first during the depth rounds, the second during a revisit round
// (its input written, revisits/round-N/in.json). Once the restarted process is back and
// a revisit round has been completed after the restart, a window of revisits every
// second: every changing page requested at least twice (no schedule entry lost), none
// beyond its interval, no ground-truth URL lost; then Ctrl-C ends both processes with
// status 0, and the coordinator's schedule holds every page fetched (due, or pending with
// its entry). cmd/spider's TestLayeredContinuousKill (four kills alternating between the
// two processes, all in revisit rounds, --revisit adaptive) stays: these rows add a kill
// during the depth rounds, the ground truth and the access log's bound.
func TestKillContinuousLayered(t *testing.T) {
	t.Parallel()
	const (
		concurrency = 4
		interval    = time.Second
		window      = 7 * time.Second
	)
	rs := redistest.Start(t, redistest.AppendOnly())
	w, pages := changingWeb(t, 28)
	rounds := 1
	for _, d := range w.truth.Depth {
		rounds = max(rounds, d+1)
	}
	rng := rngFor(t)
	for _, victimRole := range []string{"coordinator", "worker"} {
		row := Row{Fault: "kill -9 continuous layered " + victimRole + " (revisit rounds on Redis)", URLs: len(w.truth.MustFetch)}
		var recovery []time.Duration
		for run := range runs(1, 6) {
			w.srv.Log().Reset()
			name := fmt.Sprintf("cont-layered-%s-%d", victimRole, run)
			dir := t.TempDir()
			coord := layeredNode(w, "coordinator", filepath.Join(dir, "coord"), rs.URL(), name, rounds, concurrency, interval)
			worker := layeredNode(w, "worker", filepath.Join(dir, "worker"), rs.URL(), name, rounds, concurrency, interval)
			all := []*node{coord, worker}
			victim := map[string]*node{"coordinator": coord, "worker": worker}[victimRole]
			// The coordinator role goes to the first process: the worker starts once the
			// crawl is created in its data directory.
			coord.start(t)
			waitFor(t, run, "the crawl's manifest", []*node{coord}, time.Minute, func() bool {
				_, err := os.Stat(filepath.Join(coord.data, layered.DirName, layered.ManifestFile))
				return err == nil
			})
			worker.start(t)
			// Kill 1: during the depth rounds, once the web served 10–80 % of the ground
			// truth's requests (the coordinator's records grow a pass at a time).
			at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
			waitFor(t, run, fmt.Sprintf("kill point (%d requests)", at), all, 2*time.Minute, func() bool { return w.srv.Log().Len() >= at })
			victim.fault(t, run)
			time.Sleep(between(rng, 0, time.Second))
			victim.start(t)
			// Kill 2: during a revisit round.
			waitFor(t, run, "a revisit round", all, 2*time.Minute, func() bool { return revisiting(coord.data) })
			time.Sleep(between(rng, 0, interval))
			victim.fault(t, run)
			time.Sleep(between(rng, 0, time.Second))
			back := time.Now()
			victim.start(t)
			// The window starts once a revisit round was completed after the restart (a
			// restarted coordinator waits up to --lease-ttl for its old lease to expire).
			after := -1
			waitFor(t, run, "the crawl's manifest", all, time.Minute, func() bool { after = revisitRound(coord.data); return after >= 0 })
			waitFor(t, run, "a revisit round completed after the restart", all, 2*time.Minute, func() bool {
				return revisitRound(coord.data) > after
			})
			from := time.Now()
			recovery = append(recovery, from.Sub(back))
			time.Sleep(window)
			to := time.Now()
			for _, n := range all {
				n.p.Interrupt()
			}
			for _, n := range all {
				if err := n.p.Wait(time.Minute); err != nil {
					row.Failed++
					t.Errorf("run %d: %s after SIGINT: %v", run, n.name, err)
				}
			}
			row.Runs++
			row.Faults += 2
			row.Lost += checkRevisits(t, run, w, pages, from, to, window, interval)
			row.Lost += checkCrawl(t, w, coord.data)
			row.Lost += checkSchedule(t, run, coord.data, filepath.Join(coord.data, layered.DirName, "schedule"))
		}
		row.Recovery(recovery)
		row.Note = "coordinator + 1 worker, `--rounds " + strconv.Itoa(rounds) + " --lease-ttl 2s`, noise passes off; the " + victimRole +
			" killed at 10–80 % of the depth rounds' requests and again in a revisit round, restarted after 0–1 s; then " + window.String() +
			" of revisits every " + interval.String() + " from the first revisit round completed after the restart; lost = ground-truth URLs without a record + changing pages not revisited in that window + pages without a schedule entry; recovery = last restart → the first revisit round completed after it"
		report(t, row)
	}
}

// checkSchedule checks that the revisit schedule at path (a state directory) holds every
// page of the data directory data fetched with a 200 or 304, due or pending with its entry
// (taken by a revisit in progress when the crawl stopped), and returns how many do not.
func checkSchedule(t *testing.T, run int, data, path string) int {
	t.Helper()
	have, _ := revisittest.Scheduled(t, path, true)
	missing := revisittest.Missing(revisittest.Fetched(t, data, time.Time{}), have)
	if len(missing) > 0 {
		t.Errorf("run %d: %d pages fetched into %s have no schedule entry: %v", run, len(missing), data, missing[:min(5, len(missing))])
	}
	return len(missing)
}

// layeredNode is one process of continuous layered crawl name on redisURL, revisiting
// every page every interval: the noise passes are off, so that the ground truth (every
// link followed) is what the rounds must fetch.
func layeredNode(w *web, role, data, redisURL, name string, rounds, concurrency int, interval time.Duration) *node {
	args := []string{"crawl", "--mode", "layered", "--data", data, "--quiet", "--redis", redisURL, "--crawl", name, "--lease-ttl", "2s",
		"--rounds", strconv.Itoa(rounds), "--groups", "4", "--dom-pass=false", "--cluster-pass=false"}
	args = append(append(append(args, revisitFlags(interval)...), w.crawlFlags(concurrency)...), w.rules.Seeds...)
	return &node{name: role, data: data, args: args}
}

// revisiting reports whether the layered crawl in data is in a revisit round (its input
// written).
func revisiting(data string) bool {
	m, _ := filepath.Glob(filepath.Join(data, layered.DirName, "revisits", "round-*", "in.json"))
	return len(m) > 0
}

// revisitRound is the revisit round the layered crawl in data is in (or starts next), from
// its manifest; -1 when it cannot be read (being rewritten, or not yet written).
func revisitRound(data string) int {
	var m struct {
		Revisit int `json:"revisit"`
	}
	b, err := os.ReadFile(filepath.Join(data, layered.DirName, layered.ManifestFile))
	if err != nil || json.Unmarshal(b, &m) != nil {
		return -1
	}
	return m.Revisit
}

// waitFor polls cond every 10 ms until it holds, and fails the test when the nodes all
// exited or timeout passed first (what names the awaited state).
func waitFor(t *testing.T, run int, what string, nodes []*node, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		exited := true
		for _, n := range nodes {
			select {
			case <-n.p.Done():
			default:
				exited = false
			}
		}
		if exited || time.Now().After(deadline) {
			for _, n := range nodes {
				t.Logf("%s:\n%s", n.name, tail(n.p.Output(), 1500))
			}
			t.Fatalf("run %d: no %s within %s (processes exited: %v)", run, what, timeout, exited)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
