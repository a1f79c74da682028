package redisview

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/topics"
)

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

	v := New(rdb, "tc", 64, nil, nil)
	srv := newTestServer(t, server.Options{Crawl: v, Control: v, Token: testToken})
	w := do(t, srv.Handler(), "GET", "/api/crawl", "", nil)
	if w.Code != 200 {
		t.Fatalf("GET /api/crawl: %d %s", w.Code, w.Body)
	}
	if err := doc.CheckSchema(doc.ResponseSchema("GET", "/api/crawl", 200), w.Body.Bytes()); err != nil {
		t.Errorf("/api/crawl does not match openapi.json: %v\n%s", err, w.Body)
	}
	var st server.CrawlStatus
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
		rv := New(rdb, tc.crawl, 64, nil, nil)
		s := newTestServer(t, server.Options{Crawl: rv, Control: rv, Token: testToken})
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
