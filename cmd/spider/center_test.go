package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestCenterRejectsBadInput: the center and the protocol host say what is wrong.
func TestCenterRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("crawl: x\nnetworks:\n  - name: n1\n    centre_redis: redis://127.0.0.1:1\n"), 0o600)
	noCenter := filepath.Join(dir, "nocenter.yaml")
	os.WriteFile(noCenter, []byte("crawl: x\nnetworks:\n  - name: n1\n"), 0o600)
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("crawl: x\nnetworks:\n  - name: n1\n    center_redis: redis://127.0.0.1:1\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"center", "--network", "n1"}, "--protocol-config FILE is required"},
		{[]string{"center", "--protocol-config", filepath.Join(dir, "missing.yaml"), "--network", "n1"}, "cannot read protocol configuration"},
		{[]string{"center", "--protocol-config", bad, "--network", "n1"}, "centre_redis"},
		{[]string{"center", "--protocol-config", noCenter, "--network", "n1"}, "has no center_redis"},
		{[]string{"center", "--protocol-config", good}, "--network is required"},
		{[]string{"center", "--protocol-config", good, "--network", "n9"}, `network "n9" is not in`},
		{[]string{"center", "--protocol-config", good, "--network", "n1"}, "cannot reach Redis"},
		{[]string{"crawl", "--dedup", "protocol", "--protocol-config", good, "--network", "n1", "http://a.test/"}, "--host-id is required"},
		{[]string{"crawl", "--dedup", "protocol", "--protocol-config", good, "--network", "n1", "--host-id", "h1", "http://a.test/"}, "no Redis for host h1"},
		{[]string{"crawl", "--dedup", "protocol", "--protocol-config", good, "--network", "n1", "--host-id", "h 1", "http://a.test/"}, "only letters"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want an error containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestMixedTopologyCLI runs the SPEC §0 system as processes: two `spider center`s and
// two hosts per network (`spider crawl --dedup protocol`), each with its own
// redis-server; all exit by themselves, every URL of the ground truth is crawled by
// exactly one host, and `spider center --status` reports the network done.
func TestMixedTopologyCLI(t *testing.T) {
	t.Parallel() // waits on its own processes, Redis and web (no fixed port, env or cwd): runs with the other parallel tests, two at a time
	if testing.Short() {
		t.Skip("slow: eight redis-servers and six processes")
	}
	bin := buildSpider(t)
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 81, Hosts: 10, PagesPerHost: 15})
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
	conf.WriteString("crawl: cli\nbatch: 32\nflush: 50ms\nanswer_timeout: 1s\nremote_timeout: 2s\nheartbeat: 200ms\nmember_ttl: 1s\nstable: 300ms\nnetworks:\n")
	type node struct{ net, id, redis string }
	var hosts []node
	for _, n := range []string{"n1", "n2"} {
		c := redistest.Start(t)
		fmt.Fprintf(&conf, "  - name: %s\n    center_redis: %s\n    hosts:\n", n, c.URL())
		for _, h := range []string{"h1", "h2"} {
			r := redistest.Start(t)
			fmt.Fprintf(&conf, "      - id: %s\n        redis: %s\n", h, r.URL())
			hosts = append(hosts, node{n, h, r.URL()})
		}
	}
	cfgFile := filepath.Join(dir, "protocol.yaml")
	os.WriteFile(cfgFile, []byte(conf.String()), 0o600)

	type proc struct {
		name string
		cmd  *exec.Cmd
		out  bytes.Buffer
		done chan error
	}
	var ps []*proc
	start := func(name string, args ...string) {
		p := &proc{name: name, done: make(chan error, 1)}
		p.cmd = exec.Command(bin, args...)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { p.cmd.Process.Kill() })
		ps = append(ps, p)
	}
	for _, n := range []string{"n1", "n2"} {
		start("center "+n, "center", "--protocol-config", cfgFile, "--network", n)
	}
	var dirs []string
	for _, h := range hosts {
		data := filepath.Join(dir, h.net+"-"+h.id)
		dirs = append(dirs, data)
		start(h.net+"/"+h.id, append([]string{"crawl", "--dedup", "protocol", "--protocol-config", cfgFile,
			"--network", h.net, "--host-id", h.id, "--data", data, "--resolve-file", resolve, "--allow-private",
			"--delay", "2ms", "--concurrency", "4", "--scope", "any", "--max-depth", "-1"}, rules.Seeds...)...)
	}
	deadline := time.After(90 * time.Second)
	for _, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("%s: %v\n%s", p.name, err, p.out.String())
			}
		case <-deadline:
			t.Fatalf("%s did not finish\n%s", p.name, p.out.String())
		}
	}
	if !strings.Contains(ps[0].out.String(), "system done") || !strings.Contains(ps[2].out.String(), "system done") {
		t.Errorf("missing summaries:\n%s\n%s", ps[0].out.String(), ps[2].out.String())
	}
	owner := map[string]string{}
	for _, d := range dirs {
		rs, err := store.OpenRecords(d, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs.Iterate(func(r store.Record) error {
			if o, ok := owner[r.URL]; ok && o != d {
				t.Errorf("%s crawled by two hosts", r.URL)
			}
			owner[r.URL] = d
			return nil
		})
		rs.Close()
	}
	for _, u := range truth.MustFetch {
		if owner[u] == "" {
			t.Errorf("never crawled: %s", u)
		}
	}
	if n := len(srv.Log().Duplicates()); n > 0 {
		t.Errorf("%d URLs requested twice", n)
	}
	code, out, stderr := runCLI(t, "center", "--status", "--protocol-config", cfgFile, "--network", "n1")
	if code != 0 || !strings.Contains(out, "done: true") || !strings.Contains(out, "urls_passed") || !strings.Contains(out, "host h2:") {
		t.Errorf("status: exit %d\n%s%s", code, out, stderr)
	}
}
