package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/server/openapitest"
	"github.com/spider-crawler/spider/internal/topics"
)

const cliTopicsYAML = `topics:
  - {name: news, priority: 2, seeds: ["http://news.test/"], terms: [vote]}
  - {name: tax, priority: 0, seeds: ["http://tax.test/"], terms: [refund]}
`

// fakeCoordinator stands for spider master --topics in Redis: the crawl's
// keys as a master writes them (stats with its epoch, the topics config)
// and, every 50ms until the test ends, the overrides applied to a real
// scheduler and its status published with two crawl nodes.
func fakeCoordinator(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg, err := topics.Parse([]byte(cliTopicsYAML))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := topics.New(cfg, topics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cfg)
	p := "{spider:" + name + "}:mw:"
	rdb.HSet(ctx, p+"stats", "epoch", 1, "fetched", 10, "elapsed_ms", 1000, "returned", 3)
	rdb.Set(ctx, p+"topics:config", b, 0)
	at := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	publish := func() {
		if err := masterworker.ApplyTopicPriorities(ctx, rdb, name, sched.SetPriority); err != nil && ctx.Err() == nil {
			t.Errorf("coordinator: %v", err)
		}
		st := masterworker.TopicStatus{Status: sched.Status(at), At: at, Nodes: []masterworker.NodeLoad{
			{Worker: 0, Node: "h1-aaaaaa", InFlight: 2, Queued: 5, PagesPerSec: 3.5, Fetched: 40, Buckets: 2048, Alive: true, LastBeat: at},
			{Worker: 1, Node: "h2-bbbbbb", Errors: 3, Buckets: 2048, LastBeat: at.Add(-time.Minute)}}}
		masterworker.PublishTopicStatus(ctx, rdb, name, st)
	}
	publish()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
				publish()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestControlPriorityRedis: spider control priority on a topics crawl on a
// cluster records the override, waits for the coordinator's status to show
// it, and refuses bad input with exit 2 and a message saying what to do.
func TestControlPriorityRedis(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client()
	fakeCoordinator(t, rdb, "tc")
	rdb.HSet(context.Background(), "{spider:plain}:mw:stats", "epoch", 1) // a master–worker crawl without topics
	red := []string{"control", "--redis", rs.URL(), "--wait", "2s"}
	tests := []struct {
		name    string
		args    []string
		code    int
		out     string // in stdout (code 0) or stderr
		applied int    // news's priority in the coordinator afterwards (-1: not checked)
	}{
		{"raise", []string{"--crawl", "tc", "priority", "news", "7"}, 0, "applied: the coordinator's status shows priority 7", 7},
		{"other", []string{"--crawl", "tc", "priority", topics.OtherTopic, "4"}, 0, "recorded", -1},
		{"unknown topic", []string{"--crawl", "tc", "priority", "sports", "1"}, 2, "news, tax, (other)", -1},
		{"out of range", []string{"--crawl", "tc", "priority", "news", "10"}, 2, "0 (lowest) to 9", -1},
		{"not a number", []string{"--crawl", "tc", "priority", "news", "high"}, 2, "whole number", -1},
		{"missing number", []string{"--crawl", "tc", "priority", "news"}, 2, "a topic and a number", -1},
		{"crawl without topics", []string{"--crawl", "plain", "priority", "news", "1"}, 2, "not a topics crawl", -1},
		{"unknown crawl", []string{"--crawl", "nope", "priority", "news", "1"}, 2, "nope", -1},
		{"no crawl named", []string{"priority", "news", "1"}, 2, "--crawl NAME", -1},
		{"addr with another action", []string{"--addr", "127.0.0.1:1", "pause"}, 2, "priority only", -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append(append([]string{}, red...), tc.args...)...)
			got := out
			if tc.code != 0 {
				got = errOut
			}
			if code != tc.code || !strings.Contains(got, tc.out) {
				t.Fatalf("code %d, want %d; stdout %q; stderr %q; want %q", code, tc.code, out, errOut, tc.out)
			}
			if tc.applied >= 0 {
				st, ok, err := masterworker.ReadTopicStatus(context.Background(), rdb, "tc")
				if err != nil || !ok || topicPriority(st.Status, "news") != tc.applied {
					t.Fatalf("coordinator's status: news at %d (%v, %v), want %d", topicPriority(st.Status, "news"), ok, err, tc.applied)
				}
			}
		})
	}
}

// TestControlPriorityAddr: spider control --addr changes the priority of a
// --topics crawl in another process through its HTTP API (here a real
// engine behind the server spider crawl --addr runs), with the token.
func TestControlPriorityAddr(t *testing.T) {
	dir := t.TempDir()
	tfile := filepath.Join(dir, "topics.yaml")
	if err := os.WriteFile(tfile, []byte(cliTopicsYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(name, topicsFile string) *crawl.Engine {
		cfg := crawl.NewConfig()
		cfg.Data = filepath.Join(dir, name)
		cfg.Topics = topicsFile
		if topicsFile == "" {
			cfg.Seeds = []string{"http://a.test/"}
		}
		eng, err := crawl.New(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		return eng
	}
	serve := func(eng *crawl.Engine, name string) string {
		v := server.NewEngineView(eng, filepath.Join(dir, name), nil)
		srv, err := server.New(server.Options{Crawl: v, Control: v, Token: strings.Repeat("k", server.MinTokenLen)})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		return strings.TrimPrefix(hs.URL, "http://")
	}
	eng := open("topics", tfile)
	addr := serve(eng, "topics")
	plainAddr := serve(open("plain", ""), "plain")
	down := httptest.NewServer(nil)
	downAddr := strings.TrimPrefix(down.URL, "http://")
	down.Close()

	good := strings.Repeat("k", server.MinTokenLen)
	tests := []struct {
		name, token string
		args        []string
		code        int
		out         string
	}{
		{"raise", good, []string{"--addr", addr, "priority", "tax", "5"}, 0, "applied by the crawl"},
		{"url form", good, []string{"--addr", "http://" + addr + "/", "priority", "news", "1"}, 0, "topic news priority 1"},
		{"unknown topic", good, []string{"--addr", addr, "priority", "sports", "1"}, 2, "news, tax, (other)"},
		{"no token", "", []string{"--addr", addr, "priority", "tax", "1"}, 2, "SPIDER_TOKEN"},
		{"wrong token", strings.Repeat("x", server.MinTokenLen), []string{"--addr", addr, "priority", "tax", "1"}, 2, "token"},
		{"crawl without topics", good, []string{"--addr", plainAddr, "priority", "tax", "1"}, 2, "--topics"},
		{"server down", good, []string{"--addr", downAddr, "priority", "tax", "1"}, 3, "cannot reach"},
		{"both", good, []string{"--addr", addr, "--crawl", "x", "priority", "tax", "1"}, 2, "not both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SPIDER_TOKEN", tc.token)
			code, out, errOut := runCLI(t, append([]string{"control"}, tc.args...)...)
			got := out
			if tc.code != 0 {
				got = errOut
			}
			if code != tc.code || !strings.Contains(got, tc.out) {
				t.Fatalf("code %d, want %d; stdout %q; stderr %q; want %q", code, tc.code, out, errOut, tc.out)
			}
		})
	}
	st, _ := eng.TopicStatus()
	if topicPriority(st, "tax") != 5 || topicPriority(st, "news") != 1 {
		t.Fatalf("engine after the commands: tax %d, news %d; want 5 and 1", topicPriority(st, "tax"), topicPriority(st, "news"))
	}
}

// TestStatusTopicsRedis: spider status --redis --crawl of a topics crawl
// prints the coordinator's per-topic and per-node tables; --json includes
// them and matches openapi.json's ClusterStatus.
func TestStatusTopicsRedis(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client()
	fakeCoordinator(t, rdb, "tc")
	code, out, errOut := runCLI(t, "status", "--redis", rs.URL(), "--crawl", "tc")
	if code != 0 {
		t.Fatalf("status: %d %s", code, errOut)
	}
	for _, want := range []string{"coordinator (PQ-MCSA", "news", "tax", "(other)", "crawl nodes: 2", "logical nodes", "h1-aaaaaa", "h2-bbbbbb",
		"taken back from leaving nodes 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI(t, "status", "--redis", rs.URL(), "--crawl", "tc", "--json")
	if code != 0 {
		t.Fatalf("status --json: %d %s", code, errOut)
	}
	doc, err := openapitest.Parse(server.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Check("ClusterStatus", []byte(out)); err != nil {
		t.Errorf("status --json does not match ClusterStatus: %v\n%s", err, out)
	}
	var cs server.ClusterStatus
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatal(err)
	}
	if cs.Topics == nil || len(cs.Topics.Nodes) != 2 || topicPriority(cs.Topics.Status, "news") != 2 {
		t.Fatalf("status --json topics: %+v", cs.Topics)
	}
	// A master–worker crawl without topics shows none.
	rdb.HSet(context.Background(), "{spider:plain}:mw:stats", "epoch", 1)
	if _, out, _ = runCLI(t, "status", "--redis", rs.URL(), "--crawl", "plain", "--json"); strings.Contains(out, `"topics"`) {
		t.Errorf("a crawl without topics shows topics:\n%s", out)
	}
}
