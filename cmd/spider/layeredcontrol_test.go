package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestControlLayered drives a distributed layered crawl of real processes
// (a coordinator and a worker, spider crawl --mode layered --redis) with
// spider control on a websim with latency: pause (no request starts later
// than a second after both acknowledged; the dashboard and status say
// paused), seed a page outside the seeds' reach while paused, resume (the
// seed is fetched, in the next pass of the round in progress), stop (both
// exit 0, the coordinator's summary says so). The same commands then
// finish the crawl with nothing missing, and at the end status --json and
// the dashboard of spider serve --redis equal the coordinator's records
// (the crawl's page store), with the crawl done and a final row for every
// process of both runs.
func TestControlLayered(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 77, Hosts: 16, PagesPerHost: 30, Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	seeds := srv.SeedURLs(2)
	truth, err := srv.Truth(websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	all, err := srv.Truth(websim.TruthRules{Seeds: srv.SeedURLs(16), MaxDepth: -1, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
	}
	var extra string // a page the seeds do not reach within the depth limit
	for _, u := range all.MustFetch {
		if !slices.Contains(truth.MustFetch, u) && all.Final[u] == "200" {
			extra = u
			break
		}
	}
	if extra == "" {
		t.Fatal("the web has no page beyond the seeds' reach: pick other websim parameters")
	}
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		cmd  *exec.Cmd
		out  *syncBuffer
		done chan error
	}
	start := func(data string) *proc {
		p := &proc{out: new(syncBuffer), done: make(chan error, 1)}
		p.cmd = exec.Command(bin, append([]string{"crawl", "--mode", "layered", "--redis", rs.URL(), "--crawl", "lc", "--data", data,
			"--rounds", "3", "--groups", "4", "--delay", "300ms", "--scope", "any", "--lease-ttl", "2s",
			"--resolve-file", resolve, "--allow-private"}, seeds...)...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		return p
	}
	datas := []string{filepath.Join(dir, "coord"), filepath.Join(dir, "worker")}
	launch := func() []*proc {
		coord := start(datas[0])
		// The first process creates the crawl and coordinates; the second
		// finds it created and works.
		eventually(t, "the coordinator", 30*time.Second, func() bool { return strings.Contains(coord.out.String(), "coordinating") || srv.Log().Len() > 0 })
		return []*proc{coord, start(datas[1])}
	}
	control := func(args ...string) time.Time {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"control", "--redis", rs.URL(), "--crawl", "lc"}, args...)...)
		at := time.Now()
		if code != 0 || !strings.Contains(out, "2 of 2 live node(s) acknowledged") {
			t.Fatalf("control %v: exit %d, want 0 and both processes acknowledging\n%s%s", args, code, out, errOut)
		}
		t.Logf("control %v: %s", args, strings.TrimSpace(out))
		return at
	}
	ps := launch()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := srv.Log().WaitFor(ctx, func(es []websim.Entry) bool { return len(es) >= 10 }); err != nil {
		t.Fatalf("the crawl did not start: %v\n%s", err, ps[0].out)
	}
	time.Sleep(2 * time.Second) // both follow the control word
	pausedAt := control("pause")
	time.Sleep(2 * time.Second)
	var late, after int
	for _, e := range srv.Log().Entries() {
		if e.Time.After(pausedAt) {
			after++
		}
		if e.Time.After(pausedAt.Add(time.Second)) {
			late++
		}
	}
	if late > 0 {
		t.Fatalf("paused: %d requests started more than 1 s after both processes acknowledged (%d after the ack)", late, after)
	}
	t.Logf("paused: %d requests after the ack (in flight), none later than 1 s", after)
	code, out, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "lc", "--json")
	var st server.ClusterStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Source != "layered" || st.Report == nil || st.Report.State != "paused" {
		t.Errorf("status while paused: exit %d, want a layered crawl reported paused\n%s%s", code, out, errOut)
	}
	checkJSON(t, "status --json (layered, paused)", "ClusterStatus", out)
	if srv.Log().Count(extra) != 0 {
		t.Fatalf("%s fetched before it was seeded", extra)
	}
	control("seed", extra)
	control("resume")
	if err := srv.Log().WaitFor(ctx, func(es []websim.Entry) bool {
		return slices.ContainsFunc(es, func(e websim.Entry) bool { return e.URL == extra })
	}); err != nil {
		t.Fatalf("after resume + seed: %v (%d requests, seed fetched %d times)\n%s", err, srv.Log().Len(), srv.Log().Count(extra), ps[0].out)
	}
	control("stop")
	for i, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("process %d after stop: %v, want exit 0\n%s", i, err, p.out)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("process %d did not exit after stop\n%s", i, p.out)
		}
	}
	if !strings.Contains(ps[0].out.String(), "stopped by spider control") {
		t.Errorf("the summary does not say the crawl was stopped:\n%s", ps[0].out)
	}
	stoppedAt := srv.Log().Len()
	ps = launch()
	for i, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("process %d of the second run: %v\n%s", i, err, p.out)
			}
		case <-ctx.Done():
			t.Fatalf("process %d of the second run did not finish\n%s", i, p.out)
		}
	}
	got := readRecords(t, datas[0])
	missing := 0
	for _, u := range append(slices.Clone(truth.MustFetch), extra) {
		if _, ok := got[u]; !ok {
			if missing++; missing <= 5 {
				t.Errorf("missing: %s", u)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d URLs missing\n%s", missing, len(truth.MustFetch)+1, ps[0].out)
	}
	t.Logf("layered: %d URLs (the first run made %d requests before stop), nothing missing; %d URLs requested more than once (a task stopped half done and run again by the other process refetches what it had)",
		len(got), stoppedAt, len(srv.Log().Duplicates()))

	// The end: the report is the coordinator's records, final, done; one
	// row for the coordinator and one per process of each run.
	code, out, errOut = runCLI(t, "status", "--redis", rs.URL(), "--crawl", "lc", "--json")
	st = server.ClusterStatus{}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status at the end: exit %d\n%s%s", code, out, errOut)
	}
	checkJSON(t, "status --json (layered, done)", "ClusterStatus", out)
	if st.Source != "layered" || !st.Done {
		t.Errorf("status at the end: source %q, done %v; want layered, done\n%s", st.Source, st.Done, out)
	}
	checkReportIsUnion(t, "status --json", st.Report, datas[:1], "done", 5)
	web := startCommand(t, runServe, "--redis", rs.URL(), "--crawl", "lc", "--addr", "127.0.0.1:0")
	var end server.CrawlStatus
	checkJSON(t, "GET /api/crawl (layered, done)", "CrawlStatus", getBody(t, web.base+"/api/crawl"))
	getJSON(t, web.base+"/api/crawl", &end)
	checkReportIsUnion(t, "the dashboard", end.Report, datas[:1], "done", 5)
	checkDashboardIsUnion(t, end, datas[:1])
	if end.Source != "layered" || end.State != "finished" || len(end.Nodes) != 5 {
		t.Errorf("dashboard at the end: source %q, state %q, %d node rows; want layered, finished, 5", end.Source, end.State, len(end.Nodes))
	}
}

// getBody returns the body of a GET of u.
func getBody(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
