package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/graph"
	"github.com/spider-crawler/spider/internal/rank"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// crawlWebsim crawls a small synthetic web into a new data directory.
func crawlWebsim(t *testing.T) (data string, seeds []string) {
	t.Helper()
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 5, Hosts: 4, PagesPerHost: 12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	seeds = srv.SeedURLs(2)
	data = filepath.Join(t.TempDir(), "data")
	args := []string{"crawl", "--data", data, "--max-depth", "3", "--scope", "any", "--allow-private", "--delay", "1ms", "--quiet"}
	for _, r := range srv.Resolve() {
		args = append(args, "--resolve", r)
	}
	if code, _, errOut := runCLI(t, append(args, seeds...)...); code != 0 {
		t.Fatalf("crawl: code %d\n%s", code, errOut)
	}
	return data, seeds
}

func readScores(t *testing.T, path string) map[string]float64 {
	t.Helper()
	s, err := rank.ReadScores(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Fatalf("%s: scores sum to %v, want 1", path, sum)
	}
	return s
}

func TestRankCommand(t *testing.T) {
	data, seeds := crawlWebsim(t)
	code, out, errOut := runCLI(t, "rank", "--data", data, "--top", "3")
	if code != 0 {
		t.Fatalf("rank: code %d\n%s", code, errOut)
	}
	for _, want := range []string{"built from records.jsonl", "pages:", "converged", "top pages:", "top hosts:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	set, _, err := graph.Load(context.Background(), data, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	pages := readScores(t, filepath.Join(data, rank.PagesFile))
	hosts := readScores(t, filepath.Join(data, rank.HostsFile))
	if len(pages) != set.Pages.N() || len(hosts) != set.Hosts.N() || len(pages) < 10 {
		t.Fatalf("%d page scores for %d pages, %d host scores for %d hosts", len(pages), set.Pages.N(), len(hosts), set.Hosts.N())
	}
	// the second run reuses the stored graph
	if code, out, _ = runCLI(t, "rank", "--data", data, "--top", "0"); code != 0 || !strings.Contains(out, "read from") || strings.Contains(out, "top pages") {
		t.Fatalf("second rank: code %d\n%s", code, out)
	}

	// personalised on one host: that host comes first among the hosts
	host := graph.HostOf(seeds[0])
	prefix := seeds[0][:strings.Index(seeds[0], host)+len(host)]
	if code, _, errOut = runCLI(t, "rank", "--data", data, "--personalize-prefix", prefix); code != 0 {
		t.Fatalf("personalised rank: code %d\n%s", code, errOut)
	}
	best := rank.SortedScores(readScores(t, filepath.Join(data, rank.HostsFile)))
	if best[0].Key != host {
		t.Fatalf("personalised on %s, but the best host is %s", host, best[0].Key)
	}
	list := filepath.Join(t.TempDir(), "urls.txt")
	os.WriteFile(list, []byte(set.Pages.Names[0]+"\nhttp://not-crawled.test/\n"), 0o600)
	if code, _, errOut = runCLI(t, "rank", "--data", data, "--personalize-file", list); code != 0 || !strings.Contains(errOut, "1 URLs") {
		t.Fatalf("personalised by file: code %d\n%s", code, errOut)
	}
	top := rank.SortedScores(readScores(t, filepath.Join(data, rank.PagesFile)))
	if top[0].Key != set.Pages.Names[0] {
		t.Fatalf("personalised on %s, but the best page is %s", set.Pages.Names[0], top[0].Key)
	}
}

// TestRankSiteWide: --site-wide-share leaves the navigation links of
// websim's sites out of the page ranks (the host ranks stay as they were);
// --site-wide-share 0 keeps them.
func TestRankSiteWide(t *testing.T) {
	data, _ := crawlWebsim(t)
	if code, _, errOut := runCLI(t, "rank", "--data", data, "--top", "0", "--site-wide-share", "0"); code != 0 {
		t.Fatalf("rank: code %d\n%s", code, errOut)
	}
	all := readScores(t, filepath.Join(data, rank.PagesFile))
	allHosts := readScores(t, filepath.Join(data, rank.HostsFile))
	code, out, errOut := runCLI(t, "rank", "--data", data, "--top", "0", "--site-wide-share", "0.5", "--site-wide-min-pages", "5")
	if code != 0 {
		t.Fatalf("rank --site-wide-share: code %d\n%s", code, errOut)
	}
	var dropped, edges int
	if i := strings.Index(out, "site-wide links: "); i < 0 {
		t.Fatalf("output does not report the site-wide links:\n%s", out)
	} else if _, err := fmt.Sscanf(out[i:], "site-wide links: %d of %d", &dropped, &edges); err != nil || dropped == 0 || dropped >= edges {
		t.Fatalf("site-wide links: %d of %d dropped (%v), want some but not all:\n%s", dropped, edges, err, out)
	}
	content := readScores(t, filepath.Join(data, rank.PagesFile))
	if len(content) != len(all) {
		t.Fatalf("%d page scores, %d without the option", len(content), len(all))
	}
	same := true
	for u, v := range all {
		if math.Abs(content[u]-v) > 1e-9 {
			same = false
		}
	}
	if same {
		t.Fatal("page ranks unchanged by --site-wide-share 0.5")
	}
	for h, v := range readScores(t, filepath.Join(data, rank.HostsFile)) {
		if math.Abs(allHosts[h]-v) > 1e-12 {
			t.Fatalf("host %s: rank %v, %v without the option", h, v, allHosts[h])
		}
	}
}

func TestRankRejectsBadInput(t *testing.T) {
	data := t.TempDir()
	t.Setenv("SPIDER_REDIS", "")
	empty := filepath.Join(t.TempDir(), "empty.txt")
	os.WriteFile(empty, []byte("http://x.test/\n"), 0o600)
	recs, err := store.OpenRecords(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs.Append(store.Record{URL: "http://a.test/", FinalURL: "http://a.test/", Status: 200, PageNo: 0})
	recs.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--data", data, "--damping", "1.5"}, 2, "--damping"},
		{[]string{"--data", data, "--tolerance", "0"}, 2, "--tolerance"},
		{[]string{"--data", data, "--max-iter", "0"}, 2, "--max-iter"},
		{[]string{"--data", data, "--workers", "0"}, 2, "--workers"},
		{[]string{"--data", data, "--personalize-prefix", "a", "--personalize-file", "b"}, 2, "either"},
		{[]string{"--data", data, "--personalize-prefix", "http://zzz/"}, 2, "no page of the crawl starts with"},
		{[]string{"--data", data, "--personalize-file", empty}, 2, "none of the URLs"},
		{[]string{"--data", data, "--personalize-file", filepath.Join(data, "nope")}, 1, "cannot open --personalize-file"},
		{[]string{"--worker"}, 2, "--worker needs --redis"},
		{[]string{"--worker", "--redis", "redis://127.0.0.1:1", "--data", data}, 2, "belong to the master"},
		{[]string{"--data", t.TempDir()}, 2, "run spider crawl"}, // a directory without a crawl: a wrong --data
		{[]string{"--data", data, "extra"}, 2, "no arguments"},
		{[]string{"--data", data, "--site-wide-share", "1.5"}, 2, "--site-wide-share"},
		{[]string{"--data", data, "--site-wide-share", "0.5", "--site-wide-min-pages", "0"}, 2, "--site-wide-min-pages"},
	} {
		// runRank's error carries the message (main prints it and maps
		// usage errors to exit code 2); runCLI checks the exit code.
		var out, errb bytes.Buffer
		err := runRank(context.Background(), tc.args, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rank %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
		if code, _, _ := runCLI(t, append([]string{"rank"}, tc.args...)...); code != tc.code {
			t.Errorf("rank %v: exit code %d, want %d", tc.args, code, tc.code)
		}
	}
	// a damaged graph file is rebuilt, and --rebuild forces it
	if code, _, errOut := runCLI(t, "rank", "--data", data); code != 0 {
		t.Fatalf("rank: %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(data, graph.PagesFile), []byte("garbage"), 0o644)
	if code, out, errOut := runCLI(t, "rank", "--data", data); code != 0 || !strings.Contains(out, "built from") {
		t.Fatalf("rank after damage: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "rank", "--data", data, "--rebuild"); code != 0 || !strings.Contains(out, "built from") {
		t.Fatalf("rank --rebuild: %d %s", code, out)
	}
}

// writeSiteCrawl writes a records.jsonl holding a synthetic site graph.
func writeSiteCrawl(t *testing.T, pages int) string {
	t.Helper()
	g := graph.SiteGraph(graph.SiteGraphConfig{Pages: pages, Seed: 9})
	data := t.TempDir()
	recs, err := store.OpenRecords(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for u := 0; u < g.N(); u++ {
		var links []string
		for _, v := range g.Out(u) {
			links = append(links, g.Names[v])
		}
		if err := recs.Append(store.Record{URL: g.Names[u], FinalURL: g.Names[u], Status: 200, PageNo: int64(u), OutLinks: links}); err != nil {
			t.Fatal(err)
		}
	}
	if err := recs.Close(); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRankMapReduceKill runs the map/reduce master and worker processes
// against a real redis-server, SIGKILLs the only worker while it holds a
// task, starts another, and checks that the master finishes with the
// in-memory ranks.
func TestRankMapReduceKill(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: several processes")
	}
	bin := buildSpider(t)
	rs := redistest.Start(t)
	data := writeSiteCrawl(t, 8000)
	if code, _, errOut := runCLI(t, "rank", "--data", data, "--top", "0"); code != 0 {
		t.Fatalf("in-memory rank: %d %s", code, errOut)
	}
	want := readScores(t, filepath.Join(data, rank.PagesFile))
	wantHosts := readScores(t, filepath.Join(data, rank.HostsFile))

	start := func(args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, &out, done
	}
	_, mout, mdone := start("rank", "--data", data, "--redis", rs.URL(), "--crawl", "k", "--lease", "1s", "--parts", "64", "--top", "0", "--log-level", "debug")
	rdb := rs.Client()
	// Kill a worker while it holds a task, so that the master must re-queue it:
	// start the only worker, poll the leases (every millisecond) until there is
	// one, kill the worker, and wait until Redis has dropped its connections
	// (so that every command it had sent is carried out: a result it sent just
	// before the kill removes its lease). A lease still there then is the dead
	// worker's task; if there is none, it finished its task in time, and the
	// next worker is the victim. The deadline fails the test.
	leases := func() int64 { return rdb.ZCard(context.Background(), "{spider:k}:rank:leases").Val() }
	connected := func(pid int) bool {
		list := rdb.ClientList(context.Background()).Val()
		return strings.Contains(list, fmt.Sprintf(":%d ", pid))
	}
	deadline := time.Now().Add(60 * time.Second)
	for caught := false; !caught; {
		victim, _, vdone := start("rank", "--worker", "--redis", rs.URL(), "--crawl", "k")
		for leases() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no worker ever held a task; master:\n%s", mout)
			}
			time.Sleep(time.Millisecond)
		}
		victim.Process.Signal(syscall.SIGKILL)
		<-vdone
		for connected(victim.Process.Pid) {
			if time.Now().After(deadline) {
				t.Fatalf("Redis still lists the connection of killed worker %d", victim.Process.Pid)
			}
			time.Sleep(time.Millisecond)
		}
		caught = leases() > 0
	}
	_, wout, wdone := start("rank", "--worker", "--redis", rs.URL(), "--crawl", "k")
	select {
	case err := <-mdone:
		if err != nil {
			t.Fatalf("master: %v\n%s", err, mout)
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("master did not finish:\n%s", mout)
	}
	select {
	case err := <-wdone:
		if err != nil {
			t.Fatalf("worker: %v\n%s", err, wout)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("worker did not exit after the master was done:\n%s", wout)
	}
	if !strings.Contains(mout.String(), "re-queued") {
		t.Errorf("the master re-queued no task although the victim was killed holding one; master:\n%s", mout)
	}
	for _, c := range []struct {
		file string
		want map[string]float64
	}{{rank.PagesFile, want}, {rank.HostsFile, wantHosts}} {
		got := readScores(t, filepath.Join(data, c.file))
		var l1 float64
		for k, v := range c.want {
			l1 += math.Abs(got[k] - v)
		}
		if len(got) != len(c.want) || l1 >= 1e-9 {
			t.Fatalf("%s: map/reduce differs from in-memory by L1 %g (%d vs %d entries)", c.file, l1, len(got), len(c.want))
		}
	}
}
