package fault

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestRedisRestart kills redis-server (SIGKILL, append-only file with fsync always) at a
// random point of a crawl, keeps it down for a random pause and restarts it on the same
// port, alternately under a peer-to-peer crawl (two peers) and a master–worker crawl
// (master and two workers). Every process must wait the outage out and finish the crawl.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	w := distWeb(t, 91)
	rng := rngFor(t)
	row := Row{Fault: "Redis kill -9 + restart (AOF always)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		rs := redistest.Start(t, redistest.AppendOnly())
		var all, fetchers []*node
		topology := "p2p"
		bound := 2 * concurrency
		if run%2 == 0 {
			all = peers(t, w, []string{rs.URL(), rs.URL()}, "rr"+strconv.Itoa(run), concurrency)
			fetchers = all
		} else {
			topology = "master–worker"
			master, workers := masterWorkers(t, w, rs.URL(), "rr"+strconv.Itoa(run), 2, concurrency, 2*concurrency)
			all, fetchers = append([]*node{master}, workers...), workers
			bound = 2 * 2 * concurrency // the master's tasks out, and each worker's in flight
		}
		for _, n := range all {
			n.start(t)
		}
		at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
		faults := 0
		reachProgress(t, run, dataDirs(fetchers), at, all, 2*time.Minute)
		rs.Kill()
		faults = 1
		down := between(rng, 200*time.Millisecond, 3*time.Second)
		time.Sleep(down) // time is the subject: the outage's length
		rs.Restart()
		back := time.Now()
		t.Logf("run %d (%s): Redis killed at %d records, down %s", run, topology, at, down.Round(time.Millisecond))
		waitNodes(t, run, &row, all, 3*time.Minute)
		if d, ok := FirstRequestAfter(w.srv.Log(), back); ok {
			recovery = append(recovery, d)
		}
		checkRun(t, run, w, &row, fetchers, faults, faults*bound)
	}
	row.Recovery(recovery)
	row.Note = "even runs p2p (2 peers), odd runs master + 2 workers; down 0.2–3 s; recovery = Redis back → next request"
	report(t, row)
}

// TestPartition puts a TCP proxy between one of two peers and Redis and cuts the link at a
// random point of the crawl for a random time (0.5–8 s: shorter and longer than the 6 s
// bucket lease), holding the bytes (blackhole) or resetting the connections, then restores
// it. The cut node must not corrupt the crawl (its writes are fenced once its leases
// move) and both must finish it.
func TestPartition(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	rs := redistest.Start(t, redistest.AppendOnlyEverySec())
	w := distWeb(t, 71)
	rng := rngFor(t)
	row := Row{Fault: "partition p2p node ↔ Redis (TCP proxy)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	modes := map[CutMode]int{}
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		proxy, err := StartProxy(context.Background(), rs.Addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes := peers(t, w, []string{"redis://" + proxy.Addr() + "/0", rs.URL()}, "part"+strconv.Itoa(run), concurrency)
		for _, n := range nodes {
			n.start(t)
		}
		at := len(w.truth.MustFetch) * (10 + rng.IntN(60)) / 100
		faults := 0
		reachProgress(t, run, dataDirs(nodes), at, nodes, 2*time.Minute)
		mode := CutMode(rng.IntN(2))
		modes[mode]++
		cut := between(rng, 500*time.Millisecond, 8*time.Second)
		proxy.Cut(mode)
		faults = 1
		time.Sleep(cut) // time is the subject: the partition's length
		proxy.Restore()
		back := time.Now()
		t.Logf("run %d: %s cut for %s at %d records", run, mode, cut.Round(time.Millisecond), at)
		waitNodes(t, run, &row, nodes, 3*time.Minute)
		proxy.Close()
		checkRun(t, run, w, &row, nodes, faults, faults*concurrency)
		if d, ok := firstRecordAfter(nodes[0].data, back); ok {
			recovery = append(recovery, d)
		}
	}
	row.Recovery(recovery)
	row.Note = fmt.Sprintf("cuts of 0.5–8 s (%d blackhole, %d reset); recovery = link restored → the cut node's next finished fetch", modes[Blackhole], modes[Reset])
	report(t, row)
}
