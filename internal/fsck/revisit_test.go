package fsck_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/dedup"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/fsck"
	"github.com/spider-crawler/spider/internal/state"
	"github.com/spider-crawler/spider/internal/store"
	"github.com/spider-crawler/spider/internal/websim"
	bolt "go.etcd.io/bbolt"
)

// TestRevisitSchedule: a state with a revisit schedule (records, due
// entries, a failed mark, a URL revisited so that the counters count it
// twice) is clean for fsck; a damaged revisit record is reported, and the
// repair replaces that record only: the other URLs keep their schedule
// (due times, failed mark), the damaged one's URL (named by its record in
// records.jsonl) gets a fresh record due at once and stays completed.
func TestRevisitSchedule(t *testing.T) {
	t.Parallel() // own web and directories; after the sequential tests, two at a time
	ctx := context.Background()
	dir := smallCrawlCopy(t)

	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st, err := state.Open(filepath.Join(dir, fsck.StateDir), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.OpenRecords(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	complete := func(r frontier.Request, o state.Outcome) {
		t.Helper()
		end, err := recs.AppendEnd(store.Record{URL: r.URL, Status: 200, Outcome: o.Class, Depth: r.Depth, FetchedAt: t0, PageNo: -1})
		if err != nil {
			t.Fatal(err)
		}
		o.RecordsEnd = end
		if _, err := st.Complete(ctx, r, o, nil); err != nil {
			t.Fatal(err)
		}
	}
	urls := []string{"http://rv.test/1", "http://rv.test/2", "http://rv.test/3"}
	acc, err := st.Discover(ctx, []frontier.Request{{URL: urls[0], Key: "rv.test:80"}, {URL: urls[1], Key: "rv.test:80"}, {URL: urls[2], Key: "rv.test:80"}})
	if err != nil || len(acc) != 3 {
		t.Fatalf("Discover: %v, %v", acc, err)
	}
	complete(acc[0], state.Outcome{Class: "200", Schedule: "s1", Due: t0})
	complete(acc[1], state.Outcome{Class: "200", Schedule: "s2", Due: t0.Add(time.Hour)})
	complete(acc[2], state.Outcome{Class: "dns", Failed: true, Schedule: "s3"})
	taken, err := st.TakeDue(ctx, t0, 10)
	if err != nil || len(taken) != 1 || taken[0].URL != urls[0] {
		t.Fatalf("TakeDue: %v, %v", taken, err)
	}
	complete(taken[0], state.Outcome{Class: "304", Schedule: "s1b", Due: t0.Add(2 * time.Hour)})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(recs.Close())
	must(st.Close())

	rep, err := fsck.Run(ctx, dir, fsck.Options{})
	must(err)
	if !rep.Clean() {
		t.Fatalf("a state with a revisit schedule (one URL revisited) is not clean: %v", rep.Findings)
	}

	// Damage the record of the second URL (its request no longer decodes).
	db, err := bolt.Open(filepath.Join(dir, fsck.StateDir, state.DBFile), 0o600, nil)
	must(err)
	must(db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("revisit"))
		kb := dedup.KeyOf(urls[1]).AppendBinary(nil)
		v := append([]byte(nil), b.Get(kb)...)
		if len(v) < 8 {
			t.Fatalf("no revisit record of %s in the state", urls[1])
		}
		v[0] = 9 // a record version this spider does not know
		return b.Put(kb, v)
	}))
	must(db.Close())
	rep, err = fsck.Run(ctx, dir, fsck.Options{})
	must(err)
	found := false
	for _, f := range rep.Findings {
		found = found || strings.Contains(f.What, "revisit record") && strings.Contains(f.What, "damaged")
	}
	if !found {
		t.Fatalf("a damaged revisit record is not reported: %v", rep.Findings)
	}
	rep, err = fsck.Run(ctx, dir, fsck.Options{Repair: true})
	must(err)
	if !rep.Repaired {
		t.Fatalf("not repaired: %+v", rep)
	}
	rep, err = fsck.Run(ctx, dir, fsck.Options{})
	must(err)
	if !rep.Clean() {
		t.Fatalf("not clean after the repair: %v", rep.Findings)
	}
	st, err = state.Open(filepath.Join(dir, fsck.StateDir), state.Options{})
	must(err)
	defer st.Close()
	if r, d, err := st.Scheduled(ctx); err != nil || r != 3 || d != 2 {
		t.Fatalf("after the repair: %d revisit records, %d due, %v; want 3, 2 (the damaged one made anew, due now)", r, d, err)
	}
	if next, ok, err := st.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("NextDue after the repair = %v, %v, %v; want the revisited URL's", next, ok, err)
	}
	if n, err := st.RetryFailed(ctx, t0); err != nil || n != 1 {
		t.Fatalf("RetryFailed after the repair = %d, %v; want the failed URL", n, err)
	}
	again, err := st.Discover(ctx, []frontier.Request{{URL: urls[1]}})
	if err != nil || len(again) != 0 {
		t.Fatalf("the URL whose revisit record was damaged is accepted again: %v, %v", again, err)
	}
	// Its fresh record is due now: fetched again, without validators.
	due, err := st.TakeDue(ctx, time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var fresh *frontier.Request
	for i := range due {
		if due[i].URL == urls[1] {
			fresh = &due[i]
		}
	}
	if fresh == nil || fresh.Schedule != "" || fresh.Key == "" {
		t.Fatalf("TakeDue after the repair = %+v; want %s with no schedule entry and a politeness key", due, urls[1])
	}
}

// TestRepairDropsALaterRecord: a URL fetched twice whose later record is
// removed by the repair (its page is gone) keeps its earlier record, so no
// URL is lost; the records file is shorter all the same, and the state's
// records mark must follow it (found in the fault suite: a truncated page
// file, a repair, then "records were lost" at the next check and a crawl
// that would not resume).
func TestRepairDropsALaterRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := smallCrawlCopy(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st, err := state.Open(filepath.Join(dir, fsck.StateDir), state.Options{})
	must(err)
	recs, err := store.OpenRecords(dir, store.Options{})
	must(err)
	complete := func(r frontier.Request, o state.Outcome, pageNo int64) {
		t.Helper()
		end, err := recs.AppendEnd(store.Record{URL: r.URL, Status: 200, Outcome: o.Class, Depth: r.Depth, FetchedAt: t0, PageNo: pageNo})
		must(err)
		o.RecordsEnd = end
		_, err = st.Complete(ctx, r, o, nil)
		must(err)
	}
	u := "http://twice.test/1"
	acc, err := st.Discover(ctx, []frontier.Request{{URL: u, Key: "twice.test"}})
	if err != nil || len(acc) != 1 {
		t.Fatalf("Discover: %v, %v", acc, err)
	}
	complete(acc[0], state.Outcome{Class: "200", Schedule: "s1", Due: t0}, -1)
	taken, err := st.TakeDue(ctx, t0, 10)
	if err != nil || len(taken) != 1 {
		t.Fatalf("TakeDue: %v, %v", taken, err)
	}
	// The revisit's record names a page the page files do not hold.
	complete(taken[0], state.Outcome{Class: "200", Schedule: "s2", Due: t0.Add(time.Hour)}, 1<<20)
	must(recs.Close())
	must(st.Close())

	rep, err := fsck.Run(ctx, dir, fsck.Options{Repair: true})
	must(err)
	if !rep.Repaired {
		t.Fatalf("not repaired: %+v", rep)
	}
	if len(rep.Dropped) != 0 {
		t.Errorf("the repair lost %v, which keeps its earlier record", rep.Dropped)
	}
	rep, err = fsck.Run(ctx, dir, fsck.Options{})
	must(err)
	if !rep.Clean() {
		t.Fatalf("not clean after the repair: %v", rep.Findings)
	}
}


// smallCrawlCopy returns a copy of a finished crawl of a small websim web
// (two hosts of 12 pages) that the test may change.
func smallCrawlCopy(t *testing.T) string {
	t.Helper()
	srv, err := websim.Start(context.Background(), websim.Config{Seed: 12, Hosts: 2, PagesPerHost: 12})
	if err != nil {
		t.Fatalf("cannot start websim: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	g := newGolden(t, srv, false)
	dir := t.TempDir()
	copyDir(t, g.dir, dir)
	return dir
}
