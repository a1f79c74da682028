package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/index"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/server/openapitest"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/topics"
	"github.com/spider-crawler/spider/internal/websim"
)

// checkJSON checks out (one JSON value) against components/schemas/schema
// of openapi.json: every key declared and snake_case, durations as numbers
// in _ms keys, RFC 3339 times, the declared types.
func checkJSON(t *testing.T, what, schema, out string) {
	t.Helper()
	doc, err := openapitest.Parse(server.OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Check(schema, []byte(out)); err != nil {
		t.Errorf("%s does not match schema %s of openapi.json:\n%v\n%s", what, schema, err, out)
	}
}

// jsonCLI runs the command and returns its stdout, failing on an exit
// code other than 0.
func jsonCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("spider %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// TestJSONOutputsFollowOneStyle walks every JSON the command line prints
// and the files it writes for users, on a real crawl of the synthetic
// web, and checks each against its schema in openapi.json (issue 20: one
// JSON style, snake_case keys, durations as _ms numbers, RFC 3339 times):
// search --json (and that it is byte for byte /api/search's answer but for
// the time taken), stats --json (with and without topics), status --data
// --json and topics/status.json, fsck --json, export --format jsonl,
// records.jsonl, status --redis --json for both distributed topologies and
// center --status --json.
func TestJSONOutputsFollowOneStyle(t *testing.T) {
	data := crawlForIndex(t)
	jsonCLI(t, "index", "--data", data)

	en, _ := websim.TopicWords(websim.Topics()[0])
	query := en[0] + " OR " + en[1]
	out := jsonCLI(t, "search", "--data", data, "--json", "--limit", "4", "--page", "2", "--explain", query)
	checkJSON(t, "search --json", "SearchAnswer", out)
	var cli server.SearchAnswer
	if err := json.Unmarshal([]byte(out), &cli); err != nil || cli.Offset != 4 || cli.Limit != 4 || len(cli.Hits) == 0 || cli.TookMS <= 0 {
		t.Errorf("search --json: %v, offset %d limit %d, %d hits, took_ms %v", err, cli.Offset, cli.Limit, len(cli.Hits), cli.TookMS)
	}
	// The API's answer to the same search is the same document.
	searcher, err := openSearcher(filepath.Join(data, index.DirName), index.Options{ReloadInterval: -1, NoWarm: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer searcher.Close()
	srv, err := server.New(server.Options{Searcher: searcher})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/api/search?explain=true&limit=4&offset=4&q="+url.QueryEscape(query), nil))
	if w.Code != 200 {
		t.Fatalf("/api/search: %d %s", w.Code, w.Body)
	}
	if a, b := withoutTime(t, w.Body.String()), withoutTime(t, out); a != b {
		t.Errorf("search --json and /api/search differ:\n--- cli\n%s\n--- api\n%s", b, a)
	}

	checkJSON(t, "stats --json", "CrawlStats", jsonCLI(t, "stats", "--data", data, "--json"))
	checkJSON(t, "fsck --json", "FsckReport", jsonCLI(t, "fsck", "--data", data, "--json"))

	eachLine(t, jsonCLI(t, "export", "--data", data, "--format", "jsonl"), func(line string) {
		checkJSON(t, "export --format jsonl", "ExportRecord", line)
	})
	// records.jsonl is a storage format (read back by the crawl, index,
	// fsck): no schema in openapi.json, but the same style.
	recs, err := os.ReadFile(filepath.Join(data, store.RecordsFileName))
	if err != nil {
		t.Fatal(err)
	}
	eachLine(t, string(recs), func(line string) {
		if err := openapitest.CheckStyle([]byte(line)); err != nil {
			t.Errorf("records.jsonl: %v\n%s", err, line)
		}
	})

	// A crawl with topics: the status file, status --data and stats.
	at := time.Now().UTC()
	st := topics.Status{Updated: at, Epoch: 2, PeriodMS: 60_000, PeriodStart: at, Running: "alpha",
		Tasks: []topics.TaskStatus{{ID: 1, Name: "alpha", Granularity: "G1", State: "running", SliceTotalMS: 500, SliceRemainMS: 120,
			Pages: 3, LastPreempted: at, PreemptedBy: "beta", FirstPage: at}}}
	if err := topics.WriteStatus(data, st); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(data, topics.StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	checkJSON(t, topics.StatusFile, "TopicsStatus", string(file))
	checkJSON(t, "status --data --json", "TopicsStatus", jsonCLI(t, "status", "--data", data, "--json"))
	out = jsonCLI(t, "stats", "--data", data, "--json")
	checkJSON(t, "stats --json (topics)", "CrawlStats", out)
	if !strings.Contains(out, `"period_ms": 60000`) {
		t.Errorf("stats --json lacks the topics' period_ms:\n%s", out)
	}
}

// TestDistributedJSONOutputs checks status --redis --json (master–worker
// and peer-to-peer) and center --status --json against their schemas, on
// a real Redis.
func TestDistributedJSONOutputs(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client()
	ctx := context.Background()

	// Peer-to-peer: two members joined as the peers join.
	keys, err := cluster.NewKeys("p")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []cluster.Member{{ID: "n1", Weight: 100, Load: cluster.Load{PagesPerSec: 2, Queue: 4}}, {ID: "n2", Weight: 100}} {
		ms := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{})
		if _, err := ms.Join(ctx, m); err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
	}
	out := jsonCLI(t, "status", "--redis", rs.URL(), "--crawl", "p", "--buckets", "64", "--json")
	checkJSON(t, "status --json (peer-to-peer)", "ClusterStatus", out)
	if !strings.Contains(out, `"source": "peer-to-peer"`) || !strings.Contains(out, `"n2"`) {
		t.Errorf("peer-to-peer status:\n%s", out)
	}

	// Master–worker: the master's published counters and a worker's
	// heartbeat, as the master and worker write them.
	prefix := "{spider:m}:mw:"
	beat := time.Now().Add(-1500 * time.Millisecond).UnixMilli()
	if err := rdb.HSet(ctx, prefix+"stats", "epoch", 1, "fetched", 10, "queued", 3, "in_flight", 1, "elapsed_ms", 2500).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, prefix+"workers", "1", strconv.FormatInt(beat, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	out = jsonCLI(t, "status", "--redis", rs.URL(), "--crawl", "m", "--json")
	checkJSON(t, "status --json (master-worker)", "ClusterStatus", out)
	var cs server.ClusterStatus
	if err := json.Unmarshal([]byte(out), &cs); err != nil || len(cs.Nodes) != 1 || cs.Nodes[0].LastBeatMS < 1000 || cs.Nodes[0].LastBeatMS > 60_000 {
		t.Errorf("master-worker status: want one worker with last_beat_ms about 1500: %v\n%s", err, out)
	}

	// A center of a network no host has joined yet.
	cfg := filepath.Join(t.TempDir(), "protocol.yaml")
	conf := fmt.Sprintf("crawl: x\nnetworks:\n  - name: n1\n    center_redis: %s\n    hosts:\n      - id: h1\n        redis: %s\n", rs.URL(), rs.URL())
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	checkJSON(t, "center --status --json", "CenterStatus", jsonCLI(t, "center", "--status", "--json", "--protocol-config", cfg, "--network", "n1"))
}

// withoutTime is a search answer without took_ms and cached, re-encoded.
func withoutTime(t *testing.T, s string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	delete(m, "took_ms")
	delete(m, "cached")
	b, _ := json.MarshalIndent(m, "", "  ")
	return string(b)
}

// eachLine calls fn with every non-empty line of s.
func eachLine(t *testing.T, s string, fn func(string)) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 8<<20)
	n := 0
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			fn(line)
			n++
		}
	}
	if n == 0 {
		t.Error("no lines")
	}
}
