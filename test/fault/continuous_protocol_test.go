package fault

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestKillContinuousProtocol kills a host of a continuous design §0 crawl (`spider crawl
// --dedup protocol --continuous --revisit fixed`; two networks, each a `spider center` and
// one host, every node with its own redis-server) with SIGKILL and restarts it, twice a
// run: during the first crawl, and while it revisits (the system done by then: the
// restarted host only revisits). Each host keeps the schedule of the pages it fetched in
// its own DATA/schedule. After the last restart, once a revisit interval has passed, a
// window of revisits every second: every changing page requested at least twice (no
// schedule entry lost), none beyond its interval, no ground-truth URL lost; then Ctrl-C
// ends both hosts with status 0, and each host's schedule holds every page it fetched.
// cmd/spider's TestProtocolContinuousKill (one network, three kills while revisiting,
// --revisit adaptive) stays: this row adds a kill during the first crawl, a second
// network and the ground truth.
func TestKillContinuousProtocol(t *testing.T) {
	t.Parallel()
	const (
		concurrency = 4
		interval    = time.Second
		window      = 7 * time.Second
	)
	w, pages := changingWeb(t, 29)
	rng := rngFor(t)
	row := Row{Fault: "kill -9 continuous §0 host (2 networks × 1 host)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	for run := range runs(1, 6) {
		w.srv.Log().Reset()
		dir := t.TempDir()
		centers, hosts := protocolNodes(t, w, dir, fmt.Sprintf("cont%d", run), append(revisitFlags(interval), w.crawlFlags(concurrency)...))
		all := append(append([]*node{}, centers...), hosts...)
		for _, n := range all {
			n.start(t)
		}
		victim := hosts[rng.IntN(len(hosts))]
		// Kill 1: during the first crawl, at 10–80 % of the ground truth's records.
		reachProgress(t, run, dataDirs(hosts), len(w.truth.MustFetch)*(10+rng.IntN(70))/100, all, 2*time.Minute)
		victim.fault(t, run)
		time.Sleep(between(rng, 0, 2*time.Second))
		victim.start(t)
		// Kill 2: while revisiting, once every ground-truth URL has a record.
		reachProgress(t, run, dataDirs(hosts), len(w.truth.MustFetch), all, 2*time.Minute)
		time.Sleep(between(rng, 300*time.Millisecond, 3*interval))
		victim.fault(t, run)
		time.Sleep(between(rng, 0, 2*time.Second))
		back := time.Now()
		victim.start(t)
		// The window starts a revisit interval after the restart.
		if d := time.Until(back.Add(interval)); d > 0 {
			time.Sleep(d)
		}
		from := time.Now()
		time.Sleep(window)
		to := time.Now()
		for _, n := range hosts {
			n.p.Interrupt()
		}
		for _, n := range hosts {
			if err := n.p.Wait(time.Minute); err != nil {
				row.Failed++
				t.Errorf("run %d: %s after SIGINT: %v", run, n.name, err)
			}
		}
		for _, n := range centers {
			n.kill() // a center runs until stopped
		}
		if d, ok := firstRecordAfter(victim.data, back); ok {
			recovery = append(recovery, d)
		}
		row.Runs++
		row.Faults += 2
		row.Lost += checkRevisits(t, run, w, pages, from, to, window, interval)
		row.Lost += checkCrawl(t, w, dataDirs(hosts)...)
		for _, h := range hosts {
			row.Lost += checkSchedule(t, run, h.data, filepath.Join(h.data, "schedule"))
		}
	}
	row.Recovery(recovery)
	row.Note = "design §0 mixed topology, 4 redis-servers; the victim (one host) killed at 10–80 % of the first crawl and again while revisiting, restarted after 0–2 s; then " +
		window.String() + " of revisits every " + interval.String() + " from a revisit interval after the restart; lost = ground-truth URLs without a record + changing pages not revisited in that window + pages without an entry in their host's schedule; recovery = last restart → the victim's next finished fetch"
	report(t, row)
}
