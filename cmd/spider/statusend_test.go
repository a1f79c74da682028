package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestMasterWorkerStatusAtEnd: once a master–worker crawl has ended,
// status --json agrees with the union of the workers' records: done, the
// master's fetched count equal to the distinct URLs recorded, nothing
// queued or in flight (issue #24: status showed 256 done and 19 queued
// while the master reported 275, the counters of its last heartbeat
// before the end).
func TestMasterWorkerStatusAtEnd(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 7, Hosts: 6, PagesPerHost: 30, Latency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(2)
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		out  bytes.Buffer
		done chan error
	}
	start := func(args ...string) *proc {
		p := &proc{done: make(chan error, 1)}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &p.out, &p.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return p
	}
	// The master publishes its counters every heartbeat (1 s); the crawl's
	// last results come between two publications.
	master := start(append([]string{"master", "--redis", rs.URL(), "--crawl", "end", "--data", filepath.Join(dir, "master"),
		"--resolve-file", resolve, "--allow-private", "--delay", "1ms", "--scope", "any", "--max-depth", "3"}, seeds...)...)
	var wdirs []string
	var workers []*proc
	for _, w := range []string{"w0", "w1"} {
		d := filepath.Join(dir, w)
		wdirs = append(wdirs, d)
		workers = append(workers, start("worker", "--redis", rs.URL(), "--crawl", "end", "--data", d,
			"--resolve-file", resolve, "--allow-private", "--concurrency", "4"))
	}
	for name, p := range map[string]*proc{"master": master, "w0": workers[0], "w1": workers[1]} {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, &p.out)
			}
		case <-time.After(120 * time.Second):
			t.Fatalf("%s did not end\n%s", name, &p.out)
		}
	}
	urls := map[string]bool{}
	for _, d := range wdirs {
		recs, err := store.OpenRecords(d, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		recs.Iterate(func(r store.Record) error { urls[r.URL] = true; return nil })
		recs.Close()
	}
	code, out, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "end", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	var st server.ClusterStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Done || st.Master["fetched"] != int64(len(urls)) || st.Queue.Queued != 0 || st.Queue.InFlight != 0 {
		t.Errorf("status at the end: done %v, fetched %d, queued %d, in flight %d; the workers recorded %d URLs\nmaster:\n%s",
			st.Done, st.Master["fetched"], st.Queue.Queued, st.Queue.InFlight, len(urls), &master.out)
	}
	// The crawl-wide report: the master and both workers final, done, its
	// totals the union of the workers' records; the same on the dashboard
	// of spider serve --redis.
	checkReportIsUnion(t, "status --json", st.Report, wdirs, "done", 3)
	if st.Report != nil {
		roles := map[string]int{}
		for _, n := range st.Report.Nodes {
			roles[n.Role]++
		}
		if roles["master"] != 1 || roles["worker"] != 2 {
			t.Errorf("status --json: report rows by role %v, want 1 master and 2 workers", roles)
		}
	}
	web := startCommand(t, runServe, "--redis", rs.URL(), "--crawl", "end", "--addr", "127.0.0.1:0")
	var dash server.CrawlStatus
	getJSON(t, web.base+"/api/crawl", &dash)
	checkReportIsUnion(t, "the dashboard", dash.Report, wdirs, "done", 3)
	checkDashboardIsUnion(t, dash, wdirs)
}

// TestPeerStatusAtEnd: while a peer-to-peer crawl runs, the dashboard API
// of spider serve --redis shows URLs completed, result rows and a row per
// node (issue #24: it showed "0 URLs completed" and empty tables); once it
// has ended (every node left the member list), status --json still has one
// row per node whose fetched counts sum to the union of the nodes'
// records, its crawl-wide report and the dashboard's equal that union
// (URLs, result rows, outcomes, bytes), and crawls shows the crawl done
// with that many URLs (issue #24: status showed nothing after the end).
func TestPeerStatusAtEnd(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	// Long enough (20 pages a host 30 ms apart, and more) for the
	// dashboard to see the crawl live.
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 9, Hosts: 8, PagesPerHost: 20, Latency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(2)
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	var dones []chan error
	var outs []*bytes.Buffer
	for _, id := range []string{"p0", "p1"} {
		d := filepath.Join(dir, id)
		dirs = append(dirs, d)
		cmd := exec.Command(bin, append([]string{"crawl", "--redis", rs.URL(), "--crawl", "pend", "--node-id", id,
			"--buckets", "64", "--data", d, "--resolve-file", resolve, "--allow-private", "--delay", "30ms",
			"--concurrency", "4", "--scope", "any", "--max-depth", "3"}, seeds...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		dones, outs = append(dones, done), append(outs, &out)
	}
	// The dashboard while the crawl runs: serve --redis needs the crawl's
	// keys, which the peers write as they join.
	eventually(t, "the crawl's keys", 30*time.Second, func() bool {
		code, _, _ := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "pend", "--buckets", "64")
		return code == 0
	})
	web := startCommand(t, runServe, "--redis", rs.URL(), "--crawl", "pend", "--buckets", "64", "--addr", "127.0.0.1:0")
	var live server.CrawlStatus
	eventually(t, "the dashboard of the live crawl", time.Minute, func() bool {
		live = server.CrawlStatus{}
		getJSON(t, web.base+"/api/crawl", &live)
		rows := int64(0)
		for _, r := range live.Rows {
			rows += r.Count
		}
		return live.State == "running" && live.Pages > 0 && rows == live.Pages && len(live.Nodes) == 2 && live.Report != nil && len(live.Report.Nodes) == 2
	})
	if live.Report.Final {
		t.Errorf("the live dashboard's report is final: %+v", live.Report)
	}
	for i, done := range dones {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("peer %d: %v\n%s", i, err, outs[i])
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("peer %d did not end\n%s", i, outs[i])
		}
	}
	urls := map[string]bool{}
	for _, d := range dirs {
		recs, err := store.OpenRecords(d, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		recs.Iterate(func(r store.Record) error { urls[r.URL] = true; return nil })
		recs.Close()
	}
	code, out, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "pend", "--buckets", "64", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	var st server.ClusterStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, n := range st.Nodes {
		sum += n.Fetched
	}
	if !st.Done || len(st.Nodes) != 2 || sum != int64(len(urls)) {
		t.Errorf("status at the end: done %v, %d nodes, %d URLs fetched; the nodes recorded %d URLs\n%s", st.Done, len(st.Nodes), sum, len(urls), out)
	}
	checkReportIsUnion(t, "status --json", st.Report, dirs, "done", 2)
	checkJSON(t, "status --json (peer-to-peer, done)", "ClusterStatus", out)
	checkJSON(t, "GET /api/crawl (peer-to-peer, done)", "CrawlStatus", getBody(t, web.base+"/api/crawl"))
	var end server.CrawlStatus
	getJSON(t, web.base+"/api/crawl", &end)
	checkReportIsUnion(t, "the dashboard", end.Report, dirs, "done", 2)
	checkDashboardIsUnion(t, end, dirs)
	code, out, _ = runCLI(t, "status", "--redis", rs.URL(), "--crawl", "pend", "--buckets", "64")
	if code != 0 || !strings.Contains(out, "report (final): done, "+strconv.Itoa(len(urls))+" URLs done") {
		t.Errorf("status at the end: exit %d, want the final report with %d URLs\n%s", code, len(urls), out)
	}
	code, out, _ = runCLI(t, "crawls", "--redis", rs.URL(), "--json")
	var list crawlsOutput
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Crawls) != 1 ||
		list.Crawls[0].State != "done" || list.Crawls[0].URLsDone != int64(len(urls)) {
		t.Errorf("crawls at the end: exit %d, want crawl pend done with %d URLs\n%s", code, len(urls), out)
	}
}

// unionOfRecords counts the union of the data directories' records as
// spider stats does (each URL's last record): URLs, bytes, result rows and
// outcomes.
func unionOfRecords(t *testing.T, dirs []string) crawl.Counts {
	t.Helper()
	last := map[string]store.Record{}
	for _, d := range dirs {
		maps.Copy(last, readRecords(t, d))
	}
	c := crawl.Counts{Rows: map[string]int64{}, Outcomes: map[string]int64{}}
	for _, r := range last {
		c.Pages++
		c.Bytes += int64(r.Size)
		c.Rows[crawl.Row(r.Outcome)]++
		c.Outcomes[r.Outcome]++
	}
	return c
}

// checkReportIsUnion fails the test unless rep, the crawl-wide report of
// a crawl that has ended, is final with state and nodes rows, and its
// totals equal the union of the nodes' records in dirs.
func checkReportIsUnion(t *testing.T, what string, rep *server.CrawlReport, dirs []string, state string, nodes int) {
	t.Helper()
	if rep == nil {
		t.Errorf("%s: no crawl-wide report", what)
		return
	}
	want := unionOfRecords(t, dirs)
	if !rep.Final || rep.State != state || len(rep.Nodes) != nodes {
		t.Errorf("%s: report final %v, state %q, %d nodes; want final, %q, %d nodes", what, rep.Final, rep.State, len(rep.Nodes), state, nodes)
	}
	if rep.Pages != want.Pages || rep.Bytes != want.Bytes || !maps.Equal(rep.Rows, want.Rows) || !maps.Equal(rep.Outcomes, want.Outcomes) {
		t.Errorf("%s: report %d URLs, %d bytes, rows %v, outcomes %v; the nodes' records: %d URLs, %d bytes, rows %v, outcomes %v",
			what, rep.Pages, rep.Bytes, rep.Rows, rep.Outcomes, want.Pages, want.Bytes, want.Rows, want.Outcomes)
	}
	var sum int64
	for _, n := range rep.Nodes {
		sum += n.Pages
		if !n.Final {
			t.Errorf("%s: node %s did not publish its last figures", what, n.ID)
		}
	}
	if sum != want.Pages {
		t.Errorf("%s: the nodes' rows sum to %d URLs, the records have %d", what, sum, want.Pages)
	}
}

// checkDashboardIsUnion fails the test unless the dashboard's pages, bytes
// and result rows equal the union of the nodes' records in dirs.
func checkDashboardIsUnion(t *testing.T, st server.CrawlStatus, dirs []string) {
	t.Helper()
	want := unionOfRecords(t, dirs)
	rows := map[string]int64{}
	for _, r := range st.Rows {
		if r.Count > 0 {
			rows[r.Name] = r.Count
		}
	}
	if st.Pages != want.Pages || st.Bytes != want.Bytes || !maps.Equal(rows, want.Rows) {
		t.Errorf("dashboard at the end: %d URLs, %d bytes, rows %v; the nodes' records: %d URLs, %d bytes, rows %v",
			st.Pages, st.Bytes, rows, want.Pages, want.Bytes, want.Rows)
	}
}
