package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/store"
)

// fakeEngine stands for crawl.Engine.
type fakeEngine struct {
	state string
	err   error
	seeds []string
	stops int
	// clock is each host's politeness state; perIP: HostStates says no.
	clock map[string]frontier.KeyState
	perIP bool
	cfg   crawl.Config
}

func (f *fakeEngine) HostStates(hosts []string) ([]frontier.KeyState, bool) {
	if f.perIP {
		return nil, false
	}
	out := make([]frontier.KeyState, len(hosts))
	for i, h := range hosts {
		out[i] = f.clock[h]
	}
	return out, true
}
func (f *fakeEngine) Config() crawl.Config { return f.cfg }

func (f *fakeEngine) Progress() crawl.Progress {
	return crawl.Progress{Queued: 5, InFlight: 2, Hosts: 3}
}
func (f *fakeEngine) RunState() string { return f.state }
func (f *fakeEngine) Pause() error     { return f.err }
func (f *fakeEngine) Resume() error    { return f.err }
func (f *fakeEngine) Stop()            { f.stops++ }
func (f *fakeEngine) AddSeeds(_ context.Context, urls []string) (int, error) {
	f.seeds = append(f.seeds, urls...)
	return len(urls), f.err
}

func TestEngineView(t *testing.T) {
	ctx := context.Background()
	eng := &fakeEngine{state: crawl.StateRunning}
	v := NewEngineView(eng, t.TempDir(), nil)
	st, err := v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Source != "in-process" || st.State != "running" || !st.Control || st.Queue == nil || st.Queue.Queued != 5 || st.Queue.InFlight != 2 {
		t.Fatalf("snapshot %+v", st)
	}
	tests := []struct {
		seeds []string
		want  error
	}{
		{[]string{"http://a.test/", "https://b.test/x"}, nil},
		{[]string{"http://a.test/", "ftp://b.test/"}, ErrInvalid},
		{[]string{"/relative"}, ErrInvalid},
		{[]string{"http://"}, ErrInvalid},
	}
	for _, tc := range tests {
		eng.seeds = nil
		_, err := v.AddSeeds(ctx, tc.seeds)
		if !errors.Is(err, tc.want) || (tc.want != nil && len(eng.seeds) > 0) {
			t.Errorf("AddSeeds(%q): err %v, engine got %q", tc.seeds, err, eng.seeds)
		}
	}
	eng.err = fmt.Errorf("cannot pause: %w", crawl.ErrNotRunning)
	if err := v.Pause(ctx); !errors.Is(err, ErrConflict) {
		t.Errorf("Pause of a crawl not running: %v, want ErrConflict", err)
	}
	if err := v.SetTopicPriority(ctx, "news", 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("SetTopicPriority: %v", err)
	}
	if err := v.Stop(ctx); err != nil || eng.stops != 1 {
		t.Fatalf("Stop: %v, %d stops", err, eng.stops)
	}
	v.Finished()
	if st, _ = v.Snapshot(ctx); st.State != "finished" || st.Control {
		t.Fatalf("after Finished: state %q control %v", st.State, st.Control)
	}
	if err := v.Resume(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("Resume after Finished: %v", err)
	}
}

// TestEngineViewHostClockAndConfig: the host rows get each host's time to
// its next allowed request from the engine's frontier (rounded up to the
// millisecond, 0 when it may start now), and the configuration is shown
// without local settings; with --per-ip the clock is not per host and
// HostClock stays false.
func TestEngineViewHostClockAndConfig(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	var lines string
	for i, u := range []string{"http://a.test/1", "http://a.test/2", "http://b.test/", "http://c.test/"} {
		lines += recLine(t, store.Record{URL: u, Outcome: "200", Status: 200, FetchedAt: t0, DurationMS: int64(10 * (i + 1))})
	}
	appendFile(t, filepath.Join(dir, store.RecordsFileName), lines)
	eng := &fakeEngine{state: crawl.StateRunning,
		clock: map[string]frontier.KeyState{
			"a.test": {Next: t0.Add(400*time.Millisecond + 1), Leases: 0, Queued: 7},
			"b.test": {Next: t0.Add(-time.Second), Leases: 1, Queued: 2},
		},
		cfg: crawl.Config{Data: "/secret/data", Seeds: []string{"http://a.test/"}, Scope: "any", MaxDepth: -7, Delay: crawl.Duration(250 * time.Millisecond),
			Resolve: []string{"a.test:80:127.0.0.1"}, Topics: "topics.yaml", UserAgent: "ua/1"},
	}
	v := NewEngineView(eng, dir, func() time.Time { return t0 })
	b, st := snapshotJSON(t, v)
	if !st.HostClock || len(st.Hosts) != 3 {
		t.Fatalf("host clock %v, %d rows:\n%s", st.HostClock, len(st.Hosts), b)
	}
	want := map[string]HostRow{
		"a.test": {Host: "a.test", Pages: 2, MeanLatencyMS: 15, NextFetchMS: 401, Queued: 7},
		"b.test": {Host: "b.test", Pages: 1, MeanLatencyMS: 30, NextFetchMS: 0, InFlight: 1, Queued: 2},
		"c.test": {Host: "c.test", Pages: 1, MeanLatencyMS: 40},
	}
	for _, h := range st.Hosts {
		if h != want[h.Host] {
			t.Errorf("host row %+v, want %+v", h, want[h.Host])
		}
	}
	c := st.Config
	if c == nil || c.Mode != "topics" || c.MaxDepth != -1 || c.DelayMS != 250 || c.Scope != "any" || c.UserAgent != "ua/1" || len(c.Seeds) != 1 {
		t.Fatalf("config %+v", c)
	}
	for _, local := range []string{"/secret/data", "127.0.0.1", "resolve", `"data"`} {
		if strings.Contains(string(b), local) {
			t.Errorf("the snapshot shows a local setting (%s):\n%s", local, b)
		}
	}
	eng.perIP = true
	if _, st = snapshotJSON(t, v); st.HostClock || st.Hosts[0].NextFetchMS != 0 || st.Hosts[0].Queued != 0 {
		t.Errorf("per-IP politeness: host clock %v, row %+v", st.HostClock, st.Hosts[0])
	}
}

// TestNewCrawlConfigBoundsSeeds: a crawl of many seeds shows the first
// MaxConfigSeeds and their total.
func TestNewCrawlConfigBoundsSeeds(t *testing.T) {
	seeds := make([]string, 1000)
	for i := range seeds {
		seeds[i] = fmt.Sprintf("http://s%d.test/", i)
	}
	c := NewCrawlConfig(crawl.Config{Seeds: seeds})
	if len(c.Seeds) != MaxConfigSeeds || c.SeedsTotal != 1000 || c.Seeds[0] != seeds[0] {
		t.Fatalf("%d seeds shown of %d", len(c.Seeds), c.SeedsTotal)
	}
	if c = NewCrawlConfig(crawl.Config{}); c.Seeds == nil {
		t.Fatal("no seeds: want an empty list, not null")
	}
}
