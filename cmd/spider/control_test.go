package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestControlP2P and TestControlMasterWorker drive a distributed crawl of
// real processes with `spider control` on a websim with latency: pause (no
// request starts later than a second after every node acknowledged), seed
// a URL outside the seeds' reach while paused, resume (requests again, the
// seed fetched), stop (every process exits 0), then the same commands
// again finish the crawl with nothing missing and nothing fetched twice.
func TestControlP2P(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	controlScenario(t, "p2p")
}

func TestControlMasterWorker(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	controlScenario(t, "mw")
}

var ackedRE = regexp.MustCompile(`(\d+) of (\d+) live node\(s\) acknowledged in (\S+)`)

func controlScenario(t *testing.T, topo string) {
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
	rules := websim.TruthRules{Seeds: seeds, MaxDepth: 2, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
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
	want, err := srv.Truth(websim.TruthRules{Seeds: append(slices.Clone(seeds), extra), MaxDepth: 2, Scope: websim.ScopeAny})
	if err != nil {
		t.Fatal(err)
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
	start := func(args ...string) *proc {
		p := &proc{out: new(syncBuffer), done: make(chan error, 1)}
		p.cmd = exec.Command(bin, args...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		return p
	}
	common := []string{"--resolve-file", resolve, "--allow-private"}
	var datas []string
	for i := range 3 {
		datas = append(datas, filepath.Join(dir, fmt.Sprintf("n%d", i)))
	}
	wantAcks := "3 of 3" // three peers; or a master and two workers
	launch := func() []*proc {
		var ps []*proc
		if topo == "p2p" {
			for i := range 3 {
				ps = append(ps, start(append(append([]string{"crawl", "--redis", rs.URL(), "--crawl", "c", "--node-id", fmt.Sprintf("n%d", i),
					// --sitemaps=false as for the master below: with levels
					// overlapping (the default) the nodes reach the sitemaps'
					// depth-1 pages, and through them the host seeded
					// mid-crawl, before the pause.
					"--buckets", "64", "--data", datas[i], "--delay", "150ms", "--concurrency", "4", "--scope", "any", "--max-depth", "2", "--sitemaps=false"}, common...), seeds...)...))
			}
			return ps
		}
		ps = append(ps, start(append(append([]string{"master", "--redis", rs.URL(), "--crawl", "c", "--data", datas[0],
			// --sitemaps=false: websim's sitemaps list every page at depth 1,
			// whose links reach the host seeded mid-crawl within the limit.
			// A seed added mid-crawl may lower the depth of a page already
			// seen: the master relinks by default (not with --strict-levels;
			// peers always).
			"--delay", "150ms", "--scope", "any", "--max-depth", "2", "--sitemaps=false"}, common...), seeds...)...))
		for i := 1; i < 3; i++ {
			ps = append(ps, start(append([]string{"worker", "--redis", rs.URL(), "--crawl", "c", "--data", datas[i], "--concurrency", "4"}, common...)...))
		}
		return ps
	}
	control := func(args ...string) (time.Time, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"control", "--redis", rs.URL(), "--crawl", "c"}, args...)...)
		at := time.Now()
		if code != 0 || !strings.Contains(out, wantAcks+" live node(s) acknowledged") {
			t.Fatalf("control %v: exit %d, want 0 and %q\n%s%s", args, code, wantAcks, out, errOut)
		}
		m := ackedRE.FindStringSubmatch(out)
		t.Logf("control %v: %s", args, strings.TrimSpace(out))
		return at, m[3]
	}
	ps := launch()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := srv.Log().WaitFor(ctx, func(es []websim.Entry) bool { return len(es) >= 20 }); err != nil {
		t.Fatalf("the crawl did not start: %v\n%s", err, ps[0].out)
	}
	// Every node must be following before the command counts them.
	time.Sleep(2 * time.Second)
	pausedAt, _ := control("pause")
	time.Sleep(2 * time.Second) // the subject: nothing happens
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
		t.Fatalf("paused: %d requests started more than 1 s after every node acknowledged (%d after the ack: fetches in flight)", late, after)
	}
	t.Logf("paused: %d requests started after the ack (leases handed before it), none later than 1 s", after)
	if extraSeen := srv.Log().Count(extra); extraSeen != 0 {
		t.Fatalf("%s fetched before it was seeded", extra)
	}
	control("seed", extra)
	n := srv.Log().Len()
	control("resume")
	if err := srv.Log().WaitFor(ctx, func(es []websim.Entry) bool {
		return len(es) >= n+10 && slices.ContainsFunc(es, func(e websim.Entry) bool { return e.URL == extra })
	}); err != nil {
		t.Fatalf("after resume + seed: %v (%d requests, seed fetched %d times)", err, srv.Log().Len(), srv.Log().Count(extra))
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
	got := map[string]bool{}
	for _, d := range datas {
		r, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			continue // the master of master–worker keeps no records
		}
		r.Iterate(func(rec store.Record) error { got[rec.URL] = true; return nil })
		r.Close()
	}
	missing := 0
	for _, u := range want.MustFetch {
		if !got[u] {
			if missing++; missing <= 5 {
				t.Errorf("missing: %s", u)
			}
		}
	}
	dups := srv.Log().Duplicates()
	for u, c := range dups {
		t.Errorf("fetched %d times: %s", c, u)
	}
	if missing > 0 {
		for _, p := range ps {
			t.Logf("%s", p.out)
		}
	}
	if missing > 0 || len(dups) > 0 {
		t.Fatalf("%d of %d URLs missing, %d fetched more than once", missing, len(want.MustFetch), len(dups))
	}
	t.Logf("%s: %d URLs (the first run fetched %d requests before stop), nothing missing, nothing twice", topo, len(want.MustFetch), stoppedAt)
}

// TestControlBadInput: an unknown crawl is exit 2 naming it; a live node
// that does not acknowledge makes control exit 1 naming it; bad actions
// are exit 2.
func TestControlBadInput(t *testing.T) {
	rs := redistest.Start(t)
	ctx := context.Background()
	code, _, errOut := runCLI(t, "control", "--redis", rs.URL(), "--crawl", "typo", "pause")
	if code != 2 || !strings.Contains(errOut, "typo") {
		t.Errorf("unknown crawl: exit %d, want 2 naming it\n%s", code, errOut)
	}
	for _, args := range [][]string{{"pause", "x"}, {"seed"}, {"seed", "ftp://a/"}, {"jump"}, {}} {
		code, _, errOut := runCLI(t, append([]string{"control", "--redis", rs.URL(), "--crawl", "c"}, args...)...)
		if code != 2 {
			t.Errorf("control %v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
	keys, err := cluster.NewKeys("c")
	if err != nil {
		t.Fatal(err)
	}
	ms := cluster.NewMembership(rs.Client(), keys, cluster.MembershipConfig{})
	if _, err := ms.Join(ctx, cluster.Member{ID: "mute", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	// A node that acknowledged once (live) and then stopped answering.
	if err := cluster.NewControl(rs.Client(), keys).Ack(ctx, "mute", 0); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "control", "--redis", rs.URL(), "--crawl", "c", "--wait", "300ms", "pause")
	if code != 1 || !strings.Contains(errOut, "mute") || !strings.Contains(out, "0 of 1 live node(s)") {
		t.Errorf("a mute live node: exit %d, want 1 naming it\n%s%s", code, out, errOut)
	}
}

// TestControlProtocol: the hosts of a §0 system (two networks of two hosts)
// follow the control word kept in the first network's center's Redis:
// pause (no request starts later than a second after every host
// acknowledged), resume, stop (every host exits 0, the centers keep
// running), and the same host commands again finish the crawl with
// nothing missing and nothing fetched twice. Run with the first center's
// Redis a single server, and a 3-master Redis Cluster.
func TestControlProtocol(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: six redis-servers and six processes")
	}
	bin := buildSpider(t)
	for _, onCluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "server", true: "cluster"}[onCluster], func(t *testing.T) { controlProtocol(t, bin, onCluster) })
	}
}

func controlProtocol(t *testing.T, bin string, onCluster bool) {
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 83, Hosts: 10, PagesPerHost: 15, Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rules := websim.TruthRules{Seeds: srv.SeedURLs(2), MaxDepth: -1, Scope: websim.ScopeAny}
	truth, err := srv.Truth(rules)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	os.WriteFile(resolve, []byte(strings.Join(srv.Resolve(), "\n")), 0o600)
	var conf strings.Builder
	conf.WriteString("crawl: ctl\nbatch: 32\nflush: 50ms\nanswer_timeout: 1s\nremote_timeout: 2s\nheartbeat: 200ms\nmember_ttl: 1s\nstable: 300ms\nnetworks:\n")
	type node struct{ net, id string }
	var hosts []node
	var first string
	redisFlag := []string{}
	for _, n := range []string{"n1", "n2"} {
		centerURL := ""
		if first == "" && onCluster {
			as := redistest.StartCluster(t, 3).Addrs()
			first = "redis://" + as[0] + "?addr=" + as[1] + "&addr=" + as[2]
			centerURL = first
			redisFlag = []string{"--redis-cluster"}
		} else {
			centerURL = redistest.Start(t).URL()
			if first == "" {
				first = centerURL
			}
		}
		fmt.Fprintf(&conf, "  - name: %s\n    center_redis: %s\n    hosts:\n", n, centerURL)
		for _, h := range []string{"h1", "h2"} {
			r := redistest.Start(t)
			fmt.Fprintf(&conf, "      - id: %s\n        redis: %s\n", h, r.URL())
			hosts = append(hosts, node{n, h})
		}
	}
	cfgFile := filepath.Join(dir, "protocol.yaml")
	os.WriteFile(cfgFile, []byte(conf.String()), 0o600)
	type proc struct {
		name string
		cmd  *exec.Cmd
		out  *syncBuffer
		done chan error
	}
	start := func(name string, args ...string) *proc {
		p := &proc{name: name, out: new(syncBuffer), done: make(chan error, 1)}
		p.cmd = exec.Command(bin, args...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { p.cmd.Process.Kill() })
		return p
	}
	var centers []*proc
	for _, n := range []string{"n1", "n2"} {
		centers = append(centers, start("center "+n, "center", "--protocol-config", cfgFile, "--network", n))
	}
	var dirs []string
	for _, h := range hosts {
		dirs = append(dirs, filepath.Join(dir, h.net+"-"+h.id))
	}
	launch := func() []*proc {
		var ps []*proc
		for i, h := range hosts {
			ps = append(ps, start(h.net+"/"+h.id, append([]string{"crawl", "--dedup", "protocol", "--protocol-config", cfgFile,
				"--network", h.net, "--host-id", h.id, "--data", dirs[i], "--resolve-file", resolve, "--allow-private",
				"--delay", "150ms", "--concurrency", "4", "--scope", "any", "--max-depth", "-1"}, rules.Seeds...)...))
		}
		return ps
	}
	control := func(args ...string) time.Time {
		t.Helper()
		code, out, errOut := runCLI(t, append(append([]string{"control", "--redis", first, "--crawl", "ctl"}, redisFlag...), args...)...)
		if code != 0 || !strings.Contains(out, "4 of 4 live node(s) acknowledged") {
			t.Fatalf("control %v: exit %d, want 0 and 4 of 4 hosts\n%s%s", args, code, out, errOut)
		}
		t.Logf("control %v: %s", args, strings.TrimSpace(out))
		return time.Now()
	}
	ps := launch()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := srv.Log().WaitFor(ctx, func(es []websim.Entry) bool { return len(es) >= 20 }); err != nil {
		t.Fatalf("the crawl did not start: %v\n%s", err, ps[0].out)
	}
	time.Sleep(2 * time.Second) // every host following
	pausedAt := control("pause")
	time.Sleep(2 * time.Second) // the subject: nothing happens
	late := 0
	for _, e := range srv.Log().Entries() {
		if e.Time.After(pausedAt.Add(time.Second)) {
			late++
		}
	}
	if late > 0 {
		t.Fatalf("paused: %d requests started more than 1 s after every host acknowledged", late)
	}
	n := srv.Log().Len()
	control("resume")
	if err := srv.Log().WaitFor(ctx, func(es []websim.Entry) bool { return len(es) >= n+10 }); err != nil {
		t.Fatalf("no request after resume: %v", err)
	}
	control("stop")
	for _, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("%s after stop: %v, want exit 0\n%s", p.name, err, p.out)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not exit after stop\n%s", p.name, p.out)
		}
	}
	stoppedAt := srv.Log().Len()
	ps = launch()
	for _, p := range append(ps, centers...) {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("%s: %v\n%s", p.name, err, p.out)
			}
		case <-ctx.Done():
			t.Fatalf("%s did not finish\n%s", p.name, p.out)
		}
	}
	got := map[string]bool{}
	for _, d := range dirs {
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs.Iterate(func(r store.Record) error { got[r.URL] = true; return nil })
		rs.Close()
	}
	missing := 0
	for _, u := range truth.MustFetch {
		if !got[u] {
			if missing++; missing <= 5 {
				t.Errorf("never crawled: %s", u)
			}
		}
	}
	dups := srv.Log().Duplicates()
	for u, c := range dups {
		t.Errorf("fetched %d times: %s", c, u)
	}
	if missing > 0 || len(dups) > 0 {
		t.Fatalf("%d of %d URLs missing, %d fetched more than once", missing, len(truth.MustFetch), len(dups))
	}
	t.Logf("§0: %d URLs (%d requests before stop), nothing missing, nothing twice", len(truth.MustFetch), stoppedAt)
}
