package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestProtocolStatusAtEnd: a §0 crawl run as processes (two networks, each a spider
// center and a host spider crawl --dedup protocol; the first network's center on a
// 3-master Redis Cluster, the rest on single servers) publishes its crawl-wide report
// in the first center's Redis: while it runs the dashboard of spider serve --redis
// shows the hosts live, and once every process has ended, spider status --json and
// the dashboard have one final row per host and per center, state done, and totals
// (URLs, bytes, result rows, outcomes) equal to the union of the hosts' records,
// spider crawls lists it done with that many URLs, spider center --status reads the
// network on the cluster, and spider drop then empties the cluster.
func TestProtocolStatusAtEnd(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes and a Redis Cluster")
	}
	bin := buildSpider(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 11, Hosts: 8, PagesPerHost: 20, Latency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cl := redistest.StartCluster(t, 3)
	as := cl.Addrs()
	firstURL := "redis://" + as[0] + "?cluster=true&addr=" + as[1] + "&addr=" + as[2]
	statusURL := "redis://" + as[0] + "?addr=" + as[1] + "&addr=" + as[2] // with --redis-cluster
	var conf strings.Builder
	conf.WriteString("crawl: pc\nbatch: 32\nflush: 50ms\nanswer_timeout: 1s\nremote_timeout: 2s\nheartbeat: 200ms\nmember_ttl: 1s\nstable: 300ms\nnetworks:\n")
	for i, n := range []string{"n1", "n2"} {
		center := firstURL
		if i > 0 {
			center = redistest.Start(t).URL()
		}
		fmt.Fprintf(&conf, "  - name: %s\n    center_redis: %s\n    hosts:\n      - id: h1\n        redis: %s\n", n, center, redistest.Start(t).URL())
	}
	cfgFile := filepath.Join(dir, "protocol.yaml")
	if err := os.WriteFile(cfgFile, []byte(conf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	type proc struct {
		name string
		out  bytes.Buffer
		done chan error
	}
	var procs []*proc
	start := func(name string, args ...string) {
		p := &proc{name: name, done: make(chan error, 1)}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &p.out, &p.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		procs = append(procs, p)
	}
	var dirs []string
	for _, n := range []string{"n1", "n2"} {
		start("center "+n, "center", "--protocol-config", cfgFile, "--network", n)
		d := filepath.Join(dir, n)
		dirs = append(dirs, d)
		start("host "+n, append([]string{"crawl", "--dedup", "protocol", "--protocol-config", cfgFile, "--network", n, "--host-id", "h1",
			"--data", d, "--resolve-file", resolve, "--allow-private", "--delay", "30ms", "--concurrency", "4", "--scope", "any",
			"--max-depth", "3", "--quiet"}, srv.SeedURLs(2)...)...)
	}
	eventually(t, "the crawl's keys", 30*time.Second, func() bool {
		code, _, _ := runCLI(t, "status", "--redis", statusURL, "--redis-cluster", "--crawl", "pc")
		return code == 0
	})
	web := startCommand(t, runServe, "--redis", statusURL, "--redis-cluster", "--crawl", "pc", "--addr", "127.0.0.1:0")
	var live server.CrawlStatus
	eventually(t, "the dashboard of the live crawl", time.Minute, func() bool {
		live = server.CrawlStatus{}
		getJSON(t, web.base+"/api/crawl", &live)
		return live.Pages > 0 && live.Report != nil && len(live.Report.Nodes) == 4
	})
	if live.Report.Final {
		t.Errorf("the live dashboard's report is final: %+v", live.Report)
	}
	for _, p := range procs {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("%s: %v\n%s", p.name, err, &p.out)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s did not end\n%s", p.name, &p.out)
		}
	}
	code, out, errOut := runCLI(t, "status", "--redis", statusURL, "--redis-cluster", "--crawl", "pc", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	var st server.ClusterStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	want := unionOfRecords(t, dirs)
	var sum int64
	for _, n := range st.Nodes {
		sum += n.Fetched
	}
	if !st.Done || len(st.Nodes) != 4 || sum != want.Pages {
		t.Errorf("status at the end: done %v, %d nodes, %d URLs fetched; the hosts recorded %d URLs\n%s", st.Done, len(st.Nodes), sum, want.Pages, out)
	}
	checkReportIsUnion(t, "status --json", st.Report, dirs, "done", 4)
	var end server.CrawlStatus
	getJSON(t, web.base+"/api/crawl", &end)
	checkReportIsUnion(t, "the dashboard", end.Report, dirs, "done", 4)
	checkDashboardIsUnion(t, end, dirs)
	code, out, _ = runCLI(t, "status", "--redis", statusURL, "--redis-cluster", "--crawl", "pc")
	if code != 0 || !strings.Contains(out, "report (final): done, "+strconv.FormatInt(want.Pages, 10)+" URLs done") {
		t.Errorf("status at the end: exit %d, want the final report with %d URLs\n%s", code, want.Pages, out)
	}
	// spider center --status reads a center's and its hosts' Redis, here a cluster.
	code, out, errOut = runCLI(t, "center", "--status", "--protocol-config", cfgFile, "--network", "n1", "--json")
	var cs centerStatus
	if code != 0 || json.Unmarshal([]byte(out), &cs) != nil || !cs.Done || len(cs.Registered) != 1 || len(cs.Errors) != 0 {
		t.Errorf("center --status of the network on a cluster: exit %d\n%s%s", code, out, errOut)
	} else if h, _ := cs.Hosts["h1"].(map[string]any); h == nil || h["tasks_done"] == float64(0) {
		t.Errorf("center --status shows no task done by n1/h1: %s", out)
	}
	code, out, _ = runCLI(t, "crawls", "--redis", statusURL, "--redis-cluster", "--json")
	var list crawlsOutput
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Crawls) != 1 || list.Crawls[0].Topology != "protocol" ||
		list.Crawls[0].State != "done" || list.Crawls[0].URLsDone != want.Pages {
		t.Errorf("crawls at the end: exit %d, want §0 crawl pc done with %d URLs\n%s", code, want.Pages, out)
	}
	// spider drop removes the crawl's keys from every master of the first center's cluster
	// (its protocol keys, its members, reports and control), without --force: it is done.
	code, out, errOut = runCLI(t, "drop", "--redis", statusURL, "--redis-cluster", "--crawl", "pc")
	if code != 0 {
		t.Errorf("drop of the finished §0 crawl: exit %d\n%s%s", code, out, errOut)
	}
	for _, m := range cl.Servers {
		c := m.Client()
		if keys, err := c.Keys(context.Background(), "*").Result(); err != nil || len(keys) != 0 {
			t.Errorf("after drop, master %s holds %v %v", m.Addr(), keys, err)
		}
		c.Close()
	}
}
