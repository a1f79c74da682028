package fault

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// node is one process of a distributed crawl, restartable with the same arguments.
type node struct {
	name string
	data string // its data directory ("" for a center)
	args []string
	p    *Proc
	dead bool // killed and not restarted: not waited for
	// wantExit is the exit status that counts as success (0 unless set: a
	// master whose every URL failed, as the attack test's, exits 1).
	wantExit int
}

func (n *node) start(t *testing.T) { n.p, n.dead = start(t, n.name, n.args...), false }

// kill kills the node's process with SIGKILL; it stays dead until start.
func (n *node) kill() { n.p.Kill(); n.dead = true }

// fault kills the node's process with SIGKILL as run's fault and fails the test when the
// signal did not kill it (the process had exited by itself before): that run would count a
// fault that never happened.
func (n *node) fault(t *testing.T, run int) {
	t.Helper()
	n.kill()
	if code := n.p.ExitCode(); code != -1 {
		t.Fatalf("run %d: %s had exited by itself (status %d) before its kill: no fault injected", run, n.name, code)
	}
}

// waitNodes waits for every node to exit by itself, with status 0. A node that fails is
// reported (t.Errorf, counted in row.Failed) and the others are still waited for, so the
// run's records can be checked: a node may die and the crawl still complete. Once a node
// has failed, the others get failGrace more to finish (they may wait forever for a dead
// master) before they are killed and counted as failed too. It waits on the processes'
// exits (Proc.Done), not on a clock.
func waitNodes(t *testing.T, run int, row *Row, nodes []*node, timeout time.Duration) {
	t.Helper()
	const failGrace = 30 * time.Second
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	graceSet := false
	exited := make(chan *node)
	stop := make(chan struct{})
	defer close(stop)
	pending := map[*node]bool{}
	for _, n := range nodes {
		if !n.dead {
			pending[n] = true
			go func(n *node) {
				select {
				case <-n.p.Done():
					select {
					case exited <- n:
					case <-stop:
					}
				case <-stop:
				}
			}(n)
		}
	}
	for len(pending) > 0 {
		select {
		case n := <-exited:
			delete(pending, n)
			if err := n.p.Wait(0); (err != nil) != (n.wantExit != 0) || n.wantExit != 0 && n.p.ExitCode() != n.wantExit {
				t.Errorf("run %d: %s exited with status %d, want %d: %v", run, n.name, n.p.ExitCode(), n.wantExit, err)
				row.Failed++
				if !graceSet {
					graceSet = true
					deadline.Reset(failGrace)
				}
			}
		case <-deadline.C:
			for _, n := range nodes {
				if pending[n] {
					t.Errorf("run %d: %v", run, n.p.Wait(0))
					row.Failed++
					delete(pending, n)
				}
			}
			for _, o := range nodes {
				t.Logf("%s:\n%s", o.name, tail(o.p.Output(), 1500))
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func dataDirs(nodes []*node) []string {
	var out []string
	for _, n := range nodes {
		if n.data != "" {
			out = append(out, n.data)
		}
	}
	return out
}

// recordLines counts the lines of records.jsonl in dirs (complete or not).
func recordLines(dirs []string) int {
	n := 0
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, store.RecordsFileName))
		if err == nil {
			n += bytes.Count(b, []byte("\n"))
		}
	}
	return n
}

// waitProgress waits until dirs hold at least n records, so a fault lands at a random
// point of the crawl's progress rather than of the clock (start-up time varies a lot on a
// loaded machine). It reports false when the nodes exited or time ran out first; a caller
// must then fail (reachProgress does), or its run injects no fault and passes vacuously.
// The records file is written by other processes, so it is polled (every 10 ms); the
// deadline only bounds a crawl that stopped making progress.
func waitProgress(dirs []string, n int, nodes []*node, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if recordLines(dirs) >= n {
			return true
		}
		all := true
		for _, nd := range nodes {
			select {
			case <-nd.p.Done():
			default:
				all = false
			}
		}
		if all {
			return false // the crawl ended before the kill point
		}
		<-tick.C
	}
	return false
}

// reachProgress waits (waitProgress) until dirs hold at least n records, the run's kill
// point, and fails the test when they do not: a run whose fault is never injected must not
// count as a pass.
func reachProgress(t *testing.T, run int, dirs []string, n int, nodes []*node, timeout time.Duration) {
	t.Helper()
	if waitProgress(dirs, n, nodes, timeout) {
		return
	}
	for _, o := range nodes {
		t.Logf("%s:\n%s", o.name, tail(o.p.Output(), 1500))
	}
	t.Fatalf("run %d: the kill point (%d records) was not reached within %s (%d records): no fault could be injected", run, n, timeout, recordLines(dirs))
}

// firstRecordAfter returns how long after t the node in dir finished its first fetch.
func firstRecordAfter(dir string, t time.Time) (time.Duration, bool) {
	recs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		return 0, false
	}
	defer recs.Close()
	var best time.Time
	recs.Iterate(func(r store.Record) error {
		if r.FetchedAt.After(t) && (best.IsZero() || r.FetchedAt.Before(best)) {
			best = r.FetchedAt
		}
		return nil
	})
	if best.IsZero() {
		return 0, false
	}
	return best.Sub(t), true
}

// distWeb is the synthetic web of the distributed scenarios: about 350 URLs on 16 hosts.
func distWeb(t *testing.T, seed int64) *web {
	return startWeb(t, websim.Config{Seed: seed, Hosts: 16, PagesPerHost: 25, Latency: 3 * time.Millisecond, ChineseShare: -1},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny}, 3)
}

// checkRun checks one distributed run and adds it to row: lost URLs, repeated requests
// against bound.
func checkRun(t *testing.T, run int, w *web, row *Row, nodes []*node, faults, bound int) {
	t.Helper()
	row.Runs++
	row.Faults += faults
	row.Lost += checkCrawl(t, w, dataDirs(nodes)...)
	extra, worst := Repeats(w.srv.Log())
	row.Repeats += extra
	row.Bound += bound
	if extra > bound {
		t.Errorf("run %d: %d repeated requests (a URL up to %d times) after %d faults; the in-flight bound is %d", run, extra, worst, faults, bound)
	}
}

// peers returns n peer-to-peer nodes (spider crawl --redis) of crawl name.
func peers(t *testing.T, w *web, redisURL []string, name string, concurrency int) []*node {
	var out []*node
	for i, u := range redisURL {
		id := fmt.Sprintf("n%d", i)
		data := filepath.Join(t.TempDir(), id)
		args := append([]string{"crawl", "--redis", u, "--crawl", name, "--node-id", id, "--buckets", "64", "--data", data, "--quiet"},
			w.crawlFlags(concurrency)...)
		out = append(out, &node{name: "peer " + id, data: data, args: append(args, w.rules.Seeds...)})
	}
	return out
}

// TestKillPeer kills one of three `spider crawl --redis` peers at a random point of the
// crawl and restarts it (same --node-id) after a random pause, or never (one run in
// three): the others take its buckets over when its leases expire.
func TestKillPeer(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	rs := redistest.Start(t, redistest.AppendOnlyEverySec())
	w := distWeb(t, 61)
	rng := rngFor(t)
	row := Row{Fault: "kill -9 p2p node (1 of 3)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	restarted := 0
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		nodes := peers(t, w, []string{rs.URL(), rs.URL(), rs.URL()}, "peer"+strconv.Itoa(run), concurrency)
		for _, n := range nodes {
			n.start(t)
		}
		victim := nodes[rng.IntN(len(nodes))]
		at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
		faults := 0
		var back time.Time
		reachProgress(t, run, dataDirs(nodes), at, nodes, 2*time.Minute)
		victim.fault(t, run)
		faults = 1
		t.Logf("run %d: killed %s at %d records", run, victim.name, at)
		if rng.IntN(3) > 0 {
			// Time is the subject: the victim stays down for a random outage.
			time.Sleep(between(rng, 0, 3*time.Second))
			back = time.Now()
			victim.start(t)
			restarted++
		}
		waitNodes(t, run, &row, nodes, 3*time.Minute)
		checkRun(t, run, w, &row, nodes, faults, faults*concurrency)
		if !back.IsZero() {
			if d, ok := firstRecordAfter(victim.data, back); ok {
				recovery = append(recovery, d)
			}
		}
	}
	row.Recovery(recovery)
	row.Note = fmt.Sprintf("victim restarted with its node id in %d runs; recovery = restart → the victim's next finished fetch", restarted)
	report(t, row)
}

// masterWorkers returns a master (spider master) and n workers (spider worker) of crawl
// name on redisURL; workerRedis, when given, replaces the workers' Redis URLs one by one
// (a proxy in front of Redis).
func masterWorkers(t *testing.T, w *web, redisURL, name string, n, concurrency, maxInFlight int) (*node, []*node) {
	master := &node{name: "master", args: append(append([]string{"master", "--redis", redisURL, "--crawl", name,
		"--data", filepath.Join(t.TempDir(), "master"), "--worker-ttl", "1s", "--max-inflight", strconv.Itoa(maxInFlight), "--quiet"},
		w.crawlFlags(concurrency)...), w.rules.Seeds...)}
	var workers []*node
	for i := range n {
		data := filepath.Join(t.TempDir(), fmt.Sprintf("w%d", i))
		workers = append(workers, &node{name: fmt.Sprintf("worker %d", i), data: data, args: []string{"worker", "--redis", redisURL,
			"--crawl", name, "--data", data, "--resolve-file", w.resolve, "--allow-private", "--concurrency", strconv.Itoa(concurrency)}})
	}
	return master, workers
}

// TestKillMaster kills `spider master` at a random point of the crawl and starts it again
// after a random pause; the workers keep running. The new master takes the state from
// Redis (AOF) and re-issues the tasks that were out: at most --max-inflight URLs are
// fetched twice per kill.
func TestKillMaster(t *testing.T) {
	t.Parallel()
	const concurrency, maxInFlight = 4, 8
	rs := redistest.Start(t, redistest.AppendOnly())
	w := distWeb(t, 41)
	rng := rngFor(t)
	row := Row{Fault: "kill -9 master (master + 2 workers)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		master, workers := masterWorkers(t, w, rs.URL(), "mw"+strconv.Itoa(run), 2, concurrency, maxInFlight)
		master.start(t)
		for _, n := range workers {
			n.start(t)
		}
		all := append([]*node{master}, workers...)
		at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
		faults := 0
		reachProgress(t, run, dataDirs(workers), at, all, 2*time.Minute)
		master.fault(t, run)
		faults = 1
		// Time is the subject: the master stays down for a random outage.
		time.Sleep(between(rng, 0, 2*time.Second))
		back := time.Now()
		master.start(t)
		t.Logf("run %d: killed the master at %d records", run, at)
		waitNodes(t, run, &row, all, 3*time.Minute)
		if d, ok := FirstRequestAfter(w.srv.Log(), back); ok {
			recovery = append(recovery, d)
		}
		checkRun(t, run, w, &row, workers, faults, faults*maxInFlight)
	}
	row.Recovery(recovery)
	row.Note = "restart after 0–2 s; recovery = restart → next request"
	report(t, row)
}

// TestKillWorker kills one of three `spider worker`s at a random point of the crawl and
// restarts it in half the runs: the master's reaper re-queues its processing list after
// --worker-ttl (1 s).
func TestKillWorker(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	rs := redistest.Start(t, redistest.AppendOnlyEverySec())
	w := distWeb(t, 43)
	rng := rngFor(t)
	row := Row{Fault: "kill -9 worker (1 of 3)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		master, workers := masterWorkers(t, w, rs.URL(), "wk"+strconv.Itoa(run), 3, concurrency, 4*concurrency)
		master.start(t)
		for _, n := range workers {
			n.start(t)
		}
		all := append([]*node{master}, workers...)
		victim := workers[rng.IntN(len(workers))]
		at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
		faults := 0
		reachProgress(t, run, dataDirs(workers), at, all, 2*time.Minute)
		victim.fault(t, run)
		killed := time.Now()
		faults = 1
		if rng.IntN(2) == 0 {
			// Time is the subject: the victim stays down for a random outage.
			time.Sleep(between(rng, 0, 2*time.Second))
			victim.start(t)
		}
		t.Logf("run %d: killed %s at %d records", run, victim.name, at)
		waitNodes(t, run, &row, all, 3*time.Minute)
		checkRun(t, run, w, &row, workers, faults, faults*concurrency)
		if d, ok := redoneAfter(w.srv.Log(), killed); ok {
			recovery = append(recovery, d)
		}
	}
	row.Recovery(recovery)
	row.Note = "victim restarted in about half the runs; recovery = kill → the last repeated request (the victim's tasks fetched again)"
	report(t, row)
}

// redoneAfter returns how long after t the last URL that had been requested before t was
// requested again: the time the work lost at t took to be redone.
func redoneAfter(log *websim.AccessLog, t time.Time) (time.Duration, bool) {
	before := map[string]bool{}
	var last time.Time
	for _, e := range log.Entries() {
		if e.Path == "/robots.txt" || e.Path == "/robots-real.txt" {
			continue
		}
		if e.Time.Before(t) {
			before[e.URL] = true
		} else if before[e.URL] && e.Time.After(last) {
			last = e.Time
		}
	}
	if last.IsZero() {
		return 0, false
	}
	return last.Sub(t), true
}

// TestKillCenter runs the SPEC §0 mixed topology as processes (two networks, each a
// `spider center` and one host `spider crawl --dedup protocol`, every node with its own
// redis-server) and kills one center at a random point, restarting it after a random
// pause. The protocol keeps its frames in Redis lists, so nothing is lost, and a URL is
// handed to exactly one host: no URL may be fetched twice.
func TestKillCenter(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	w := distWeb(t, 81)
	rng := rngFor(t)
	row := Row{Fault: "kill -9 center (2 networks × 1 host)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		dir := t.TempDir()
		centers, crawlers := protocolNodes(t, w, dir, "fault"+strconv.Itoa(run), w.crawlFlags(concurrency))
		all := append(append([]*node{}, centers...), crawlers...)
		for _, n := range all {
			n.start(t)
		}
		victim := centers[rng.IntN(len(centers))]
		at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
		faults := 0
		reachProgress(t, run, dataDirs(crawlers), at, all, 2*time.Minute)
		victim.fault(t, run)
		faults = 1
		// Time is the subject: the center stays down for a random outage.
		time.Sleep(between(rng, 0, 2*time.Second))
		back := time.Now()
		victim.start(t)
		t.Logf("run %d: killed %s at %d records", run, victim.name, at)
		waitNodes(t, run, &row, all, 3*time.Minute)
		if d, ok := FirstRequestAfter(w.srv.Log(), back); ok {
			recovery = append(recovery, d)
		}
		checkRun(t, run, w, &row, crawlers, faults, 0)
	}
	row.Recovery(recovery)
	row.Note = "restart after 0–2 s; bound 0: a URL is handed to one host only; recovery = restart → next request"
	report(t, row)
}

// protocolNodes writes a §0 configuration of two networks, n1 and n2, each a
// center and one host h1 with a redis-server of their own (AOF every second),
// for crawl name into dir, and returns the two centers and the two hosts
// (`spider crawl --dedup protocol`, data in dir/NET-h1, flags before the seeds).
func protocolNodes(t *testing.T, w *web, dir, name string, flags []string) (centers, hosts []*node) {
	t.Helper()
	var conf strings.Builder
	fmt.Fprintf(&conf, "crawl: %s\nbatch: 32\nflush: 50ms\nanswer_timeout: 1s\nremote_timeout: 2s\nheartbeat: 200ms\nmember_ttl: 1s\nstable: 300ms\nnetworks:\n", name)
	for _, n := range []string{"n1", "n2"} {
		c, r := redistest.Start(t, redistest.AppendOnlyEverySec()), redistest.Start(t, redistest.AppendOnlyEverySec())
		fmt.Fprintf(&conf, "  - name: %s\n    center_redis: %s\n    hosts:\n      - id: h1\n        redis: %s\n", n, c.URL(), r.URL())
	}
	cfgFile := filepath.Join(dir, "protocol.yaml")
	if err := os.WriteFile(cfgFile, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		centers = append(centers, &node{name: "center " + n, args: []string{"center", "--protocol-config", cfgFile, "--network", n}})
		data := filepath.Join(dir, n+"-h1")
		args := append([]string{"crawl", "--dedup", "protocol", "--protocol-config", cfgFile, "--network", n, "--host-id", "h1", "--data", data, "--quiet"}, flags...)
		hosts = append(hosts, &node{name: "host " + n + "/h1", data: data, args: append(args, w.rules.Seeds...)})
	}
	return centers, hosts
}
