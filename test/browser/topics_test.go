package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/server/redisview"
	"github.com/spider-crawler/spider/internal/topics"
	"github.com/spider-crawler/spider/internal/websim"
)

// topicRows returns the cells of the dashboard's topics table.
func topicRows(t *testing.T, ctx context.Context) [][]string {
	t.Helper()
	return get(t, ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#topics tbody tr")].map(tr => [...tr.cells].map(td => td.textContent))`))
}

var (
	prioCell    = regexp.MustCompile(`^\d( \(file \d\))?$`)
	sliceCell   = regexp.MustCompile(`^-?(\d+ ms|\d+(\.\d)? s)$`)
	topicStates = []string{"ready", "running", "expired", "idle"}
)

// checkTopicRows checks every row of the topics table: one per name of
// want (and no other), in the scheduler's order, each with its priority
// as want gives it ("7 (file 2)" after a change), a scheduler state, the
// slice total and slice left as durations, and pages, relevant, queued,
// pre-empted and robots refused as counts: no cell empty, "–", undefined,
// NaN or null. It
// returns the rows by topic name.
func checkTopicRows(t *testing.T, rows [][]string, want map[string]string) map[string][]string {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("topics table: %d rows %q, want %d (%v)", len(rows), rows, len(want), want)
	}
	byName := map[string][]string{}
	for _, r := range rows {
		if len(r) != 10 {
			t.Fatalf("topic row %q: %d cells, want 10 (topic, priority, state, slice total, slice left, pages, relevant, queued, pre-empted, robots refused)", r, len(r))
		}
		prio, ok := want[r[0]]
		switch {
		case !ok:
			t.Fatalf("topic row %q: topic %q is not one of the crawl's (%v)", r, r[0], want)
		case !prioCell.MatchString(r[1]) || prio != "" && r[1] != prio:
			t.Fatalf("topic row %q: priority %q, want %q", r, r[1], prio)
		case !slices.Contains(topicStates, r[2]):
			t.Fatalf("topic row %q: state %q, want one of %v", r, r[2], topicStates)
		case !sliceCell.MatchString(r[3]) || strings.HasPrefix(r[3], "-") || !sliceCell.MatchString(r[4]):
			t.Fatalf("topic row %q: slice total %q and slice left %q are not durations (\"250 ms\", \"1.5 s\")", r, r[3], r[4])
		}
		for i, name := range []string{"pages", "relevant", "queued", "pre-empted", "robots refused"} {
			if !intCell.MatchString(r[5+i]) {
				t.Fatalf("topic row %q: %s %q is not a count", r, name, r[5+i])
			}
		}
		byName[r[0]] = r
	}
	return byName
}

// count reads a count cell ("1,234").
func count(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

// setPriority changes a topic's priority through the dashboard's control
// form (the token typed in) and returns what the form says back.
func setPriority(t *testing.T, ctx context.Context, topic, value string) string {
	t.Helper()
	get(t, ctx, chromedp.Evaluate[string](`document.getElementById("control-result").textContent = ""`))
	do(t, ctx, chromedp.SetValue(`#priority-topic`, topic), chromedp.SetValue(`#priority-value`, value), chromedp.Click(`#set-priority`))
	waitJS(t, ctx, `document.getElementById("control-result").textContent.length > 0`, 10*time.Second, "an answer to the priority change")
	return get(t, ctx, chromedp.Text(`#control-result`))
}

// checkPriorityErrors sends bad priorities through the control form: each
// shows the server's error text, none changes a row.
func checkPriorityErrors(t *testing.T, ctx context.Context, topic string) {
	t.Helper()
	before := priorityShown(t, ctx, topic)
	for _, bad := range []string{"12", "-1", "", "2.5", "1e1"} {
		got := setPriority(t, ctx, topic, bad)
		if got != `give "priority" as a whole number from 0 (lowest) to 9` {
			t.Fatalf("priority %q for %s from the dashboard: the form says %q, want the server's error", bad, topic, got)
		}
		if cls := get(t, ctx, chromedp.Evaluate[string](`document.getElementById("control-result").className`)); cls != "error" {
			t.Fatalf("priority %q refused, but the answer is shown as %q, not as an error", bad, cls)
		}
	}
	do(t, ctx, chromedp.Sleep(1500*time.Millisecond)) // a refresh or more
	if after := priorityShown(t, ctx, topic); after != before {
		t.Fatalf("bad priorities were refused, but %s's priority shows %q, was %q", topic, after, before)
	}
}

// priorityShown is the priority cell of topic's row.
func priorityShown(t *testing.T, ctx context.Context, topic string) string {
	t.Helper()
	return get(t, ctx, chromedp.Evaluate[string](fmt.Sprintf(`(([...document.querySelectorAll("#topics tbody tr")].find(tr => tr.cells[0].textContent === %q) || {cells: [0, {textContent: "no row"}]}).cells[1].textContent)`, topic)))
}

// TestTopicsDashboardEngine: a single-node crawl with --topics (spider
// crawl --topics --addr over websim): the dashboard shows a row per topic
// (and the background task) with its priority, state and figures, no
// crawl-node table, and a topic's priority changed through the control
// form shows in its row at the next refresh; bad values show the server's
// error.
func TestTopicsDashboardEngine(t *testing.T) {
	ctx := newBrowser(t)
	web, err := websim.Start(context.Background(), websim.Config{Seed: 11, Hosts: 3, PagesPerHost: 300, ChineseShare: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(web.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	seeds := web.SeedURLs(3)
	topicsFile := filepath.Join(dir, "topics.yaml")
	yaml := fmt.Sprintf(`period: 3s
relevance: 0.005
topics:
  - {name: news, priority: 2, seeds: [%q], terms: [the, and]}
  - {name: sport, priority: 1, seeds: [%q], terms: [season]}
  - {name: tax, priority: 0, seeds: [%q], terms: [refund]}
`, seeds[0], seeds[1], seeds[2])
	if err := os.WriteFile(topicsFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "browser-test-token-0123456789"
	base, _, done := startSpider(t, []string{"SPIDER_TOKEN=" + token}, "crawl", "--topics", topicsFile, "--data", data,
		"--resolve-file", resolve, "--allow-private", "--delay", "100ms", "--concurrency", "2", "--scope", "any", "--max-depth", "-1",
		"--addr", "127.0.0.1:0")

	do(t, ctx, chromedp.Navigate(base+"/dashboard"))
	// news's terms are common words: its pages count as relevant.
	waitJS(t, ctx, `(rows => rows.filter(tr => tr.cells[5].textContent !== "0").length >= 2 && rows.some(tr => tr.cells[0].textContent === "news" && tr.cells[6].textContent !== "0"))([...document.querySelectorAll("#topics tbody tr")])`,
		time.Minute, "topics with pages, and relevant pages of news, in the topics table")
	// Paused, the crawl (and its server) stays up for the checks below;
	// a paused crawl's priorities can still be changed.
	post(t, base+"/api/crawl/pause", token)
	waitJS(t, ctx, `document.getElementById("state").textContent === "paused"`, 30*time.Second, "the paused state")

	want := map[string]string{"news": "2", "sport": "1", "tax": "0", topics.OtherTopic: "0"}
	rows := checkTopicRows(t, topicRows(t, ctx), want)
	pages := 0
	for _, r := range rows {
		pages += count(r[5])
	}
	if pages == 0 {
		t.Fatalf("the crawl fetched pages, but no topic counts any: %q", rows)
	}
	if count(rows["news"][6]) == 0 || count(rows["news"][6]) > count(rows["news"][5]) {
		t.Fatalf("news: %s relevant of %s pages", rows["news"][6], rows["news"][5])
	}
	t.Logf("topic rows: %q", rows)
	shown := sectionsShown(t, ctx)
	for id, want := range map[string]bool{"topics-section": true, "nodes-section": false, "topic-nodes-section": false, "hosts-section": true, "control": true} {
		if shown[id] != want {
			t.Errorf("section %s shown: %v, want %v (all: %v)", id, shown[id], want, shown)
		}
	}
	if c := get(t, ctx, chromedp.Text(`#topics-caption`)); !strings.Contains(c, "PQ-MCSA") {
		t.Errorf("topics caption %q", c)
	}
	if cfg := get(t, ctx, chromedp.Text(`#config`)); !strings.Contains(cfg, "topic-focused (--topics)") {
		t.Errorf("configuration %q does not say topic-focused", cfg)
	}
	choices := get(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#priority-topic option")].map(o => o.value)`))
	if !slices.Equal(choices, []string{"news", "sport", "tax", topics.OtherTopic}) && len(choices) != 4 {
		t.Fatalf("the priority control offers %q, want the crawl's topics", choices)
	}
	checkNoBadText(t, ctx, "dashboard of a topics crawl")

	// A change through the control form shows in the topic's row.
	do(t, ctx, chromedp.SendKeys(`#token`, token))
	if got := setPriority(t, ctx, "tax", "7"); got != "topic-priority: done" {
		t.Fatalf("priority 7 for tax from the dashboard: the form says %q", got)
	}
	waitJS(t, ctx, `[...document.querySelectorAll("#topics tbody tr")].some(tr => tr.cells[0].textContent === "tax" && tr.cells[1].textContent === "7 (file 0)")`,
		10*time.Second, "tax's new priority in its row")
	checkPriorityErrors(t, ctx, "news")
	want["tax"] = "7 (file 0)"
	checkTopicRows(t, topicRows(t, ctx), want)
	checkNoBadText(t, ctx, "dashboard of a topics crawl after priority changes")
	b := screenshot(t, ctx, "dashboard_topics.png")
	checkPNG(t, "dashboard_topics.png", b, 1000)

	post(t, base+"/api/crawl/stop", token)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crawl exited with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the crawl did not stop")
	}

	// The data directory of the finished crawl (serve --data): its topics
	// from DATA/topics/status.json, the changed priority kept; no control,
	// no crawl nodes.
	sbase, scmd, sdone := startSpider(t, nil, "serve", "--data", data, "--addr", "127.0.0.1:0")
	defer func() { scmd.Process.Signal(os.Interrupt); <-sdone }()
	do(t, ctx, chromedp.Navigate(sbase+"/dashboard"))
	waitJS(t, ctx, `document.getElementById("state").textContent === "stopped" && document.querySelectorAll("#topics tbody tr").length > 0`,
		30*time.Second, "the topics of the stopped crawl's data directory")
	checkTopicRows(t, topicRows(t, ctx), want)
	shown = sectionsShown(t, ctx)
	for id, want := range map[string]bool{"topics-section": true, "nodes-section": false, "topic-nodes-section": false, "control": false} {
		if shown[id] != want {
			t.Errorf("data-directory dashboard: section %s shown: %v, want %v (all: %v)", id, shown[id], want, shown)
		}
	}
	checkNoBadText(t, ctx, "dashboard of a topics crawl's data directory")
}

// TestTopicsDashboardRedis: the dashboard of a topics crawl on a cluster
// (serve --redis over a real redis-server). The coordinator is played
// here: it publishes its masterworker.TopicStatus with 3 topics and 2 crawl
// nodes (one dead) as spider master --topics does every tick, and applies
// the priority overrides the dashboard writes. The topics and crawl-node
// tables show the published figures, the dead node is marked, and a
// priority set through the control form shows after the coordinator's next
// tick.
func TestTopicsDashboardRedis(t *testing.T) {
	ctx := newBrowser(t)
	rdb := redistest.Start(t).Client()
	rctx := context.Background()
	const crawlName, token = "tc", "browser-test-token-0123456789"
	cfg, err := topics.Parse([]byte(`period: 1m
topics:
  - {name: news, priority: 2, seeds: ["http://news.test/"], terms: [vote]}
  - {name: sport, priority: 1, seeds: ["http://sport.test/"], terms: [season]}
  - {name: tax, priority: 0, seeds: ["http://tax.test/"], terms: [refund]}
`))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := topics.New(cfg, topics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What makes the crawl a running master–worker crawl in Redis: the
	// coordinator's counters (with its epoch), its topics config, and the
	// crawl nodes' heartbeats.
	prefix := "{spider:" + crawlName + "}:mw:"
	cj, _ := json.Marshal(cfg)
	now := time.Now()
	must(t, rdb.HSet(rctx, prefix+"stats", map[string]any{"epoch": 1, "fetched": 52, "errors": 3, "queued": 9, "in_flight": 2, "hosts": 3, "elapsed_ms": 26000}).Err())
	must(t, rdb.Set(rctx, prefix+"topics:config", cj, 0).Err())
	must(t, rdb.HSet(rctx, prefix+"workers", "0", now.UnixMilli()).Err())
	nodes := []masterworker.NodeLoad{
		{Worker: 0, Node: "node-a-1f2e3d", InFlight: 2, Queued: 5, PagesPerSec: 3.5, Errors: 1, Fetched: 40, Buckets: 4096, Alive: true, LastBeat: now},
		{Worker: 1, Node: "node-b-4c5b6a", InFlight: 0, Queued: 0, PagesPerSec: 0, Errors: 2, Fetched: 12, Buckets: 0, Alive: false, LastBeat: now.Add(-time.Minute)},
	}
	figures := map[string][4]int64{ // pages, relevant, queued, pre-emptions
		"news": {1234, 310, 17, 0}, "sport": {25, 4, 3, 2}, "tax": {0, 0, 1, 5},
	}
	publish := func() {
		t.Helper()
		if err := masterworker.ApplyTopicPriorities(rctx, rdb, crawlName, sched.SetPriority); err != nil {
			t.Error(err)
		}
		ts := sched.Status(time.Now())
		for i, task := range ts.Tasks { // figures as after a while of crawling
			if f, ok := figures[task.Name]; ok {
				ts.Tasks[i].Pages, ts.Tasks[i].Relevant, ts.Tasks[i].Queued, ts.Tasks[i].Preemptions = f[0], f[1], int(f[2]), f[3]
			}
		}
		st := masterworker.TopicStatus{Status: ts, Nodes: nodes, At: time.Now()}
		must(t, masterworker.PublishTopicStatus(rctx, rdb, crawlName, st))
	}
	publish()

	v := redisview.New(rdb, crawlName, 64, nil, nil)
	srv, err := server.New(server.Options{Crawl: v, Control: v, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	do(t, ctx, chromedp.Navigate(hs.URL+"/dashboard"))
	waitJS(t, ctx, `document.querySelectorAll("#topic-nodes tbody tr").length === 2 && document.querySelectorAll("#topics tbody tr").length === 4`,
		30*time.Second, "the topics and crawl-node tables")
	want := map[string]string{"news": "2", "sport": "1", "tax": "0", topics.OtherTopic: "0"}
	rows := checkTopicRows(t, topicRows(t, ctx), want)
	for name, f := range figures {
		w := []string{fmt.Sprintf("%d", f[0]), fmt.Sprintf("%d", f[1]), fmt.Sprintf("%d", f[2]), fmt.Sprintf("%d", f[3])}
		if name == "news" {
			w[0] = "1,234"
		}
		if got := rows[name][5:9]; !slices.Equal(got, w) {
			t.Errorf("topic %s: pages, relevant, queued, pre-empted %q, want %q (the coordinator's figures)", name, got, w)
		}
	}
	// The crawl nodes as the coordinator published them.
	nrows := get(t, ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#topic-nodes tbody tr")].map(tr => [tr.className, ...[...tr.cells].map(td => td.textContent)])`))
	wantNodes := [][]string{
		{"", "0", "node-a-1f2e3d", "yes", "2", "5", "3.5", "1", "40", "4,096"},
		{"dead", "1", "node-b-4c5b6a", "no (its tasks go out again)", "0", "0", "0.0", "2", "12", "0"},
	}
	for i, w := range wantNodes {
		got := nrows[i]
		if len(got) != 11 || !slices.Equal(got[:10], w) || !regexp.MustCompile(`^\d?\d:\d\d:\d\d`).MatchString(got[10]) {
			t.Errorf("crawl node row %d: %q, want %q and a last heartbeat time", i, got, w)
		}
	}
	shown := sectionsShown(t, ctx)
	for id, want := range map[string]bool{"topics-section": true, "topic-nodes-section": true, "nodes-section": true, "queue-section": true, "control": true} {
		if shown[id] != want {
			t.Errorf("section %s shown: %v, want %v (all: %v)", id, shown[id], want, shown)
		}
	}
	if s := get(t, ctx, chromedp.Text(`#state`)); s != "running" {
		t.Errorf("state %q, want running", s)
	}
	checkNoBadText(t, ctx, "dashboard of a topics crawl on a cluster")

	// A priority set from the dashboard is an override in Redis; the
	// coordinator applies it at its next tick and the row shows it.
	do(t, ctx, chromedp.SendKeys(`#token`, token))
	if got := setPriority(t, ctx, "sport", "5"); got != "topic-priority: done" {
		t.Fatalf("priority 5 for sport from the dashboard: the form says %q", got)
	}
	if p, err := masterworker.TopicPriorities(rctx, rdb, crawlName); err != nil || p["sport"] != 5 {
		t.Fatalf("overrides in Redis: %v, %v; want sport 5", p, err)
	}
	publish()
	waitJS(t, ctx, `[...document.querySelectorAll("#topics tbody tr")].some(tr => tr.cells[0].textContent === "sport" && tr.cells[1].textContent === "5 (file 1)")`,
		10*time.Second, "sport's new priority in its row")
	checkPriorityErrors(t, ctx, "news")
	want["sport"] = "5 (file 1)"
	checkTopicRows(t, topicRows(t, ctx), want)
	checkNoBadText(t, ctx, "dashboard of a topics crawl on a cluster after a priority change")
	b := screenshot(t, ctx, "dashboard_topics_redis.png")
	checkPNG(t, "dashboard_topics_redis.png", b, 900)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
