package fault

import (
	"slices"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// TestKillSingleNode kills `spider crawl` (embedded back-end) with SIGKILL 1–3 times per
// run at random points of its progress, restarts the same command each time,
// and checks that the crawl completes with every ground-truth URL, no URL requested more
// often than the kills explain (at most `concurrency` URLs in flight per kill), no
// corrupt record, and an index and PageRank equal to a clean run's.
func TestKillSingleNode(t *testing.T) {
	t.Parallel()
	const concurrency = 4
	w := startWeb(t, websim.Config{Seed: 21, Hosts: 8, PagesPerHost: 40, Latency: 2 * time.Millisecond, ChineseShare: -1},
		websim.TruthRules{MaxDepth: 4, Scope: websim.ScopeAny}, 2)
	rng := rngFor(t)

	cleanData := t.TempDir()
	begin := time.Now()
	p := start(t, "clean crawl", append(append([]string{"crawl", "--data", cleanData, "--quiet"}, w.crawlFlags(concurrency)...), w.rules.Seeds...)...)
	if err := p.Wait(3 * time.Minute); err != nil {
		t.Fatal(err)
	}
	cleanDur := time.Since(begin)
	if n := checkCrawl(t, w, cleanData); n > 0 {
		t.Fatalf("the clean run lost %d URLs", n)
	}
	clean := takeSnapshot(t, cleanData)
	t.Logf("clean run: %d URLs in %s", len(w.truth.MustFetch), cleanDur.Round(time.Millisecond))

	row := Row{Fault: "kill -9 single-node crawl", URLs: len(w.truth.MustFetch), Equal: "yes"}
	var recovery []time.Duration
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		data := t.TempDir()
		kills := 1 + rng.IntN(3)
		// Kill points: record counts at random fractions of the ground truth, in order, so
		// every kill lands inside the crawl whatever the machine's speed.
		var points []int
		for range kills {
			points = append(points, len(w.truth.MustFetch)*(5+rng.IntN(85))/100)
		}
		slices.Sort(points)
		killed := 0
		var killTimes []time.Time
		for attempt := 0; ; attempt++ {
			if attempt > kills+5 {
				t.Fatalf("run %d: the crawl did not finish after %d restarts", run, attempt)
			}
			n := &node{name: "crawl", data: data, args: append(append([]string{"crawl", "--data", data, "--quiet"}, w.crawlFlags(concurrency)...), w.rules.Seeds...)}
			n.start(t)
			if killed < kills {
				reachProgress(t, run, []string{data}, points[killed], []*node{n}, 3*time.Minute)
				n.fault(t, run)
				killed++
				killTimes = append(killTimes, time.Now())
				t.Logf("run %d: killed at %d records", run, points[killed-1])
				continue
			}
			if err := n.p.Wait(3 * time.Minute); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			break
		}
		for _, k := range killTimes {
			if d, ok := FirstRequestAfter(w.srv.Log(), k); ok {
				recovery = append(recovery, d)
			}
		}
		row.Runs++
		row.Faults += killed
		row.Lost += checkCrawl(t, w, data)
		extra, worst := Repeats(w.srv.Log())
		row.Repeats += extra
		row.Bound += killed * concurrency
		if extra > killed*concurrency || worst > 1+killed {
			t.Errorf("run %d: %d repeated requests (a URL up to %d times) after %d kills; the bound is %d", run, extra, worst, killed, killed*concurrency)
		}
		if d := takeSnapshot(t, data).diff(clean); d != "" {
			row.Equal = "no"
			t.Errorf("run %d: index or PageRank differ from the clean run:\n%s", run, d)
		}
	}
	row.Recovery(recovery)
	row.Note = "1–3 kills per run at random points (5–90 % of the records); recovery = kill → next request (restart included)"
	report(t, row)
}
