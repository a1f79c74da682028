package fault

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/topics"
	"github.com/spider-crawler/spider/internal/websim"
)

// topicsWeb is the synthetic web of the topics cases: distWeb's size (16 hosts of 25
// pages, about 530 URLs), its hosts in three registrable domains d0.test, d1.test and
// d2.test, one topic each (topicsFile), so every URL of the ground truth belongs to a
// topic. The ground truth's seeds are the topics' seeds (www.dD.test/).
func topicsWeb(t *testing.T, seed int64) *web {
	return startWeb(t, websim.Config{Seed: seed, Hosts: 16, Domains: 3, PagesPerHost: 25, Latency: 3 * time.Millisecond, ChineseShare: -1},
		websim.TruthRules{MaxDepth: -1, Scope: websim.ScopeAny}, 3)
}

// topicNames are the topics of topicsFile, in the order of the web's domains d0, d1, d2.
var topicNames = []string{"alpha", "beta", "gamma"}

// topicsFile writes the topics file of the topics cases into a temporary directory and
// returns its path: one topic per domain of w (patterns "http://(test,dD,"), priorities
// 2, 1, 0, seeded with w's seeds, a 100 ms daemon tick (the TCBs and the status are
// saved every tick) and short slices, so pre-emption and epochs happen within the crawl.
func topicsFile(t *testing.T, w *web) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("period: 2s\ntick: 100ms\nbase_slice: 40ms\ntopics:\n")
	for i, name := range topicNames {
		en, _ := websim.TopicWords(websim.Topics()[i])
		fmt.Fprintf(&b, "  - name: %s\n    priority: %d\n    seeds: [%s]\n    patterns: [\"http://(test,d%d,\"]\n    terms: [%s]\n",
			name, len(topicNames)-1-i, w.rules.Seeds[i], i, strings.Join(en[:8], ", "))
	}
	path := filepath.Join(t.TempDir(), "topics.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// topicsCluster returns the coordinator (`spider master --topics FILE`, its data directory
// holding the TCBs and DATA/topics/status.json) and n crawl nodes (`spider worker --topics
// FILE`) of crawl name on redisURL. No positional seeds: they come from the topics file.
// The coordinator's node has no data in the records' sense (data ""): its directory is
// returned on its own.
func topicsCluster(t *testing.T, w *web, redisURL, name, topicsPath string, n, concurrency, maxInFlight int) (coord *node, coordData string, nodes []*node) {
	coordData = filepath.Join(t.TempDir(), "coordinator")
	coord = &node{name: "coordinator", args: append([]string{"master", "--redis", redisURL, "--crawl", name, "--topics", topicsPath,
		"--data", coordData, "--wait-nodes", strconv.Itoa(n), "--worker-ttl", "1s", "--max-inflight", strconv.Itoa(maxInFlight), "--quiet"},
		w.crawlFlags(concurrency)...)}
	for i := range n {
		data := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i))
		nodes = append(nodes, &node{name: fmt.Sprintf("crawl node %d", i), data: data, args: []string{"worker", "--redis", redisURL,
			"--crawl", name, "--topics", topicsPath, "--data", data, "--resolve-file", w.resolve, "--allow-private",
			"--concurrency", strconv.Itoa(concurrency)}})
	}
	return coord, coordData, nodes
}

// checkCopies checks that no URL was stored twice across the crawl nodes' records beyond
// what the fault explains, and returns how many extra records there were (records −
// URLs). A task out at the fault may be stored twice: once before the fault (by the killed
// node, its result never reported; or by any node while the coordinator was down, its
// result meant for the killed coordinator's lease) and once by the node it was handed to
// again. So every URL stored more than once must have a record fetched before the fault
// ended (before, the kill of a node or the coordinator's restart), by the killed node
// when victim ≥ 0 (a coordinator kill: victim < 0, any node); any other copy is a task
// handed out twice. And the extra records stay within bound, the work that was out.
func checkCopies(t *testing.T, run int, nodes []*node, victim int, before time.Time, bound int) int {
	t.Helper()
	copies, err := Copies(dataDirs(nodes)...)
	if err != nil {
		t.Fatal(err)
	}
	extra := 0
	var urls []string
	for u := range copies {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	for _, u := range urls {
		in := copies[u]
		extra += len(in) - 1
		var where []string
		explained := false
		for _, c := range in {
			where = append(where, fmt.Sprintf("%s at %s", nodes[c.Dir].name, c.FetchedAt.Format("15:04:05.000")))
			explained = explained || (victim < 0 || c.Dir == victim) && !c.FetchedAt.After(before)
		}
		if !explained {
			t.Errorf("run %d: %s stored %d times (%s), none of them by the faulted work before %s: a task handed out twice",
				run, u, len(in), strings.Join(where, ", "), before.Format("15:04:05.000"))
		}
	}
	if extra > bound {
		t.Errorf("run %d: %d URLs stored more than once (%d extra records) after one kill; the in-flight bound is %d", run, len(copies), extra, bound)
	}
	return extra
}

// topicPages returns the pages of each topic-granularity task of st (the topics and the
// background task "(other)") and their sum.
func topicPages(st topics.Status) (map[string]int64, int64) {
	out := map[string]int64{}
	var sum int64
	for _, ts := range st.Tasks {
		if ts.Granularity == "topic" {
			out[ts.Name] = ts.Pages
			sum += ts.Pages
		}
	}
	return out, sum
}

// waitStatusAfter polls the coordinator's DATA/topics/status.json until it was written
// after t (a restarted coordinator's first daemon tick) and returns it; false when none
// came within timeout. The file is written by another process, so it is polled (every
// 10 ms, atomically renamed by the writer).
func waitStatusAfter(data string, t time.Time, timeout time.Duration) (topics.Status, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, err := topics.ReadStatus(data); err == nil && st.Updated.After(t) {
			return st, true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return topics.Status{}, false
}

// maxEnd bounds the time from a topics case's restart to the end of its crawl (every
// process exited). A clean crawl of topicsWeb takes about 5 s; the coordinator takes a
// dead node's tasks back after --worker-ttl (1 s), and a restarted coordinator re-issues
// the tasks that were out at once. A task that came back only when its lease expired
// (minutes) would end the crawl far later.
const maxEnd = 45 * time.Second

// checkEnded fails the test when the crawl ended more than maxEnd after back.
func checkEnded(t *testing.T, run int, back time.Time) {
	t.Helper()
	if d := time.Since(back); d > maxEnd {
		t.Errorf("run %d: the crawl ended %s after the restart (want within %s): a task of the killed process came back only when its lease expired", run, d.Round(time.Millisecond), maxEnd)
	}
}

// TestKillTopicsNode kills one of the two crawl nodes of a topics crawl on the cluster
// (issue 25: `spider master --topics FILE` as the coordinator, two `spider worker --topics
// FILE` as crawl nodes, real redis-server) with SIGKILL at a random point of the crawl's
// progress and restarts it on the same --data after a random 0–2 s pause. The coordinator
// hands the dead node's tasks (its processing list and its own queue srq:N) out again.
// Checked: no ground-truth URL lost, no URL stored twice except a task the victim had in
// flight, repeated requests within the victim's --concurrency, the crawl ends by itself
// and every process exits 0.
func TestKillTopicsNode(t *testing.T) {
	t.Parallel()
	const concurrency, maxInFlight = 4, 16
	rs := redistest.Start(t, redistest.AppendOnlyEverySec())
	w := topicsWeb(t, 251)
	tf := topicsFile(t, w)
	rng := rngFor(t)
	row := Row{Fault: "kill -9 topics crawl node (coordinator + 2 nodes)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	copies := 0
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		coord, _, nodes := topicsCluster(t, w, rs.URL(), "tk"+strconv.Itoa(run), tf, 2, concurrency, maxInFlight)
		coord.start(t)
		for _, n := range nodes {
			n.start(t)
		}
		all := append([]*node{coord}, nodes...)
		vi := rng.IntN(len(nodes))
		victim := nodes[vi]
		at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
		reachProgress(t, run, dataDirs(nodes), at, all, 2*time.Minute)
		victim.fault(t, run)
		killed := time.Now()
		// Time is the subject: the victim stays down for a random outage.
		pause := between(rng, 0, 2*time.Second)
		time.Sleep(pause)
		victim.start(t)
		back := time.Now()
		t.Logf("run %d: killed %s at %d records, restarted after %s", run, victim.name, at, pause.Round(time.Millisecond))
		waitNodes(t, run, &row, all, 3*time.Minute)
		checkEnded(t, run, back)
		checkRun(t, run, w, &row, nodes, 1, concurrency)
		copies += checkCopies(t, run, nodes, vi, killed, concurrency)
		if d, ok := redoneAfter(w.srv.Log(), killed); ok {
			recovery = append(recovery, d)
		}
	}
	row.Recovery(recovery)
	row.Note = fmt.Sprintf("3 topics (pq), `--worker-ttl 1s`, victim restarted on its --data after 0–2 s; URLs stored twice: %d (all the victim's in-flight tasks); recovery = kill → the last repeated request", copies)
	report(t, row)
}

// TestKillTopicsCoordinator kills the coordinator of a topics crawl on the cluster
// (`spider master --topics FILE` + two `spider worker --topics FILE`) with SIGKILL at a
// random point of the crawl's progress and restarts it on the same --data after a random
// 0–2 s pause; the crawl nodes keep running. Checked as TestKillMaster (nothing lost,
// repeated requests and URLs stored twice within --max-inflight, every process exits 0)
// and the TCBs: the restarted coordinator's first status (DATA/topics/status.json) shows
// every topic with at least the pages of the last status before the kill, and so does its
// final status — the counters continue, they do not restart at zero.
func TestKillTopicsCoordinator(t *testing.T) {
	t.Parallel()
	const concurrency, maxInFlight = 4, 8
	rs := redistest.Start(t, redistest.AppendOnly())
	w := topicsWeb(t, 252)
	tf := topicsFile(t, w)
	rng := rngFor(t)
	row := Row{Fault: "kill -9 topics coordinator (coordinator + 2 nodes)", URLs: len(w.truth.MustFetch)}
	var recovery []time.Duration
	copies := 0
	var uncounted []int
	for run := range runs(2, 20) {
		w.srv.Log().Reset()
		coord, coordData, nodes := topicsCluster(t, w, rs.URL(), "tc"+strconv.Itoa(run), tf, 2, concurrency, maxInFlight)
		coord.start(t)
		for _, n := range nodes {
			n.start(t)
		}
		all := append([]*node{coord}, nodes...)
		at := len(w.truth.MustFetch) * (10 + rng.IntN(70)) / 100
		reachProgress(t, run, dataDirs(nodes), at, all, 2*time.Minute)
		before, err := topics.ReadStatus(coordData)
		coord.fault(t, run)
		if err != nil {
			t.Fatalf("run %d: the coordinator wrote no topics status before its kill at %d records: %v", run, at, err)
		}
		pagesBefore, sumBefore := topicPages(before)
		if sumBefore == 0 {
			t.Fatalf("run %d: the coordinator's status counts no page at %d records (%+v): the TCB check would test nothing", run, at, before.Tasks)
		}
		// Time is the subject: the coordinator stays down for a random outage.
		pause := between(rng, 0, 2*time.Second)
		time.Sleep(pause)
		back := time.Now()
		coord.start(t)
		t.Logf("run %d: killed the coordinator at %d records (status: %v), restarted after %s", run, at, pagesBefore, pause.Round(time.Millisecond))
		first, ok := waitStatusAfter(coordData, back, time.Minute)
		if !ok {
			t.Errorf("run %d: the restarted coordinator wrote no topics status within a minute", run)
		} else {
			pagesFirst, _ := topicPages(first)
			for name, n := range pagesBefore {
				if pagesFirst[name] < n {
					t.Errorf("run %d: topic %s: %d pages before the kill, %d in the restarted coordinator's first status: the TCBs were not resumed", run, name, n, pagesFirst[name])
				}
			}
		}
		waitNodes(t, run, &row, all, 3*time.Minute)
		checkEnded(t, run, back)
		if d, ok := FirstRequestAfter(w.srv.Log(), back); ok {
			recovery = append(recovery, d)
		}
		checkRun(t, run, w, &row, nodes, 1, maxInFlight)
		copies += checkCopies(t, run, nodes, -1, back, maxInFlight)
		final, err := topics.ReadStatus(coordData)
		if err != nil {
			t.Errorf("run %d: no final topics status: %v", run, err)
			continue
		}
		pagesFinal, sumFinal := topicPages(final)
		for name, n := range pagesBefore {
			if pagesFinal[name] < n {
				t.Errorf("run %d: topic %s: %d pages before the kill, %d at the end", run, name, n, pagesFinal[name])
			}
		}
		for _, name := range topicNames {
			if pagesFinal[name] == 0 {
				t.Errorf("run %d: topic %s has no page in the final status %v", run, name, pagesFinal)
			}
		}
		// Pages fetched but not in the counters: the completions the killed coordinator
		// counted after its last save (at most one daemon tick's).
		recs, _, err := Records(dataDirs(nodes)...)
		if err != nil {
			t.Fatal(err)
		}
		uncounted = append(uncounted, len(recs)-int(sumFinal))
		t.Logf("run %d: pages per topic before the kill %v, at the end %v; %d URLs recorded", run, pagesBefore, pagesFinal, len(recs))
	}
	row.Recovery(recovery)
	lo, hi := 0, 0
	if len(uncounted) > 0 {
		lo, hi = slices.Min(uncounted), slices.Max(uncounted)
	}
	row.Note = fmt.Sprintf("3 topics (pq), restart on the same --data after 0–2 s; TCB pages per topic continue from the last status before the kill in every run (URLs recorded − pages counted at the end: %d to %d per run, the completions after the last 100 ms tick's save); URLs stored twice: %d; recovery = restart → next request",
		lo, hi, copies)
	report(t, row)
}
