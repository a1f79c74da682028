package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/server/openapitest"
	"github.com/spider-crawler/spider/internal/topics"
)

func openAPIDoc(t *testing.T) *openapitest.Doc {
	t.Helper()
	doc, err := openapitest.Parse(OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIStyle: every property openapi.json declares is snake_case,
// names no duration except in _ms, and every _ms property is a number.
func TestOpenAPIStyle(t *testing.T) {
	if err := openAPIDoc(t).CheckDoc(); err != nil {
		t.Error(err)
	}
}

// TestAPIAnswersMatchSchemas walks every JSON answer of the API (success
// and error) and checks it against the schema openapi.json declares for
// that route and status code: every key declared and snake_case, durations
// as numbers in _ms keys, times RFC 3339, the declared types.
func TestAPIAnswersMatchSchemas(t *testing.T) {
	doc := openAPIDoc(t)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	st := testStatus()
	st.Nodes = append(st.Nodes, Node{ID: "worker-1", Role: "worker", InFlight: 3, LastBeatMS: 1200})
	full := newTestServer(t, Options{Searcher: &fakeSearcher{testHits()}, Crawl: &fakeCrawl{st}, Control: &fakeControl{}, Token: testToken})
	noQueue := st
	noQueue.Queue = nil
	dirOnly := newTestServer(t, Options{Crawl: &fakeCrawl{noQueue}, Token: testToken})
	empty := newTestServer(t, Options{Token: testToken})
	conflict := newTestServer(t, Options{Control: &fakeControl{err: fmt.Errorf("%w: cannot pause: the crawl has finished", ErrConflict)}, Token: testToken})
	tests := []struct {
		srv                  *Server
		method, url, pattern string
		body                 string
		header               map[string]string
		code                 int
	}{
		{full, "GET", "/api/search?q=crawler&limit=2&offset=1", "/api/search", "", nil, 200},
		{full, "GET", "/api/search?q=crawler&limit=1&explain=true", "/api/search", "", nil, 200},
		{full, "GET", "/api/search?q=nothing", "/api/search", "", nil, 200},
		{full, "GET", "/api/search", "/api/search", "", nil, 400},
		{full, "GET", "/api/search?q=later", "/api/search", "", nil, 503},
		{empty, "GET", "/api/search?q=a", "/api/search", "", nil, 503},
		{full, "GET", "/api/index", "/api/index", "", nil, 200},
		{empty, "GET", "/api/index", "/api/index", "", nil, 503},
		{full, "GET", "/api/crawl", "/api/crawl", "", nil, 200},
		{dirOnly, "GET", "/api/crawl", "/api/crawl", "", nil, 200},
		{empty, "GET", "/api/crawl", "/api/crawl", "", nil, 503},
		{full, "POST", "/api/crawl/pause", "/api/crawl/pause", "", auth, 200},
		{full, "POST", "/api/crawl/resume", "/api/crawl/resume", "", auth, 200},
		{full, "POST", "/api/crawl/stop", "/api/crawl/stop", "", auth, 200},
		{full, "POST", "/api/crawl/pause", "/api/crawl/pause", "", nil, 401},
		{empty, "POST", "/api/crawl/pause", "/api/crawl/pause", "", auth, 501},
		{conflict, "POST", "/api/crawl/pause", "/api/crawl/pause", "", auth, 409},
		{full, "POST", "/api/crawl/seeds", "/api/crawl/seeds", `{"urls": ["http://www.d2.test/"]}`, auth, 200},
		{full, "POST", "/api/crawl/seeds", "/api/crawl/seeds", `{"urls": []}`, auth, 400},
		{full, "PUT", "/api/topics/sports/priority", "/api/topics/{topic}/priority", `{"priority": 3}`, auth, 200},
		{full, "PUT", "/api/topics/sports/priority", "/api/topics/{topic}/priority", `{"priority": -1}`, auth, 400},
	}
	for _, tc := range tests {
		w := do(t, tc.srv.Handler(), tc.method, tc.url, tc.body, tc.header)
		if w.Code != tc.code {
			t.Errorf("%s %s: status %d, want %d: %s", tc.method, tc.url, w.Code, tc.code, w.Body)
			continue
		}
		schema := doc.ResponseSchema(tc.method, tc.pattern, tc.code)
		if schema == nil {
			t.Errorf("%s %s: openapi.json declares no JSON answer for status %d", tc.method, tc.pattern, tc.code)
			continue
		}
		if err := doc.CheckSchema(schema, w.Body.Bytes()); err != nil {
			t.Errorf("%s %s (%d) does not match openapi.json:\n%v\n%s", tc.method, tc.url, tc.code, err, w.Body)
		}
	}
}

// TestOutputTypesMatchSchemas checks the shared output types, filled in
// every field, against their schemas: a field added to a type without its
// schema, or with a key that is not snake_case or a duration not in _ms,
// fails here.
func TestOutputTypesMatchSchemas(t *testing.T) {
	doc := openAPIDoc(t)
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	ts := &topics.Status{Updated: at, Epoch: 2, PeriodMS: 60000, PeriodStart: at, Running: "a", Switches: 3, Preemptions: 1,
		Tasks: []topics.TaskStatus{{ID: 1, Theme: 1, Name: "a", Description: "d", Granularity: "topic", Priority: 2, FilePriority: 1, State: "running",
			SliceTotalMS: 500, SliceRemainMS: 100, Queued: 4, Pages: 9, Relevant: 5, Yield: 0.5, PeriodRelevant: 2, MinPages: 3,
			Preemptions: 1, LastPreempted: at, PreemptedBy: "b", Recrawls: 1, FirstPage: at, Shrinks: 1, Grows: 1}}}
	sum := &crawl.Summary{URLs: 3, Rows: map[string]int64{"200": 2, "too many redirects": 1}, Outcomes: map[string]int64{"200": 2, "redirects": 1},
		TopHosts: []crawl.HostCount{{Host: "a.test", Pages: 3}}, Bytes: 10, Duplicates: 1, Corrupt: 1, Rerecorded: 1,
		Failures: []crawl.FailureClass{{Class: "dns", URLs: 1, Examples: []crawl.FailedURL{{URL: "http://x.invalid/", Error: "no such host"}}, Hint: "h"}}}
	res := &SearchResult{Total: 1, Took: 1234 * time.Microsecond, Terms: []string{"a"},
		Hits: []Hit{{URL: "http://a.test/", Title: "A", Snippet: []Fragment{{Text: "a", Match: true}}, Score: 1, BM25: 1, PageRank: 0.1, Explain: "x"}}}
	tests := []struct {
		schema string
		v      any
	}{
		{"SearchAnswer", NewSearchAnswer(SearchRequest{Query: "a", Limit: 10}, res)},
		{"CrawlStats", NewCrawlStats(sum, ts)},
		{"CrawlStats", NewCrawlStats(&crawl.Summary{}, nil)},
		{"TopicsStatus", ts},
		{"CrawlStatus", testStatus()},
		{"CrawlStatus", func() CrawlStatus { st := testStatus(); st.Report = testReport(at); return st }()},
		{"CrawlStatus", func() CrawlStatus {
			st := testStatus()
			st.Topics, st.TopicNodes, st.TopicsAt = TopicRows(*ts), testNodeLoads(at), at
			return st
		}()},
		{"ClusterStatus", ClusterStatus{Crawl: "c", Source: SourceMasterWorker, Queue: &Queue{}, Nodes: []Node{},
			Topics: &topics.ClusterStatus{Status: *ts, Nodes: testNodeLoads(at), At: at}}},
		{"ClusterTopicsStatus", topics.ClusterStatus{Status: *ts, Nodes: testNodeLoads(at), At: at}},
		{"CrawlStatus", func() CrawlStatus {
			st := testStatus()
			st.Schedule = testSchedule(at)
			st.Schedule.Run = NewScheduleRun(crawl.RevisitCounts{Revisits: 5, NotModified: 3, Changed: 1, Unchanged: 4, Hinted: 1, Taken: 6})
			return st
		}()},
		{"Schedule", NewSchedule(crawlstate.ScheduleCounts{Records: 2, Failed: 2}, at)}, // nothing due: no next_due
		{"DataStatus", DataStatus{Status: ts, Schedule: testSchedule(at)}},
		{"DataStatus", DataStatus{Schedule: testSchedule(at)}},
		{"TopicsStatus", DataStatus{Status: ts}}, // a topics crawl without a schedule prints what it printed before
	}
	for _, tc := range tests {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := doc.Check(tc.schema, b); err != nil {
			t.Errorf("%s does not match its schema:\n%v\n%s", tc.schema, err, b)
		}
	}
}

// TestCheckerCatchesStyle: the checker itself fails the outputs this
// style forbids (so the tests above cannot pass vacuously).
func TestCheckerCatchesStyle(t *testing.T) {
	doc := openAPIDoc(t)
	bad := []struct{ schema, body, want string }{
		{"SearchAnswer", `{"query": "a", "Took": 1500000}`, "not declared"},
		{"SearchAnswer", `{"query": "a", "took_ms": "1.5ms"}`, "number"},
		{"Count", `{"Name": "a", "count": 1}`, "not declared"},
		{"CrawlStatus", `{"updated": "25/11/2026"}`, "RFC 3339"},
		{"CrawlStatus", `{"nodes": null}`, "null"},
		{"TopicsStatus", `{"period": "1m0s"}`, "not declared"},
	}
	for _, tc := range bad {
		err := doc.Check(tc.schema, []byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want one saying %q", tc.schema, tc.body, err, tc.want)
		}
	}
	for _, body := range []string{`{"Took": 1}`, `{"took": 1}`, `{"elapsed_ns": 1}`, `{"server_cpu_s": 1}`, `{"a": {"wait": "1m30s"}}`, `{"x_ms": "1"}`} {
		if openapitest.CheckStyle([]byte(body)) == nil {
			t.Errorf("CheckStyle(%s) passed", body)
		}
	}
	if err := openapitest.CheckStyle([]byte(`{"took_ms": 1.5, "p50_ms": 2, "pages_per_s": 3, "rows": [{"name": "too many redirects"}]}`)); err != nil {
		t.Errorf("a good output fails: %v", err)
	}
	_ = http.StatusOK
	_ = context.Background
}

// testNodeLoads are two crawl nodes of a topics crawl, every field filled.
func testNodeLoads(at time.Time) []topics.NodeLoad {
	return []topics.NodeLoad{
		{Worker: 0, Node: "h1-aaaaaa", InFlight: 2, Queued: 5, PagesPerSec: 3.5, Errors: 1, Fetched: 40, Buckets: 2048, Alive: true, LastBeat: at},
		{Worker: 1, Node: "h2-bbbbbb", Buckets: 2048, LastBeat: at.Add(-time.Minute)},
	}
}

// testReport is a crawl-wide report with every field filled.
func testReport(at time.Time) *CrawlReport {
	counts := func() map[string]int64 { return map[string]int64{"200": 3} }
	return &CrawlReport{State: "running", Pages: 3, Bytes: 30, PagesPerSec: 3.5, Rows: counts(), Outcomes: counts(), Updated: at,
		Nodes: []ReportNode{{ID: "n1", Role: "peer", State: "running", Stale: true, Pages: 3, Bytes: 30, PagesPerSec: 3.5,
			Rows: counts(), Outcomes: counts(), Detail: map[string]int64{"queued": 4}, Started: at, Updated: at}}}
}

// testSchedule is a revisit schedule with every field set.
func testSchedule(at time.Time) *Schedule {
	return NewSchedule(crawlstate.ScheduleCounts{Records: 10, Due: 8, Overdue: 3, Failed: 2, Next: at.Add(-time.Minute)}, at)
}
