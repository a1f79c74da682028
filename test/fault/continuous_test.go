package fault

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

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
	w := startWeb(t, websim.Config{Seed: 26, Hosts: 4, PagesPerHost: 30, ChangeDay: 500 * time.Millisecond, DisappearShare: -1, ChineseShare: -1},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny}, 4)
	rng := rngFor(t)
	var pages []string // host + path of every changing page
	for hi := range w.rules.Seeds {
		for _, raw := range w.srv.PageURLs(hi) {
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, u.Hostname()+u.RequestURI())
		}
	}
	args := func(data string) []string {
		a := append([]string{"crawl", "--data", data, "--quiet", "--continuous", "--revisit", "fixed",
			"--revisit-initial", interval.String(), "--revisit-min", interval.String(), "--revisit-max", interval.String()},
			w.crawlFlags(concurrency)...)
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
			row.Lost += len(starved)
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
