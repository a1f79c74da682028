package statetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/state"
)

// The revisit schedule (crawlstate.Revisits), which every back-end keeps.

// t0 is the schedule's clock in these tests (the state never reads the
// wall clock: every time is given).
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func revisits(t *testing.T, b Backend) crawlstate.Revisits {
	t.Helper()
	rv, ok := b.(crawlstate.Revisits)
	if !ok {
		t.Fatalf("%T does not implement crawlstate.Revisits", b)
	}
	return rv
}

// scheduled completes each accepted request with a Schedule "s:URL" due
// at t0 plus the given seconds, and returns them.
func scheduled(t *testing.T, s Backend, secs []int, urls ...string) []frontier.Request {
	t.Helper()
	ctx := context.Background()
	acc, err := s.Discover(ctx, Reqs(urls...))
	must(t, err)
	if len(acc) != len(urls) {
		t.Fatalf("accepted %d of %d", len(acc), len(urls))
	}
	for i, r := range acc {
		_, err := s.Complete(ctx, r, state.Outcome{Class: "200", Schedule: "s:" + r.URL, Due: t0.Add(time.Duration(secs[i]) * time.Second)}, nil)
		must(t, err)
	}
	return acc
}

func checkScheduled(t *testing.T, rv crawlstate.Revisits, records, due int64) {
	t.Helper()
	r, d, err := rv.Scheduled(context.Background())
	must(t, err)
	if r != records || d != due {
		t.Fatalf("Scheduled = %d records, %d due; want %d, %d", r, d, records, due)
	}
}

// testTakeDueOrder: TakeDue returns the due URLs earliest first, at most
// max, each pending again under a fresh Seq with its record's request
// (Depth, Topic, Kind, Schedule as completed, Attempt 0); a URL is not
// taken before its Due and is at its Due; NextDue follows; Counts: each
// taken URL is pending again, never seen again.
func (r *runner) testTakeDueOrder(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	rv := revisits(t, s)
	if _, ok, err := rv.NextDue(ctx); err != nil || ok {
		t.Fatalf("NextDue of an empty schedule = %v, %v; want none", ok, err)
	}
	in := Reqs("http://r/a", "http://r/b", "http://r/c", "http://r/d", "http://r/e")
	for i := range in {
		in[i].Depth, in[i].Priority, in[i].Topic = i, i, "news"
	}
	in[3].Kind = frontier.KindSitemap
	acc, err := s.Discover(ctx, in)
	must(t, err)
	secs := []int{40, 10, 30, 20, 50}
	var last uint64
	for i, a := range acc {
		a.Attempt = 2 // a retried fetch: the record keeps Attempt 0
		last = max(last, a.Seq)
		must(t, s.UpdatePending(ctx, a))
		_, err := s.Complete(ctx, a, state.Outcome{Class: "200", Schedule: "s:" + a.URL, Due: t0.Add(time.Duration(secs[i]) * time.Second)}, nil)
		must(t, err)
	}
	checkScheduled(t, rv, 5, 5)
	checkCounts(t, s, Counts{Pending: 0, Seen: 5, PagesStored: -1})
	if next, ok, err := rv.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("NextDue = %v, %v, %v; want %v", next, ok, err, t0.Add(10*time.Second))
	}
	// Before the first Due: nothing.
	if got, err := rv.TakeDue(ctx, t0.Add(9999*time.Millisecond), 10); err != nil || len(got) != 0 {
		t.Fatalf("TakeDue before any Due = %v, %v", URLs(got), err)
	}
	// At 30 s three are due; max 2 takes the two earliest.
	got, err := rv.TakeDue(ctx, t0.Add(30*time.Second), 2)
	must(t, err)
	if want := []string{"http://r/b", "http://r/d"}; !slices.Equal(URLs(got), want) {
		t.Fatalf("TakeDue(30 s, 2) = %v, want %v", URLs(got), want)
	}
	byURL := map[string]frontier.Request{}
	for _, a := range in {
		byURL[a.URL] = a
	}
	for _, g := range got {
		if g.Seq <= last {
			t.Fatalf("taken %s under Seq %d, not fresh (largest so far %d)", g.URL, g.Seq, last)
		}
		last = g.Seq
		want := byURL[g.URL]
		want.Seq, want.Attempt, want.Schedule = g.Seq, 0, "s:"+g.URL
		if g != want {
			t.Fatalf("taken %+v, want %+v", g, want)
		}
	}
	checkScheduled(t, rv, 5, 3)
	checkCounts(t, s, Counts{Pending: 2, Seen: 5, PagesStored: -1})
	if pend := LoadAll(t, s); !slices.Equal(pend, got) {
		t.Fatalf("pending %+v, want the taken %+v", pend, got)
	}
	for _, g := range got {
		if ok, err := s.Current(ctx, g); err != nil || !ok {
			t.Fatalf("Current(%s) = %v, %v; want a live pending copy", g.URL, ok, err)
		}
	}
	// A URL with a revisit record is still completed for Discover.
	if news, err := s.Discover(ctx, Reqs("http://r/a", "http://r/b")); err != nil || len(news) != 0 {
		t.Fatalf("Discover of scheduled URLs accepted %v, %v", URLs(news), err)
	}
	if next, ok, err := rv.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("NextDue = %v, %v, %v; want %v", next, ok, err, t0.Add(30*time.Second))
	}
	// Exactly at its Due the URL is due.
	got, err = rv.TakeDue(ctx, t0.Add(30*time.Second), 10)
	must(t, err)
	if want := []string{"http://r/c"}; !slices.Equal(URLs(got), want) {
		t.Fatalf("TakeDue(30 s) again = %v, want %v", URLs(got), want)
	}
	got, err = rv.TakeDue(ctx, t0.Add(time.Hour), 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("TakeDue with max 0 = %v, %v", URLs(got), err)
	}
	got, err = rv.TakeDue(ctx, t0.Add(time.Hour), 10)
	must(t, err)
	if want := []string{"http://r/a", "http://r/e"}; !slices.Equal(URLs(got), want) {
		t.Fatalf("TakeDue(1 h) = %v, want %v", URLs(got), want)
	}
	checkScheduled(t, rv, 5, 0)
	if _, ok, err := rv.NextDue(ctx); err != nil || ok {
		t.Fatalf("NextDue with nothing in the index = %v, %v", ok, err)
	}
	checkCounts(t, s, Counts{Pending: 5, Seen: 5, PagesStored: -1})
}

// testTakeDueExactlyOnce: concurrent TakeDue calls hand every due URL out
// exactly once, each pending once.
func (r *runner) testTakeDueExactlyOnce(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	rv := revisits(t, s)
	const n, workers = 60, 6
	var urls []string
	var secs []int
	for i := 0; i < n; i++ {
		urls = append(urls, fmt.Sprintf("http://once/%d", i))
		secs = append(secs, i%7)
	}
	scheduled(t, s, secs, urls...)
	var (
		mu   sync.Mutex
		won  = map[string]int{}
		seqs = map[uint64]bool{}
		wg   sync.WaitGroup
		errs = make(chan error, workers)
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := rv.TakeDue(ctx, t0.Add(time.Minute), 4)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, g := range got {
					won[g.URL]++
					if seqs[g.Seq] {
						errs <- fmt.Errorf("Seq %d handed out twice", g.Seq)
					}
					seqs[g.Seq] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(won) != n {
		t.Fatalf("%d URLs taken, want %d", len(won), n)
	}
	for u, c := range won {
		if c != 1 {
			t.Fatalf("%s taken %d times", u, c)
		}
	}
	if pend := LoadAll(t, s); len(pend) != n {
		t.Fatalf("%d pending, want %d", len(pend), n)
	}
	checkScheduled(t, rv, n, 0)
}

// testRevisitReplace: the Complete of a taken URL replaces its record
// (one record, the new Schedule and Due, counted once more), a Complete
// with neither Schedule nor Failed removes it, and a Complete of a URL no
// longer pending changes nothing.
func (r *runner) testRevisitReplace(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	rv := revisits(t, s)
	acc := scheduled(t, s, []int{5, 6}, "http://rep/a", "http://rep/b")
	got, err := rv.TakeDue(ctx, t0.Add(time.Minute), 10)
	must(t, err)
	if len(got) != 2 {
		t.Fatalf("took %v", URLs(got))
	}
	a, b := got[0], got[1]
	_, err = s.Complete(ctx, a, state.Outcome{Class: "304", Schedule: "v2", Due: t0.Add(2 * time.Minute)}, nil)
	must(t, err)
	// A repeated completion of the same copy does nothing.
	_, err = s.Complete(ctx, a, state.Outcome{Class: "304", Schedule: "v3", Due: t0.Add(time.Second)}, nil)
	must(t, err)
	// A stale copy (the first fetch's Seq) completes nothing either.
	_, err = s.Complete(ctx, acc[1], state.Outcome{Class: "200", Schedule: "stale", Due: t0}, nil)
	must(t, err)
	checkScheduled(t, rv, 2, 1)
	c, err := s.Counters(ctx)
	must(t, err)
	if c["200"] != 2 || c["304"] != 1 {
		t.Fatalf("counters %v, want 200: 2 (first fetches), 304: 1 (the revisit)", c)
	}
	if got, err := rv.TakeDue(ctx, t0.Add(time.Minute), 10); err != nil || len(got) != 0 {
		t.Fatalf("TakeDue before the new Due = %v, %v (the repeated Complete's Due was used?)", URLs(got), err)
	}
	got, err = rv.TakeDue(ctx, t0.Add(2*time.Minute), 10)
	must(t, err)
	if len(got) != 1 || got[0].URL != a.URL || got[0].Schedule != "v2" {
		t.Fatalf("TakeDue = %+v, want %s with Schedule v2", got, a.URL)
	}
	// Done for good: the record goes.
	_, err = s.Complete(ctx, b, state.Outcome{Class: "410"}, nil)
	must(t, err)
	checkScheduled(t, rv, 1, 0)
	// A record without Due is kept but never due.
	_, err = s.Complete(ctx, got[0], state.Outcome{Class: "200", Schedule: "v4"}, nil)
	must(t, err)
	checkScheduled(t, rv, 1, 0)
	if got, err := rv.TakeDue(ctx, t0.Add(1000*time.Hour), 10); err != nil || len(got) != 0 {
		t.Fatalf("TakeDue of records without Due = %v, %v", URLs(got), err)
	}
	if _, ok, err := rv.NextDue(ctx); err != nil || ok {
		t.Fatalf("NextDue = %v, %v; want none", ok, err)
	}
	checkCounts(t, s, Counts{Pending: 0, Seen: 2, PagesStored: -1})
}

// testRetryFailed: Outcome.Failed marks a URL (with a Schedule or
// without); RetryFailed makes every marked URL due now and counts them,
// leaves a marked URL that is pending alone; a later Complete without
// Failed clears the mark.
func (r *runner) testRetryFailed(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	rv := revisits(t, s)
	acc, err := s.Discover(ctx, Reqs("http://f/dns", "http://f/timeout", "http://f/ok", "http://f/later"))
	must(t, err)
	outs := []state.Outcome{
		{Class: "dns", Failed: true}, // no schedule: a plain crawl's failure
		{Class: "timeout", Failed: true, Schedule: "retry:1", Due: t0.Add(time.Hour)}, // its own back-off
		{Class: "200", Schedule: "s", Due: t0.Add(time.Hour)},
		{Class: "error", Failed: true, Schedule: "retry:2", Due: t0.Add(time.Second)},
	}
	for i, a := range acc {
		_, err := s.Complete(ctx, a, outs[i], nil)
		must(t, err)
	}
	checkScheduled(t, rv, 4, 3)
	// http://f/later is taken (pending) before the retry.
	got, err := rv.TakeDue(ctx, t0.Add(time.Second), 10)
	must(t, err)
	if len(got) != 1 || got[0].URL != "http://f/later" || got[0].Schedule != "retry:2" {
		t.Fatalf("TakeDue = %+v, want http://f/later", got)
	}
	later := got[0]
	n, err := rv.RetryFailed(ctx, t0.Add(time.Minute))
	must(t, err)
	if n != 2 {
		t.Fatalf("RetryFailed = %d, want 2 (dns, timeout; the pending one is left alone)", n)
	}
	checkScheduled(t, rv, 4, 3)
	if next, ok, err := rv.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("NextDue = %v, %v, %v; want the retry time", next, ok, err)
	}
	got, err = rv.TakeDue(ctx, t0.Add(time.Minute), 10)
	must(t, err)
	if want := []string{"http://f/dns", "http://f/timeout"}; !slices.Equal(slices.Sorted(slices.Values(URLs(got))), want) {
		t.Fatalf("TakeDue after RetryFailed = %v, want %v", URLs(got), want)
	}
	for _, g := range got {
		if g.URL == "http://f/dns" && g.Schedule != "" {
			t.Fatalf("the failure without a schedule came back with Schedule %q", g.Schedule)
		}
	}
	// dns succeeds now: its mark is cleared; timeout fails again.
	for _, g := range got {
		o := state.Outcome{Class: "200", Schedule: "ok"}
		if g.URL == "http://f/timeout" {
			o = state.Outcome{Class: "timeout", Failed: true, Schedule: "retry:2", Due: t0.Add(2 * time.Hour)}
		}
		_, err := s.Complete(ctx, g, o, nil)
		must(t, err)
	}
	_, err = s.Complete(ctx, later, state.Outcome{Class: "200", Schedule: "ok"}, nil)
	must(t, err)
	n, err = rv.RetryFailed(ctx, t0.Add(3*time.Minute))
	must(t, err)
	if n != 1 {
		t.Fatalf("RetryFailed = %d, want 1 (timeout)", n)
	}
	got, err = rv.TakeDue(ctx, t0.Add(3*time.Minute), 10)
	must(t, err)
	if !slices.Equal(URLs(got), []string{"http://f/timeout"}) {
		t.Fatalf("TakeDue = %v, want the one failed URL", URLs(got))
	}
}

// testNotDuplicateOfItself: a revisited page with the same content (same
// fingerprint) or a slightly changed one (near SimHash) is not a duplicate
// of itself; another page with its content still is.
func (r *runner) testNotDuplicateOfItself(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	rv := revisits(t, s)
	const h = uint64(0x9e3779b97f4a7c15)
	acc, err := s.Discover(ctx, Reqs("http://self/a", "http://self/copy", "http://self/near"))
	must(t, err)
	res, err := s.Complete(ctx, acc[0], state.Outcome{Class: "200", Fingerprint: 11, SimHash: h, NearDistance: 3, Schedule: "s", Due: t0}, nil)
	must(t, err)
	if res.DuplicateOf != "" {
		t.Fatalf("first fetch: DuplicateOf %q", res.DuplicateOf)
	}
	for i, tt := range []struct {
		name string
		o    state.Outcome
	}{
		{"unchanged", state.Outcome{Class: "200", Fingerprint: 11, SimHash: h, NearDistance: 3, Schedule: "s", Due: t0}},
		{"changed a little", state.Outcome{Class: "200", Fingerprint: 12, SimHash: h ^ 1<<9, NearDistance: 3, Schedule: "s", Due: t0}},
		{"unchanged, owner named", state.Outcome{Class: "200", Fingerprint: 11, SimHash: h, NearDistance: 3, Schedule: "s", Due: t0, URL: "http://self/a"}},
		// Now recorded under another owner URL (say its final URL): the
		// tables name the request's own URL, still not a duplicate.
		{"unchanged, another owner", state.Outcome{Class: "200", Fingerprint: 11, SimHash: h, NearDistance: 3, Schedule: "s", Due: t0, URL: "http://self/a-final"}},
		{"near, another owner", state.Outcome{Class: "200", Fingerprint: 14, SimHash: h ^ 1<<3, NearDistance: 3, Schedule: "s", Due: t0, URL: "http://self/a-final"}},
	} {
		got, err := rv.TakeDue(ctx, t0, 1)
		must(t, err)
		if len(got) != 1 {
			t.Fatalf("%s: took %v", tt.name, URLs(got))
		}
		res, err := s.Complete(ctx, got[0], tt.o, nil)
		must(t, err)
		if res.DuplicateOf != "" || res.Near {
			t.Errorf("revisit %d (%s): DuplicateOf %q Near %v, want not a duplicate of itself", i, tt.name, res.DuplicateOf, res.Near)
		}
	}
	res, err = s.Complete(ctx, acc[1], state.Outcome{Class: "200", Fingerprint: 11, SimHash: h, NearDistance: 3}, nil)
	must(t, err)
	if res.DuplicateOf != "http://self/a" || res.Near {
		t.Errorf("an exact copy: DuplicateOf %q Near %v, want http://self/a", res.DuplicateOf, res.Near)
	}
	res, err = s.Complete(ctx, acc[2], state.Outcome{Class: "200", Fingerprint: 13, SimHash: h ^ 1<<40, NearDistance: 3}, nil)
	must(t, err)
	if res.DuplicateOf != "http://self/a" || !res.Near {
		t.Errorf("a near copy: DuplicateOf %q Near %v, want http://self/a near", res.DuplicateOf, res.Near)
	}
}

// testRevisitReopen: the schedule survives closing and reopening: records,
// due index, failed marks, and a taken URL stays pending with its
// Schedule, never due as well.
func (r *runner) testRevisitReopen(t *testing.T) {
	ctx := context.Background()
	name := r.name(t)
	s := r.open(t, name, small(state.SeenExact))
	acc := scheduled(t, s, []int{3, 1, 2}, "http://re/a", "http://re/b", "http://re/c")
	fail, err := s.Discover(ctx, Reqs("http://re/fail"))
	must(t, err)
	_, err = s.Complete(ctx, fail[0], state.Outcome{Class: "dns", Failed: true}, nil)
	must(t, err)
	got, err := revisits(t, s).TakeDue(ctx, t0.Add(time.Second), 10)
	must(t, err)
	if len(got) != 1 || got[0].URL != "http://re/b" {
		t.Fatalf("took %v", URLs(got))
	}
	must(t, s.Close())
	s = r.open(t, name, small(state.SeenExact))
	rv := revisits(t, s)
	checkScheduled(t, rv, 4, 2)
	if pend := LoadAll(t, s); len(pend) != 1 || pend[0] != got[0] {
		t.Fatalf("pending after reopen %+v, want %+v", pend, got)
	}
	if next, ok, err := rv.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("NextDue after reopen = %v, %v, %v", next, ok, err)
	}
	if n, err := rv.RetryFailed(ctx, t0.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("RetryFailed after reopen = %d, %v; want 1", n, err)
	}
	all, err := rv.TakeDue(ctx, t0.Add(time.Hour), 10)
	must(t, err)
	if want := []string{"http://re/c", "http://re/a", "http://re/fail"}; !slices.Equal(URLs(all), want) {
		t.Fatalf("TakeDue after reopen = %v, want %v", URLs(all), want)
	}
	for _, a := range all {
		if a.URL == acc[0].URL && a.Schedule != "s:"+acc[0].URL {
			t.Fatalf("Schedule after reopen %q", a.Schedule)
		}
	}
	checkCounts(t, s, Counts{Pending: 4, Seen: 4, PagesStored: -1})
}

func rescheduler(t *testing.T, b Backend) crawlstate.Rescheduler {
	t.Helper()
	rs, ok := b.(crawlstate.Rescheduler)
	if !ok {
		t.Fatalf("%T does not implement crawlstate.Rescheduler", b)
	}
	return rs
}

func checkCounts2(t *testing.T, rs crawlstate.Rescheduler, now time.Time, want crawlstate.ScheduleCounts) {
	t.Helper()
	got, err := rs.ScheduleCounts(context.Background(), now)
	must(t, err)
	if got.Records != want.Records || got.Due != want.Due || got.Overdue != want.Overdue || got.Failed != want.Failed || !got.Next.Equal(want.Next) {
		t.Fatalf("ScheduleCounts(%s) = %+v, want %+v", now.Format(time.TimeOnly), got, want)
	}
}

// testReschedule: Reschedule hands fn only the URLs with a record that
// has a Schedule and is not pending, once per URL; what fn returns
// replaces the Schedule and the Due (the due index follows, zero takes the
// URL out of it), the failed mark stays; ScheduleCounts counts records,
// due, overdue at now, failed, and the next Due.
func (r *runner) testReschedule(t *testing.T) {
	ctx := context.Background()
	s := r.open(t, r.name(t), small(state.SeenExact))
	rv, rs := revisits(t, s), rescheduler(t, s)
	checkCounts2(t, rs, t0, crawlstate.ScheduleCounts{})
	if n, err := rs.Reschedule(ctx, nil, nil); err != nil || n != 0 {
		t.Fatalf("Reschedule of no URL = %d, %v", n, err)
	}
	scheduled(t, s, []int{10, 20, 30}, "http://h/a", "http://h/b", "http://h/c")
	acc, err := s.Discover(ctx, Reqs("http://h/d", "http://h/e", "http://h/f"))
	must(t, err)
	// d: failed with a schedule (retry back-off); e: failed without one;
	// f: done for good (no record).
	_, err = s.Complete(ctx, acc[0], state.Outcome{Class: "timeout", Schedule: "s:http://h/d", Due: t0.Add(40 * time.Second), Failed: true}, nil)
	must(t, err)
	_, err = s.Complete(ctx, acc[1], state.Outcome{Class: "dns", Failed: true}, nil)
	must(t, err)
	_, err = s.Complete(ctx, acc[2], state.Outcome{Class: "200"}, nil)
	must(t, err)
	checkCounts2(t, rs, t0.Add(20*time.Second), crawlstate.ScheduleCounts{Records: 5, Due: 4, Overdue: 2, Failed: 2, Next: t0.Add(10 * time.Second)})
	// a is taken (pending): left alone.
	if got, err := rv.TakeDue(ctx, t0.Add(10*time.Second), 10); err != nil || len(got) != 1 {
		t.Fatalf("TakeDue = %v, %v", URLs(got), err)
	}
	var mu sync.Mutex
	calls := map[string]time.Time{}
	n, err := rs.Reschedule(ctx, []string{"http://h/a", "http://h/b", "http://h/c", "http://h/d", "http://h/e", "http://h/f", "http://h/unknown", "http://h/b"},
		func(rec frontier.Request, due time.Time) (string, time.Time, bool) {
			mu.Lock()
			calls[rec.URL] = due
			mu.Unlock()
			if rec.Schedule != "s:"+rec.URL || rec.Seq != 0 {
				t.Errorf("fn got %+v", rec)
			}
			switch rec.URL {
			case "http://h/b":
				return "h:" + rec.URL, t0.Add(time.Second), true
			case "http://h/d":
				return "h:" + rec.URL, time.Time{}, true // out of the due index, failed mark kept
			}
			return "", time.Time{}, false
		})
	must(t, err)
	if n != 2 {
		t.Fatalf("Reschedule changed %d records, want 2 (b, d)", n)
	}
	want := map[string]time.Time{"http://h/b": t0.Add(20 * time.Second), "http://h/c": t0.Add(30 * time.Second), "http://h/d": t0.Add(40 * time.Second)}
	if len(calls) != len(want) {
		t.Fatalf("fn called for %v, want b, c, d (a record with a Schedule, not pending)", calls)
	}
	for u, d := range want {
		if !calls[u].Equal(d) {
			t.Errorf("fn got %s due %v, want %v", u, calls[u], d)
		}
	}
	checkScheduled(t, rv, 5, 2)
	checkCounts2(t, rs, t0.Add(20*time.Second), crawlstate.ScheduleCounts{Records: 5, Due: 2, Overdue: 1, Failed: 2, Next: t0.Add(time.Second)})
	if next, ok, err := rv.NextDue(ctx); err != nil || !ok || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("NextDue = %v, %v, %v; want %v", next, ok, err, t0.Add(time.Second))
	}
	got, err := rv.TakeDue(ctx, t0.Add(time.Second), 10)
	must(t, err)
	if len(got) != 1 || got[0].URL != "http://h/b" || got[0].Schedule != "h:http://h/b" {
		t.Fatalf("TakeDue after Reschedule = %+v, want b with the new Schedule", got)
	}
	// d keeps its failed mark: RetryFailed makes it (and e) due.
	if n, err := rv.RetryFailed(ctx, t0.Add(time.Minute)); err != nil || n != 2 {
		t.Fatalf("RetryFailed = %d, %v; want 2", n, err)
	}
	got, err = rv.TakeDue(ctx, t0.Add(time.Minute), 10)
	must(t, err)
	for _, g := range got {
		if g.URL == "http://h/d" && g.Schedule != "h:http://h/d" {
			t.Fatalf("d taken with Schedule %q, want the rescheduled one", g.Schedule)
		}
	}
	if !slices.Contains(URLs(got), "http://h/d") {
		t.Fatalf("TakeDue after RetryFailed = %v, want d among them", URLs(got))
	}
}
