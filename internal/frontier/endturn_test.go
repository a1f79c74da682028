package frontier

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestEndTurn: EndTurn frees the key for its next lease (after the delay,
// counted from EndTurn) while the lease stays outstanding: Stats.Leased
// counts it, Next does not report ErrDrained, and the Strict barrier holds
// until Done; Done after EndTurn does not move the key's clock again.
func TestEndTurn(t *testing.T) {
	f, clk := newTestFrontier(t, Config{Delay: time.Second})
	must(t, f.PushAll([]Request{req("http://a/1", "a:80", 0), req("http://a/2", "a:80", 0)}))
	a1 := mustNext(t, f)
	pending := nextAsync(f, context.Background())
	expectBlocked(t, pending) // a's turn is out

	clk.Advance(200 * time.Millisecond) // the answer has been read
	endAt := clk.Now()
	f.EndTurn(a1, DoneInfo{})
	clk.waitTimer(t)
	clk.Advance(999 * time.Millisecond)
	expectBlocked(t, pending)
	clk.Advance(time.Millisecond)
	a2 := receive(t, pending) // a1 still outstanding: its page is processed
	if a2.Request.URL != "http://a/2" || a2.Start.Sub(endAt) < time.Second {
		t.Fatalf("got %s %v after EndTurn, want http://a/2 ≥ 1s after", a2.Request.URL, a2.Start.Sub(endAt))
	}
	if st := f.Stats(); st.Leased != 2 {
		t.Fatalf("leased %d, want 2 (a1's turn ended, its lease did not)", st.Leased)
	}
	f.EndTurn(a1, DoneInfo{}) // twice: ignored

	// a2's Done sets the clock; a1's later Done must not move it.
	clk.Advance(100 * time.Millisecond)
	doneAt := clk.Now()
	f.Done(a2, DoneInfo{})
	must(t, f.Push(req("http://a/3", "a:80", 0)))
	clk.Advance(500 * time.Millisecond)
	f.Done(a1, DoneInfo{Delay: time.Hour, Retry: true})
	if st := f.Stats(); st.Leased != 0 || st.Queued != 1 {
		t.Fatalf("stats %+v, want nothing leased and a/3 queued (Done after EndTurn ignores Retry)", st)
	}
	pending = nextAsync(f, context.Background())
	clk.waitTimer(t)
	clk.Advance(doneAt.Add(time.Second).Sub(clk.Now()))
	if a3 := receive(t, pending); a3.Request.URL != "http://a/3" {
		t.Fatalf("got %s, want http://a/3", a3.Request.URL)
	}
}

// TestEndTurnNotDrained: while a lease whose turn ended is outstanding, Next
// waits instead of reporting ErrDrained (its page may still add links);
// Done then drains the frontier.
func TestEndTurnNotDrained(t *testing.T) {
	f, _ := newTestFrontier(t, Config{Delay: NoDelay})
	must(t, f.Push(req("http://a/1", "a:80", 0)))
	l := mustNext(t, f)
	f.EndTurn(l, DoneInfo{Retry: true}) // Retry is refused by EndTurn
	pending := nextAsync(f, context.Background())
	expectBlocked(t, pending)
	f.Done(l, DoneInfo{})
	select {
	case r := <-pending:
		if !errors.Is(r.err, ErrDrained) {
			t.Fatalf("Next after the last Done = %v, want ErrDrained", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next still waits after the last Done")
	}
}

// TestEndTurnStrictBarrier: a lease whose turn ended still holds its level.
func TestEndTurnStrictBarrier(t *testing.T) {
	f, err := New(Config{FrontQueues: 2, Strict: true, Delay: NoDelay})
	must(t, err)
	defer f.Close()
	must(t, f.PushAll([]Request{{URL: "http://a/0", Key: "a", Priority: 0}, {URL: "http://a/1", Key: "a", Priority: 1}}))
	l0 := mustNext(t, f)
	f.EndTurn(l0, DoneInfo{})
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if l, err := f.Next(short); err == nil {
		t.Fatalf("barrier broken: %s handed out while level 0's page is processed", l.Request.URL)
	}
	f.Done(l0, DoneInfo{})
	if l1 := mustNext(t, f); l1.Request.URL != "http://a/1" {
		t.Fatalf("got %s, want level 1 after level 0's Done", l1.Request.URL)
	}
}
