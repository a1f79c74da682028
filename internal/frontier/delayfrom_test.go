package frontier

import (
	"context"
	"testing"
	"time"
)

// TestDelayFromStart: with DelayFromStart the next request to a key may
// start Delay after the previous one started (DoneInfo.Started when given,
// else the lease's Start), never before the previous lease is done; without
// it, Delay after the Done.
func TestDelayFromStart(t *testing.T) {
	const delay = 200 * time.Millisecond
	for _, tc := range []struct {
		name      string
		fromStart bool
		started   time.Duration // DoneInfo.Started after the lease's start; 0 = not given
		doneAt    time.Duration // Done after the lease's start
		wantAt    time.Duration // next lease's earliest start after the first lease's start
	}{
		{"from done", false, 0, 50 * time.Millisecond, 250 * time.Millisecond},
		{"from start", true, 0, 50 * time.Millisecond, 200 * time.Millisecond},
		{"from the request after robots.txt", true, 60 * time.Millisecond, 110 * time.Millisecond, 260 * time.Millisecond},
		{"answer slower than the delay", true, 0, 300 * time.Millisecond, 300 * time.Millisecond},
		{"Started ignored from done", false, 60 * time.Millisecond, 110 * time.Millisecond, 310 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, clk := newTestFrontier(t, Config{Delay: delay, DelayFromStart: tc.fromStart})
			must(t, f.PushAll([]Request{req("http://a/1", "a", 0), req("http://a/2", "a", 0)}))
			l := mustNext(t, f)
			t0 := l.Start
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := nextAsync(f, ctx)
			expectBlocked(t, ch) // the key is leased
			clk.Advance(tc.doneAt)
			info := DoneInfo{}
			if tc.started > 0 {
				info.Started = t0.Add(tc.started)
			}
			f.Done(l, info)
			if rest := tc.wantAt - tc.doneAt; rest > 0 {
				clk.waitTimer(t)
				expectBlocked(t, ch)
				clk.Advance(rest - time.Millisecond)
				expectBlocked(t, ch)
				clk.Advance(time.Millisecond)
			}
			l2 := receive(t, ch)
			if got := l2.Start.Sub(t0); got != tc.wantAt {
				t.Errorf("second lease %s after the first, want %s", got, tc.wantAt)
			}
		})
	}
}

// TestDoneUnused: a lease given back with Unused (no request was made: the
// crawler dropped a stale copy) leaves the key's politeness clock as it
// was, so the next URL of the key may start at once; a lease that made a
// request, done right after, makes the next wait the whole delay. With
// PerKey > 1 a later lease's clock is kept.
func TestDoneUnused(t *testing.T) {
	const delay = 200 * time.Millisecond
	for _, fromStart := range []bool{false, true} {
		f, clk := newTestFrontier(t, Config{Delay: delay, DelayFromStart: fromStart})
		must(t, f.PushAll([]Request{req("http://a/1", "a", 0), req("http://a/2", "a", 0), req("http://a/3", "a", 0)}))
		l1 := mustNext(t, f)
		clk.Advance(50 * time.Millisecond)
		f.Done(l1, DoneInfo{}) // a real request: the next waits
		clk.Advance(delay)
		l2 := mustNext(t, f)
		t2 := l2.Start
		clk.Advance(time.Millisecond)
		f.Done(l2, DoneInfo{Unused: true}) // dropped: no turn lost
		l3 := mustNext(t, f)
		if got := l3.Start.Sub(t2); got != time.Millisecond {
			t.Errorf("fromStart=%v: lease after an unused one started %s after it, want 1ms (at once)", fromStart, got)
		}
		f.Done(l3, DoneInfo{})
	}

	// Unused with a Delay still waits the Delay.
	f, clk := newTestFrontier(t, Config{Delay: delay})
	must(t, f.PushAll([]Request{req("http://a/1", "a", 0), req("http://a/2", "a", 0)}))
	l := mustNext(t, f)
	f.Done(l, DoneInfo{Unused: true, Delay: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := nextAsync(f, ctx)
	clk.waitTimer(t)
	clk.Advance(time.Second - time.Millisecond)
	expectBlocked(t, ch)
	clk.Advance(time.Millisecond)
	receive(t, ch)

	// PerKey 2: the second lease's start spacing survives the first's Unused.
	f, clk = newTestFrontier(t, Config{Delay: delay, PerKey: 2})
	must(t, f.PushAll([]Request{req("http://a/1", "a", 0), req("http://a/2", "a", 0), req("http://a/3", "a", 0)}))
	a := mustNext(t, f)
	clk.Advance(delay)
	b := mustNext(t, f)
	f.Done(a, DoneInfo{Unused: true})
	ch = nextAsync(f, ctx)
	clk.waitTimer(t)
	expectBlocked(t, ch)
	clk.Advance(delay)
	if c := receive(t, ch); c.Start.Sub(b.Start) != delay {
		t.Errorf("PerKey 2: third lease %s after the second, want %s", c.Start.Sub(b.Start), delay)
	}
}
