package frontier

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual clock for Config.Now and Config.After.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	added   chan struct{} // signalled when a waiter is added
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), added: make(chan struct{}, 1024)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	select {
	case c.added <- struct{}{}:
	default:
	}
	return ch
}

// Advance moves the clock forward and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// newTestFrontier returns a frontier on a fake clock, closed at the end of
// the test.
func newTestFrontier(t testing.TB, cfg Config) (*Frontier, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	if cfg.Now == nil {
		cfg.Now = clk.Now
		cfg.After = clk.After
	}
	if cfg.SpillDir == "" {
		cfg.SpillDir = t.TempDir()
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, clk
}

// nextAsync runs Next in a goroutine.
func nextAsync(f *Frontier, ctx context.Context) <-chan leaseResult {
	ch := make(chan leaseResult, 1)
	go func() {
		l, err := f.Next(ctx)
		ch <- leaseResult{l, err}
	}()
	return ch
}

type leaseResult struct {
	l   *Lease
	err error
}

// mustNext calls Next and fails unless it returns a lease at once.
func mustNext(t *testing.T, f *Frontier) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	select {
	case r := <-nextAsync(f, ctx):
		if r.err != nil {
			t.Fatalf("Next: %v", r.err)
		}
		return r.l
	case <-time.After(2 * time.Second):
		t.Fatal("Next blocked; expected a lease now")
	}
	return nil
}

// expectBlocked asserts that a pending Next has not returned yet.
func expectBlocked(t *testing.T, ch <-chan leaseResult) {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Next returned early with error %v", r.err)
		}
		t.Fatalf("Next returned %s early", r.l.Request.URL)
	case <-time.After(30 * time.Millisecond):
	}
}

func receive(t *testing.T, ch <-chan leaseResult) *Lease {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Next: %v", r.err)
		}
		return r.l
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return")
	}
	return nil
}

// waitTimer waits until the frontier has armed a fake timer.
func (c *fakeClock) waitTimer(t *testing.T) {
	t.Helper()
	select {
	case <-c.added:
	case <-time.After(5 * time.Second):
		t.Fatal("no timer was armed")
	}
}
