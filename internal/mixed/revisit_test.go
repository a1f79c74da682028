package mixed_test

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/protocol"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
)

// TestContinuousHosts runs a continuous, adaptive §0 crawl (one network, a
// center and two hosts, each with its redis-server) on websim's changing
// pages: the hosts go on revisiting after the system is done. One host is
// killed (its context ends, as a crash) while it revisits and started
// again. Every record is judged against the page's change history, as
// TestContinuousMasterWorkers does: ≥ 80 % of the revisits to unchanged
// pages answered 304, no changed page answered 304, every changed page
// stored again; and every page a host fetched is in its schedule.
func TestContinuousHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 s, starts redis-servers")
	}
	s := newSystem(t, 1, 2, websim.Config{Seed: 7, Hosts: 3, PagesPerHost: 12, ChangeDay: 2 * time.Second, DisappearShare: -1})
	s.crawl.Revisit = crawl.RevisitAdaptive
	s.crawl.RevisitMin = crawl.Duration(200 * time.Millisecond)
	s.crawl.RevisitInitial = crawl.Duration(400 * time.Millisecond)
	s.crawl.RevisitMax = crawl.Duration(1500 * time.Millisecond)
	s.crawl.Continuous = true
	s.startCenter("n1", 0)
	s.startHost("n1", "h1", 0)
	s.startHost("n1", "h2", 0)
	time.Sleep(5 * time.Second)
	s.kill(protocol.HostAddr("n1", "h1"))
	killed := time.Now()
	before := fetchedBy(t, s.dirs[protocol.HostAddr("n1", "h1")], time.Time{})
	s.startHost("n1", "h1", 0)
	time.Sleep(5 * time.Second)
	s.stopAll()
	// The restarted host revisits its pages (revisit-max 1.5 s), even
	// though the system was done by then: none lost its entry at the kill.
	after := fetchedBy(t, s.dirs[protocol.HostAddr("n1", "h1")], killed)
	var lost []string
	for u := range before {
		if !after[u] {
			lost = append(lost, u)
		}
	}
	if len(before) == 0 || len(lost) > 0 {
		t.Errorf("h1 fetched %d pages before its kill; %d not fetched again after its restart: %v", len(before), len(lost), lost[:min(5, len(lost))])
	}

	web := s.srv.Web
	const slack = 150 * time.Millisecond
	ambiguous := func(u string, at time.Time) bool {
		a, _ := web.VersionAt(u, at.Add(-slack))
		b, _ := web.VersionAt(u, at.Add(slack))
		return a != b
	}
	var unchanged, got304, changed, restored, pages int
	for _, h := range []string{"h1", "h2"} {
		dir := s.dirs[protocol.HostAddr("n1", h)]
		rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var recs []store.Record
		if _, err := rs.Iterate(func(r store.Record) error { recs = append(recs, r); return nil }); err != nil {
			t.Fatal(err)
		}
		rs.Close()
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].FetchedAt.Before(recs[j].FetchedAt) })
		last := map[string]store.Record{}
		for _, r := range recs {
			if r.Status != 200 && r.Status != 304 {
				continue
			}
			prev, seen := last[r.URL]
			last[r.URL] = r
			if !seen {
				if r.Status == 304 {
					t.Errorf("%s: first fetch answered 304", r.URL)
				}
				continue
			}
			if _, ok := web.VersionAt(r.URL, r.FetchedAt); !ok || ambiguous(r.URL, prev.FetchedAt) || ambiguous(r.URL, r.FetchedAt) {
				continue
			}
			v0, _ := web.VersionAt(r.URL, prev.FetchedAt)
			v1, _ := web.VersionAt(r.URL, r.FetchedAt)
			switch {
			case v0 == v1:
				unchanged++
				if r.Status == 304 {
					got304++
				}
			case r.Status == 304:
				t.Errorf("%s: changed (version %d → %d) but answered 304", r.URL, v0, v1)
			default:
				changed++
				if r.PageNo >= 0 {
					restored++
				}
			}
		}
		// Every page this host fetched is in its schedule: due, or
		// pending with its entry (taken by the revisits in flight).
		st, err := state.Open(filepath.Join(dir, "schedule"), state.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		have := map[string]bool{}
		if err := st.LoadPending(ctx, func(q frontier.Request) error { have[q.URL] = q.Schedule != ""; return nil }); err != nil {
			t.Fatal(err)
		}
		due, err := st.TakeDue(ctx, time.Now().Add(24*time.Hour), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range due {
			have[q.URL] = true
		}
		st.Close()
		var lost []string
		for u := range last {
			pages++
			if !have[u] {
				lost = append(lost, u)
			}
		}
		if len(lost) > 0 {
			t.Errorf("%s: %d of %d pages fetched have no schedule entry: %v", h, len(lost), len(last), lost[:min(5, len(lost))])
		}
	}
	var counts []crawl.RevisitCounts
	s.mu.Lock()
	for _, rs := range s.results {
		for _, r := range rs {
			counts = append(counts, r.Revisits)
		}
	}
	s.mu.Unlock()
	t.Logf("%d pages; revisits: %d unchanged (%d answered 304), %d changed (%d stored again); hosts' runs counted %+v", pages, unchanged, got304, changed, restored, counts)
	if unchanged < 10 || changed < 2 {
		t.Fatalf("too few revisits to judge: %d unchanged, %d changed (want ≥ 10 and ≥ 2)", unchanged, changed)
	}
	if float64(got304) < 0.8*float64(unchanged) {
		t.Errorf("%d of %d revisits to unchanged pages answered 304, want ≥ 80%%", got304, unchanged)
	}
	if restored != changed {
		t.Errorf("%d of %d changed pages stored again", restored, changed)
	}
}

// fetchedBy returns the URLs of the page store in dir answered 200 or 304
// at or after since.
func fetchedBy(t *testing.T, dir string, since time.Time) map[string]bool {
	t.Helper()
	rs, err := store.OpenRecords(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]bool{}
	if _, err := rs.Iterate(func(r store.Record) error {
		if (r.Status == 200 || r.Status == 304) && !r.FetchedAt.Before(since) {
			out[r.URL] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
