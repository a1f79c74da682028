package fault

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestKillContinuous kills a continuous crawl (`spider crawl --continuous --revisit fixed`,
// embedded back-end) with SIGKILL 1–3 times per run, restarting the same command each
// time: the first kill during the first crawl, the others while it revisits. The last
// run is stopped with SIGINT after a window of several revisit intervals. Checked: no
// ground-truth URL lost; the interrupt ends the crawl with status 0; and no revisit
// schedule entry lost: in the last run's window every changing page was requested at
// least twice (a page whose entry was lost is never requested again, one whose entry
// was lost after its fetch in the last run once), and none more often than its interval
// allows.
func TestKillContinuous(t *testing.T) {
	t.Parallel()
	const (
		concurrency = 4
		interval    = time.Second
		window      = 7 * time.Second
	)
	w, pages := changingWeb(t, 26)
	rng := rngFor(t)
	args := func(data string) []string {
		a := append(append([]string{"crawl", "--data", data, "--quiet"}, revisitFlags(interval)...), w.crawlFlags(concurrency)...)
		return append(a, w.rules.Seeds...)
	}

	row := Row{Fault: "kill -9 continuous crawl (revisits)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	for run := range runs(1, 6) {
		data := t.TempDir()
		kills := 1 + rng.IntN(3)
		killed := 0
		var killTimes []time.Time
		for attempt := 0; ; attempt++ {
			if attempt > kills+2 {
				t.Fatalf("run %d: more restarts than kills", run)
			}
			n := &node{name: "crawl", data: data, args: args(data)}
			n.start(t)
			if killed < kills {
				if killed == 0 {
					// Inside the first crawl: at 5–90 % of the ground truth's records.
					reachProgress(t, run, []string{data}, len(w.truth.MustFetch)*(5+rng.IntN(85))/100, []*node{n}, 3*time.Minute)
				} else {
					// While it revisits: a while after the restart.
					select {
					case <-n.p.Done():
						t.Fatalf("run %d: the continuous crawl exited by itself: %v\n%s", run, n.p.Err(), tail(n.p.Output(), 2000))
					case <-time.After(between(rng, 300*time.Millisecond, 3*interval)):
					}
				}
				n.fault(t, run)
				killed++
				killTimes = append(killTimes, time.Now())
				continue
			}
			// The last run: once every ground-truth URL has a record, a window of
			// revisits, then the operator's Ctrl-C.
			reachProgress(t, run, []string{data}, len(w.truth.MustFetch), []*node{n}, 3*time.Minute)
			from := time.Now()
			time.Sleep(window)
			to := time.Now()
			n.p.Interrupt()
			if err := n.p.Wait(time.Minute); err != nil {
				row.Failed++
				t.Errorf("run %d: after SIGINT: %v", run, err)
			}
			starved := checkRevisits(t, run, w, pages, from, to, window, interval)
			row.Lost += starved
			break
		}
		row.Runs++
		row.Faults += killed
		row.Lost += checkCrawl(t, w, data)
		for _, k := range killTimes {
			if d, ok := FirstRequestAfter(w.srv.Log(), k); ok {
				recovery = append(recovery, d)
			}
		}
		w.srv.Log().Reset()
	}
	row.Note = "1–3 kills per run (the first during the first crawl, the others while revisiting); the last run stopped by SIGINT after " + window.String() +
		" of revisits every " + interval.String() + "; lost = ground-truth URLs without a record + changing pages not revisited in that window"
	row.Recovery(recovery)
	report(t, row)
}

// changingPages returns host + path of every changing page of the web's first hosts.
// changingWeb starts the web of the continuous-crawl rows (websim seed
// seed: 4 hosts × 30 pages changing every half model day, none disappearing,
// no Chinese text) and returns it with its changing pages.
func changingWeb(t *testing.T, seed int64) (*web, []string) {
	t.Helper()
	w := startWeb(t, websim.Config{Seed: seed, Hosts: 4, PagesPerHost: 30, ChangeDay: 500 * time.Millisecond, DisappearShare: -1, ChineseShare: -1},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny}, 4)
	return w, changingPages(t, w, 4)
}

func changingPages(t *testing.T, w *web, hosts int) []string {
	t.Helper()
	var pages []string
	for hi := range hosts {
		for _, raw := range w.srv.PageURLs(hi) {
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, u.Hostname()+u.RequestURI())
		}
	}
	return pages
}

// revisitFlags are the flags of a continuous crawl revisiting every page every interval.
func revisitFlags(interval time.Duration) []string {
	return []string{"--continuous", "--revisit", "fixed",
		"--revisit-initial", interval.String(), "--revisit-min", interval.String(), "--revisit-max", interval.String()}
}

// checkRevisits checks the web's access log over [from, to), a window of revisits every
// interval: every changing page requested (200 or 304) at least twice — a page whose
// schedule entry was lost is never requested again, one whose entry was lost after its
// fetch in the window once — and none more often than the interval allows. It returns
// the number of starved pages.
func checkRevisits(t *testing.T, run int, w *web, pages []string, from, to time.Time, window, interval time.Duration) int {
	t.Helper()
	requests := map[string]int{}
	for _, e := range w.srv.Log().Entries() {
		if e.Method == "GET" && !e.Time.Before(from) && e.Time.Before(to) && (e.Status == 200 || e.Status == 304) {
			requests[e.Host+e.Path]++
		}
	}
	var starved, busy []string
	most := int(window/interval) + 2
	for _, p := range pages {
		switch n := requests[p]; {
		case n < 2:
			starved = append(starved, p)
		case n > most:
			busy = append(busy, p)
		}
	}
	if len(starved) > 0 {
		slices.Sort(starved)
		t.Errorf("run %d: %d of %d changing pages requested fewer than twice in %s of revisits every %s (schedule entries lost?): %s",
			run, len(starved), len(pages), window, interval, strings.Join(starved[:min(len(starved), 10)], " "))
	}
	if len(busy) > 0 {
		t.Errorf("run %d: %d pages requested more than %d times in %s of revisits every %s: %s", run, len(busy), most, window, interval, strings.Join(busy[:min(len(busy), 10)], " "))
	}
	return len(starved)
}

// TestKillContinuousDistributed kills a node of a continuous distributed crawl with
// SIGKILL and restarts it: the master of a master–worker crawl (its state parts and
// revisit schedule on Redis, two workers fetching) and one of two peer-to-peer nodes
// (each keeping the schedule of the buckets it owns). After the restart, a window of
// revisits every second: every changing page is revisited at least twice (no schedule
// entry lost on Redis), none beyond its interval, no ground-truth URL lost; then Ctrl-C
// ends the master and the peers with status 0.
func TestKillContinuousDistributed(t *testing.T) {
	t.Parallel()
	const (
		concurrency = 4
		interval    = time.Second
		window      = 7 * time.Second
	)
	rs := redistest.Start(t, redistest.AppendOnly())
	w, pages := changingWeb(t, 27)
	rng := rngFor(t)
	for _, topo := range []string{"master-worker", "p2p"} {
		row := Row{Fault: "kill -9 continuous " + topo + " node (revisits on Redis)", URLs: len(w.truth.MustFetch)}
		var recovery []time.Duration
		for run := range runs(1, 6) {
			w.srv.Log().Reset()
			name := fmt.Sprintf("cont-%s-%d", topo, run)
			var victim *node
			var stoppers, all, fetchers []*node
			if topo == "master-worker" {
				master, workers := masterWorkers(t, w, rs.URL(), name, 2, concurrency, 8)
				master.args = append(append(master.args[:len(master.args)-len(w.rules.Seeds)], revisitFlags(interval)...), w.rules.Seeds...)
				victim, stoppers, fetchers = master, []*node{master}, workers
				all = append([]*node{master}, workers...)
			} else {
				ps := peers(t, w, []string{rs.URL(), rs.URL()}, name, concurrency)
				for _, p := range ps {
					p.args = append(append(p.args[:len(p.args)-len(w.rules.Seeds)], revisitFlags(interval)...), w.rules.Seeds...)
				}
				victim, stoppers, fetchers, all = ps[rng.IntN(len(ps))], ps, ps, ps
			}
			for _, n := range all {
				n.start(t)
			}
			reachProgress(t, run, dataDirs(fetchers), len(w.truth.MustFetch)*(10+rng.IntN(70))/100, all, 2*time.Minute)
			victim.fault(t, run)
			time.Sleep(between(rng, 0, 2*time.Second))
			back := time.Now()
			victim.start(t)
			// The window starts once every ground-truth URL has a record and a
			// revisit interval has passed since the restart.
			reachProgress(t, run, dataDirs(fetchers), len(w.truth.MustFetch), all, 2*time.Minute)
			if d := time.Until(back.Add(interval)); d > 0 {
				time.Sleep(d)
			}
			from := time.Now()
			time.Sleep(window)
			to := time.Now()
			for _, n := range stoppers {
				n.p.Interrupt()
			}
			for _, n := range stoppers {
				if err := n.p.Wait(time.Minute); err != nil {
					row.Failed++
					t.Errorf("run %d: %s after SIGINT: %v", run, n.name, err)
				}
			}
			for _, n := range all {
				n.kill() // the workers of a stopped master
			}
			if d, ok := FirstRequestAfter(w.srv.Log(), back); ok {
				recovery = append(recovery, d)
			}
			row.Runs++
			row.Faults++
			row.Lost += checkRevisits(t, run, w, pages, from, to, window, interval)
			row.Lost += checkCrawl(t, w, dataDirs(fetchers)...)
		}
		row.Recovery(recovery)
		row.Note = "the victim (" + map[string]string{"master-worker": "the master", "p2p": "one of two peers"}[topo] +
			") killed at 10–80 % of the first crawl, restarted after 0–2 s; then " + window.String() + " of revisits every " + interval.String() +
			"; lost = ground-truth URLs without a record + changing pages not revisited in that window"
		report(t, row)
	}
}
