package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/topics"
)

// topicEngine is a fakeEngine that runs a real PQ-MCSA scheduler.
type topicEngine struct {
	*fakeEngine
	sched *topics.Scheduler // nil: the crawl runs without topics
}

func (e *topicEngine) TopicStatus() (topics.Status, bool) {
	if e.sched == nil {
		return topics.Status{}, false
	}
	return e.sched.Status(time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)), true
}

func (e *topicEngine) SetTopicPriority(topic string, p int) error {
	if e.sched == nil {
		return fmt.Errorf("cannot set the priority of topic %s: %w", topic, crawl.ErrNoTopics)
	}
	return e.sched.SetPriority(topic, p)
}

const serverTopicsYAML = `topics:
  - {name: news, priority: 2, seeds: ["http://news.test/"], terms: [vote]}
  - {name: tax, priority: 0, seeds: ["http://tax.test/"], terms: [refund]}
`

func newScheduler(t *testing.T) *topics.Scheduler {
	t.Helper()
	cfg, err := topics.Parse([]byte(serverTopicsYAML))
	if err != nil {
		t.Fatal(err)
	}
	s, err := topics.New(cfg, topics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEngineViewTopics: a crawl in this process run with --topics shows
// its topics and changes their priorities; bad input is ErrInvalid, a crawl
// without topics ErrUnsupported, a finished one ErrConflict.
func TestEngineViewTopics(t *testing.T) {
	ctx := context.Background()
	eng := &topicEngine{fakeEngine: &fakeEngine{state: crawl.StateRunning}, sched: newScheduler(t)}
	v := NewEngineView(eng, t.TempDir(), nil)
	tests := []struct {
		topic string
		p     int
		want  error
	}{
		{"tax", 7, nil},
		{topics.OtherTopic, 1, nil},
		{"tax", 10, ErrInvalid},
		{"tax", -1, ErrInvalid},
		{"sports", 1, ErrInvalid},
	}
	for _, tc := range tests {
		err := v.SetTopicPriority(ctx, tc.topic, tc.p)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("SetTopicPriority(%q, %d) = %v, want %v", tc.topic, tc.p, err, tc.want)
		}
	}
	st, err := v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{"news": {2, 2}, "tax": {7, 0}, topics.OtherTopic: {1, 0}}
	if len(st.Topics) != len(want) || st.TopicsAt.IsZero() {
		t.Fatalf("topics %+v at %v, want %d rows", st.Topics, st.TopicsAt, len(want))
	}
	for _, r := range st.Topics {
		if w := want[r.Name]; r.Priority != w[0] || r.FilePriority != w[1] || r.State == "" {
			t.Errorf("row %+v, want priority %d (file %d)", r, w[0], w[1])
		}
	}

	plain := NewEngineView(&topicEngine{fakeEngine: &fakeEngine{state: crawl.StateRunning}}, t.TempDir(), nil)
	if err := plain.SetTopicPriority(ctx, "news", 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("crawl without topics: %v, want ErrUnsupported", err)
	}
	if st, _ := plain.Snapshot(ctx); len(st.Topics) != 0 {
		t.Errorf("crawl without topics shows topics %+v", st.Topics)
	}
	v.Finished()
	if err := v.SetTopicPriority(ctx, "news", 1); !errors.Is(err, ErrConflict) {
		t.Errorf("finished crawl: %v, want ErrConflict", err)
	}
}

// TestRedisTopics: the dashboard and the control API of a topics crawl on
// a cluster, from a real redis-server. The coordinator's status is written
// here with PublishTopicStatus, as spider master --topics does every tick.
func TestRedisTopics(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Start(t).Client()
	doc := openAPIDoc(t)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	at := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	sched := newScheduler(t)
	cfg, _ := topics.Parse([]byte(serverTopicsYAML))
	b, _ := json.Marshal(cfg)
	rdb.Set(ctx, "{spider:tc}:mw:topics:config", b, 0)
	nodes := testNodeLoads(at)
	if err := masterworker.PublishTopicStatus(ctx, rdb, "tc", masterworker.TopicStatus{Status: sched.Status(at), Nodes: nodes, At: at}); err != nil {
		t.Fatal(err)
	}

	v := NewRedisView(rdb, "tc", 64, nil, nil)
	srv := newTestServer(t, Options{Crawl: v, Control: v, Token: testToken})
	w := do(t, srv.Handler(), "GET", "/api/crawl", "", nil)
	if w.Code != 200 {
		t.Fatalf("GET /api/crawl: %d %s", w.Code, w.Body)
	}
	if err := doc.CheckSchema(doc.ResponseSchema("GET", "/api/crawl", 200), w.Body.Bytes()); err != nil {
		t.Errorf("/api/crawl does not match openapi.json: %v\n%s", err, w.Body)
	}
	var st CrawlStatus
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Topics) != 3 || st.Topics[1].Name != "news" || st.Topics[1].Priority != 2 || !st.TopicsAt.Equal(at) {
		t.Fatalf("topics %+v at %v", st.Topics, st.TopicsAt)
	}
	if len(st.TopicNodes) != 2 || st.TopicNodes[0].Node != "h1-aaaaaa" || !st.TopicNodes[0].Alive || st.TopicNodes[1].Alive || st.TopicNodes[0].Buckets != 2048 {
		t.Fatalf("crawl nodes %+v", st.TopicNodes)
	}

	tests := []struct {
		crawl, topic, body string
		code               int
		inBody             string
	}{
		{"tc", "news", `{"priority": 7}`, 200, `"action": "topic-priority"`},
		{"tc", "%28other%29", `{"priority": 3}`, 200, `"ok": true`},
		{"tc", "news", `{"priority": 10}`, 400, "0 (lowest) to 9"},
		{"tc", "sports", `{"priority": 1}`, 400, "news, tax, (other)"},
		{"plain", "news", `{"priority": 1}`, 501, "not a topics crawl"},
	}
	for _, tc := range tests {
		rv := NewRedisView(rdb, tc.crawl, 64, nil, nil)
		s := newTestServer(t, Options{Crawl: rv, Control: rv, Token: testToken})
		w := do(t, s.Handler(), "PUT", "/api/topics/"+tc.topic+"/priority", tc.body, auth)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.inBody) {
			t.Errorf("PUT %s %s on %s: %d %s; want %d with %q", tc.topic, tc.body, tc.crawl, w.Code, w.Body, tc.code, tc.inBody)
			continue
		}
		if err := doc.CheckSchema(doc.ResponseSchema("PUT", "/api/topics/{topic}/priority", tc.code), w.Body.Bytes()); err != nil {
			t.Errorf("PUT answer %d does not match openapi.json: %v\n%s", tc.code, err, w.Body)
		}
	}
	got, err := masterworker.TopicPriorities(ctx, rdb, "tc")
	if err != nil || len(got) != 2 || got["news"] != 7 || got[topics.OtherTopic] != 3 {
		t.Fatalf("overrides in Redis: %v, %v; want news 7, (other) 3", got, err)
	}
}

// TestDirViewTopics: spider serve --data of a crawl run with --topics shows
// the topics of its status file.
func TestDirViewTopics(t *testing.T) {
	dir := t.TempDir()
	sched := newScheduler(t)
	if err := sched.SetPriority("tax", 3); err != nil {
		t.Fatal(err)
	}
	if err := topics.WriteStatus(dir, sched.Status(time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	st, err := NewDirView(dir, nil).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Topics) != 3 || st.Topics[2].Name != "tax" || st.Topics[2].Priority != 3 || st.Topics[2].FilePriority != 0 || st.TopicsAt.IsZero() {
		t.Fatalf("topics %+v at %v", st.Topics, st.TopicsAt)
	}
}

// TestTopicRowsReportRobotsRefusals: a topic whose URLs robots.txt all
// refused shows its refusals and the scheduler's note in the dashboard's
// rows (issue 25: reported, not a silent 0), and URL tasks are left out.
func TestTopicRowsReportRobotsRefusals(t *testing.T) {
	st := topics.Status{Tasks: []topics.TaskStatus{
		{Name: "news", Granularity: topics.GranularityTopic.String(), Priority: 2, Pages: 5},
		{Name: "closed", Granularity: topics.GranularityTopic.String(), Priority: 1, Blocked: 3,
			Note: "no page: robots.txt disallowed all 3 of its URLs requested so far"},
		{Name: "https://a.test/x", Granularity: topics.GranularityURL.String(), Priority: 5},
	}}
	rows := TopicRows(st)
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want the two topics", rows)
	}
	if rows[0].Blocked != 0 || rows[0].Note != "" {
		t.Errorf("news row = %+v, want no refusal", rows[0])
	}
	if rows[1].Blocked != 3 || !strings.Contains(rows[1].Note, "robots.txt disallowed all 3") {
		t.Errorf("closed row = %+v, want 3 refusals and the note", rows[1])
	}
}
