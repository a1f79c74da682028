package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/cluster/redistest"
)

// TestReporterPublishesLiveAndFinal: a Reporter publishes at once and at
// every tick (ReadReports sees the growing counts, live), Stop publishes
// the last figures as final with the given state, and a second run of the
// node adds to its first run's figures; totals sum the nodes.
func TestReporterPublishesLiveAndFinal(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := testCtx(t)
	k := mustKeys(t, "rep1")
	var pages atomic.Int64
	src := func() NodeReport {
		n := pages.Load()
		return NodeReport{Counts: Counts{Pages: n, Bytes: 10 * n, Rows: map[string]int64{"200": n}, Outcomes: map[string]int64{"200": n}},
			Detail: map[string]int64{"queued": 7}}
	}
	r, err := StartReporter(ctx, rdb, k, ReporterConfig{Node: "a", Role: RolePeer, Source: src, Every: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReports(ctx, rdb, "rep1")
	if err != nil || len(rep.Nodes) != 1 || rep.State != ReportRunning || rep.Nodes[0].Final {
		t.Fatalf("first publish: %+v, %v; want one live node, running", rep, err)
	}
	pages.Store(5)
	eventually(t, 5*time.Second, "the tick publishes 5 pages", func() bool {
		rep, err := ReadReports(ctx, rdb, "rep1")
		return err == nil && rep.Totals.Pages == 5 && rep.Nodes[0].Detail["queued"] == 7
	})
	r.SetState(ReportPaused)
	eventually(t, 5*time.Second, "paused", func() bool {
		rep, err := ReadReports(ctx, rdb, "rep1")
		return err == nil && rep.State == ReportPaused
	})
	pages.Store(6)
	if err := r.Stop(ctx, ReportStopped); err != nil {
		t.Fatal(err)
	}
	rep, err = ReadReports(ctx, rdb, "rep1")
	if err != nil || !rep.Final() || rep.State != ReportStopped || rep.Totals.Pages != 6 || rep.Totals.Rows["200"] != 6 || rep.Totals.Bytes != 60 {
		t.Fatalf("after Stop: %+v, %v; want final, stopped, 6 pages", rep, err)
	}
	// A second run of a adds to the first; b is another node.
	pages.Store(0)
	r, err = StartReporter(ctx, rdb, k, ReporterConfig{Node: "a", Role: RolePeer, Source: src, Every: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := StartReporter(ctx, rdb, k, ReporterConfig{Node: "b", Role: RolePeer, Source: func() NodeReport {
		return NodeReport{Counts: Counts{Pages: 3, Rows: map[string]int64{"404": 3}, Outcomes: map[string]int64{"404": 3}}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	pages.Store(4)
	if err := r.Stop(ctx, ReportDone); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(ctx, ReportDone); err != nil {
		t.Fatal(err)
	}
	rep, err = ReadReports(ctx, rdb, "rep1")
	if err != nil || rep.State != ReportDone || len(rep.Nodes) != 2 || rep.Totals.Pages != 13 ||
		rep.Totals.Rows["200"] != 10 || rep.Totals.Rows["404"] != 3 || rep.Nodes[0].Pages != 10 {
		t.Fatalf("two runs and two nodes: %+v, %v; want done, a 10 + b 3", rep, err)
	}
	if err := SetCrawlState(ctx, rdb, k, ReportFailed); err != nil {
		t.Fatal(err)
	}
	if rep, _ = ReadReports(ctx, rdb, "rep1"); rep.State != ReportFailed {
		t.Fatalf("crawl state set failed, read %q", rep.State)
	}
	if rep, err = ReadReports(ctx, rdb, "other"); err != nil || len(rep.Nodes) != 0 || rep.State != "" {
		t.Fatalf("another crawl: %+v, %v; want empty", rep, err)
	}
}

// TestReportStaleAndStates: a report not refreshed within ReportStale is
// stale and not live; states derive from the nodes.
func TestReportStaleAndStates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []NodeReport
		want  string
	}{
		{"none", nil, ""},
		{"one live", []NodeReport{{State: ReportRunning}, {State: ReportDone, Final: true}}, ReportRunning},
		{"all paused", []NodeReport{{State: ReportPaused}, {State: ReportDone, Final: true}}, ReportPaused},
		{"stale", []NodeReport{{State: ReportRunning, Stale: true}, {State: ReportDone, Final: true}}, ReportFailed},
		{"stopped", []NodeReport{{State: ReportStopped, Final: true}, {State: ReportDone, Final: true}}, ReportStopped},
		{"done", []NodeReport{{State: ReportDone, Final: true}}, ReportDone},
	} {
		if got := deriveState(tc.nodes); got != tc.want {
			t.Errorf("%s: state %q, want %q", tc.name, got, tc.want)
		}
	}
	srv := redistest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := mustKeys(t, "rep2")
	if err := Publish(ctx, rdb, k, NodeReport{Node: "x", Role: RoleWorker, State: "sleeping"}); err == nil {
		t.Fatal("Publish took an unknown state")
	}
	if err := Publish(ctx, rdb, k, NodeReport{Node: "x", Role: RoleWorker, State: ReportRunning}); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, reportAtKey(k), "x", time.Now().Add(-time.Minute).UnixMilli())
	rep, err := ReadReports(ctx, rdb, "rep2")
	if err != nil || !rep.Nodes[0].Stale || rep.State != ReportFailed {
		t.Fatalf("old report: %+v, %v; want stale, failed", rep, err)
	}
}
