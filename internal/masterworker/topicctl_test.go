package masterworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/topics"
)

// TestTopicStatusRoundTrip publishes a coordinator's status and reads it
// back from a real redis-server: the scheduler's fields inline, the nodes'
// load, the key under the crawl's master–worker tag.
func TestTopicStatusRoundTrip(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	if _, ok, err := masterworker.ReadTopicStatus(ctx, rdb, "c1"); ok || err != nil {
		t.Fatalf("status of a crawl without one: ok %v, err %v; want false, nil", ok, err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := masterworker.TopicStatus{
		Status: topics.Status{Updated: at, Epoch: 4, PeriodMS: 60_000, Running: "news", Preemptions: 2,
			Tasks: []topics.TaskStatus{{ID: 1, Theme: 1, Name: "news", Granularity: "topic", Priority: 5, FilePriority: 2, State: "running", Pages: 30}}},
		Nodes: []masterworker.NodeLoad{
			{Worker: 0, Node: "h1-abc", InFlight: 3, Queued: 7, PagesPerSec: 12.5, Errors: 1, Fetched: 40, Buckets: 128, Alive: true, LastBeat: at},
			{Worker: 1, Node: "h2-def", Buckets: 128, LastBeat: at.Add(-time.Minute)},
		},
		At: at,
	}
	if err := masterworker.PublishTopicStatus(ctx, rdb, "c1", st); err != nil {
		t.Fatal(err)
	}
	raw, err := rdb.Get(ctx, "{spider:c1}:mw:topics:status").Bytes()
	if err != nil {
		t.Fatalf("status not under the crawl's tag: %v", err)
	}
	for _, want := range []string{`"epoch":4`, `"tasks":[`, `"nodes":[`, `"pages_per_sec":12.5`, `"file_priority":2`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("status JSON lacks %s: %s", want, raw)
		}
	}
	got, ok, err := masterworker.ReadTopicStatus(ctx, rdb, "c1")
	if err != nil || !ok {
		t.Fatalf("read: ok %v, %v", ok, err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(st)
	if string(gb) != string(wb) {
		t.Fatalf("read back\n%s\nwant\n%s", gb, wb)
	}
	if _, ok, _ := masterworker.ReadTopicStatus(ctx, rdb, "c2"); ok {
		t.Fatal("another crawl's status read")
	}
	rdb.Set(ctx, "{spider:c3}:mw:topics:status", "{not json", 0)
	if _, _, err := masterworker.ReadTopicStatus(ctx, rdb, "c3"); err == nil || !strings.Contains(err.Error(), "topics:status") {
		t.Fatalf("damaged status: err %v, want one naming the key", err)
	}
}

func TestSetTopicPriority(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	// crawl "cfg" has a topics config (as the coordinator writes it),
	// "stat" only a status, "none" neither.
	cfg, err := topics.Parse([]byte("topics:\n  - {name: news, seeds: [http://n.test/], terms: [x]}\n  - {name: tax, seeds: [http://t.test/], terms: [y]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(cfg)
	rdb.Set(ctx, "{spider:cfg}:mw:topics:config", b, 0)
	if err := masterworker.PublishTopicStatus(ctx, rdb, "stat", masterworker.TopicStatus{Status: topics.Status{Tasks: []topics.TaskStatus{
		{Name: topics.OtherTopic, Granularity: "topic"}, {Name: "food", Granularity: "topic"}, {Name: "http://f.test/x", Granularity: "url"},
	}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		crawl, topic string
		p            int
		wantErr      error
		wantInErr    string
	}{
		{crawl: "cfg", topic: "news", p: 7},
		{crawl: "cfg", topic: "tax", p: 0},
		{crawl: "cfg", topic: topics.OtherTopic, p: 3},
		{crawl: "cfg", topic: "news", p: 9},
		{crawl: "stat", topic: "food", p: 4},
		{crawl: "cfg", topic: "news", p: 10, wantErr: topics.ErrPriorityRange},
		{crawl: "cfg", topic: "news", p: -1, wantErr: topics.ErrPriorityRange},
		{crawl: "cfg", topic: "sports", p: 1, wantErr: topics.ErrUnknownTopic, wantInErr: "news, tax, (other)"},
		{crawl: "stat", topic: "http://f.test/x", p: 1, wantErr: topics.ErrUnknownTopic, wantInErr: "food, (other)"},
		{crawl: "none", topic: "news", p: 1, wantErr: masterworker.ErrNotTopics, wantInErr: "spider master --topics"},
	}
	for _, tc := range tests {
		err := masterworker.SetTopicPriority(ctx, rdb, tc.crawl, tc.topic, tc.p)
		if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
			t.Fatalf("SetTopicPriority(%s, %q, %d) = %v, want %v", tc.crawl, tc.topic, tc.p, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), tc.wantInErr) {
			t.Fatalf("error %q does not say %q", err, tc.wantInErr)
		}
	}
	got, err := masterworker.TopicPriorities(ctx, rdb, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"news": 9, "tax": 0, topics.OtherTopic: 3}
	if len(got) != len(want) || got["news"] != 9 || got["tax"] != 0 || got[topics.OtherTopic] != 3 {
		t.Fatalf("overrides %v, want %v", got, want)
	}
	if n := rdb.HLen(ctx, "{spider:cfg}:mw:topics:priority").Val(); n != 3 {
		t.Fatalf("hash under the crawl's tag has %d fields, want 3", n)
	}
	if got, _ := masterworker.TopicPriorities(ctx, rdb, "none"); len(got) != 0 {
		t.Fatalf("refused changes were written: %v", got)
	}
	// A hand-edited bad entry is left out.
	rdb.HSet(ctx, "{spider:cfg}:mw:topics:priority", "tax", "high")
	if got, _ := masterworker.TopicPriorities(ctx, rdb, "cfg"); len(got) != 2 {
		t.Fatalf("bad entry kept: %v", got)
	}

	// The coordinator applies them: a real scheduler gets news 9.
	sched, err := topics.New(cfg, topics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := masterworker.ApplyTopicPriorities(ctx, rdb, "cfg", sched.SetPriority); err != nil {
		t.Fatal(err)
	}
	if p := sched.Priorities(); p["news"] != 9 || p[topics.OtherTopic] != 3 || p["tax"] != 0 {
		t.Fatalf("scheduler after applying: %v", p)
	}
	rdb.HSet(ctx, "{spider:cfg}:mw:topics:priority", "gone", "2")
	if err := masterworker.ApplyTopicPriorities(ctx, rdb, "cfg", sched.SetPriority); !errors.Is(err, topics.ErrUnknownTopic) {
		t.Fatalf("override of a topic the scheduler lacks: %v, want ErrUnknownTopic", err)
	}
	if p := sched.Priorities(); p["news"] != 9 {
		t.Fatalf("a bad override stopped the others: %v", p)
	}
}

// TestStatusCountsNodeQueues: in a topics crawl the tasks wait in each
// crawl node's own queue (srq:N); ReadStatus counts them in SRQ and per
// worker, so `spider status` does not show an empty queue while the nodes
// have work queued.
func TestStatusCountsNodeQueues(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	now := time.Now().UnixMilli()
	p := "{spider:c1}:mw:"
	for _, cmd := range [][]any{
		{"HSET", p + "workers", "0", now, "1", now},
		{"RPUSH", p + "srq", "a"},
		{"RPUSH", p + "srq:0", "b", "c"},
		{"RPUSH", p + "srq:1", "d", "e", "f"},
		{"RPUSH", p + "proc:1", "g"},
	} {
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := masterworker.ReadStatus(ctx, rdb, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if st.SRQ != 6 {
		t.Errorf("SRQ %d, want 6 (1 shared + 2 + 3 on the nodes' own queues)", st.SRQ)
	}
	if len(st.Workers) != 2 || st.Workers[0].Queued != 2 || st.Workers[1].Queued != 3 || st.Workers[1].InFlight != 1 {
		t.Errorf("workers %+v, want #0 with 2 queued, #1 with 3 queued and 1 in hand", st.Workers)
	}
}
