package redisview

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/p2p"
	"github.com/spider-crawler/spider/internal/server"
	"github.com/spider-crawler/spider/internal/topics"
)

// TestStatusTypesMatchSchemas checks the ClusterStatus of each topology
// and the crawl-wide report, every field filled, against their schemas in
// openapi.json (as the server's TestOutputTypesMatchSchemas does for its
// own outputs).
func TestStatusTypesMatchSchemas(t *testing.T) {
	doc := openAPIDoc(t)
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	ts := &topics.Status{Updated: at, Epoch: 2, PeriodMS: 60000, PeriodStart: at, Running: "a", Switches: 3, Preemptions: 1,
		Tasks: []topics.TaskStatus{{ID: 1, Theme: 1, Name: "a", Description: "d", Granularity: "topic", Priority: 2, FilePriority: 1, State: "running",
			SliceTotalMS: 500, SliceRemainMS: 100, Queued: 4, Pages: 9, Relevant: 5, Yield: 0.5, PeriodRelevant: 2, MinPages: 3,
			Preemptions: 1, LastPreempted: at, PreemptedBy: "b", Recrawls: 1, FirstPage: at, Shrinks: 1, Grows: 1}}}
	mw := &masterworker.Status{Crawl: "c", Done: true, SRQ: 1, NRQ: 2, FreeTRQ: 3,
		Workers: []masterworker.WorkerStatus{{ID: 1, LastBeat: 1500 * time.Millisecond, InFlight: 2}},
		Master:  map[string]int64{"epoch": 1, "fetched": 10, "elapsed_ms": 2000}}
	ps := &p2p.Status{Crawl: "c", Epoch: 4, Nodes: []p2p.NodeStatus{{ID: "n1", Weight: 100, Buckets: 64, PagesPerSec: 2.5, Queue: 3, Fetched: 9, Inbox: 1}},
		Sent: map[string]map[string]int64{"n1": {"n2": 4}}, Spread: p2p.LoadSpread{FetchedMaxDev: 0.1, QueueMaxDev: 0.2}}
	tests := []struct {
		schema string
		v      any
	}{
		{"ClusterStatus", MasterWorkerStatus(mw)},
		{"ClusterStatus", PeerStatus(ps)},
		{"ClusterStatus", withReport(PeerStatus(ps), at)},
		{"ClusterStatus", func() server.ClusterStatus { cs := PeerStatus(ps); cs.Schedule = testSchedule(at); return cs }()},
		{"ClusterStatus", func() server.ClusterStatus {
			cs := MasterWorkerStatus(mw)
			cs.Topics = &masterworker.TopicStatus{Status: *ts, Nodes: testNodeLoads(at), At: at}
			return cs
		}()},
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
	// The worker's last heartbeat is in milliseconds, as in /api/crawl.
	b, _ := json.Marshal(MasterWorkerStatus(mw))
	if !strings.Contains(string(b), `"last_beat_ms":1500`) {
		t.Errorf("master-worker status: want last_beat_ms 1500: %s", b)
	}
}

// withReport is cs with a crawl-wide report of every field filled.
func withReport(cs server.ClusterStatus, at time.Time) server.ClusterStatus {
	rep := &cluster.Report{Crawl: "c", State: cluster.ReportRunning, NowMS: at.UnixMilli(), PagesPerSec: 3.5,
		Totals: cluster.Counts{Pages: 3, Bytes: 30, Rows: map[string]int64{"200": 3}, Outcomes: map[string]int64{"200": 3}},
		Nodes: []cluster.NodeReport{{Node: "n1", Role: cluster.RolePeer, State: cluster.ReportRunning,
			Counts:      cluster.Counts{Pages: 3, Bytes: 30, Rows: map[string]int64{"200": 3}, Outcomes: map[string]int64{"200": 3}},
			PagesPerSec: 3.5, StartedMS: at.UnixMilli(), UpdatedMS: at.UnixMilli(), Stale: true, Detail: map[string]int64{"queued": 4}}}}
	cs.Report = NewCrawlReport(rep)
	return cs
}

// testSchedule is a revisit schedule with every field set.
func testSchedule(at time.Time) *server.Schedule {
	return server.NewSchedule(crawlstate.ScheduleCounts{Records: 10, Due: 8, Overdue: 3, Failed: 2, Next: at.Add(-time.Minute)}, at)
}

// testNodeLoads are two crawl nodes of a topics crawl, every field filled.
func testNodeLoads(at time.Time) []topics.NodeLoad {
	return []topics.NodeLoad{
		{Worker: 0, Node: "h1-aaaaaa", InFlight: 2, Queued: 5, PagesPerSec: 3.5, Errors: 1, Fetched: 40, Buckets: 2048, Alive: true, LastBeat: at},
		{Worker: 1, Node: "h2-bbbbbb", Buckets: 2048, LastBeat: at.Add(-time.Minute)},
	}
}
